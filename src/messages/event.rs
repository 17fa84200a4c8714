//! Anyone → EventRecorder: core/v1 Events about pods and the node.

use actix::Message;
use k8s_openapi::api::core::v1::ObjectReference;

/// `Normal` or `Warning`, as `kubectl describe` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Routine: Pulling, Pulled, Created, Started, Killing, NodeReady,
    /// NodeNotReady (Normal upstream too), Starting.
    Normal,
    /// Something went wrong: BackOff (crash loop), Failed, FailedSync, Unhealthy.
    Warning,
}

impl EventType {
    /// The API value.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Record one event (upstream `recorder.Eventf`).
///
/// Guarantees of the recorder: never blocks the sender (a full mailbox drops
/// the event, as upstream's broadcaster does); identical events (same object,
/// type, reason and message) are aggregated into one Event whose `count` and
/// `lastTimestamp` grow; sending is rate limited; an API server that is down
/// loses events, never statuses.
#[derive(Clone, Debug, PartialEq, Message)]
#[rtype(result = "()")]
pub struct RecordEvent {
    /// The object the event is about (pod, or the node).
    pub involved: ObjectReference,
    /// Normal or Warning.
    pub type_: EventType,
    /// Upstream reason, e.g. `Pulled`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}
