//! Anyone → EventRecorder: core/v1 Events about pods and the node.

use actix::Message;
use k8s_openapi::api::core::v1::ObjectReference;

/// `Normal` or `Warning`, as `kubectl describe` shows it.
///
/// ```
/// use actlet::messages::event::EventType;
/// let t = EventType::Warning;
/// assert_eq!(t.as_str(), "Warning");
/// assert_ne!(t, EventType::Normal);
/// ```
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
    ///
    /// ```
    /// use actlet::messages::event::EventType;
    /// assert_eq!(EventType::Normal.as_str(), "Normal");
    /// ```
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
///
/// ```
/// use std::sync::mpsc;
/// use actlet::actors::supervisor::SupervisedRecipient;
/// use actlet::events::{EventRecorder, node_ref};
/// use actlet::messages::event::{EventType, RecordEvent};
///
/// // what an event sink (the recorder actor, or your own) receives
/// let (tx, rx) = mpsc::channel();
/// let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| { let _ = tx.send(e); }));
/// recorder.event(node_ref("node-a"), EventType::Normal, "Starting", "Starting kubelet.");
/// let e: RecordEvent = rx.recv().unwrap();
/// assert_eq!((e.type_, e.reason.as_str()), (EventType::Normal, "Starting"));
/// assert_eq!(e.involved.name.as_deref(), Some("node-a"));
/// ```
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
    /// Annotations of the Event object (upstream `AnnotatedEventf`; the
    /// eviction manager's `offending_containers`, …); usually empty.
    pub annotations: std::collections::BTreeMap<String, String>,
}
