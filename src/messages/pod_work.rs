//! SyncLoop → PodWorkers → PodWorker: the work a pod worker performs.

use std::sync::Arc;
use std::time::Duration;

use actix::Message;
use k8s_openapi::api::core::v1::Pod;

use super::PodUid;

/// Upstream's `SyncPodType`.
///
/// ```
/// use actlet::messages::pod_work::UpdateType;
/// let terminates = |t| t == UpdateType::Kill;
/// assert!(terminates(UpdateType::Kill) && !terminates(UpdateType::Sync));
/// ```
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
///
/// ```
/// use std::time::Duration;
/// use actlet::messages::pod_work::KillOptions;
/// let force = KillOptions { grace_period_override: Some(Duration::ZERO), ..Default::default() };
/// assert_eq!(force.status, None);
/// assert_ne!(force, KillOptions::default());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KillOptions {
    /// Overrides the pod's `terminationGracePeriodSeconds`
    /// (e.g. `deletionGracePeriodSeconds`, or 0 for a force delete).
    pub grace_period_override: Option<Duration>,
    /// The phase and reason to record, e.g. Failed / Evicted.
    pub status: Option<KillStatus>,
}

/// Status to set on a killed pod.
///
/// ```
/// use actlet::messages::pod_work::{KillOptions, KillStatus};
/// let evict = KillOptions {
///     status: Some(KillStatus { phase: "Failed".into(), reason: "Evicted".into(), message: "The node was low on resource: memory.".into() }),
///     ..Default::default()
/// };
/// assert_eq!(evict.status.unwrap().reason, "Evicted");
/// ```
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
///
/// ```
/// use std::sync::Arc;
/// use actlet::messages::pod_work::{KillOptions, UpdatePod, UpdateType};
/// let pod = Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build());
/// let kill = UpdatePod { update_type: UpdateType::Kill, pod, kill: Some(KillOptions::default()) };
/// assert_eq!(kill.pod.metadata.uid.as_deref(), Some("u1"));
/// ```
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
///
/// ```
/// use actlet::messages::pod_work::{SyncFinished, WorkerState};
/// let done = SyncFinished { uid: "u1".into(), error: Some("ErrImagePull".into()), state: WorkerState::Syncing };
/// assert!(done.error.is_some() && done.state == WorkerState::Syncing); // retried with backoff
/// ```
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
///
/// ```
/// use actlet::messages::pod_work::WorkerState;
/// // the lifecycle only moves forward
/// assert!(WorkerState::Syncing < WorkerState::Terminating);
/// assert!(WorkerState::Terminating < WorkerState::Terminated);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkerState {
    /// Running the pod toward its spec.
    Syncing,
    /// Stopping containers.
    Terminating,
    /// Nothing runs; the worker can be forgotten.
    Terminated,
}
