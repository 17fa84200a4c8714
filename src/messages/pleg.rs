//! Pleg → SyncLoop: pod lifecycle events found by relisting the runtime.

use actix::Message;

use super::PodUid;

/// Upstream's `PodLifeCycleEventType`.
///
/// ```
/// use actlet::messages::pleg::{PlegEventType, PodLifecycleEvent};
/// let e = PodLifecycleEvent { uid: "u1".into(), kind: PlegEventType::ContainerDied, id: "c1".into() };
/// assert!(matches!(e.kind, PlegEventType::ContainerDied | PlegEventType::ContainerRemoved));
/// ```
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
///
/// ```
/// use std::time::Duration;
/// use actlet::messages::pleg::PlegEventType;
/// use actlet::testing::{PodBuilder, TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let node = TestNode::start(); // records every PodLifecycleEvent
///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
///     let started = || node.events().count("default", "web", PlegEventType::ContainerStarted);
///     wait_until(|| started() >= 1, Duration::from_secs(30)).await.unwrap();
/// });
/// ```
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

/// Pleg → SyncLoop: every event of one relist, in one message (explicit
/// coalescing: one mailbox slot per relist however many containers changed).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use actlet::messages::pleg::{PlegEventType, PlegEvents};
/// use actlet::testing::{PodBuilder, TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let batches: Arc<Mutex<Vec<PlegEvents>>> = Arc::default();
///     let log = batches.clone();
///     let node = TestNode::builder()
///         .customize(move |b| b.on_pleg_events(move |e| log.lock().unwrap().push(e)))
///         .start();
///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
///     let started = || batches.lock().unwrap().iter().flat_map(|b| &b.0).any(|e| e.kind == PlegEventType::ContainerStarted);
///     wait_until(started, Duration::from_secs(30)).await.unwrap();
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct PlegEvents(pub Vec<PodLifecycleEvent>);
