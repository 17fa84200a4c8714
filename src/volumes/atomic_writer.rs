//! Upstream's `AtomicWriter`: a volume's files replaced all at once.
//!
//! ```text
//! <target>/..2026_11_24_15_40_16.123456789/   the current payload (a fresh directory per change)
//! <target>/..data -> ..2026_11_24_15_40_16.123456789
//! <target>/<name> -> ..data/<name>            one user-visible symlink per top-level name
//! ```
//! A change writes a new timestamped directory, points `..data_tmp` at it
//! and renames `..data_tmp` over `..data` (one atomic `rename`), adds the
//! new user-visible symlinks, removes those no longer in the payload and
//! finally the old directory. A reader sees the old or the new payload,
//! never a mix. Nothing changes when the payload is the same (content and
//! mode of every file). Every path is checked first
//! ([`validate_path`](super::paths::validate_path)): nothing is written
//! outside the target.
//!
//! Blocking file-system code: run it in `spawn_blocking`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::paths::{PathError, clean_relative, validate_path};

/// The `..data` symlink.
pub const DATA_DIR_NAME: &str = "..data";
/// Its temporary twin.
pub const DATA_DIR_TMP_NAME: &str = "..data_tmp";

/// One file of a payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileProjection {
    /// Content.
    pub data: Vec<u8>,
    /// Permission bits (`defaultMode` / `mode`).
    pub mode: u32,
}

/// Relative path → file.
pub type Payload = BTreeMap<String, FileProjection>;

/// The payload could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A path in the payload is refused.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A file-system operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was done.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `payload` into `target` (created if missing); true when
/// something changed on disk.
///
/// ```
/// use actlet::volumes::atomic_writer::{FileProjection, Payload, write};
/// let dir = tempfile::tempdir().unwrap();
/// let mut payload = Payload::new();
/// payload.insert("app/config.yaml".into(), FileProjection { data: b"a: 1".to_vec(), mode: 0o644 });
/// assert!(write(dir.path(), &payload).unwrap());
/// assert_eq!(std::fs::read(dir.path().join("app/config.yaml")).unwrap(), b"a: 1");
/// assert!(!write(dir.path(), &payload).unwrap(), "same payload: nothing to do");
/// ```
pub fn write(target: &Path, payload: &Payload) -> Result<bool, WriteError> {
    let mut clean = Payload::new();
    for (path, file) in payload {
        validate_path(path)?;
        clean.insert(clean_relative(path), file.clone());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(target)
        .map_err(io_err("create", target))?;
    let data_link = target.join(DATA_DIR_NAME);
    let old_ts = fs::read_link(&data_link)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string));
    let old_files = match &old_ts {
        Some(ts) => read_tree(&target.join(ts)).unwrap_or_default(),
        None => Payload::new(),
    };
    let new_top = top_level(clean.keys());
    let old_top = top_level(old_files.keys());
    if old_ts.is_some() && old_files == clean {
        create_user_visible(target, &new_top)?;
        return Ok(false);
    }

    let ts_dir = new_timestamp_dir(target)?;
    for (path, file) in &clean {
        let full = ts_dir.join(path);
        if let Some(parent) = full.parent() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(parent)
                .map_err(io_err("create", parent))?;
        }
        fs::write(&full, &file.data).map_err(io_err("write", &full))?;
        fs::set_permissions(&full, fs::Permissions::from_mode(file.mode)).map_err(io_err("chmod", &full))?;
    }
    let ts_name = ts_dir.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    let tmp_link = target.join(DATA_DIR_TMP_NAME);
    match fs::remove_file(&tmp_link) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("remove", &tmp_link)(e)),
    }
    symlink(&ts_name, &tmp_link).map_err(io_err("symlink", &tmp_link))?;
    fs::rename(&tmp_link, &data_link).map_err(io_err("rename", &data_link))?;
    create_user_visible(target, &new_top)?;
    for gone in old_top.difference(&new_top) {
        let p = target.join(gone);
        if fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::remove_file(&p).map_err(io_err("remove", &p))?;
        }
    }
    if let Some(old) = old_ts.filter(|o| o.starts_with("..") && o.as_str() != DATA_DIR_NAME) {
        let old_dir = target.join(old);
        if old_dir != ts_dir {
            fs::remove_dir_all(&old_dir).map_err(io_err("remove", &old_dir))?;
        }
    }
    Ok(true)
}

/// The first element of every path.
fn top_level<'a>(paths: impl Iterator<Item = &'a String>) -> BTreeSet<String> {
    paths.filter_map(|p| p.split('/').next()).map(str::to_string).collect()
}

/// `<name> -> ..data/<name>` for every name not yet present.
fn create_user_visible(target: &Path, names: &BTreeSet<String>) -> Result<(), WriteError> {
    for name in names {
        let link = target.join(name);
        if fs::symlink_metadata(&link).is_err() {
            symlink(Path::new(DATA_DIR_NAME).join(name), &link).map_err(io_err("symlink", &link))?;
        }
    }
    Ok(())
}

/// A fresh `..YYYY_MM_DD_HH_MM_SS.<n>` directory (upstream `newTimestampDir`).
fn new_timestamp_dir(target: &Path) -> Result<PathBuf, WriteError> {
    let stamp = chrono::Utc::now().format("..%Y_%m_%d_%H_%M_%S.");
    for _ in 0..100 {
        let dir = target.join(format!("{stamp}{}", rand::random::<u32>()));
        match fs::DirBuilder::new().mode(0o755).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err("create", &dir)(e)),
        }
    }
    Err(io_err("create", target)(io::Error::other(
        "no free timestamp directory name",
    )))
}

/// Every regular file under `dir` (relative path → content and mode).
fn read_tree(dir: &Path) -> io::Result<Payload> {
    let mut out = Payload::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let rel_child = rel.join(entry.file_name());
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(rel_child);
            } else if meta.is_file() {
                let data = fs::read(entry.path())?;
                let key = rel_child.to_string_lossy().into_owned();
                out.insert(
                    key,
                    FileProjection {
                        data,
                        mode: meta.permissions().mode() & 0o7777,
                    },
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(data: &str, mode: u32) -> FileProjection {
        FileProjection {
            data: data.as_bytes().to_vec(),
            mode,
        }
    }

    fn payload(items: &[(&str, &str, u32)]) -> Payload {
        items.iter().map(|(p, d, m)| (p.to_string(), file(d, *m))).collect()
    }

    fn entries(dir: &Path) -> BTreeSet<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn writes_files_behind_the_data_symlink_with_their_modes() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        write(t, &payload(&[("a", "1", 0o644), ("sub/b", "2", 0o400)])).unwrap();
        let ts = fs::read_link(t.join("..data")).unwrap();
        let ts = ts.to_str().unwrap();
        assert!(ts.starts_with("..20"), "{ts}");
        assert_eq!(fs::read_link(t.join("a")).unwrap(), PathBuf::from("..data/a"));
        assert_eq!(fs::read_link(t.join("sub")).unwrap(), PathBuf::from("..data/sub"));
        assert_eq!(fs::read_to_string(t.join("sub/b")).unwrap(), "2");
        let mode = fs::metadata(t.join("sub/b")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o400);
        assert_eq!(
            entries(t),
            BTreeSet::from(["..data".into(), ts.to_string(), "a".into(), "sub".into()])
        );
    }

    #[test]
    fn an_update_swaps_the_directory_and_drops_removed_names() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        write(t, &payload(&[("a", "1", 0o644), ("gone", "x", 0o644)])).unwrap();
        let old = fs::read_link(t.join("..data")).unwrap();
        assert!(write(t, &payload(&[("a", "2", 0o644), ("new", "y", 0o644)])).unwrap());
        let new = fs::read_link(t.join("..data")).unwrap();
        assert_ne!(old, new);
        assert!(!t.join(&old).exists(), "old timestamp dir removed");
        assert!(
            fs::symlink_metadata(t.join("gone")).is_err(),
            "removed name has no symlink"
        );
        assert_eq!(fs::read_to_string(t.join("a")).unwrap(), "2");
        assert_eq!(fs::read_to_string(t.join("new")).unwrap(), "y");
        assert!(!t.join("..data_tmp").exists());
    }

    #[test]
    fn a_mode_change_alone_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &payload(&[("a", "1", 0o644)])).unwrap();
        assert!(!write(dir.path(), &payload(&[("a", "1", 0o644)])).unwrap());
        assert!(write(dir.path(), &payload(&[("a", "1", 0o600)])).unwrap());
    }

    #[test]
    fn bad_paths_write_nothing() {
        let outer = tempfile::tempdir().unwrap();
        let t = outer.path().join("vol");
        for bad in ["../escape", "/abs", "a/../../escape", "..data"] {
            let err = write(&t, &payload(&[("ok", "1", 0o644), (bad, "x", 0o644)])).unwrap_err();
            assert!(matches!(err, WriteError::Path(_)), "{bad}: {err}");
        }
        assert!(!t.exists(), "nothing created for a refused payload");
        assert_eq!(entries(outer.path()), BTreeSet::new());
    }

    #[test]
    fn an_empty_payload_still_has_a_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write(dir.path(), &Payload::new()).unwrap());
        assert!(fs::read_link(dir.path().join("..data")).is_ok());
        assert!(!write(dir.path(), &Payload::new()).unwrap());
    }
}
