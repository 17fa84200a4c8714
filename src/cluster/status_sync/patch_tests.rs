use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;

fn now() -> Timestamp {
    Timestamp::from_second(1_000).unwrap_or_else(|e| panic!("{e}"))
}

fn status(v: serde_json::Value) -> PodStatus {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_patch_carries_the_uid_and_the_condition_order() {
    let status = PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![
            PodCondition {
                type_: "Initialized".into(),
                status: "True".into(),
                ..Default::default()
            },
            PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let patch = status_patch("u1", None, &status);
    assert_eq!(patch["metadata"], json!({"uid": "u1"}));
    assert_eq!(patch["status"]["phase"], "Running");
    // A list the API does not have yet goes whole, in its order (as
    // `CreateTwoWayMergePatch` sends an added field); once the API has
    // conditions, the order goes with the changes.
    assert_eq!(patch["status"].get("$setElementOrder/conditions"), None);
    assert_eq!(patch["status"]["conditions"][1]["type"], "Ready");
    let mut api = status.clone();
    if let Some(cs) = api.conditions.as_mut() {
        cs[1].status = "False".into();
    }
    let patch = status_patch("u1", Some(&api), &status);
    assert_eq!(
        patch["status"]["$setElementOrder/conditions"],
        json!([{"type": "Initialized"}, {"type": "Ready"}])
    );
    assert_eq!(
        patch["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}])
    );
}

#[test]
fn differs_only_on_fields_we_set() {
    let api = PodStatus {
        phase: Some("Running".into()),
        qos_class: Some("BestEffort".into()),
        start_time: Some(Time(now())),
        ..Default::default()
    };
    let same = PodStatus {
        phase: Some("Running".into()),
        // Sub-second precision is lost on the API: not a difference.
        start_time: Some(Time(Timestamp::new(1_000, 5_000).unwrap_or_else(|e| panic!("{e}")))),
        ..Default::default()
    };
    assert!(!differs(Some(&api), &same), "qosClass left out is not patched");
    let other = PodStatus {
        phase: Some("Succeeded".into()),
        ..Default::default()
    };
    assert!(differs(Some(&api), &other));
    assert!(differs(None, &other));
}

#[test]
fn empty_values_the_api_server_fills_in_do_not_differ() {
    let api: PodStatus = serde_json::from_value(json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}],
        "containerStatuses": [{"name": "app", "image": "i", "imageID": "", "ready": true,
            "restartCount": 0, "lastState": {}, "state": {"running": {}}}]
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let ours: PodStatus = serde_json::from_value(json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "app", "image": "i", "imageID": "", "ready": true,
            "restartCount": 0, "state": {"running": {}}}]
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!differs(Some(&api), &ours));
    let mut restarted = ours.clone();
    if let Some(cs) = restarted.container_statuses.as_mut() {
        cs[0].restart_count = 1;
    }
    assert!(differs(Some(&api), &restarted));
}

#[test]
fn conditions_in_another_order_do_not_differ() {
    let c = |t: &str| PodCondition {
        type_: t.into(),
        status: "True".into(),
        ..Default::default()
    };
    let api = PodStatus {
        conditions: Some(vec![c("PodScheduled"), c("Ready")]),
        ..Default::default()
    };
    let ours = PodStatus {
        conditions: Some(vec![c("Ready"), c("PodScheduled")]),
        ..Default::default()
    };
    assert!(!differs(Some(&api), &ours));
}

#[test]
fn fields_a_condition_lost_are_cleared_and_gone_conditions_deleted() {
    let api = status(json!({
        "phase": "Running",
        "reason": "Evicted",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [app]"},
            {"type": "Initialized", "status": "True"},
            {"type": "x/gone", "status": "True"}
        ]
    }));
    let new = status(json!({
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True"}
        ]
    }));
    let patch = status_patch("u1", Some(&api), &new);
    assert_eq!(
        patch["status"],
        json!({
            "reason": null,
            "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}],
            "conditions": [
                {"type": "Ready", "status": "True", "reason": null, "message": null},
                {"$patch": "delete", "type": "x/gone"}
            ]
        })
    );
    assert!(differs(Some(&api), &new));
}

#[test]
fn nothing_to_patch_for_an_equal_status() {
    let s = status(json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}));
    assert!(status_diff(Some(&s), &s).is_empty());
    assert!(!differs(Some(&s), &s));
}

#[test]
fn a_new_pod_ip_replaces_the_old_one_and_no_ip_keeps_it() {
    let api = status(json!({"podIP": "10.88.0.2", "podIPs": [{"ip": "10.88.0.2"}], "hostIPs": [{"ip": "10.0.0.1"}]}));
    let new = status(json!({"podIP": "10.88.0.3", "podIPs": [{"ip": "10.88.0.3"}], "hostIPs": [{"ip": "10.0.0.1"}]}));
    let diff = status_diff(Some(&api), &new);
    assert_eq!(diff["podIP"], "10.88.0.3");
    assert_eq!(
        diff["podIPs"],
        json!([{"ip": "10.88.0.3"}, {"$patch": "delete", "ip": "10.88.0.2"}])
    );
    assert_eq!(diff["$setElementOrder/podIPs"], json!([{"ip": "10.88.0.3"}]));
    assert!(!diff.contains_key("hostIPs"), "unchanged: {diff:?}");

    let gone = status(json!({"phase": "Succeeded"}));
    let diff = status_diff(Some(&api), &gone);
    assert!(!diff.contains_key("podIPs") && !diff.contains_key("podIP"), "{diff:?}");
}

#[test]
fn fields_the_kubelet_does_not_own_stay_and_its_own_are_cleared() {
    let api = status(json!({
        "phase": "Running",
        "nominatedNodeName": "other",
        "message": "m",
        "conditions": [{"type": "Ready", "status": "True"}],
        "qosClass": "BestEffort"
    }));
    let new = status(json!({"phase": "Failed"}));
    assert_eq!(
        Value::Object(status_diff(Some(&api), &new)),
        json!({"phase": "Failed", "message": null, "conditions": null})
    );
}
