//! The pod lifecycle histograms of `/metrics`, with upstream's names and
//! buckets (`pkg/kubelet/metrics/metrics.go`):
//! - `kubelet_pod_start_duration_seconds`: from the kubelet first seeing
//!   the pod (`kubernetes.io/config.seen`) to its phase first becoming
//!   `Running`;
//! - `kubelet_pod_start_sli_duration_seconds`: from the pod's creation to
//!   the same moment (upstream subtracts image pulling time; actlet does
//!   not track pulls per pod yet, so this includes it);
//! - `kubelet_pod_worker_duration_seconds{operation_type}`: one pod
//!   worker sync (`create`, `update`, `sync`, `kill`).
//!
//! Fed by a status manager subscriber ([`PodMetrics::status_observer`]) and
//! the pod workers; each pod's start is observed once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::actors::supervisor::SupervisedRecipient;
use crate::clock::WallClock;
use crate::messages::PodUid;
use crate::messages::status::PodStatusChanged;
use crate::pod_manager::PodManager;

type Labels = Vec<(String, String)>;

/// Upstream's buckets of the pod start histograms.
pub const POD_START_BUCKETS: [f64; 25] = [
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0, 300.0, 360.0, 480.0,
    600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0,
];

fn pod_start_histogram() -> Histogram {
    Histogram::new(POD_START_BUCKETS)
}

fn worker_histogram() -> Histogram {
    super::metrics::default_buckets()
}

/// The histograms (cheap to share).
pub struct PodMetrics {
    start: Histogram,
    sli: Histogram,
    worker: Family<Labels, Histogram, fn() -> Histogram>,
    started: Mutex<Started>,
}

/// Pods whose start was observed. Pods that are gone are pruned when the set
/// has doubled since the last prune: amortized O(1) per observation (a
/// prune on every observation made starting 10,000 pods quadratic).
#[derive(Debug)]
struct Started {
    uids: HashSet<PodUid>,
    prune_at: usize,
}

/// The smallest set size that is pruned.
const PRUNE_MIN: usize = 64;

impl Default for Started {
    fn default() -> Self {
        Self {
            uids: HashSet::new(),
            prune_at: PRUNE_MIN,
        }
    }
}

impl Started {
    /// Records `uid`; `false` if it was already there.
    fn insert(&mut self, uid: PodUid, still_known: impl Fn(&PodUid) -> bool) -> bool {
        if !self.uids.insert(uid) {
            return false;
        }
        if self.uids.len() > self.prune_at {
            self.uids.retain(|u| still_known(u));
            self.prune_at = (self.uids.len() * 2).max(PRUNE_MIN);
        }
        true
    }
}

impl std::fmt::Debug for PodMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PodMetrics")
    }
}

impl PodMetrics {
    /// Registers the histograms in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let me = Self {
            start: pod_start_histogram(),
            sli: pod_start_histogram(),
            worker: Family::new_with_constructor(worker_histogram),
            started: Mutex::default(),
        };
        registry.register(
            "kubelet_pod_start_duration_seconds",
            "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
            me.start.clone(),
        );
        registry.register(
            "kubelet_pod_start_sli_duration_seconds",
            "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
            me.sli.clone(),
        );
        registry.register(
            "kubelet_pod_worker_duration_seconds",
            "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
            me.worker.clone(),
        );
        Arc::new(me)
    }

    /// Observes one pod worker step of `operation_type`.
    pub fn observe_sync(&self, operation_type: &str, took: Duration) {
        let labels = vec![("operation_type".to_string(), operation_type.to_string())];
        self.worker.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// Observes a status change: the first time a pod's phase becomes
    /// `Running`, its start durations (read from `pods` at `now`).
    pub fn observe_status(&self, c: &PodStatusChanged, pods: &PodManager, now: jiff::Timestamp) {
        use crate::status::Phase;
        let running = |p: &Option<Phase>| matches!(p, Some(Phase::Running));
        if running(&c.old_phase) || !running(&c.new_phase) {
            return;
        }
        {
            let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
            if !started.insert(c.uid.clone(), |uid| pods.contains(uid)) {
                return;
            }
        }
        let Some(desired) = pods.get(&c.uid) else { return };
        let meta = &desired.pod.metadata;
        let seen = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(crate::config::annotations::CONFIG_SEEN))
            .and_then(|s| s.parse::<jiff::Timestamp>().ok());
        let created = meta.creation_timestamp.as_ref().map(|t| t.0).or(seen);
        let secs = |from: jiff::Timestamp| (now - from).total(jiff::Unit::Second).ok().filter(|s| *s >= 0.0);
        if let Some(s) = seen.and_then(secs) {
            self.start.observe(s);
        }
        if let Some(s) = created.and_then(secs) {
            self.sli.observe(s);
        }
    }

    /// A status manager subscriber feeding [`observe_status`](Self::observe_status).
    pub fn status_observer(
        self: &Arc<Self>,
        pods: PodManager,
        clock: WallClock,
    ) -> SupervisedRecipient<PodStatusChanged> {
        let me = self.clone();
        SupervisedRecipient::from_fn(move |c: PodStatusChanged| me.observe_status(&c, &pods, clock.now()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    #[test]
    fn the_started_set_is_pruned_of_gone_pods_when_it_doubles() {
        let mut s = super::Started::default();
        let known = |u: &PodUid| u.as_str().starts_with("keep");
        for i in 0..64 {
            assert!(s.insert(PodUid::new(format!("gone-{i}")), known));
        }
        assert_eq!(s.uids.len(), 64, "not pruned before the threshold");
        assert!(!s.insert(PodUid::new("gone-3"), known), "already observed");
        assert!(s.insert(PodUid::new("keep-1"), known));
        assert_eq!(s.uids.len(), 1, "the gone pods were pruned");
        assert_eq!(s.prune_at, 64);
        for i in 0..200 {
            s.insert(PodUid::new(format!("keep-x{i}")), known);
        }
        assert_eq!(s.uids.len(), 201, "known pods stay");
    }

    use k8s_openapi::api::core::v1::{Pod, PodStatus};

    use super::*;
    use crate::status::Phase;

    fn encode(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    fn change(uid: &str, old: Option<Phase>, new: Option<Phase>) -> PodStatusChanged {
        PodStatusChanged {
            uid: PodUid::new(uid),
            old_phase: old,
            new_phase: new,
            version: 1,
            status: Arc::new(PodStatus::default()),
        }
    }

    #[test]
    fn a_pod_start_is_observed_once_from_seen_and_created() {
        let mut registry = Registry::default();
        let m = PodMetrics::register(&mut registry);
        let pods = PodManager::new();
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                "creationTimestamp": "2024-01-01T00:00:00Z",
                "annotations": {"kubernetes.io/config.seen": "2024-01-01T00:00:02Z"}},
        }))
        .unwrap();
        pods.upsert(Arc::new(pod), crate::messages::pod_update::PodSource::File);
        let now: jiff::Timestamp = "2024-01-01T00:00:05Z".parse().unwrap();
        m.observe_status(&change("u1", None, Some(Phase::Pending)), &pods, now);
        assert!(encode(&registry).contains("kubelet_pod_start_duration_seconds_count 0"));
        m.observe_status(&change("u1", Some(Phase::Pending), Some(Phase::Running)), &pods, now);
        m.observe_status(&change("u1", Some(Phase::Running), Some(Phase::Running)), &pods, now);
        m.observe_status(&change("u1", Some(Phase::Pending), Some(Phase::Running)), &pods, now);
        let text = encode(&registry);
        assert!(text.contains("kubelet_pod_start_duration_seconds_sum 3.0\n"), "{text}");
        assert!(text.contains("kubelet_pod_start_duration_seconds_count 1\n"), "{text}");
        assert!(
            text.contains("kubelet_pod_start_sli_duration_seconds_sum 5.0\n"),
            "{text}"
        );
        assert!(
            text.contains("kubelet_pod_start_duration_seconds_bucket{le=\"3.0\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("kubelet_pod_start_duration_seconds_bucket{le=\"2.0\"} 0\n"),
            "{text}"
        );
    }

    #[test]
    fn worker_syncs_are_observed_by_operation_type() {
        let mut registry = Registry::default();
        let m = PodMetrics::register(&mut registry);
        m.observe_sync("create", Duration::from_millis(30));
        m.observe_sync("sync", Duration::from_millis(1));
        m.observe_sync("sync", Duration::from_millis(1));
        let text = encode(&registry);
        assert!(
            text.contains("kubelet_pod_worker_duration_seconds_count{operation_type=\"sync\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("kubelet_pod_worker_duration_seconds_count{operation_type=\"create\"} 1"),
            "{text}"
        );
    }
}
