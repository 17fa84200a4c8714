//! Pleg → SyncLoop: pod lifecycle events found by relisting the runtime.

use actix::Message;

use super::PodUid;

/// Upstream's `PodLifeCycleEventType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlegEventType {
    /// A container is now running.
    ContainerStarted,
    /// A container stopped running.
    ContainerDied,
    /// A container disappeared from the runtime.
    ContainerRemoved,
    /// A container changed state in another way (e.g. created).
    ContainerChanged,
    /// The pod needs a sync (e.g. its sandbox changed).
    PodSync,
}

/// Pleg → SyncLoop: something changed in the runtime for one pod.
///
/// Guarantee: when this is sent, the pod cache already holds a status of the
/// pod stamped later than the change.
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct PodLifecycleEvent {
    /// The pod (from the `io.kubernetes.pod.uid` label).
    pub uid: PodUid,
    /// What happened.
    pub kind: PlegEventType,
    /// The container (or sandbox) id concerned.
    pub id: String,
}

/// Pleg → observers: the relister's health (healthy while the last relist
/// finished within 3 minutes).
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct PlegHealth {
    /// Healthy or not.
    pub healthy: bool,
    /// "PLEG is not healthy: pleg was last seen active …" when unhealthy.
    pub message: String,
}

/// Pleg → SyncLoop: every event of one relist, in one message (explicit
/// coalescing: one mailbox slot per relist however many containers changed).
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct PlegEvents(pub Vec<PodLifecycleEvent>);
