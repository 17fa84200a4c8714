//! The Node: registration and status (upstream `kubelet_node_status.go` and
//! `nodestatus` setters).
//!
//! ```text
//! NodeActor  start: event Starting; POST node (409 → GET + reconcile), retried with backoff
//!            every nodeStatusUpdateFrequency (10 s) and on a runtime health change:
//!              GET node (?resourceVersion=0) → setters → PATCH nodes/<n>/status
//!              (strategic merge) when changed, or every nodeStatusReportFrequency (5 min)
//!            → NodeReady / NodeNotReady events, NodeConditionChanged to observers,
//!              NodeHandle (uid, conditions) for the lease actor and the lead
//! ```
//!
//! The pure parts: [`flags`] (flag values), [`conditions`], [`status`],
//! [`registration`], [`patch`]; [`NodeActor`] is the shell doing the API calls.

pub mod actor;
pub mod conditions;
pub mod flags;
pub mod images;
pub mod local;
pub mod patch;
pub mod registration;
pub mod status;
mod sync;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{NodeCondition, Taint};
use tokio::sync::watch;

pub use actor::NodeActor;
pub use flags::Reserved;
pub use local::LocalNodeConditions;

use crate::actors::supervisor::SupervisedRecipient;
use crate::clock::WallClock;
use crate::cri::SharedRuntime;
use crate::events::EventRecorder;
use crate::kubelet::{MachineInfo, NodeFacts};
use crate::messages::node::NodeConditionChanged;
use crate::messages::runtime_health::RuntimeHealthChanged;
use crate::pleg::PlegHealthHandle;

/// A Node API call failed; names the call and the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The API server refused or could not be reached.
    #[error("{call} node {node}: {source}")]
    Api {
        /// e.g. `POST nodes`, `PATCH nodes/status`.
        call: &'static str,
        /// The node name.
        node: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The Node does not exist and registration is off (`--register-node=false`).
    #[error("node {0} not found and --register-node=false")]
    NotRegistered(String),
    /// A Node could not be turned into JSON.
    #[error("encode node {node}: {source}")]
    Encode {
        /// The node name.
        node: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// What the node actor has learned, shared cheaply (clone = same view).
///
/// ```
/// # actlet::testing::run_paused(async {
/// use std::time::Duration;
/// let node = actlet::testing::TestNode::start();
/// let handle = node.kubelet().node.clone();
/// actlet::testing::wait_until(|| handle.ready().is_some(), Duration::from_secs(10)).await.unwrap();
/// assert_eq!(handle.ready(), Some(true)); // the mock runtime is up
/// assert_eq!(handle.uid(), None); // standalone: no Node object
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct NodeHandle {
    inner: Arc<RwLock<NodeView>>,
}

/// A snapshot of [`NodeHandle`].
///
/// ```
/// # actlet::testing::run_paused(async {
/// use std::time::Duration;
/// let node = actlet::testing::TestNode::start();
/// let handle = node.kubelet().node.clone();
/// actlet::testing::wait_until(|| handle.ready().is_some(), Duration::from_secs(10)).await.unwrap();
/// let view = handle.view();
/// let types: Vec<_> = view.conditions.iter().map(|c| c.type_.as_str()).collect();
/// assert_eq!(types, ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]);
/// # });
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeView {
    /// The registered Node's UID, once known.
    pub uid: Option<String>,
    /// The conditions last computed (MemoryPressure, DiskPressure, PIDPressure, Ready).
    pub conditions: Vec<NodeCondition>,
    /// The Node object's labels and taints as the API server last returned
    /// them (cluster mode; `None` before the first status read). Admission
    /// checks `nodeSelector`, affinity and `NoExecute` taints against them.
    pub object: Option<Arc<NodeObject>>,
}

/// What admission reads of the Node object (upstream reads the informer's Node).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeObject {
    /// `metadata.labels`.
    pub labels: std::collections::BTreeMap<String, String>,
    /// `spec.taints`.
    pub taints: Vec<k8s_openapi::api::core::v1::Taint>,
}

impl NodeHandle {
    /// The current view.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use std::time::Duration;
    /// let node = actlet::testing::TestNode::start();
    /// let handle = node.kubelet().node.clone();
    /// actlet::testing::wait_until(|| handle.ready().is_some(), Duration::from_secs(10)).await.unwrap();
    /// assert!(handle.view().conditions.iter().any(|c| c.type_ == "Ready"));
    /// # });
    /// ```
    pub fn view(&self) -> NodeView {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The Node's UID once registered (or found).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use std::time::Duration;
    /// let node = actlet::testing::TestNode::start();
    /// let handle = node.kubelet().node.clone();
    /// actlet::testing::wait_until(|| handle.ready().is_some(), Duration::from_secs(10)).await.unwrap();
    /// assert!(handle.uid().is_none(), "only cluster mode registers a Node");
    /// # });
    /// ```
    pub fn uid(&self) -> Option<String> {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).uid.clone()
    }

    /// Whether the Ready condition is True (`None` before the first status).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use std::time::Duration;
    /// let node = actlet::testing::TestNode::start();
    /// let handle = node.kubelet().node.clone();
    /// actlet::testing::wait_until(|| handle.ready().is_some(), Duration::from_secs(10)).await.unwrap();
    /// node.mock().set_down(true);
    /// actlet::testing::wait_until(|| handle.ready() == Some(false), Duration::from_secs(30)).await.unwrap();
    /// # });
    /// ```
    pub fn ready(&self) -> Option<bool> {
        let v = self.inner.read().unwrap_or_else(|e| e.into_inner());
        v.conditions
            .iter()
            .find(|c| c.type_ == conditions::READY)
            .map(|c| c.status == "True")
    }

    fn set_uid(&self, uid: Option<String>) {
        if uid.is_some() {
            self.inner.write().unwrap_or_else(|e| e.into_inner()).uid = uid;
        }
    }

    fn set_conditions(&self, conditions: Vec<NodeCondition>) {
        self.inner.write().unwrap_or_else(|e| e.into_inner()).conditions = conditions;
    }

    /// The Node object's labels and taints as last read, shared: the `Arc`
    /// changes only when they do.
    pub fn object(&self) -> Option<Arc<NodeObject>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).object.clone()
    }

    /// Records the Node object's labels and taints (kept as is when equal).
    pub fn set_object(&self, object: NodeObject) {
        let mut v = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if v.object.as_deref() != Some(&object) {
            v.object = Some(Arc::new(object));
        }
    }
}

/// Everything the [`NodeActor`] needs, passed in (cloned on a restart).
#[derive(Clone)]
pub struct NodeDeps {
    /// The API client (identity `system:node:<node_name>`).
    pub client: kube::Client,
    /// The node name.
    pub node_name: String,
    /// The `InternalIP` address.
    pub node_ip: Option<String>,
    /// Register the Node (`--register-node`); otherwise only its status is updated.
    pub register_node: bool,
    /// `--node-labels`.
    pub node_labels: BTreeMap<String, String>,
    /// `--register-with-taints` (first registration only).
    pub taints: Vec<Taint>,
    /// `maxPods`.
    pub max_pods: i64,
    /// kube-reserved + system-reserved.
    pub reserved: Reserved,
    /// Machine resources.
    pub facts: NodeFacts,
    /// Machine identity for `nodeInfo`.
    pub machine: MachineInfo,
    /// The runtime (CRI `Version` for `containerRuntimeVersion`).
    pub runtime: SharedRuntime,
    /// The runtime health verdicts (RuntimeHealth actor).
    pub runtime_health: watch::Receiver<RuntimeHealthChanged>,
    /// The PLEG's health.
    pub pleg_health: PlegHealthHandle,
    /// When the kubelet started (PLEG grace before its first relist).
    pub started: tokio::time::Instant,
    /// Node events (Starting, NodeReady, NodeNotReady, NodeHas…).
    pub events: EventRecorder,
    /// Told of every condition change.
    pub observers: Vec<SupervisedRecipient<NodeConditionChanged>>,
    /// `daemonEndpoints.kubeletEndpoint.Port` (10250).
    pub kubelet_port: i32,
    /// `nodeStatusUpdateFrequency` (10 s).
    pub update_frequency: Duration,
    /// `nodeStatusReportFrequency` (5 min).
    pub report_frequency: Duration,
    /// The clock of API timestamps.
    pub wall_clock: WallClock,
    /// Shared view of the node, written by the actor.
    pub handle: NodeHandle,
    /// Node pressure from the eviction manager (the pressure conditions).
    pub eviction: crate::eviction::EvictionHandle,
    /// Whether the node is shutting down (Ready=False).
    pub shutdown: crate::nodeshutdown::ShutdownHandle,
    /// What the hard eviction thresholds take off allocatable.
    pub hard_eviction: crate::eviction::thresholds::HardReservation,
}

impl std::fmt::Debug for NodeDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeDeps")
            .field("node_name", &self.node_name)
            .field("node_ip", &self.node_ip)
            .field("register_node", &self.register_node)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::supervisor::ChildSpec;
    use crate::cluster::lease::{LeaseActor, LeaseDeps};

    /// The lead's wiring compiles: both actors can be supervised children
    /// built again from their dependencies on a restart.
    #[allow(dead_code)]
    fn child_specs(node: NodeDeps, lease: LeaseDeps) -> (ChildSpec<NodeActor>, ChildSpec<LeaseActor>) {
        (
            ChildSpec::new("node", move || NodeActor::new(node.clone())),
            ChildSpec::new("node-lease", move || LeaseActor::new(lease.clone())),
        )
    }

    #[test]
    fn the_handle_is_shared_between_clones() {
        let h = NodeHandle::default();
        let other = h.clone();
        assert_eq!(h.ready(), None);
        other.set_uid(Some("u1".into()));
        other.set_uid(None);
        other.set_conditions(vec![NodeCondition {
            type_: conditions::READY.into(),
            status: "True".into(),
            ..NodeCondition::default()
        }]);
        assert_eq!(h.uid().as_deref(), Some("u1"), "a UID is never forgotten");
        assert_eq!(h.ready(), Some(true));
        assert_eq!(h.view().conditions.len(), 1);
    }
}
