//! [`TestNode`]: the whole actlet system on a [`MockRuntime`], fed pods by
//! the test.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};
use tokio::sync::watch;
use tokio::time::Instant;

use super::record::{EventLog, RecordedEvent, StatusLog};
use super::wait::{self, WaitError};
use crate::actors::supervisor::{ShutdownReport, SupervisorError};
use crate::clock::WallClock;
use crate::cri::mock::MockRuntime;
use crate::cri::{Runtime, SharedRuntime};
use crate::embed::{ActletBuilder, PodSource, SourceError};
use crate::kubelet::Kubelet;
use crate::kuberuntime::convert::timestamp_from_system_time;
use crate::messages::pleg::PlegEventType;

type Customization = Box<dyn FnOnce(ActletBuilder) -> ActletBuilder>;

/// Configures a [`TestNode`] before it starts.
///
/// ```
/// use actlet::cri::mock::{Behaviour, MockRuntime};
/// use actlet::testing::TestNode;
///
/// actlet::testing::run_paused(async {
///     let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
///     let node = TestNode::builder()
///         .mock(mock)
///         .customize(|b| b.configure(|c| c.max_pods = 10).on_pod_status(|c| println!("{}", c.uid)))
///         .start();
///     assert_eq!(node.kubelet().pods.len(), 0);
/// });
/// ```
#[must_use = "call start()"]
pub struct TestNodeBuilder {
    mock: Option<MockRuntime>,
    runtime: Option<SharedRuntime>,
    customizations: Vec<Customization>,
}

impl TestNodeBuilder {
    /// The mock runtime to run on (default: [`MockRuntime::new`]).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// let node = actlet::testing::TestNode::builder().mock(mock.clone()).start();
    /// mock.set_down(true);
    /// assert!(node.mock().is_down()); // the same mock
    /// # });
    /// ```
    pub fn mock(mut self, mock: MockRuntime) -> Self {
        self.mock = Some(mock);
        self
    }

    /// What the kubelet talks to, when it is not the mock itself — e.g. a
    /// [`HookedRuntime`](super::HookedRuntime) around it. The mock (given
    /// with [`mock`](Self::mock)) stays what [`TestNode::mock`] returns and
    /// what supplies the virtual wall clock.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::MockRuntime;
    /// use actlet::testing::{HookedRuntime, TestNode};
    /// let mock = MockRuntime::new();
    /// let node = TestNode::builder()
    ///     .mock(mock.clone())
    ///     .runtime(HookedRuntime::new(mock, |call| tracing::debug!(method = call.method)))
    ///     .start();
    /// # let _ = node;
    /// # });
    /// ```
    pub fn runtime(mut self, runtime: impl Runtime) -> Self {
        self.runtime = Some(Arc::new(runtime));
        self
    }

    /// Adjusts the [`ActletBuilder`] after the test defaults are set: more
    /// sources and observers, other settings ([`ActletBuilder::configure`]).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::builder()
    ///     .customize(|b| b.configure(|c| c.node_name = "other".into()))
    ///     .start();
    /// # let _ = node;
    /// # });
    /// ```
    pub fn customize(mut self, f: impl FnOnce(ActletBuilder) -> ActletBuilder + 'static) -> Self {
        self.customizations.push(Box::new(f));
        self
    }

    /// Starts the system in the current actix `System` (e.g. inside
    /// [`run_paused`](super::run_paused)).
    ///
    /// The actors start as soon as the test yields (awaits anything).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{TestNode, wait_until};
    /// let node = TestNode::builder().start();
    /// let tree = node.kubelet().tree();
    /// wait_until(|| tree.get("root/source-test").is_some(), Duration::from_secs(1)).await.unwrap();
    /// # });
    /// ```
    ///
    /// # Panics
    /// If the temporary directory cannot be created or the system does not start.
    pub fn start(self) -> TestNode {
        let mock = self.mock.unwrap_or_default();
        let runtime = self.runtime.unwrap_or_else(|| Arc::new(mock.clone()));
        let dir = TempDir::new().unwrap_or_else(|e| panic!("TestNode: cannot create a temporary directory: {e}"));
        let started = Instant::now();
        let events = EventLog::new(started);
        let statuses = StatusLog::new(started);
        let (pods, rx) = watch::channel(Vec::new());
        let clock = mock.clock().clone();
        let root = dir.path().to_path_buf();
        let (ev, st) = (events.clone(), statuses.clone());
        let mut builder = ActletBuilder::new(TestNode::NODE_NAME)
            .configure(move |c| {
                c.node_ip = Some(TestNode::NODE_IP.into());
                c.root_dir = root.join("root");
                c.pod_logs_dir = root.join("pods");
                c.container_logs_dir = None;
                // A roomy image filesystem holding only the mock's images: no
                // image GC unless a test shrinks it.
                c.image_fs = crate::gc::ImageFsSource(Arc::new(crate::gc::FixedCapacity(1 << 40)));
                c.wall_clock = WallClock(Arc::new(move || timestamp_from_system_time(clock.now())));
            })
            .shared_runtime(runtime)
            .source(TestNode::SOURCE, move || WatchSource {
                rx: rx.clone(),
                first: true,
            })
            .on_pleg_events(move |batch| ev.record(batch))
            .on_pod_status(move |change| st.record(change));
        for f in self.customizations {
            builder = f(builder);
        }
        let kubelet = builder
            .start()
            .unwrap_or_else(|e| panic!("TestNode: the system did not start: {e}"));
        events.attach(kubelet.cache.clone());
        TestNode {
            kubelet,
            mock,
            pods,
            events,
            statuses,
            dir,
        }
    }
}

/// The pod source a [`TestNode`] feeds: the latest snapshot of a watch channel.
struct WatchSource {
    rx: watch::Receiver<Vec<Pod>>,
    first: bool,
}

#[async_trait::async_trait]
impl PodSource for WatchSource {
    async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
        if !std::mem::take(&mut self.first) && self.rx.changed().await.is_err() {
            // The TestNode is gone: nothing will ever change again.
            std::future::pending::<()>().await;
        }
        Ok(self.rx.borrow_and_update().clone())
    }
}

/// The whole actlet system (every actor of [`ActletBuilder`]) on a
/// [`MockRuntime`], with a pod source the test controls, a temporary root
/// and log directory (removed on drop), node IP 10.0.0.1, and a wall clock
/// that follows the mock's (virtual) clock. It records every PLEG event
/// ([`events`](Self::events)) and pod status change
/// ([`status_changes`](Self::status_changes)).
///
/// Start it inside an actix `System`, normally [`run_paused`](super::run_paused).
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{PodBuilder, TestNode, run_paused};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![
///         PodBuilder::new("job").restart_policy("Never")
///             .container("c", "busybox:1.36", ["sh", "-c", "echo hi; sleep 2"]).build(),
///     ]);
///     node.wait_for_phase("default", "job", "Succeeded", Duration::from_secs(60)).await.unwrap();
///     assert_eq!(node.phase_history("default", "job"), ["Pending", "Running", "Succeeded"]);
///     node.set_pods(vec![]); // the pod is removed
///     node.shutdown().await.unwrap();
/// });
/// ```
pub struct TestNode {
    kubelet: Kubelet,
    mock: MockRuntime,
    pods: watch::Sender<Vec<Pod>>,
    events: EventLog,
    statuses: StatusLog,
    dir: TempDir,
}

impl TestNode {
    /// The node's name (pods' `spec.nodeName`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_until(|| node.kubelet().pods.len() == 1, Duration::from_secs(5)).await.unwrap();
    /// let pod = node.kubelet().pods.pods()[0].pod.clone();
    /// assert_eq!(pod.spec.as_ref().unwrap().node_name.as_deref(), Some(TestNode::NODE_NAME));
    /// # });
    /// ```
    pub const NODE_NAME: &'static str = "test-node";
    /// The node's IP (pods' `hostIP`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// let s = node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    /// assert_eq!(s.host_ip.as_deref(), Some(TestNode::NODE_IP));
    /// # });
    /// ```
    pub const NODE_IP: &'static str = "10.0.0.1";
    /// The name of the pod source [`set_pods`](Self::set_pods) feeds (its
    /// supervised child is `root/source-test`; its pods are annotated
    /// `kubernetes.io/config.source: test`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{TestNode, wait_until};
    /// let node = TestNode::start();
    /// let path = format!("root/source-{}", TestNode::SOURCE);
    /// wait_until(|| node.kubelet().tree().get(&path).is_some(), Duration::from_secs(1)).await.unwrap();
    /// # });
    /// ```
    pub const SOURCE: &'static str = "test";

    /// Starts a node on a fresh [`MockRuntime`].
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert_eq!(node.kubelet().pods.len(), 0);
    /// # });
    /// ```
    ///
    /// # Panics
    /// As [`TestNodeBuilder::start`].
    pub fn start() -> Self {
        Self::builder().start()
    }

    /// Starts a node on `mock` (scripted, with faults …).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Fault, MockRuntime};
    /// let mock = MockRuntime::builder()
    ///     .fault("RunPodSandbox", Fault::error(tonic::Code::Unknown, "boom").times(1))
    ///     .build();
    /// let node = actlet::testing::TestNode::with_mock(mock);
    /// # let _ = node;
    /// # });
    /// ```
    ///
    /// # Panics
    /// As [`TestNodeBuilder::start`].
    pub fn with_mock(mock: MockRuntime) -> Self {
        Self::builder().mock(mock).start()
    }

    /// Configures a node.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::builder().start();
    /// # let _ = node;
    /// # });
    /// ```
    pub fn builder() -> TestNodeBuilder {
        TestNodeBuilder {
            mock: None,
            runtime: None,
            customizations: vec![],
        }
    }

    /// Replaces the test source's pods with exactly `pods` (a full
    /// snapshot: pods left out are removed). Pods get the source defaults
    /// (namespace `default`, a stable UID if none, the source annotations).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("a").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_until(|| node.kubelet().pods.len() == 1, Duration::from_secs(5)).await.unwrap();
    /// node.set_pods(vec![]);
    /// wait_until(|| node.kubelet().pods.is_empty(), Duration::from_secs(5)).await.unwrap();
    /// # });
    /// ```
    pub fn set_pods(&self, pods: impl IntoIterator<Item = Pod>) {
        self.pods.send_replace(pods.into_iter().collect());
    }

    /// The running system: pods, statuses, caches, the supervision tree.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{TestNode, wait_until};
    /// let node = TestNode::start();
    /// wait_until(|| node.kubelet().tree().get("root/pleg").is_some(), Duration::from_secs(1)).await.unwrap();
    /// # });
    /// ```
    pub fn kubelet(&self) -> &Kubelet {
        &self.kubelet
    }

    /// The mock runtime (script it, inject faults, observe calls).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// node.mock().set_down(true);
    /// # });
    /// ```
    pub fn mock(&self) -> &MockRuntime {
        &self.mock
    }

    /// The PLEG events seen so far.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert!(node.events().all().is_empty());
    /// # });
    /// ```
    pub fn events(&self) -> &EventLog {
        &self.events
    }

    /// The pod status changes seen so far.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert!(node.status_changes().all().is_empty());
    /// # });
    /// ```
    pub fn status_changes(&self) -> &StatusLog {
        &self.statuses
    }

    /// The temporary directory holding the root (`root/`) and pod log
    /// (`pods/`) directories.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert!(node.dir().join("root").is_dir());
    /// # });
    /// ```
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The phases pod `namespace/name` went through, in order
    /// (e.g. `["Pending", "Running"]`; empty if the pod is unknown).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert!(node.phase_history("default", "nope").is_empty());
    /// # });
    /// ```
    pub fn phase_history(&self, namespace: &str, name: &str) -> Vec<String> {
        wait::uid_of(&self.kubelet, namespace, name)
            .map(|uid| self.statuses.phases_of_uid(uid.as_str()))
            .unwrap_or_default()
    }

    /// The API status of pod `namespace/name`, if it has one.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert!(node.status("default", "nope").is_none());
    /// # });
    /// ```
    pub fn status(&self, namespace: &str, name: &str) -> Option<PodStatus> {
        let uid = wait::uid_of(&self.kubelet, namespace, name)?;
        self.kubelet.statuses.get(&uid).map(|v| (*v.status).clone())
    }

    /// A one-line summary of the pod's status (for messages).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert_eq!(node.describe("default", "nope"), "no status");
    /// # });
    /// ```
    pub fn describe(&self, namespace: &str, name: &str) -> String {
        self.status(namespace, name)
            .map_or_else(|| "no status".to_string(), |s| wait::describe_status(&s))
    }

    /// [`wait_for_phase`](super::wait_for_phase) on this node.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// let status = node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    /// assert_eq!(status.host_ip.as_deref(), Some(TestNode::NODE_IP));
    /// # });
    /// ```
    ///
    /// # Errors
    /// As [`wait_for_phase`](super::wait_for_phase).
    pub async fn wait_for_phase(
        &self,
        namespace: &str,
        name: &str,
        phase: &str,
        timeout: Duration,
    ) -> Result<PodStatus, WaitError> {
        wait::wait_for_phase(&self.kubelet, namespace, name, phase, timeout).await
    }

    /// [`wait_for_restart_count`](super::wait_for_restart_count) on this node.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// let c = node.wait_for_restart_count("default", "web", "c", 0, Duration::from_secs(30)).await.unwrap();
    /// assert_eq!(c.restart_count, 0);
    /// # });
    /// ```
    ///
    /// # Errors
    /// As [`wait_for_restart_count`](super::wait_for_restart_count).
    pub async fn wait_for_restart_count(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        n: i32,
        timeout: Duration,
    ) -> Result<ContainerStatus, WaitError> {
        wait::wait_for_restart_count(&self.kubelet, namespace, name, container, n, timeout).await
    }

    /// [`wait_for_event`](super::wait_for_event) on this node's events.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::messages::pleg::PlegEventType;
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_event("default", "web", Some("c"), PlegEventType::ContainerStarted, Duration::from_secs(30))
    ///     .await
    ///     .unwrap();
    /// # });
    /// ```
    ///
    /// # Errors
    /// As [`wait_for_event`](super::wait_for_event).
    pub async fn wait_for_event(
        &self,
        namespace: &str,
        name: &str,
        container: Option<&str>,
        kind: PlegEventType,
        timeout: Duration,
    ) -> Result<RecordedEvent, WaitError> {
        wait::wait_for_event(&self.events, namespace, name, container, kind, timeout).await
    }

    /// Stops every actor gracefully (30 s deadline); containers keep running.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// let report = node.shutdown().await.unwrap();
    /// assert!(report.killed.is_empty());
    /// # });
    /// ```
    ///
    /// # Errors
    /// As [`Kubelet::shutdown`].
    pub async fn shutdown(&self) -> Result<ShutdownReport, SupervisorError> {
        self.kubelet.shutdown(Duration::from_secs(30)).await
    }
}

impl std::fmt::Debug for TestNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestNode")
            .field("dir", &self.dir.path())
            .field("mock", &self.mock)
            .field("pods", &self.kubelet.pods.len())
            .finish_non_exhaustive()
    }
}

/// A uniquely named directory under the system's temporary directory,
/// removed (with its contents) on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        let base = std::env::temp_dir();
        loop {
            let path = base.join(format!(
                "actlet-test-{}-{:016x}",
                std::process::id(),
                rand::random::<u64>()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Self(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
