//! `--lock-file` and `--exit-on-lock-contention` (upstream `flock.Acquire`
//! and `watchForLockfileContention`): an exclusive `flock` held for the
//! process's lifetime, taken blocking — a second actlet waits for the first —
//! and, with contention watching, an inotify watch (`IN_OPEN`,
//! `IN_DELETE_SELF`) on the file: the next process opening it to take the
//! lock makes this one stop, which hands the node over.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

/// The lock file could not be taken or watched.
#[derive(Debug, thiserror::Error)]
#[error("unable to {action} file lock on {}: {reason}", path.display())]
pub struct LockError {
    /// What failed: `acquire` or `watch`.
    pub action: &'static str,
    /// The lock file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// A held lock; released when dropped (the process keeps it until exit).
#[derive(Debug)]
pub struct LockFile {
    _lock: Flock<File>,
    /// The lock file.
    pub path: PathBuf,
}

/// Takes the exclusive lock on `path` (created if missing), waiting while
/// another process holds it.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("kubelet.lock");
/// let held = actlet::process::lock::acquire(&path).unwrap();
/// assert!(actlet::process::lock::try_acquire(&path).unwrap().is_none(), "held");
/// drop(held);
/// assert!(actlet::process::lock::try_acquire(&path).unwrap().is_some(), "released");
/// ```
pub fn acquire(path: &Path) -> Result<LockFile, LockError> {
    lock(path, FlockArg::LockExclusive)?.ok_or_else(|| LockError {
        action: "acquire",
        path: path.to_path_buf(),
        reason: "the lock was busy".into(),
    })
}

/// Takes the lock if it is free (`None`: someone holds it).
pub fn try_acquire(path: &Path) -> Result<Option<LockFile>, LockError> {
    lock(path, FlockArg::LockExclusiveNonblock)
}

fn lock(path: &Path, how: FlockArg) -> Result<Option<LockFile>, LockError> {
    let err = |reason: String| LockError {
        action: "acquire",
        path: path.to_path_buf(),
        reason,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| err(e.to_string()))?;
    match Flock::lock(file, how) {
        Ok(l) => Ok(Some(LockFile {
            _lock: l,
            path: path.to_path_buf(),
        })),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(err(e.to_string())),
    }
}

/// Watches `path` for another process opening (or deleting) it and calls
/// `on_contention` once when that happens, from a thread of its own.
pub fn watch_contention(path: &Path, on_contention: impl FnOnce(String) + Send + 'static) -> Result<(), LockError> {
    let err = |reason: String| LockError {
        action: "watch",
        path: path.to_path_buf(),
        reason,
    };
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC).map_err(|e| err(e.to_string()))?;
    inotify
        .add_watch(path, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_DELETE_SELF)
        .map_err(|e| err(e.to_string()))?;
    std::thread::Builder::new()
        .name("lock-file-watch".into())
        .spawn(move || {
            let what = match inotify.read_events() {
                Ok(events) => events
                    .first()
                    .map(|e| format!("{:?}", e.mask))
                    .unwrap_or_else(|| "event".into()),
                Err(e) => format!("inotify watcher error: {e}"),
            };
            on_contention(what);
        })
        .map_err(|e| err(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn another_open_of_the_file_is_contention() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let _held = acquire(&path).unwrap();
        let (tx, rx) = mpsc::channel();
        watch_contention(&path, move |what| tx.send(what).unwrap()).unwrap();
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "no contention yet"
        );
        let _other = File::open(&path).unwrap();
        let what = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(what.contains("IN_OPEN"), "{what}");
    }

    #[test]
    fn an_unusable_path_names_it() {
        let e = acquire(Path::new("/nonexistent-dir/x.lock")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unable to acquire file lock on /nonexistent-dir/x.lock"),
            "{e}"
        );
    }
}
