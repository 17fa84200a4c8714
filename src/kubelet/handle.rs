//! [`Kubelet`]: the handle to a running system — shared state to query, and
//! the tree to stop.

use std::time::Duration;

use crate::actors::supervisor::{
    RootSupervisor, ShutdownReport, SupervisedRecipient, SupervisionTree, SupervisorError,
};
use crate::cluster::{MirrorPods, NodeHandle};
use crate::config::ManifestErrors;
use crate::events::EventRecorder;
use crate::messages::pod_update::SourceSnapshot;
use crate::messages::runtime_health::RuntimeHealthChanged;
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;
use crate::server::{HealthState, ServerAddrs};
use crate::status::StatusCache;

/// A running kubelet: shared state to query, and the tree to stop.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{PodBuilder, TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let node = TestNode::start();
///     let kubelet: &actlet::Kubelet = node.kubelet();
///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
///     wait_until(|| kubelet.phase_of_named("default", "web").is_some_and(|p| p == "Running"), Duration::from_secs(30)).await.unwrap();
///     assert_eq!((kubelet.pods.len(), kubelet.statuses.len()), (1, 1));
///     assert!(kubelet.runtime_health.borrow().runtime_ready);
/// });
/// ```
#[derive(Clone)]
pub struct Kubelet {
    /// The root supervisor.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// let tree = kubelet.root.tree();
    /// wait_until(|| tree.get("root/sync-loop").is_some(), Duration::from_secs(1)).await.unwrap();
    /// # });
    /// ```
    pub root: RootSupervisor,
    /// Desired pods.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_until(|| kubelet.pods.contains(&"u1".into()), Duration::from_secs(5)).await.unwrap();
    /// # });
    /// ```
    pub pods: PodManager,
    /// API statuses of the pods.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_until(|| kubelet.statuses.get(&"u1".into()).is_some(), Duration::from_secs(30)).await.unwrap();
    /// # });
    /// ```
    pub statuses: StatusCache,
    /// Runtime statuses of the pods.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_until(|| kubelet.cache.get(&"u1".into()).is_some_and(|e| e.status.is_some()), Duration::from_secs(30)).await.unwrap();
    /// # });
    /// ```
    pub cache: PodCache,
    /// Runtime health as last checked.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// wait_until(|| kubelet.runtime_health.borrow().network_ready, Duration::from_secs(30)).await.unwrap();
    /// # });
    /// ```
    pub runtime_health: tokio::sync::watch::Receiver<RuntimeHealthChanged>,
    /// Addresses of the read-only server, once bound.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::builder()
    ///     .customize(|b| b.configure(|c| c.read_only_addr = Some("127.0.0.1:0".parse().unwrap())))
    ///     .start();
    /// let addrs = node.kubelet().read_only_addrs.clone();
    /// actlet::testing::wait_until(|| !addrs.get().is_empty(), Duration::from_secs(5)).await.unwrap();
    /// assert_ne!(addrs.get()[0].port(), 0); // the port actually bound
    /// # });
    /// ```
    pub read_only_addrs: ServerAddrs,
    /// Addresses of the healthz server, once bound.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// assert!(kubelet.healthz_addrs.get().is_empty()); // healthz_addr is None here: no server
    /// # });
    /// ```
    pub healthz_addrs: ServerAddrs,
    /// Addresses of the authenticated HTTPS API server (`server_addr`), once bound.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// # let node = actlet::testing::TestNode::start();
    /// assert!(node.kubelet().api_addrs.get().is_empty()); // server_addr is None here: no server
    /// # });
    /// ```
    pub api_addrs: ServerAddrs,
    /// Health checks as `/healthz` sees them.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// wait_until(|| kubelet.health.check().is_ok(), Duration::from_secs(30)).await.unwrap(); // /healthz would answer "ok"
    /// # });
    /// ```
    pub health: HealthState,
    /// Manifests the sources rejected (file or URL, and why).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// assert!(kubelet.manifest_errors.get().is_empty());
    /// # });
    /// ```
    pub manifest_errors: ManifestErrors,
    /// PodConfig's input: custom sources send their snapshots here.
    ///
    /// ```
    /// # use actlet::messages::pod_update::{PodSource, SourceSnapshot};
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_until(|| !kubelet.pods.is_empty(), Duration::from_secs(5)).await.unwrap();
    /// // the test source now says it holds nothing: the pod is removed
    /// let empty = SourceSnapshot { source: PodSource::Custom(TestNode::SOURCE.into()), pods: vec![], errors: vec![] };
    /// kubelet.pod_config.do_send(empty).unwrap();
    /// wait_until(|| kubelet.pods.is_empty(), Duration::from_secs(5)).await.unwrap();
    /// # });
    /// ```
    pub pod_config: SupervisedRecipient<SourceSnapshot>,
    /// Mirror pods seen on the API server (cluster mode; empty otherwise).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// assert!(kubelet.mirror_pods.all().is_empty()); // standalone: no API server
    /// # });
    /// ```
    pub mirror_pods: MirrorPods,
    /// Records core/v1 Events (cluster mode; logs only otherwise).
    ///
    /// ```
    /// # use actlet::messages::event::EventType;
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// kubelet.events.event(actlet::events::node_ref(TestNode::NODE_NAME), EventType::Normal, "Starting", "Starting kubelet.");
    /// # });
    /// ```
    pub events: EventRecorder,
    /// The registered Node's UID and latest conditions (cluster mode).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// wait_until(|| kubelet.node.ready() == Some(true), Duration::from_secs(30)).await.unwrap();
    /// assert_eq!(kubelet.node.uid(), None); // no Node object without an API server
    /// # });
    /// ```
    pub node: NodeHandle,
    /// Per-pod lifecycle records of the pod workers (upstream
    /// `podSyncStatuses`): syncing, terminating, terminated.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::messages::pod_work::WorkerState;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_for_phase};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// node.set_pods([PodBuilder::new("web").container("app", "busybox:1.36", ["sleep", "60"]).build()]);
    /// wait_for_phase(node.kubelet(), "default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    /// let states = node.kubelet().pod_sync_statuses.states();
    /// assert_eq!(states.values().copied().collect::<Vec<_>>(), [WorkerState::Syncing]);
    /// # });
    /// ```
    pub pod_sync_statuses: crate::pod_workers::PodSyncStatuses,
    /// Probe results (readiness, startup, liveness) by pod and container id.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::start();
    /// # let kubelet = node.kubelet();
    /// node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// assert!(kubelet.probes.readiness(&"u1".into()).is_empty()); // no probes
    /// # });
    /// ```
    pub probes: crate::prober::store::ProbeStore,
    /// Node pressure as the eviction manager sees it (shared, read-only use).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// # let node = actlet::testing::TestNode::start();
    /// assert!(node.kubelet().eviction.pressures().is_empty()); // no thresholds, no pressure
    /// # });
    /// ```
    pub eviction: crate::eviction::EvictionHandle,
    /// Whether the node is shutting down (see [`Kubelet::node_shutdown`]).
    pub node_shutdown: crate::nodeshutdown::ShutdownHandle,
    /// The `node-shutdown-manager` (graceful shutdown configured).
    pub(crate) shutdown_manager:
        Option<crate::actors::supervisor::SupervisedRecipient<crate::nodeshutdown::NodeShutdownEvent>>,
    /// The other per-pod tables ([`Kubelet::pod_table_sizes`]).
    pub(crate) tables: super::tables::Tables,
}

impl Kubelet {
    /// Tells the kubelet the node is about to shut down (`true`: terminate
    /// the pods by priority within the configured budget, stop admitting,
    /// report NotReady) or that the shutdown was cancelled (`false`). The
    /// daemon calls this on SIGUSR1. Fails when graceful shutdown is not
    /// configured or the manager cannot be reached.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let node = actlet::testing::TestNode::start();
    /// assert!(node.kubelet().node_shutdown(true).is_err()); // shutdownGracePeriod is 0: off
    /// # });
    /// ```
    pub fn node_shutdown(&self, shutting_down: bool) -> Result<(), String> {
        node_shutdown(self.shutdown_manager.as_ref(), shutting_down)
    }

    /// What [`Kubelet::node_shutdown`] sends to, for a task that outlives
    /// this borrow (the daemon's SIGUSR1 handler); `None` when off.
    pub fn node_shutdown_trigger(
        &self,
    ) -> Option<crate::actors::supervisor::SupervisedRecipient<crate::nodeshutdown::NodeShutdownEvent>> {
        self.shutdown_manager.clone()
    }

    /// The desired pods with their latest status, sorted by namespace and name.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode};
    /// actlet::testing::run_paused(async {
    ///     let node = TestNode::start();
    ///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    ///     let pods = node.kubelet().pods_with_status(); // what `/pods` serves
    ///     assert_eq!(pods[0].status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));
    /// });
    /// ```
    pub fn pods_with_status(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
        let mut pods: Vec<_> = self
            .pods
            .pods()
            .into_iter()
            .map(|d| {
                let mut pod = (*d.pod).clone();
                if let Some(s) = self.statuses.get(&crate::pod_manager::pod_uid(&pod)) {
                    pod.status = Some((*s.status).clone());
                }
                pod
            })
            .collect();
        pods.sort_by(|a, b| (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name)));
        pods
    }

    /// The phase of the pod `namespace/name`, if it is known and has a status.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// actlet::testing::run_paused(async {
    ///     let node = TestNode::start();
    ///     node.set_pods(vec![PodBuilder::new("job").restart_policy("Never").container("c", "busybox:1.36", ["true"]).build()]);
    ///     let done = || node.kubelet().phase_of_named("default", "job").as_deref() == Some("Succeeded");
    ///     wait_until(done, Duration::from_secs(30)).await.unwrap();
    ///     assert_eq!(node.kubelet().phase_of_named("default", "other"), None);
    /// });
    /// ```
    pub fn phase_of_named(&self, namespace: &str, name: &str) -> Option<String> {
        let d = self.pods.pods().into_iter().find(|d| {
            d.pod.metadata.namespace.as_deref() == Some(namespace) && d.pod.metadata.name.as_deref() == Some(name)
        })?;
        self.statuses
            .get(&crate::pod_manager::pod_uid(&d.pod))?
            .status
            .phase
            .clone()
    }

    /// Waits for the root supervisor to exit (after [`shutdown`](Self::shutdown) or a root failure).
    ///
    /// ```
    /// # use std::time::Duration;
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     let kubelet = node.kubelet().clone();
    ///     actix::spawn(async move { kubelet.shutdown(Duration::from_secs(5)).await.unwrap(); });
    ///     let reason = node.kubelet().wait().await; // returns once the root supervisor is gone
    ///     println!("root exited: {reason:?}");
    /// });
    /// ```
    pub async fn wait(&self) -> crate::actors::supervisor::ExitReason {
        self.root.wait().await
    }

    /// The live supervision tree.
    ///
    /// ```
    /// # use std::time::Duration;
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     let tree = node.kubelet().tree();
    ///     actlet::testing::wait_until(|| tree.get("root/status-manager").is_some(), Duration::from_secs(1)).await.unwrap();
    ///     assert!(tree.get("root/no-such-child").is_none());
    /// });
    /// ```
    pub fn tree(&self) -> &SupervisionTree {
        self.root.tree()
    }

    /// Stops every actor in reverse start order within `deadline`. Pods keep running.
    ///
    /// ```
    /// # use std::time::Duration;
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     # actlet::testing::wait_until(|| node.kubelet().tree().get("root/pleg").is_some(), Duration::from_secs(1)).await.unwrap();
    ///     let report = node.kubelet().shutdown(Duration::from_secs(10)).await.unwrap();
    ///     assert!(report.stopped.iter().any(|c| c.contains("pleg")), "{report:?}");
    ///     assert!(report.killed.is_empty(), "{report:?}");
    /// });
    /// ```
    pub async fn shutdown(&self, deadline: Duration) -> Result<ShutdownReport, SupervisorError> {
        self.root.shutdown(deadline).await
    }
}

/// Sends a shutdown event to `manager` (see [`Kubelet::node_shutdown`]).
pub fn node_shutdown(
    manager: Option<&crate::actors::supervisor::SupervisedRecipient<crate::nodeshutdown::NodeShutdownEvent>>,
    shutting_down: bool,
) -> Result<(), String> {
    let Some(manager) = manager else {
        return Err("graceful node shutdown is not configured (shutdownGracePeriod is 0)".into());
    };
    manager
        .do_send(crate::nodeshutdown::NodeShutdownEvent(shutting_down))
        .map_err(|e| format!("node shutdown manager unreachable: {e}"))
}
