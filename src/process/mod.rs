//! The kubelet process's own setup, as upstream's `run()` does it before the
//! kubelet starts: the `--lock-file` (and leaving on contention), the
//! open-files limit, the process's `oom_score_adj`, and `--runonce`.

pub mod limits;
pub mod lock;
pub mod runonce;
pub mod version;

use crate::cli::KubeletFlags;

/// Upstream's process setup, in its order: take the `--lock-file` (waiting
/// for a holder to let go) and watch it when `--exit-on-lock-contention`
/// (contention stops actlet as SIGTERM does: actors stopped, pods left
/// running), then set the process's `oom_score_adj` and open-files limit
/// (failures are logged, as upstream). The returned lock is held until it
/// is dropped.
pub fn setup(flags: &KubeletFlags) -> Result<Option<lock::LockFile>, lock::LockError> {
    let held = match &flags.lock_file {
        Some(path) => {
            tracing::info!(path = %path.display(), "acquiring file lock");
            let held = lock::acquire(path)?;
            tracing::info!(path = %path.display(), "file lock acquired");
            if flags.exit_on_lock_contention {
                tracing::info!(path = %path.display(), "watching for inotify events");
                lock::watch_contention(path, |event| {
                    tracing::info!(%event, "lock file contention: another process wants the lock; stopping");
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGTERM);
                })?;
            }
            Some(held)
        }
        None => None,
    };
    match limits::apply_oom_score_adj(std::path::Path::new(limits::OOM_SCORE_ADJ), flags.oom_score_adj) {
        Ok(()) => tracing::debug!(value = flags.oom_score_adj, "oom_score_adj set"),
        Err(e) => tracing::warn!("{e}"),
    }
    if let Err(e) = limits::set_max_open_files(flags.max_open_files) {
        tracing::warn!("{e}");
    }
    Ok(held)
}
