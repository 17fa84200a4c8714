//! SyncLoop → PodWorkers → PodWorker: the work a pod worker performs.

use std::sync::Arc;
use std::time::Duration;

use actix::Message;
use k8s_openapi::api::core::v1::Pod;

use super::PodUid;

/// The kind of a sync (upstream's `SyncPodType` without `Kill`, which is
/// [`PodWork::Kill`]).
///
/// ```
/// use actlet::messages::pod_work::SyncKind;
/// assert_ne!(SyncKind::Create, SyncKind::Sync);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncKind {
    /// The pod was just added.
    Create,
    /// The pod's spec or metadata changed.
    Update,
    /// Periodic or event-driven resync.
    Sync,
}

/// What a pod worker is asked to do: bring the pod to its spec, or
/// terminate it. Only valid combinations are expressible: kill options
/// exist only on a kill.
///
/// ```
/// use actlet::messages::pod_work::{KillOptions, PodWork, SyncKind};
/// let work = PodWork::Kill(KillOptions::default());
/// assert!(work.is_kill() && !PodWork::Sync(SyncKind::Create).is_kill());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodWork {
    /// Sync the pod (create, update or resync).
    Sync(SyncKind),
    /// Terminate the pod (removed, deleted, evicted, or unwanted).
    Kill(KillOptions),
}

impl PodWork {
    /// Whether this terminates the pod.
    pub fn is_kill(&self) -> bool {
        matches!(self, PodWork::Kill(_))
    }

    /// The kill options, for a kill.
    pub fn kill_options(&self) -> Option<&KillOptions> {
        match self {
            PodWork::Kill(k) => Some(k),
            PodWork::Sync(_) => None,
        }
    }

    /// The sync kind, for a sync.
    pub fn sync_kind(&self) -> Option<SyncKind> {
        match self {
            PodWork::Sync(k) => Some(*k),
            PodWork::Kill(_) => None,
        }
    }
}

/// How to kill a pod (with [`PodWork::Kill`]).
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
///     status: Some(KillStatus { phase: "Failed".into(), reason: "Evicted".into(), message: "The node was low on resource: memory. ".into(), disruption: true }),
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
    /// The kubelet disrupts the pod (eviction, node shutdown): the status
    /// gets a `DisruptionTarget` condition, reason `TerminationByKubelet`.
    pub disruption: bool,
}

/// SyncLoop → PodWorkers: work for the worker of `pod`'s UID.
///
/// Receiver guarantees: one update at a time per pod; while a sync runs only
/// the latest pending update is kept, but a pending `Kill` is never replaced
/// by a non-kill; once a pod is terminating it never syncs again.
///
/// ```
/// use std::sync::Arc;
/// use actlet::messages::pod_work::{KillOptions, SyncKind, UpdatePod};
/// let pod = Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build());
/// let kill = UpdatePod::kill(pod.clone(), KillOptions::default());
/// assert!(kill.work.is_kill() && kill.pod.metadata.uid.as_deref() == Some("u1"));
/// assert!(!UpdatePod::sync(SyncKind::Create, pod).work.is_kill());
/// ```
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct UpdatePod {
    /// The desired pod.
    pub pod: Arc<Pod>,
    /// What to do.
    pub work: PodWork,
}

impl UpdatePod {
    /// Sync `pod`.
    pub fn sync(kind: SyncKind, pod: Arc<Pod>) -> Self {
        Self {
            pod,
            work: PodWork::Sync(kind),
        }
    }

    /// Terminate `pod` as `options` say.
    pub fn kill(pod: Arc<Pod>, options: KillOptions) -> Self {
        Self {
            pod,
            work: PodWork::Kill(options),
        }
    }
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

/// SyncLoop → PodWorkers: forget the workers of these pods (housekeeping:
/// pods no longer desired whose workers have terminated).
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct ForgetWorkers(pub Vec<PodUid>);

/// Anyone → PodWorkers: the lifecycle state of every known worker (the same
/// as `PodSyncStatuses::states`, which readers should prefer).
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "std::collections::HashMap<PodUid, WorkerState>")]
pub struct GetWorkerStates;
