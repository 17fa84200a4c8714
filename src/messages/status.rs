//! PodWorker → StatusManager: the API status of pods.

use actix::Message;
use k8s_openapi::api::core::v1::PodStatus;

use super::PodUid;

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
