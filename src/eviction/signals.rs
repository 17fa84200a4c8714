//! Pure: what each signal observes in a `/stats/summary` (upstream
//! `makeSignalObservations`) and which thresholds those observations meet
//! (upstream `thresholdsMet`).

use std::collections::BTreeMap;

use super::thresholds::{Signal, Threshold};
use crate::stats::types::{FsStats, Summary};

/// One signal's reading: what is left, out of what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Bytes, inodes or pids available.
    pub available: i64,
    /// The total they are a share of.
    pub capacity: i64,
}

/// The readings by signal (a signal the summary cannot tell is absent, and
/// its thresholds are never met).
pub type Observations = BTreeMap<Signal, Observation>;

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn fs(out: &mut Observations, fs: Option<&FsStats>, bytes: Signal, inodes: Signal) {
    let Some(fs) = fs else { return };
    if let (Some(a), Some(c)) = (fs.available_bytes, fs.capacity_bytes) {
        out.insert(
            bytes,
            Observation {
                available: i(a),
                capacity: i(c),
            },
        );
    }
    if let (Some(a), Some(c)) = (fs.inodes_free, fs.inodes) {
        out.insert(
            inodes,
            Observation {
                available: i(a),
                capacity: i(c),
            },
        );
    }
}

/// The observations in `summary`; `allocatable_memory` (bytes, node
/// allocatable) gives `allocatableMemory.available` as allocatable minus the
/// pods' working set. `containerfs` is the image filesystem (the summary has
/// no separate writable-layer filesystem, as a runtime that does not split
/// them reports).
///
/// ```
/// use actlet::eviction::{Signal, observe};
/// use actlet::stats::types::Summary;
/// let summary: Summary = serde_json::from_value(serde_json::json!({
///     "node": {"nodeName": "n", "startTime": "2026-01-01T00:00:00Z",
///              "memory": {"time": "2026-01-01T00:00:00Z", "availableBytes": 300, "workingSetBytes": 700}},
///     "pods": []})).unwrap();
/// let obs = observe(&summary, None);
/// assert_eq!((obs[&Signal::MemoryAvailable].available, obs[&Signal::MemoryAvailable].capacity), (300, 1000));
/// assert!(!obs.contains_key(&Signal::PidAvailable));
/// ```
pub fn observe(summary: &Summary, allocatable_memory: Option<i64>) -> Observations {
    let mut out = Observations::new();
    let node = &summary.node;
    if let Some(m) = &node.memory
        && let (Some(a), Some(ws)) = (m.available_bytes, m.working_set_bytes)
    {
        out.insert(
            Signal::MemoryAvailable,
            Observation {
                available: i(a),
                capacity: i(a).saturating_add(i(ws)),
            },
        );
    }
    if let Some(alloc) = allocatable_memory {
        let used: i64 = summary
            .pods
            .iter()
            .filter_map(|p| p.memory.as_ref().and_then(|m| m.working_set_bytes))
            .map(i)
            .fold(0, i64::saturating_add);
        out.insert(
            Signal::AllocatableMemoryAvailable,
            Observation {
                available: (alloc - used).max(0),
                capacity: alloc,
            },
        );
    }
    fs(
        &mut out,
        node.fs.as_ref(),
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
    );
    let image_fs = node.runtime.as_ref().and_then(|r| r.image_fs.as_ref());
    fs(&mut out, image_fs, Signal::ImageFsAvailable, Signal::ImageFsInodesFree);
    fs(
        &mut out,
        image_fs,
        Signal::ContainerFsAvailable,
        Signal::ContainerFsInodesFree,
    );
    if let Some(r) = &node.rlimit
        && let (Some(max), Some(cur)) = (r.maxpid, r.curproc)
    {
        out.insert(
            Signal::PidAvailable,
            Observation {
                available: (max - cur).max(0),
                capacity: max,
            },
        );
    }
    out
}

/// The level below which `t` is met against `obs` (with its minimum reclaim
/// added when `with_min_reclaim`).
pub fn level(t: &Threshold, obs: &Observation, with_min_reclaim: bool) -> i64 {
    let mut q = t.value.quantity(obs.capacity);
    if with_min_reclaim && let Some(r) = t.min_reclaim {
        q = q.saturating_add(r.quantity(obs.capacity));
    }
    q
}

/// Indices of the thresholds `observations` meet (upstream `thresholdsMet`:
/// `available < threshold`, the minimum reclaim added when
/// `with_min_reclaim`, for thresholds not yet resolved).
pub fn met(thresholds: &[Threshold], observations: &Observations, with_min_reclaim: bool) -> Vec<usize> {
    thresholds
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            observations
                .get(&t.signal)
                .is_some_and(|o| level(t, o, with_min_reclaim) > o.available)
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::eviction::thresholds::Value;

    fn t(signal: Signal, value: Value, min_reclaim: Option<Value>) -> Threshold {
        Threshold {
            signal,
            value,
            grace_period: Duration::ZERO,
            min_reclaim,
        }
    }

    #[test]
    fn filesystems_and_pids_are_observed() {
        let s: Summary = serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "n", "startTime": "2026-01-01T00:00:00Z",
                "fs": {"time": "2026-01-01T00:00:00Z", "availableBytes": 10, "capacityBytes": 100, "inodesFree": 5, "inodes": 50},
                "runtime": {"imageFs": {"time": "2026-01-01T00:00:00Z", "availableBytes": 20, "capacityBytes": 200}},
                "rlimit": {"time": "2026-01-01T00:00:00Z", "maxpid": 1000, "curproc": 990}},
            "pods": []
        }))
        .unwrap();
        let o = observe(&s, None);
        assert_eq!(
            o[&Signal::NodeFsAvailable],
            Observation {
                available: 10,
                capacity: 100
            }
        );
        assert_eq!(
            o[&Signal::NodeFsInodesFree],
            Observation {
                available: 5,
                capacity: 50
            }
        );
        assert_eq!(
            o[&Signal::ImageFsAvailable],
            Observation {
                available: 20,
                capacity: 200
            }
        );
        assert_eq!(o[&Signal::ContainerFsAvailable], o[&Signal::ImageFsAvailable]);
        assert!(!o.contains_key(&Signal::ImageFsInodesFree));
        assert_eq!(
            o[&Signal::PidAvailable],
            Observation {
                available: 10,
                capacity: 1000
            }
        );
        assert!(!o.contains_key(&Signal::MemoryAvailable));
    }

    #[test]
    fn threshold_met_strictly_below_and_min_reclaim_extends_it() {
        let mut o = Observations::new();
        o.insert(
            Signal::MemoryAvailable,
            Observation {
                available: 100,
                capacity: 1000,
            },
        );
        o.insert(
            Signal::NodeFsAvailable,
            Observation {
                available: 150,
                capacity: 1000,
            },
        );
        let ts = [
            t(Signal::MemoryAvailable, Value::Quantity(100), Some(Value::Quantity(50))),
            t(
                Signal::NodeFsAvailable,
                Value::Percentage(0.1),
                Some(Value::Percentage(0.1)),
            ),
            t(Signal::PidAvailable, Value::Quantity(1 << 20), None),
        ];
        assert!(
            met(&ts, &o, false).is_empty(),
            "100 is not below 100, 150 not below 10%"
        );
        assert_eq!(met(&ts, &o, true), vec![0, 1]);
    }
}
