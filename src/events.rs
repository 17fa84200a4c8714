//! [`EventRecorder`]: the handle every actor uses to record core/v1 Events.
//!
//! Cheap to clone. Without an API server it only logs (at debug level); in
//! cluster mode it forwards to the event recorder actor, never waiting: a full
//! mailbox drops the event, as upstream's broadcaster does.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};

use crate::actors::supervisor::SupervisedRecipient;
use crate::messages::event::{EventType, RecordEvent};

/// Records events; see the [module docs](self).
///
/// ```
/// use std::sync::mpsc;
/// use actlet::actors::supervisor::SupervisedRecipient;
/// use actlet::events::{EventRecorder, container_field_path};
/// use actlet::messages::event::{EventType, RecordEvent};
/// # use k8s_openapi::api::core::v1::Pod;
/// # let pod: Pod = serde_json::from_value(serde_json::json!({
/// #     "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
/// #     "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}
/// # })).unwrap();
///
/// let (tx, rx) = mpsc::channel();
/// let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| { let _ = tx.send(e); }));
/// let clone = recorder.clone(); // every actor holds its own clone
/// clone.pod_event(&pod, container_field_path(&pod, "app"), EventType::Normal, "Started", "Started container app");
/// let event = rx.recv().unwrap();
/// assert_eq!(event.involved.field_path.as_deref(), Some("spec.containers{app}"));
/// assert_eq!((event.type_, event.reason.as_str()), (EventType::Normal, "Started"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct EventRecorder {
    sink: Option<SupervisedRecipient<RecordEvent>>,
}

impl EventRecorder {
    /// A recorder that forwards to `sink` (the event recorder actor).
    ///
    /// ```
    /// use actlet::actors::supervisor::SupervisedRecipient;
    /// use actlet::events::{EventRecorder, node_ref};
    /// use actlet::messages::event::{EventType, RecordEvent};
    ///
    /// // in cluster mode the sink is the event recorder actor; here, a closure
    /// let recorder = EventRecorder::new(SupervisedRecipient::from_fn(|e: RecordEvent| {
    ///     println!("{} {}: {}", e.type_.as_str(), e.reason, e.message)
    /// }));
    /// recorder.event(node_ref("node-a"), EventType::Normal, "NodeReady", "Node node-a status is now: NodeReady");
    /// ```
    pub fn new(sink: impl Into<SupervisedRecipient<RecordEvent>>) -> Self {
        Self {
            sink: Some(sink.into()),
        }
    }

    /// A recorder that only logs.
    ///
    /// ```
    /// use actlet::events::{EventRecorder, node_ref};
    /// use actlet::messages::event::EventType;
    ///
    /// let recorder = EventRecorder::disabled(); // also `EventRecorder::default()`
    /// recorder.event(node_ref("node-a"), EventType::Normal, "Starting", "Starting kubelet."); // logged at debug level only
    /// assert_eq!(format!("{recorder:?}"), "EventRecorder { sink: None }");
    /// ```
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Records an event about `involved`.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use actlet::actors::supervisor::SupervisedRecipient;
    /// use actlet::events::{EventRecorder, node_ref};
    /// use actlet::messages::event::{EventType, RecordEvent};
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| { let _ = tx.send(e); }));
    /// recorder.event(node_ref("node-a"), EventType::Warning, "NodeNotReady", "Node node-a status is now: NodeNotReady");
    /// let event = rx.recv().unwrap();
    /// assert_eq!(event.involved.kind.as_deref(), Some("Node"));
    /// assert_eq!(event.message, "Node node-a status is now: NodeNotReady");
    /// ```
    pub fn event(&self, involved: ObjectReference, type_: EventType, reason: &str, message: impl Into<String>) {
        self.annotated_event(involved, BTreeMap::new(), type_, reason, message)
    }

    /// [`event`](Self::event) with annotations on the Event object
    /// (upstream `AnnotatedEventf`).
    pub fn annotated_event(
        &self,
        involved: ObjectReference,
        annotations: BTreeMap<String, String>,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let message = message.into();
        tracing::debug!(
            kind = involved.kind.as_deref().unwrap_or_default(),
            name = involved.name.as_deref().unwrap_or_default(),
            namespace = involved.namespace.as_deref().unwrap_or_default(),
            type_ = type_.as_str(),
            reason,
            %message,
            "event"
        );
        if let Some(sink) = &self.sink {
            let _ = sink.try_send(RecordEvent {
                involved,
                type_,
                reason: reason.to_string(),
                message,
                annotations,
            });
        }
    }

    /// Records an event about `pod`, or one of its containers when
    /// `field_path` is given (`spec.containers{name}`).
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use actlet::actors::supervisor::SupervisedRecipient;
    /// use actlet::events::EventRecorder;
    /// use actlet::messages::event::{EventType, RecordEvent};
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let pod: Pod = serde_json::from_value(serde_json::json!({
    /// #     "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
    /// #     "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    /// # })).unwrap();
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| { let _ = tx.send(e); }));
    /// recorder.pod_event(&pod, None, EventType::Warning, "FailedMount", "volume not found"); // about the whole pod
    /// let event = rx.recv().unwrap();
    /// assert_eq!(event.involved.name.as_deref(), Some("web"));
    /// assert_eq!(event.involved.field_path, None);
    /// ```
    pub fn pod_event(
        &self,
        pod: &Pod,
        field_path: Option<String>,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.event(pod_ref(pod, field_path), type_, reason, message)
    }

    /// An event about `pod` with annotations on the Event object (upstream
    /// `AnnotatedEventf`, as the eviction manager records `Evicted`).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use std::sync::mpsc;
    /// use actlet::actors::supervisor::SupervisedRecipient;
    /// use actlet::events::EventRecorder;
    /// use actlet::messages::event::{EventType, RecordEvent};
    /// # let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
    /// #     "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
    /// #     "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    /// # })).unwrap();
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| { let _ = tx.send(e); }));
    /// let annotations = BTreeMap::from([("starved_resource".to_string(), "memory".to_string())]);
    /// recorder.annotated_pod_event(&pod, annotations, EventType::Warning, "Evicted", "The node was low on resource: memory. ");
    /// assert_eq!(rx.recv().unwrap().annotations["starved_resource"], "memory");
    /// ```
    pub fn annotated_pod_event(
        &self,
        pod: &Pod,
        annotations: BTreeMap<String, String>,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.annotated_event(pod_ref(pod, None), annotations, type_, reason, message)
    }
}

/// An [`ObjectReference`] to `pod` (and one of its containers with `field_path`).
///
/// ```
/// use actlet::events::pod_ref;
/// # use k8s_openapi::api::core::v1::Pod;
/// let pod: Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
///     "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}
/// })).unwrap();
/// let r = pod_ref(&pod, Some("spec.containers{app}".into()));
/// assert_eq!((r.kind.as_deref(), r.api_version.as_deref()), (Some("Pod"), Some("v1")));
/// assert_eq!((r.namespace.as_deref(), r.uid.as_deref()), (Some("default"), Some("u1")));
/// ```
pub fn pod_ref(pod: &Pod, field_path: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        field_path,
    }
}

/// An [`ObjectReference`] to the node (upstream uses the node name as UID).
///
/// ```
/// let r = actlet::events::node_ref("node-a");
/// assert_eq!(r.kind.as_deref(), Some("Node"));
/// assert_eq!(r.uid.as_deref(), Some("node-a")); // upstream uses the name as UID
/// assert_eq!(r.namespace, None);
/// ```
pub fn node_ref(node_name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(node_name.to_string()),
        uid: Some(node_name.to_string()),
        ..ObjectReference::default()
    }
}

/// The field path of a container, as events and `kubectl describe` show it.
///
/// ```
/// use actlet::events::container_field_path;
/// use k8s_openapi::api::core::v1::Pod;
/// let pod: Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web"},
///     "spec": {"containers": [{"name": "app", "image": "busybox"}], "initContainers": [{"name": "setup", "image": "busybox"}]}
/// })).unwrap();
/// assert_eq!(container_field_path(&pod, "app").as_deref(), Some("spec.containers{app}"));
/// assert_eq!(container_field_path(&pod, "setup").as_deref(), Some("spec.initContainers{setup}"));
/// assert_eq!(container_field_path(&pod, "nope"), None);
/// ```
pub fn container_field_path(pod: &Pod, container: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if spec.containers.iter().any(|c| c.name == container) {
        return Some(format!("spec.containers{{{container}}}"));
    }
    if spec.init_containers.iter().flatten().any(|c| c.name == container) {
        return Some(format!("spec.initContainers{{{container}}}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn forwards_to_the_sink_with_the_pod_reference() {
        let seen = Arc::new(Mutex::new(vec![]));
        let s = seen.clone();
        let rec = EventRecorder::new(SupervisedRecipient::from_fn(move |m: RecordEvent| {
            s.lock().unwrap_or_else(|e| e.into_inner()).push(m)
        }));
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "initContainers": [{"name": "i", "image": "busybox"}]}
        }))
        .unwrap_or_default();
        rec.pod_event(
            &pod,
            container_field_path(&pod, "i"),
            EventType::Normal,
            "Pulled",
            "done",
        );
        let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].involved.field_path.as_deref(), Some("spec.initContainers{i}"));
        assert_eq!(seen[0].involved.uid.as_deref(), Some("u1"));
        assert_eq!(seen[0].reason, "Pulled");
    }
}
