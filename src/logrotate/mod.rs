//! Container log rotation (upstream `pkg/kubelet/logs` container log
//! manager): the `container-log-manager` actor checks every running
//! container's CRI log file each `containerLogMonitorInterval` (10 s) and,
//! once it reaches `containerLogMaxSize` (10Mi), renames it aside, asks the
//! runtime to reopen it (CRI `ReopenContainerLog`), gzips older rotated
//! files and keeps `containerLogMaxFiles` (5) files in all.
//!
//! Restart-safe without state of its own: a round interrupted between the
//! rename and the reopen leaves the log path missing, and the next round
//! reopens a log it cannot find (as upstream); half-done compressions
//! (`.tmp`) are removed by the next round.

pub mod actor;
pub mod files;

use std::path::Path;
use std::time::Duration;

pub use actor::{ContainerLogManager, LogManagerDeps, LogPaths};

/// `containerLogMaxSize`, `containerLogMaxFiles`, `containerLogMaxWorkers`,
/// `containerLogMonitorInterval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRotatePolicy {
    /// Rotate when the log reaches this many bytes.
    pub max_size: u64,
    /// Files kept per container, current log included (≥ 2).
    pub max_files: usize,
    /// Containers rotated concurrently.
    pub max_workers: usize,
    /// How often logs are checked.
    pub monitor_interval: Duration,
}

impl Default for LogRotatePolicy {
    /// Upstream's defaults: 10Mi, 5 files, 1 worker, every 10 s.
    fn default() -> Self {
        Self {
            max_size: 10 << 20,
            max_files: 5,
            max_workers: 1,
            monitor_interval: Duration::from_secs(10),
        }
    }
}

impl LogRotatePolicy {
    /// Parses `containerLogMaxSize` (a quantity such as `10Mi`).
    ///
    /// ```
    /// assert_eq!(actlet::logrotate::LogRotatePolicy::parse_size("10Mi"), Ok(10 << 20));
    /// assert!(actlet::logrotate::LogRotatePolicy::parse_size("-1").is_err());
    /// ```
    pub fn parse_size(value: &str) -> Result<u64, String> {
        let q = crate::quantity::ParsedQuantity::parse(value).map_err(|e| format!("{value:?}: {e}"))?;
        u64::try_from(q.value()).map_err(|_| format!("{value:?} must not be negative"))
    }
}

/// What rotating one log did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Below the size limit.
    NotNeeded,
    /// The log path was missing: the runtime was asked to reopen it.
    Reopened,
    /// Rotated.
    Rotated,
}

/// The (container id, log path) pairs of `logs` whose log is due
/// ([`is_due`]), in order (blocking: one `stat` each; only the due pairs
/// are copied).
pub fn due_logs<'a>(
    logs: impl IntoIterator<Item = (&'a str, &'a str)>,
    policy: &LogRotatePolicy,
) -> Vec<(String, String)> {
    logs.into_iter()
        .filter(|(_, path)| is_due(&std::fs::metadata(path).map(|m| m.len()), policy))
        .map(|(id, path)| (id.to_owned(), path.to_owned()))
        .collect()
}

/// Whether a log whose `stat` gave `size` needs [`rotate_one`]: it reached
/// the policy's size, is missing (the runtime reopens it), or could not be
/// read (`rotate_one` reports why).
///
/// ```
/// use actlet::logrotate::{LogRotatePolicy, is_due};
/// let policy = LogRotatePolicy { max_size: 100, ..LogRotatePolicy::default() };
/// assert!(!is_due(&Ok(99), &policy));
/// assert!(is_due(&Ok(100), &policy));
/// assert!(is_due(&Err(std::io::ErrorKind::NotFound.into()), &policy));
/// ```
pub fn is_due(size: &std::io::Result<u64>, policy: &LogRotatePolicy) -> bool {
    !matches!(size, Ok(n) if *n < policy.max_size)
}

/// Upstream `rotateLog` for one container, blocking file work plus the
/// runtime's reopen (`reopen`, async): see [`files`].
pub async fn rotate_one<F, Fut>(
    log: &Path,
    policy: &LogRotatePolicy,
    now: jiff::Timestamp,
    reopen: F,
) -> Result<Rotation, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let size = match tokio::fs::metadata(log).await {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            reopen()
                .await
                .map_err(|e| format!("failed to reopen missing log {}: {e}", log.display()))?;
            return Ok(Rotation::Reopened);
        }
        Err(e) => return Err(format!("failed to stat log {}: {e}", log.display())),
    };
    if size < policy.max_size {
        return Ok(Rotation::NotNeeded);
    }
    let (path, max_files) = (log.to_path_buf(), policy.max_files);
    let prepared = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let logs = files::rotated_files(&path)?;
        let logs = files::cleanup_unused(logs)?;
        let logs = files::remove_excess(logs, max_files)?;
        files::compress_all(&logs)
    })
    .await
    .map_err(|e| e.to_string())?;
    prepared.map_err(|e| format!("failed to prepare the rotation of {}: {e}", log.display()))?;
    let rotated = files::rotated_name(log, now);
    tokio::fs::rename(log, &rotated)
        .await
        .map_err(|e| format!("failed to rotate log {}: {e}", log.display()))?;
    if let Err(e) = reopen().await {
        // Put it back so the next round tries again (upstream).
        let _ = tokio::fs::rename(&rotated, log).await;
        return Err(format!("failed to reopen container log {}: {e}", log.display()));
    }
    Ok(Rotation::Rotated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn policy(max_size: u64) -> LogRotatePolicy {
        LogRotatePolicy {
            max_size,
            max_files: 3,
            ..Default::default()
        }
    }

    #[test]
    fn the_batch_stat_keeps_the_big_and_the_missing_logs_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        let (small, big, missing) = (path("a.log"), path("b.log"), path("c.log"));
        std::fs::write(&small, [0u8; 10]).unwrap();
        std::fs::write(&big, [0u8; 200]).unwrap();
        let logs = [
            ("big", big.as_str()),
            ("missing", missing.as_str()),
            ("small", small.as_str()),
        ];
        let due = due_logs(logs, &policy(100));
        assert_eq!(
            due,
            [
                ("big".to_string(), big.clone()),
                ("missing".to_string(), missing.clone())
            ]
        );
        assert_eq!(due_logs(logs, &policy(1_000)), [("missing".to_string(), missing)]);
    }

    #[tokio::test]
    async fn a_full_log_is_rotated_and_reopened_a_small_one_left() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = d.path().join("0.log");
        std::fs::write(&log, "x".repeat(100)).unwrap_or_else(|e| panic!("{e}"));
        let reopened = Arc::new(AtomicUsize::new(0));
        let r = reopened.clone();
        let path = log.clone();
        let reopen = move || {
            let (r, path) = (r.clone(), path.clone());
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                std::fs::write(&path, "").map_err(|e| e.to_string())
            }
        };
        let t = |s: &str| s.parse::<jiff::Timestamp>().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rotate_one(&log, &policy(1000), t("2026-01-01T00:00:00Z"), &reopen).await,
            Ok(Rotation::NotNeeded)
        );
        for (i, at) in ["2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"]
            .iter()
            .enumerate()
        {
            std::fs::write(&log, "y".repeat(100)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                rotate_one(&log, &policy(50), t(at), &reopen).await,
                Ok(Rotation::Rotated),
                "round {i}"
            );
        }
        assert_eq!(reopened.load(Ordering::SeqCst), 3);
        let mut names: Vec<String> = std::fs::read_dir(d.path())
            .map(|r| {
                r.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        // max 3 files: current, the newest rotated, one older compressed.
        assert_eq!(names, ["0.log", "0.log.20260101-000002.gz", "0.log.20260101-000003"]);
    }

    #[tokio::test]
    async fn a_failed_reopen_puts_the_log_back_and_a_missing_log_is_reopened() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = d.path().join("0.log");
        std::fs::write(&log, "x".repeat(100)).unwrap_or_else(|e| panic!("{e}"));
        let failing = || async { Err::<(), _>("container is not running".to_string()) };
        let r = rotate_one(&log, &policy(10), jiff::Timestamp::now(), failing).await;
        assert!(r.is_err_and(|e| e.contains("container is not running")));
        assert!(log.exists(), "renamed back");
        std::fs::remove_file(&log).unwrap_or_else(|e| panic!("{e}"));
        let ok = || async { Ok::<(), String>(()) };
        assert_eq!(
            rotate_one(&log, &policy(10), jiff::Timestamp::now(), ok).await,
            Ok(Rotation::Reopened)
        );
    }
}
