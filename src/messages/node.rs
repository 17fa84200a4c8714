//! Node actor → observers: node conditions.

use actix::Message;

/// A node condition changed (Ready, MemoryPressure, DiskPressure, PIDPressure).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use actlet::messages::node::NodeConditionChanged;
/// use actlet::testing::{TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let seen: Arc<Mutex<Vec<NodeConditionChanged>>> = Arc::default();
///     let log = seen.clone();
///     let node = TestNode::builder()
///         .customize(move |b| b.on_node_condition(move |c| log.lock().unwrap().push(c)))
///         .start();
///     let ready = |status: &str| seen.lock().unwrap().iter().any(|c| c.type_ == "Ready" && c.status == status);
///     wait_until(|| ready("True"), Duration::from_secs(30)).await.unwrap();
///     node.mock().set_down(true); // the runtime stops answering: the node turns NotReady
///     wait_until(|| ready("False"), Duration::from_secs(60)).await.unwrap();
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct NodeConditionChanged {
    /// Condition type, e.g. `Ready`.
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Reason, e.g. `KubeletReady` / `KubeletNotReady`.
    pub reason: String,
    /// Message, e.g. "container runtime is down".
    pub message: String,
}
