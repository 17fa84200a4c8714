//! PodWorker → StatusManager → observers: the API status of pods.

use std::sync::Arc;

use actix::{Message, Recipient};
use k8s_openapi::api::core::v1::{Pod, PodStatus};

use super::PodUid;
use crate::status::Phase;

/// PodWorker → StatusManager: the freshly generated status of a pod.
///
/// Receiver guarantees: a terminal phase is never left; a terminated container
/// never turns back to running; unchanged conditions keep their
/// lastTransitionTime; the latest status wins and is eventually written.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct SetPodStatus {
    /// The pod.
    pub uid: PodUid,
    /// The status generated from the runtime state.
    pub status: PodStatus,
}

/// Anyone → StatusManager: forget a pod that is gone.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct ForgetPodStatus {
    /// The pod.
    pub uid: PodUid,
}

/// PodWorker → StatusManager: the freshly generated status of `pod`, with the
/// pod itself (upstream `SetPodStatus(pod, status)`): the manager learns the
/// pod's name, namespace and restart rules, so container transitions are
/// checked. Same guarantees as `SetPodStatus`.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct UpdatePodStatus {
    /// The pod (its UID keys the status).
    pub pod: Arc<Pod>,
    /// The status generated from the runtime state.
    pub status: PodStatus,
}

/// Anyone → StatusManager: the cached status of a pod, if any.
#[derive(Clone, Debug, Message)]
#[rtype(result = "Option<PodStatus>")]
pub struct GetPodStatus {
    /// The pod.
    pub uid: PodUid,
}

/// StatusManager → subscribers: a pod's cached status changed (sent once per
/// version bump, after the shared cache holds the new status).
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct PodStatusChanged {
    /// The pod.
    pub uid: PodUid,
    /// Its phase before (`None` for a new pod).
    pub old_phase: Option<Phase>,
    /// Its phase now.
    pub new_phase: Option<Phase>,
    /// The new version.
    pub version: u64,
    /// The new status.
    pub status: Arc<PodStatus>,
}

/// Anyone → StatusManager: send me every [`PodStatusChanged`] from now on.
/// Subscribers whose mailbox is closed are dropped.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct SubscribeStatus {
    /// Where to send changes.
    pub subscriber: Recipient<PodStatusChanged>,
}
