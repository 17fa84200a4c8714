//! SyncLoop → PodWorkers → PodWorker: the work a pod worker performs.

use std::sync::Arc;
use std::time::Duration;

use actix::Message;
use k8s_openapi::api::core::v1::Pod;

use super::PodUid;

/// Upstream's `SyncPodType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpdateType {
    /// The pod was just added.
    Create,
    /// The pod's spec or metadata changed.
    Update,
    /// Periodic or event-driven resync.
    Sync,
    /// Terminate the pod (removed, deleted, evicted, or unwanted).
    Kill,
}

/// How to kill a pod (with `UpdateType::Kill`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KillOptions {
    /// Overrides the pod's `terminationGracePeriodSeconds`
    /// (e.g. `deletionGracePeriodSeconds`, or 0 for a force delete).
    pub grace_period_override: Option<Duration>,
    /// The phase and reason to record, e.g. Failed / Evicted.
    pub status: Option<KillStatus>,
}

/// Status to set on a killed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KillStatus {
    /// `Failed` or `Succeeded`.
    pub phase: String,
    /// Machine-readable reason (e.g. `Evicted`).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

/// SyncLoop → PodWorkers: work for the worker of `pod`'s UID.
///
/// Receiver guarantees: one update at a time per pod; while a sync runs only
/// the latest pending update is kept, but a pending `Kill` is never replaced
/// by a non-kill; once a pod is terminating it never syncs again.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct UpdatePod {
    /// What to do.
    pub update_type: UpdateType,
    /// The desired pod.
    pub pod: Arc<Pod>,
    /// Kill options (for `UpdateType::Kill`).
    pub kill: Option<KillOptions>,
}

/// PodWorker → PodWorkers/SyncLoop: a sync finished.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct SyncFinished {
    /// The pod.
    pub uid: PodUid,
    /// Error text when the sync failed (retried later with backoff).
    pub error: Option<String>,
    /// The worker's lifecycle state after the sync.
    pub state: WorkerState,
}

/// A pod worker's lifecycle: `Syncing → Terminating → Terminated`, never back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkerState {
    /// Running the pod toward its spec.
    Syncing,
    /// Stopping containers.
    Terminating,
    /// Nothing runs; the worker can be forgotten.
    Terminated,
}
