//! Building core/v1 Event objects as upstream's recorder does
//! (client-go `tools/record`, `makeEvent`), and the patch that bumps a
//! repeated one (fixture 47: `count`, `lastTimestamp`, `message`).

use k8s_openapi::api::core::v1::{Event, EventSource};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::messages::event::RecordEvent;

/// The component the kubelet's events come from.
pub const COMPONENT: &str = "kubelet";

/// Where an event is about: the involved object's namespace, or `default`
/// for cluster-scoped objects such as the Node.
pub fn event_namespace(record: &RecordEvent) -> String {
    match record.involved.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => ns.to_string(),
        _ => "default".to_string(),
    }
}

/// The Event's name: `<involvedObject.name>.<unix nanos in hex>`.
pub fn event_name(object_name: &str, unix_nanos: i128) -> String {
    format!("{object_name}.{unix_nanos:x}")
}

/// A new Event (count 1) for `record`, reported by the kubelet on `host` at
/// `now`, named with `unix_nanos` (normally `now`'s).
pub fn make_event(record: &RecordEvent, host: &str, now: Timestamp, unix_nanos: i128) -> Event {
    let object_name = record.involved.name.as_deref().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(object_name, unix_nanos)),
            namespace: Some(event_namespace(record)),
            annotations: (!record.annotations.is_empty()).then(|| record.annotations.clone()),
            ..ObjectMeta::default()
        },
        involved_object: record.involved.clone(),
        reason: Some(record.reason.clone()),
        message: Some(record.message.clone()),
        source: Some(EventSource {
            component: Some(COMPONENT.to_string()),
            host: Some(host.to_string()),
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        type_: Some(record.type_.as_str().to_string()),
        reporting_component: Some(COMPONENT.to_string()),
        reporting_instance: Some(host.to_string()),
        ..Event::default()
    }
}

/// The strategic merge patch that records a repeat of `event` (upstream's
/// two-way merge patch against a copy without count, lastTimestamp and message).
pub fn repeat_patch(event: &Event) -> Value {
    let mut patch = json!({
        "count": event.count.unwrap_or(1),
        "message": event.message.clone().unwrap_or_default(),
    });
    if let Some(t) = &event.last_timestamp {
        patch["lastTimestamp"] = serde_json::to_value(t).unwrap_or(Value::Null);
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::node_ref;
    use crate::messages::event::EventType;
    use k8s_openapi::api::core::v1::ObjectReference;

    fn started() -> RecordEvent {
        RecordEvent {
            involved: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some("init-readiness".into()),
                namespace: Some("default".into()),
                uid: Some("1b5714b3-c137-4674-9f4d-d2c75549ac52".into()),
                field_path: Some("spec.containers{web}".into()),
                ..ObjectReference::default()
            },
            type_: EventType::Normal,
            reason: "Started".into(),
            message: "Started container web".into(),
            annotations: Default::default(),
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn builds_the_event_of_fixture_46() {
        let now = at("2026-11-21T11:11:29Z");
        let event = make_event(&started(), "test-node", now, 0x18ea0afe59f41a00);
        let v = serde_json::to_value(&event).unwrap_or_default();
        assert_eq!(
            v["metadata"],
            json!({"name": "init-readiness.18ea0afe59f41a00", "namespace": "default"})
        );
        assert_eq!(
            v["involvedObject"],
            json!({"kind": "Pod", "namespace": "default", "name": "init-readiness",
                   "uid": "1b5714b3-c137-4674-9f4d-d2c75549ac52", "apiVersion": "v1",
                   "fieldPath": "spec.containers{web}"})
        );
        assert_eq!(v["source"], json!({"component": "kubelet", "host": "test-node"}));
        assert_eq!(
            (&v["reason"], &v["message"], &v["type"], &v["count"]),
            (
                &json!("Started"),
                &json!("Started container web"),
                &json!("Normal"),
                &json!(1)
            )
        );
        assert_eq!(v["firstTimestamp"], "2026-11-21T11:11:29Z");
        assert_eq!(v["lastTimestamp"], "2026-11-21T11:11:29Z");
        assert_eq!(
            (&v["reportingComponent"], &v["reportingInstance"]),
            (&json!("kubelet"), &json!("test-node"))
        );
    }

    #[test]
    fn node_events_go_to_the_default_namespace() {
        let record = RecordEvent {
            involved: node_ref("test-node"),
            type_: EventType::Normal,
            reason: "NodeReady".into(),
            message: "Node test-node status is now: NodeReady".into(),
            annotations: Default::default(),
        };
        let event = make_event(&record, "test-node", at("2026-11-21T11:11:29Z"), 255);
        assert_eq!(event.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(event.metadata.name.as_deref(), Some("test-node.ff"));
    }

    #[test]
    fn the_repeat_patch_is_that_of_fixture_47() {
        let mut event = make_event(&started(), "test-node", at("2026-11-21T11:11:29Z"), 1);
        event.count = Some(2);
        event.last_timestamp = Some(Time(at("2026-11-21T11:11:30Z")));
        assert_eq!(
            repeat_patch(&event),
            json!({"count": 2, "lastTimestamp": "2026-11-21T11:11:30Z", "message": "Started container web"})
        );
    }
}
