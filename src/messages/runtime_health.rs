//! RuntimeHealth → SyncLoop, Node: whether the container runtime is usable.

use actix::Message;

/// RuntimeHealth → subscribers: the result of the periodic CRI `Status` call,
/// sent when it changes.
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
}
