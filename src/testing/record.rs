//! What a [`TestNode`](super::TestNode) records as it runs: PLEG events
//! ([`EventLog`]) and pod status changes ([`StatusLog`]).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::messages::PodUid;
use crate::messages::pleg::{PlegEventType, PlegEvents};
use crate::messages::status::PodStatusChanged;
use crate::pleg::PodCache;
use crate::status::Phase;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One PLEG event as a [`TestNode`](super::TestNode) saw it, with the names
/// resolved from the pod cache when it arrived.
///
/// ```
/// use std::time::Duration;
/// use actlet::messages::pleg::PlegEventType;
/// use actlet::testing::{PodBuilder, TestNode, run_paused};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("web").uid("u-web")
///         .container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
///     let e = node.wait_for_event("default", "web", Some("c"), PlegEventType::ContainerStarted,
///         Duration::from_secs(30)).await.unwrap();
///     assert_eq!((e.uid.as_str(), e.pod.as_str(), e.namespace.as_str()), ("u-web", "web", "default"));
///     assert_eq!(e.id.len(), 64); // the mock's container id
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedEvent {
    /// When it arrived, measured from the start of the node (virtual time).
    pub at: Duration,
    /// The pod.
    pub uid: PodUid,
    /// The pod's namespace (`""` if the cache did not know the pod).
    pub namespace: String,
    /// The pod's name (`""` if the cache did not know the pod).
    pub pod: String,
    /// The container's name, when the event is about a container the cache
    /// knew; `None` for the pod's sandbox (the PLEG reports sandbox changes
    /// as container events with the sandbox id, like upstream).
    pub container: Option<String>,
    /// What happened.
    pub kind: PlegEventType,
    /// The container (or sandbox) id.
    pub id: String,
}

/// Every PLEG event (`ContainerStarted`, `ContainerDied` …) a
/// [`TestNode`](super::TestNode) has seen, oldest first. Cheap to clone.
///
/// ```
/// use std::time::Duration;
/// use actlet::messages::pleg::PlegEventType;
/// use actlet::testing::{PodBuilder, TestNode, run_paused, wait_for_event};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("once").restart_policy("Never")
///         .container("c", "busybox:1.36", ["sh", "-c", "sleep 5"]).build()]);
///     let died = wait_for_event(node.events(), "default", "once", Some("c"),
///         PlegEventType::ContainerDied, Duration::from_secs(60)).await.unwrap();
///     assert!(died.at >= Duration::from_secs(5));
///     // the sandbox and the container started (sandbox events have no container name)
///     assert_eq!(node.events().count("default", "once", PlegEventType::ContainerStarted), 2);
///     let c_started = node.events().of_pod("default", "once").into_iter()
///         .filter(|e| e.kind == PlegEventType::ContainerStarted && e.container.as_deref() == Some("c"));
///     assert_eq!(c_started.count(), 1);
/// });
/// ```
#[derive(Clone, Default)]
pub struct EventLog {
    events: Arc<Mutex<Vec<RecordedEvent>>>,
    cache: Arc<OnceLock<PodCache>>,
    start: Arc<OnceLock<Instant>>,
}

impl EventLog {
    pub(crate) fn new(start: Instant) -> Self {
        let log = Self::default();
        let _ = log.start.set(start);
        log
    }

    /// Resolves names through `cache` from now on.
    pub(crate) fn attach(&self, cache: PodCache) {
        let _ = self.cache.set(cache);
    }

    /// Stores one batch (called by the PLEG observer).
    pub(crate) fn record(&self, batch: PlegEvents) {
        let at = self.start.get().map(|s| s.elapsed()).unwrap_or_default();
        let mut events = lock(&self.events);
        for e in batch.0 {
            let status = self.cache.get().and_then(|c| c.get(&e.uid)).and_then(|c| c.status);
            let (namespace, pod, container) = match status {
                Some(s) => (
                    s.namespace.clone(),
                    s.name.clone(),
                    s.containers.iter().find(|c| c.id == e.id).map(|c| c.name.clone()),
                ),
                None => (String::new(), String::new(), None),
            };
            events.push(RecordedEvent {
                at,
                uid: e.uid,
                namespace,
                pod,
                container,
                kind: e.kind,
                id: e.id,
            });
        }
    }

    /// Every event so far, oldest first.
    ///
    /// ```
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert!(node.events().all().is_empty()); // no pods, no events
    /// });
    /// ```
    pub fn all(&self) -> Vec<RecordedEvent> {
        lock(&self.events).clone()
    }

    /// The events of pod `namespace/name`, oldest first.
    ///
    /// ```
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert!(node.events().of_pod("default", "web").is_empty());
    /// });
    /// ```
    pub fn of_pod(&self, namespace: &str, name: &str) -> Vec<RecordedEvent> {
        lock(&self.events)
            .iter()
            .filter(|e| e.namespace == namespace && e.pod == name)
            .cloned()
            .collect()
    }

    /// How many events of `kind` pod `namespace/name` had (sandbox events included).
    ///
    /// ```
    /// use actlet::messages::pleg::PlegEventType;
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert_eq!(node.events().count("default", "web", PlegEventType::ContainerDied), 0);
    /// });
    /// ```
    pub fn count(&self, namespace: &str, name: &str, kind: PlegEventType) -> usize {
        lock(&self.events)
            .iter()
            .filter(|e| e.namespace == namespace && e.pod == name && e.kind == kind)
            .count()
    }
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("events", &lock(&self.events).len())
            .finish()
    }
}

/// One change of a pod's API status, as the status manager announced it.
///
/// ```
/// use std::time::Duration;
/// use actlet::status::Phase;
/// use actlet::testing::{PodBuilder, TestNode, run_paused};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("job").uid("u-job").restart_policy("Never")
///         .container("c", "busybox:1.36", ["sh", "-c", "sleep 10"]).build()]);
///     node.wait_for_phase("default", "job", "Succeeded", Duration::from_secs(60)).await.unwrap();
///     let changes = node.status_changes().of_uid("u-job");
///     let done = changes.iter().find(|c| c.new_phase == Some(Phase::Succeeded)).unwrap();
///     assert_eq!(done.old_phase, Some(Phase::Running));
///     assert!(done.at >= Duration::from_secs(10)); // virtual time since the node started
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusChange {
    /// When it happened, measured from the start of the node (virtual time).
    pub at: Duration,
    /// The pod.
    pub uid: PodUid,
    /// The phase before (`None` for a new pod).
    pub old_phase: Option<Phase>,
    /// The phase after.
    pub new_phase: Option<Phase>,
    /// The status version (1, 2, …).
    pub version: u64,
}

/// Every pod status change a [`TestNode`](super::TestNode) has seen, oldest
/// first. Cheap to clone.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{PodBuilder, TestNode, run_paused};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("web").uid("u-web")
///         .container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
///     let changes = node.status_changes().of_uid("u-web");
///     assert_eq!(changes[0].version, 1);
///     assert_eq!(node.status_changes().phases_of_uid("u-web"), ["Pending", "Running"]);
/// });
/// ```
#[derive(Clone, Default)]
pub struct StatusLog {
    changes: Arc<Mutex<Vec<StatusChange>>>,
    start: Arc<OnceLock<Instant>>,
}

impl StatusLog {
    pub(crate) fn new(start: Instant) -> Self {
        let log = Self::default();
        let _ = log.start.set(start);
        log
    }

    /// Stores one change (called by the status observer).
    pub(crate) fn record(&self, c: PodStatusChanged) {
        let at = self.start.get().map(|s| s.elapsed()).unwrap_or_default();
        lock(&self.changes).push(StatusChange {
            at,
            uid: c.uid,
            old_phase: c.old_phase,
            new_phase: c.new_phase,
            version: c.version,
        });
    }

    /// Every change so far, oldest first.
    ///
    /// ```
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert!(node.status_changes().all().is_empty());
    /// });
    /// ```
    pub fn all(&self) -> Vec<StatusChange> {
        lock(&self.changes).clone()
    }

    /// The changes of pod `uid`, oldest first.
    ///
    /// ```
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert!(node.status_changes().of_uid("nope").is_empty());
    /// });
    /// ```
    pub fn of_uid(&self, uid: &str) -> Vec<StatusChange> {
        lock(&self.changes)
            .iter()
            .filter(|c| c.uid.as_str() == uid)
            .cloned()
            .collect()
    }

    /// The phases pod `uid` went through, in order, without repeats
    /// (e.g. `["Pending", "Running", "Succeeded"]`).
    ///
    /// ```
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert!(node.status_changes().phases_of_uid("nope").is_empty());
    /// });
    /// ```
    pub fn phases_of_uid(&self, uid: &str) -> Vec<String> {
        let mut phases: Vec<String> = vec![];
        for c in self.of_uid(uid) {
            for p in [c.old_phase, c.new_phase].into_iter().flatten() {
                if phases.last().map(String::as_str) != Some(p.as_str()) {
                    phases.push(p.as_str().to_string());
                }
            }
        }
        phases
    }
}

impl std::fmt::Debug for StatusLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusLog")
            .field("changes", &lock(&self.changes).len())
            .finish()
    }
}
