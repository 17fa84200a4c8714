//! RuntimeHealth → SyncLoop, Node: whether the container runtime is usable.

use actix::Message;

/// RuntimeHealth → subscribers: the result of the periodic CRI `Status` call,
/// sent when it changes.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let node = TestNode::start();
///     let health = node.kubelet().runtime_health.clone(); // the latest RuntimeHealthChanged
///     wait_until(|| health.borrow().runtime_ready, Duration::from_secs(30)).await.unwrap();
///     node.mock().set_down(true);
///     wait_until(|| !health.borrow().runtime_ready, Duration::from_secs(30)).await.unwrap();
///     assert!(health.borrow().message.contains("container runtime is down"), "{:?}", *health.borrow());
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct RuntimeHealthChanged {
    /// The runtime answered and reports RuntimeReady.
    pub runtime_ready: bool,
    /// The runtime reports NetworkReady.
    pub network_ready: bool,
    /// Why not ready, e.g. "container runtime is down: …" or
    /// "container runtime network not ready: NetworkReady=false reason:…".
    pub message: String,
    /// What the runtime last said it implements; `None` until it answered
    /// with features (containerd 1.x never does; a failed check keeps the
    /// last answer).
    pub features: Option<RuntimeFeatureSet>,
}

/// The CRI `RuntimeFeatures` of the runtime (the Node's `status.features`).
///
/// ```
/// use actlet::messages::runtime_health::RuntimeFeatureSet;
/// assert!(!RuntimeFeatureSet::default().supplemental_groups_policy, "containerd 1.x reports none");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeFeatureSet {
    /// `SupplementalGroupsPolicy` (`Strict`) and the container `user` in statuses.
    pub supplemental_groups_policy: bool,
}
