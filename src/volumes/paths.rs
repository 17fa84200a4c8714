//! Where volumes live on disk and which paths a pod may name.
//!
//! Layout (upstream's): `<root-dir>/pods/<uid>/volumes/<plugin>/<name>`,
//! with the plugin's name escaped (`kubernetes.io/empty-dir` →
//! `kubernetes.io~empty-dir`). hostPath volumes have no directory there.
//!
//! Path checks (upstream `validatePath` of the atomic writer and
//! `ValidatePathNoBacksteps` for `subPath`): relative, no `..` element, not
//! starting with `..`, at most 4096 bytes and 255 bytes per element.

use std::path::{Path, PathBuf};

/// `kubernetes.io~empty-dir`.
pub const EMPTY_DIR: &str = "kubernetes.io~empty-dir";
/// `kubernetes.io~configmap`.
pub const CONFIG_MAP: &str = "kubernetes.io~configmap";
/// `kubernetes.io~secret`.
pub const SECRET: &str = "kubernetes.io~secret";
/// `kubernetes.io~projected`.
pub const PROJECTED: &str = "kubernetes.io~projected";
/// `kubernetes.io~downward-api`.
pub const DOWNWARD_API: &str = "kubernetes.io~downward-api";

/// Every plugin directory actlet writes (what reconstruction scans).
pub const PLUGIN_DIRS: [&str; 5] = [EMPTY_DIR, CONFIG_MAP, SECRET, PROJECTED, DOWNWARD_API];

/// Longest path the atomic writer accepts.
pub const MAX_PATH_LENGTH: usize = 4096;
/// Longest file name the atomic writer accepts.
pub const MAX_FILE_NAME_LENGTH: usize = 255;

/// `<root>/pods/<uid>`.
pub fn pod_dir(root: &Path, uid: &str) -> PathBuf {
    root.join("pods").join(uid)
}

/// `<root>/pods/<uid>/volumes`.
pub fn pod_volumes_dir(root: &Path, uid: &str) -> PathBuf {
    pod_dir(root, uid).join("volumes")
}

/// `<root>/pods/<uid>/volumes/<plugin>/<name>`.
pub fn volume_dir(root: &Path, uid: &str, plugin_dir: &str, name: &str) -> PathBuf {
    pod_volumes_dir(root, uid).join(plugin_dir).join(name)
}

/// A path a pod named that actlet refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty.
    #[error("invalid path: must not be empty: {0:?}")]
    Empty(String),
    /// Absolute.
    #[error("invalid path: must be relative path: {0}")]
    Absolute(String),
    /// Longer than [`MAX_PATH_LENGTH`].
    #[error("invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters")]
    TooLong,
    /// An element longer than [`MAX_FILE_NAME_LENGTH`].
    #[error("invalid path: filenames must be less than or equal to {MAX_FILE_NAME_LENGTH} characters")]
    NameTooLong,
    /// Contains a `..` element.
    #[error("invalid path: must not contain '..': {0}")]
    Backsteps(String),
    /// Starts with `..` (reserved for the writer's own `..data` entries).
    #[error("invalid path: must not start with '..': {0}")]
    Reserved(String),
}

/// Upstream `validatePath`: a file path inside an atomically written volume.
///
/// ```
/// use actlet::volumes::paths::validate_path;
/// assert!(validate_path("config/app.yaml").is_ok());
/// assert!(validate_path("../etc/passwd").is_err());
/// assert!(validate_path("/etc/passwd").is_err());
/// assert!(validate_path("..data").is_err());
/// ```
pub fn validate_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty(path.into()));
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute(path.into()));
    }
    if path.len() > MAX_PATH_LENGTH {
        return Err(PathError::TooLong);
    }
    let items: Vec<&str> = path.split('/').collect();
    for item in &items {
        if *item == ".." {
            return Err(PathError::Backsteps(path.into()));
        }
        if item.len() > MAX_FILE_NAME_LENGTH {
            return Err(PathError::NameTooLong);
        }
    }
    if items[0].starts_with("..") && items[0].len() > 2 {
        return Err(PathError::Reserved(path.into()));
    }
    Ok(())
}

/// Go's `filepath.Clean` for a relative path: no empty or `.` elements.
pub fn clean_relative(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.is_empty() { ".".into() } else { parts.join("/") }
}

/// A `subPath` (after expansion): relative and without `..` elements
/// (upstream's errors: ``error SubPath `x` must not be an absolute path``,
/// ``unable to provision SubPath `x`: must not contain '..'``).
///
/// ```
/// use actlet::volumes::paths::validate_sub_path;
/// assert!(validate_sub_path("logs/app").is_ok());
/// assert_eq!(validate_sub_path("/etc").unwrap_err(), "error SubPath `/etc` must not be an absolute path");
/// assert!(validate_sub_path("a/../../b").is_err());
/// ```
pub fn validate_sub_path(sub_path: &str) -> Result<(), String> {
    if sub_path.starts_with('/') {
        return Err(format!("error SubPath `{sub_path}` must not be an absolute path"));
    }
    if sub_path.split('/').any(|p| p == "..") {
        return Err(format!(
            "unable to provision SubPath `{sub_path}`: must not contain '..'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_upstreams() {
        let p = volume_dir(Path::new("/var/lib/kubelet"), "u1", CONFIG_MAP, "cfg");
        assert_eq!(
            p,
            PathBuf::from("/var/lib/kubelet/pods/u1/volumes/kubernetes.io~configmap/cfg")
        );
    }

    #[test]
    fn traversal_and_absolute_paths_are_refused() {
        for bad in [
            "",
            "/abs",
            "..",
            "../x",
            "a/../b",
            "a/..",
            "..data",
            "..2026_01_01",
            &"x".repeat(256),
        ] {
            assert!(validate_path(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["a", "a/b/c", ".hidden", "a..b", "a/..b", "x/.."[..2].as_ref()] {
            assert!(validate_path(good).is_ok(), "{good:?} refused");
        }
        assert_eq!(
            validate_path("../etc/passwd").unwrap_err().to_string(),
            "invalid path: must not contain '..': ../etc/passwd"
        );
        assert!(matches!(validate_path(&"a/".repeat(2100)), Err(PathError::TooLong)));
    }

    #[test]
    fn sub_paths_stay_inside() {
        assert!(validate_sub_path("a/b").is_ok());
        assert!(validate_sub_path("..a").is_ok());
        assert!(validate_sub_path("../a").is_err());
        assert!(validate_sub_path("/a").is_err());
    }

    #[test]
    fn clean_drops_dots_and_empty_elements() {
        assert_eq!(clean_relative("./a//b/"), "a/b");
        assert_eq!(clean_relative("./"), ".");
    }
}
