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
///
/// ```
/// use actlet::messages::status::SetPodStatus;
/// use k8s_openapi::api::core::v1::PodStatus;
/// let msg = SetPodStatus { uid: "u1".into(), status: PodStatus { phase: Some("Running".into()), ..Default::default() } };
/// assert_eq!(msg.status.phase.as_deref(), Some("Running"));
/// ```
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct SetPodStatus {
    /// The pod.
    pub uid: PodUid,
    /// The status generated from the runtime state.
    pub status: PodStatus,
}

/// Anyone → StatusManager: forget a pod that is gone.
///
/// ```
/// use actlet::messages::status::ForgetPodStatus;
/// let msg = ForgetPodStatus { uid: "u1".into() };
/// assert_eq!(msg.uid.as_str(), "u1");
/// ```
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
///
/// ```
/// use std::sync::Arc;
/// use actlet::messages::status::UpdatePodStatus;
/// use k8s_openapi::api::core::v1::PodStatus;
/// let pod = Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build());
/// let msg = UpdatePodStatus { pod, status: PodStatus { phase: Some("Pending".into()), ..Default::default() } };
/// assert_eq!(msg.pod.metadata.uid.as_deref(), Some("u1"));
/// ```
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct UpdatePodStatus {
    /// The pod (its UID keys the status).
    pub pod: Arc<Pod>,
    /// The status generated from the runtime state.
    pub status: PodStatus,
}

/// Anyone → StatusManager: the cached status of a pod, if any.
///
/// ```
/// use actlet::messages::status::GetPodStatus;
/// let query = GetPodStatus { uid: "u1".into() }; // answered with Option<PodStatus>
/// assert_eq!(query.uid.as_str(), "u1");
/// ```
#[derive(Clone, Debug, Message)]
#[rtype(result = "Option<PodStatus>")]
pub struct GetPodStatus {
    /// The pod.
    pub uid: PodUid,
}

/// StatusManager → subscribers: a pod's cached status changed (sent once per
/// version bump, after the shared cache holds the new status).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use actlet::messages::status::PodStatusChanged;
/// use actlet::status::Phase;
/// use actlet::testing::{PodBuilder, TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let seen: Arc<Mutex<Vec<PodStatusChanged>>> = Arc::default();
///     let log = seen.clone();
///     let node = TestNode::builder().customize(move |b| b.on_pod_status(move |c| log.lock().unwrap().push(c))).start();
///     node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
///     let running = || seen.lock().unwrap().iter().any(|c| c.uid.as_str() == "u1" && c.new_phase == Some(Phase::Running));
///     wait_until(running, Duration::from_secs(30)).await.unwrap();
///     assert_eq!(seen.lock().unwrap()[0].old_phase, None); // the first change of a new pod
/// });
/// ```
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
///
/// ```
/// use actix::Actor;
/// use actlet::messages::status::{PodStatusChanged, SubscribeStatus};
///
/// struct Observer;
/// impl Actor for Observer { type Context = actix::Context<Self>; }
/// impl actix::Handler<PodStatusChanged> for Observer {
///     type Result = ();
///     fn handle(&mut self, c: PodStatusChanged, _: &mut Self::Context) { println!("{} is now {:?}", c.uid, c.new_phase) }
/// }
/// actlet::testing::run_paused(async {
///     let subscribe = SubscribeStatus { subscriber: Observer.start().recipient() }; // send to the StatusManager
///     assert!(subscribe.subscriber.connected());
/// });
/// ```
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct SubscribeStatus {
    /// Where to send changes.
    pub subscriber: Recipient<PodStatusChanged>,
}

/// Status manager → status syncer (through the status sync sink).
#[derive(Clone, Debug, actix::Message)]
#[rtype(result = "()")]
pub enum StatusSyncEvent {
    /// The pod's status changed: write the latest one.
    Changed(crate::messages::PodUid),
    /// The status manager forgot the pod: stop writing it.
    Forgotten(crate::messages::PodUid),
}

/// Anyone → status syncer: re-check every pod now (as the periodic resync does).
#[derive(Clone, Copy, Debug, Default, actix::Message)]
#[rtype(result = "()")]
pub struct ResyncStatuses;

/// Anyone → status syncer: how many pods each of its per-pod sets holds
/// (a leak check, issue #10: once pods are forgotten, the syncer holds only
/// pods that still have a status).
#[derive(Clone, Copy, Debug, Default, actix::Message)]
#[rtype(result = "SyncerPods")]
pub struct GetSyncerPods;

/// The sizes of the status syncer's per-pod sets (answer to [`GetSyncerPods`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncerPods {
    /// Pods waiting for a write.
    pub dirty: usize,
    /// Pods with a write or delete in flight.
    pub in_flight: usize,
    /// Pods waiting for their retry delay.
    pub backing_off: usize,
    /// Pods with failed writes counted.
    pub failures: usize,
    /// Pods with a written status version.
    pub written: usize,
    /// Pods finished with (deleted from the API or gone from it).
    pub done: usize,
    /// Distinct pods in any of the sets.
    pub total: usize,
}

/// Anyone → mirror pods manager: compare static pods with mirror pods now
/// (e.g. after the static pods changed).
#[derive(Clone, Copy, Debug, Default, actix::Message)]
#[rtype(result = "()")]
pub struct SyncMirrorPods;
