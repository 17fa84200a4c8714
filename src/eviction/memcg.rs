//! Kernel memcg threshold notifications (upstream
//! `memory_threshold_notifier.go` and `threshold_notifier_linux.go`, behind
//! `kernelMemcgNotification`): the kernel signals an eventfd as soon as a
//! memory cgroup's `memory.usage_in_bytes` crosses a level, so the eviction
//! manager reacts to a memory threshold at once instead of at its next
//! 10 s round. cgroup v1 only, as upstream (v2 has no `cgroup.event_control`).
//!
//! The level is re-derived from each summary (every 10 s at most): usage
//! includes the inactive file cache, the threshold is on the working set,
//! so the kernel is asked for `capacity - threshold + inactive_file`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::eventfd::{EfdFlags, EventFd};
use tokio::io::unix::AsyncFd;

use super::thresholds::{Signal, Threshold};
use crate::stats::types::{MemoryStats, Summary};

/// The cgroup file whose level is watched.
pub const MEMORY_USAGE_ATTRIBUTE: &str = "memory.usage_in_bytes";
/// How often the levels are re-derived (upstream `notifierRefreshInterval`).
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// Upstream's description of a memory threshold's notifier ("hard memory
/// eviction threshold", "soft allocatable memory eviction threshold").
///
/// ```
/// use actlet::eviction::memcg::description;
/// use actlet::eviction::{Signal, Threshold, Value};
/// let t = Threshold { signal: Signal::MemoryAvailable, value: Value::Quantity(100 << 20), grace_period: Default::default(), min_reclaim: None };
/// assert_eq!(description(&t), "hard memory eviction threshold");
/// ```
pub fn description(t: &Threshold) -> String {
    let hard = if t.is_hard() { "hard " } else { "soft " };
    let allocatable = if t.signal == Signal::AllocatableMemoryAvailable {
        "allocatable "
    } else {
        ""
    };
    format!("{hard}{allocatable}memory eviction threshold")
}

/// Whether `t` is one a memcg notifier watches.
pub fn watches(t: &Threshold) -> bool {
    matches!(t.signal, Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable)
}

/// The memory stats the level of `t` is derived from: the node's, or the
/// `pods` system container's for an allocatable threshold.
pub fn stats_for<'a>(t: &Threshold, summary: &'a Summary) -> Option<&'a MemoryStats> {
    match t.signal {
        Signal::AllocatableMemoryAvailable => summary
            .node
            .system_containers
            .iter()
            .find(|c| c.name == "pods")?
            .memory
            .as_ref(),
        _ => summary.node.memory.as_ref(),
    }
}

/// The `memory.usage_in_bytes` level to be told about (upstream
/// `UpdateThreshold`): `capacity - threshold + inactive_file`, with capacity
/// `available + working_set` and inactive file `usage - working_set`; `None`
/// when the stats are incomplete.
///
/// ```
/// use actlet::eviction::memcg::usage_level;
/// use actlet::eviction::Value;
/// // 1 GiB capacity (600 MiB available, 424 MiB working set), 100 MiB of
/// // inactive file cache, evict below 200 MiB available:
/// let level = usage_level(524 << 20, 424 << 20, 600 << 20, Value::Quantity(200 << 20));
/// assert_eq!(level, Some((1024 - 200 + 100) << 20));
/// ```
pub fn usage_level(usage: u64, working_set: u64, available: u64, value: super::thresholds::Value) -> Option<u64> {
    let capacity = i64::try_from(available.checked_add(working_set)?).ok()?;
    let inactive_file = i64::try_from(usage.saturating_sub(working_set)).ok()?;
    let level = capacity - value.quantity(capacity) + inactive_file;
    u64::try_from(level).ok()
}

/// [`usage_level`] of `t` from a summary.
pub fn level_for(t: &Threshold, summary: &Summary) -> Option<u64> {
    let m = stats_for(t, summary)?;
    usage_level(m.usage_bytes?, m.working_set_bytes?, m.available_bytes?, t.value)
}

/// Where the cgroup of `t` lives: the memory hierarchy's root, or the pods'
/// cgroup (`cgroup_root`, e.g. `/kubepods`) for an allocatable threshold.
pub fn cgroup_dir(t: &Threshold, memory_mount: &Path, cgroup_root: &str) -> PathBuf {
    match t.signal {
        Signal::AllocatableMemoryAvailable => memory_mount.join(cgroup_root.trim_start_matches('/')),
        _ => memory_mount.to_path_buf(),
    }
}

/// A registered level: the kernel signals the eventfd when the cgroup's
/// usage crosses it. Dropping it unregisters.
#[derive(Debug)]
pub struct CgroupNotifier {
    event: AsyncFd<EventFd>,
    /// Kept open: the registration lives as long as both descriptors.
    _attribute: File,
    /// What is watched (logs).
    pub what: String,
}

/// Registering a level failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {path} at {level} bytes: {source}")]
pub struct NotifierError {
    /// The file that could not be used.
    pub path: PathBuf,
    /// The level asked for.
    pub level: u64,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

impl CgroupNotifier {
    /// Registers `level` on `attribute` of the cgroup at `dir` through
    /// `cgroup.event_control`. Call from within a tokio runtime.
    ///
    /// # Errors
    /// The cgroup files cannot be opened or written (no v1 memory
    /// hierarchy, no permission), or the eventfd cannot be made.
    pub fn new(dir: &Path, attribute: &str, level: u64) -> Result<Self, NotifierError> {
        let err = |path: PathBuf| move |source: std::io::Error| NotifierError { path, level, source };
        let attr_path = dir.join(attribute);
        let attribute_file = File::open(&attr_path).map_err(err(attr_path.clone()))?;
        let event = EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
            .map_err(|e| err(attr_path.clone())(std::io::Error::from(e)))?;
        let control_path = dir.join("cgroup.event_control");
        let line = format!("{} {} {}", event.as_raw_fd(), attribute_file.as_raw_fd(), level);
        OpenOptions::new()
            .write(true)
            .open(&control_path)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(err(control_path.clone()))?;
        // SAFETY: the EventFd owns its descriptor, which stays open and the
        // same until the AsyncFd (which owns the EventFd) is dropped.
        let event = unsafe { AsyncFd::register(event) }.map_err(|e| err(control_path)(e.into()))?;
        Ok(Self {
            event,
            _attribute: attribute_file,
            what: format!("{} > {level}", attr_path.display()),
        })
    }

    /// Waits until the level is crossed (again).
    ///
    /// # Errors
    /// The eventfd cannot be read.
    pub async fn crossed(&self) -> std::io::Result<()> {
        loop {
            let mut ready = self.event.readable().await?;
            match ready.get_inner().read() {
                Ok(_) => return Ok(()),
                Err(nix::errno::Errno::EAGAIN) => ready.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eviction::Value;

    fn threshold(signal: Signal, grace: u64) -> Threshold {
        Threshold {
            signal,
            value: Value::Percentage(0.1),
            grace_period: Duration::from_secs(grace),
            min_reclaim: None,
        }
    }

    #[test]
    fn descriptions_and_cgroups_follow_upstream() {
        let soft_alloc = threshold(Signal::AllocatableMemoryAvailable, 30);
        assert_eq!(description(&soft_alloc), "soft allocatable memory eviction threshold");
        assert!(watches(&soft_alloc));
        assert!(!watches(&threshold(Signal::NodeFsAvailable, 0)));
        let mount = Path::new("/sys/fs/cgroup/memory");
        assert_eq!(cgroup_dir(&soft_alloc, mount, "/kubepods"), mount.join("kubepods"));
        assert_eq!(
            cgroup_dir(&threshold(Signal::MemoryAvailable, 0), mount, "/kubepods"),
            mount
        );
    }

    #[test]
    fn a_percentage_is_of_the_capacity_and_incomplete_stats_give_nothing() {
        // capacity 1000, 10 % → 100; inactive file 50.
        assert_eq!(
            usage_level(450, 400, 600, Value::Percentage(0.1)),
            Some(1000 - 100 + 50)
        );
        let t = "2026-01-01T00:00:00Z";
        let summary: Summary = serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "n", "startTime": t,
                     "memory": {"time": t, "usageBytes": 450, "availableBytes": 600}},
            "pods": []
        }))
        .unwrap();
        assert_eq!(level_for(&threshold(Signal::MemoryAvailable, 0), &summary), None);
    }
}
