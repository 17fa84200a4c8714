//! Volume kinds and their on-disk side: which plugin a volume belongs to,
//! hostPath `type` checks, emptyDir directories and `medium: Memory` tmpfs
//! mounts, and tearing a volume directory down (unmount first, never
//! deleting through a mount point).
//!
//! Blocking file-system code: run it in `spawn_blocking`.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{HostPathVolumeSource, Volume};

use super::paths;

/// What backs a volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plugin {
    /// `emptyDir`.
    EmptyDir,
    /// `hostPath`.
    HostPath,
    /// `configMap`.
    ConfigMap,
    /// `secret`.
    Secret,
    /// `projected`.
    Projected,
    /// `downwardAPI`.
    DownwardApi,
    /// Anything else (its field name).
    Unsupported(&'static str),
}

impl Plugin {
    /// The plugin of `volume`.
    ///
    /// ```
    /// use actlet::volumes::plugin::Plugin;
    /// let v: k8s_openapi::api::core::v1::Volume = serde_json::from_value(serde_json::json!(
    ///     {"name": "cache", "emptyDir": {}})).unwrap();
    /// assert_eq!(Plugin::of(&v), Plugin::EmptyDir);
    /// assert_eq!(Plugin::of(&v).dir_name(), Some("kubernetes.io~empty-dir"));
    /// ```
    pub fn of(v: &Volume) -> Plugin {
        if v.empty_dir.is_some() {
            Plugin::EmptyDir
        } else if v.host_path.is_some() {
            Plugin::HostPath
        } else if v.config_map.is_some() {
            Plugin::ConfigMap
        } else if v.secret.is_some() {
            Plugin::Secret
        } else if v.projected.is_some() {
            Plugin::Projected
        } else if v.downward_api.is_some() {
            Plugin::DownwardApi
        } else if v.persistent_volume_claim.is_some() {
            Plugin::Unsupported("persistentVolumeClaim")
        } else if v.csi.is_some() {
            Plugin::Unsupported("csi")
        } else if v.ephemeral.is_some() {
            Plugin::Unsupported("ephemeral")
        } else if v.image.is_some() {
            Plugin::Unsupported("image")
        } else if v.nfs.is_some() {
            Plugin::Unsupported("nfs")
        } else {
            Plugin::Unsupported("unknown")
        }
    }

    /// The directory under `volumes/` (None for hostPath and unsupported kinds).
    pub fn dir_name(self) -> Option<&'static str> {
        match self {
            Plugin::EmptyDir => Some(paths::EMPTY_DIR),
            Plugin::ConfigMap => Some(paths::CONFIG_MAP),
            Plugin::Secret => Some(paths::SECRET),
            Plugin::Projected => Some(paths::PROJECTED),
            Plugin::DownwardApi => Some(paths::DOWNWARD_API),
            Plugin::HostPath | Plugin::Unsupported(_) => None,
        }
    }

    /// The plugin owning directory `name` under `volumes/`.
    pub fn from_dir_name(name: &str) -> Option<Plugin> {
        [
            Plugin::EmptyDir,
            Plugin::ConfigMap,
            Plugin::Secret,
            Plugin::Projected,
            Plugin::DownwardApi,
        ]
        .into_iter()
        .find(|p| p.dir_name() == Some(name))
    }

    /// Written by the atomic writer, refreshed periodically, mounted read-only
    /// (upstream's API data volumes).
    pub fn is_api_data(self) -> bool {
        matches!(
            self,
            Plugin::ConfigMap | Plugin::Secret | Plugin::Projected | Plugin::DownwardApi
        )
    }
}

fn exists(path: &Path) -> bool {
    fs::metadata(path).is_ok()
}

/// Upstream `checkType` of a hostPath volume (creating for `*OrCreate`);
/// returns the host path.
///
/// ```
/// use k8s_openapi::api::core::v1::HostPathVolumeSource;
/// use actlet::volumes::plugin::check_host_path;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("data").to_string_lossy().into_owned();
/// let src = HostPathVolumeSource { path: path.clone(), type_: Some("DirectoryOrCreate".into()) };
/// check_host_path(&src).unwrap();
/// assert!(std::path::Path::new(&path).is_dir());
/// let file = HostPathVolumeSource { path, type_: Some("File".into()) };
/// assert!(check_host_path(&file).unwrap_err().ends_with("is not a file"));
/// ```
pub fn check_host_path(src: &HostPathVolumeSource) -> Result<PathBuf, String> {
    let p = src.path.as_str();
    if !p.starts_with('/') {
        return Err(format!("hostPath {p:?} must be an absolute path"));
    }
    if p.split('/').any(|e| e == "..") {
        return Err(format!("invalid HostPath `{p}`: must not contain '..'"));
    }
    let path = Path::new(p);
    let t = src.type_.as_deref().unwrap_or("");
    let meta = fs::metadata(path);
    let ft = meta.as_ref().map(|m| m.file_type());
    let failed = |what: &str| Err(format!("hostPath type check failed: {p} is not {what}"));
    match t {
        "" => {}
        "DirectoryOrCreate" | "Directory" => {
            if t == "DirectoryOrCreate" && !exists(path) {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(path)
                    .map_err(|e| format!("failed to create hostPath directory {p}: {e}"))?;
            } else if !ft.as_ref().is_ok_and(|f| f.is_dir()) {
                return failed("a directory");
            }
        }
        "FileOrCreate" | "File" => {
            if t == "FileOrCreate" && !exists(path) {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(|e| format!("failed to create {}: {e}", parent.display()))?;
                }
                fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|f| f.set_permissions(fs::Permissions::from_mode(0o644)))
                    .map_err(|e| format!("failed to create hostPath file {p}: {e}"))?;
            } else if !ft.as_ref().is_ok_and(|f| !f.is_dir()) {
                return failed("a file");
            }
        }
        "Socket" if !ft.as_ref().is_ok_and(|f| f.is_socket()) => return failed("a socket file"),
        "CharDevice" if !ft.as_ref().is_ok_and(|f| f.is_char_device()) => return failed("a character device"),
        "BlockDevice" if !ft.as_ref().is_ok_and(|f| f.is_block_device()) => return failed("a block device"),
        "Socket" | "CharDevice" | "BlockDevice" => {}
        other => return Err(format!("{other} is an invalid volume type")),
    }
    Ok(path.to_path_buf())
}

/// An emptyDir's directory, mode 0777 (upstream `setupDir`).
pub fn make_empty_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o777).create(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o777))
}

/// Mount points at or under `dir`, deepest first (from `/proc/self/mountinfo`).
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(info) = fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mountinfo)
        .map(PathBuf::from)
        .filter(|p| p.starts_with(dir))
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found.dedup();
    found
}

/// `\040` → space, as mountinfo escapes.
fn unescape_mountinfo(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// Mounts a tmpfs of `size_bytes` (0: the kernel's default) on `dir`,
/// unless something is mounted there already.
pub fn mount_tmpfs(dir: &Path, size_bytes: u64) -> Result<(), String> {
    make_empty_dir(dir).map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
    if mounts_under(dir).iter().any(|m| m == dir) {
        return Ok(());
    }
    let options = (size_bytes > 0).then(|| format!("size={size_bytes}"));
    nix::mount::mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        options.as_deref(),
    )
    .map_err(|e| format!("mount tmpfs on {} failed: {e}", dir.display()))
}

/// Unmounts everything under `dir` and removes it. Refuses to delete
/// while a mount remains (data of another filesystem is never deleted).
pub fn tear_down_dir(dir: &Path) -> Result<(), String> {
    for m in mounts_under(dir) {
        if let Err(e) = nix::mount::umount(&m) {
            tracing::warn!(path = %m.display(), error = %e, "unmount failed; detaching");
            nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH)
                .map_err(|e| format!("unmount {} failed: {e}", m.display()))?;
        }
    }
    if !mounts_under(dir).is_empty() {
        return Err(format!("{} is still mounted", dir.display()));
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("remove {} failed: {e}", dir.display())),
    }
}

/// Upstream `SetVolumeOwnership` for the pod's `fsGroup`: every entry under
/// `dir` gets group `gid` (symlinks themselves, never their targets); files
/// get `g+r` (`g+rw` unless `read_only`), directories also `g+x` and setgid.
/// With `only_on_root_mismatch` (`fsGroupChangePolicy: OnRootMismatch`)
/// nothing is done when `dir` already has that group and setgid.
pub fn set_volume_ownership(dir: &Path, gid: u32, read_only: bool, only_on_root_mismatch: bool) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let fail = |p: &Path, e: &dyn std::fmt::Display| format!("set ownership of {}: {e}", p.display());
    if only_on_root_mismatch && fs::metadata(dir).is_ok_and(|m| m.gid() == gid && m.mode() & 0o2000 != 0) {
        return Ok(());
    }
    let mask = if read_only { 0o440 } else { 0o660 };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = fs::symlink_metadata(&p).map_err(|e| fail(&p, &e))?;
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            &p,
            None,
            Some(nix::unistd::Gid::from_raw(gid)),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|e| fail(&p, &e))?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mut mode = meta.permissions().mode() & 0o7777 | mask;
        if meta.is_dir() {
            mode |= 0o2110;
            for entry in fs::read_dir(&p).map_err(|e| fail(&p, &e))? {
                stack.push(entry.map_err(|e| fail(&p, &e))?.path());
            }
        }
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).map_err(|e| fail(&p, &e))?;
    }
    Ok(())
}

/// True when this process may mount (effective UID 0).
pub fn can_mount() -> bool {
    nix::unistd::geteuid().is_root()
}

#[cfg(test)]
#[path = "plugin_tests.rs"]
mod tests;
