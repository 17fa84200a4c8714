//! inotify on the static pod directory (upstream `file_linux.go`), as a
//! "something changed" signal only: the [`FileSource`] answers with a full,
//! debounced re-read. Blocking (a few syscalls and a thread); run it on the
//! blocking pool.
//!
//! The watch is on the directory (or a file path's parent), non-recursive.
//! A directory that is removed and re-created is a new inode: [`WatchTarget`]
//! tells them apart so the caller can re-watch.
//!
//! [`FileSource`]: crate::config::FileSource

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// The directory to watch, identified by device and inode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchTarget {
    /// The watched directory.
    pub dir: PathBuf,
    dev: u64,
    ino: u64,
}

impl WatchTarget {
    /// The directory to watch for `path`: itself if a directory, its parent if
    /// a file; `None` if neither exists.
    pub fn for_path(path: &Path) -> Option<Self> {
        let metadata = fs::metadata(path).ok()?;
        let dir = if metadata.is_dir() {
            path.to_path_buf()
        } else {
            path.parent()?.to_path_buf()
        };
        let metadata = fs::metadata(&dir).ok()?;
        Some(Self {
            dir,
            dev: metadata.dev(),
            ino: metadata.ino(),
        })
    }
}

/// A live watch; dropping it stops watching.
pub struct DirWatch {
    _watcher: RecommendedWatcher,
    /// What is watched.
    pub target: WatchTarget,
}

impl std::fmt::Debug for DirWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirWatch")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// Starts watching `target`. `on_change(lost)` runs on notify's thread for
/// every [relevant](is_relevant) event; `lost` tells that the watched
/// directory itself was removed or moved away, so the watch is dead.
pub fn start_watch(target: WatchTarget, on_change: impl Fn(bool) + Send + 'static) -> notify::Result<DirWatch> {
    let dir = target.dir.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| match event {
        Ok(event) if is_relevant(&event) => on_change(watch_lost(&event, &dir)),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "static pod path watch error; relying on the periodic re-read"),
    })?;
    watcher.watch(&target.dir, RecursiveMode::NonRecursive)?;
    Ok(DirWatch {
        _watcher: watcher,
        target,
    })
}

/// Whether an event may change what a scan reads. Opening and reading files
/// (our own scans do) is not; finishing a write is.
pub fn is_relevant(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Whether `event` says the watched `dir` itself went away.
pub fn watch_lost(event: &Event, dir: &Path) -> bool {
    let gone = matches!(
        event.kind,
        EventKind::Remove(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
    );
    gone && event.paths.iter().any(|path| path == dir)
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, ModifyKind};

    use super::*;

    #[test]
    fn relevant_events() {
        let cases = [
            (EventKind::Create(CreateKind::File), true),
            (EventKind::Modify(ModifyKind::Any), true),
            (EventKind::Remove(notify::event::RemoveKind::File), true),
            (EventKind::Access(AccessKind::Close(AccessMode::Write)), true),
            (EventKind::Access(AccessKind::Open(AccessMode::Any)), false),
            (EventKind::Access(AccessKind::Close(AccessMode::Read)), false),
        ];
        for (kind, relevant) in cases {
            assert_eq!(is_relevant(&Event::new(kind)), relevant, "{kind:?}");
        }
    }

    #[test]
    fn lost_watches() {
        let dir = Path::new("/etc/kubernetes/manifests");
        let event = |kind, path: &str| Event::new(kind).add_path(PathBuf::from(path));
        let removed = EventKind::Remove(notify::event::RemoveKind::Folder);
        assert!(watch_lost(&event(removed, "/etc/kubernetes/manifests"), dir));
        assert!(!watch_lost(&event(removed, "/etc/kubernetes/manifests/a.yaml"), dir));
        assert!(!watch_lost(
            &event(EventKind::Create(CreateKind::File), "/etc/kubernetes/manifests"),
            dir
        ));
    }

    #[test]
    fn targets_tell_recreated_directories_apart() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("manifests");
        assert_eq!(WatchTarget::for_path(&dir), None);
        fs::create_dir(&dir).unwrap();
        let first = WatchTarget::for_path(&dir).unwrap();
        assert_eq!(first.dir, dir);
        fs::write(dir.join("pod.yaml"), "").unwrap();
        assert_eq!(
            WatchTarget::for_path(&dir.join("pod.yaml")),
            Some(first.clone()),
            "a file's parent"
        );
        fs::remove_dir_all(&dir).unwrap();
        fs::create_dir(root.path().join("placeholder")).unwrap();
        fs::create_dir(&dir).unwrap();
        assert_ne!(WatchTarget::for_path(&dir), Some(first));
    }
}
