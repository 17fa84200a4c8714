//! Node actor → observers: node conditions.

use actix::Message;

/// A node condition changed (Ready, MemoryPressure, DiskPressure, PIDPressure).
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
