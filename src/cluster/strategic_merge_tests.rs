use serde_json::{Value, json};

use super::*;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn diff(old: Value, new: Value, keys: &MergeKeys) -> Value {
    Value::Object(two_way(&obj(old), &obj(new), keys))
}

const KEYS: &MergeKeys = &[("conditions", "type"), ("ips", "ip")];

#[test]
fn maps_diff_key_by_key_and_absent_keys_are_deleted() {
    let p = diff(
        json!({"a": 1, "m": {"x": 1, "y": 2, "gone": 3}, "same": {"k": "v"}, "dropped": "d"}),
        json!({"a": 2, "m": {"x": 1, "y": 5}, "same": {"k": "v"}, "added": true}),
        KEYS,
    );
    assert_eq!(
        p,
        json!({"a": 2, "m": {"y": 5, "gone": null}, "added": true, "dropped": null})
    );
}

#[test]
fn keyed_lists_send_changed_items_as_diffs_deletes_and_the_new_order() {
    let p = diff(
        json!({"conditions": [
            {"type": "A", "status": "False", "reason": "R", "message": "M"},
            {"type": "B", "status": "True"},
            {"type": "Gone", "status": "True"}
        ]}),
        json!({"conditions": [
            {"type": "B", "status": "True"},
            {"type": "A", "status": "True"},
            {"type": "New", "status": "Unknown"}
        ]}),
        KEYS,
    );
    assert_eq!(
        p,
        json!({
            "$setElementOrder/conditions": [{"type": "B"}, {"type": "A"}, {"type": "New"}],
            "conditions": [
                {"type": "A", "status": "True", "reason": null, "message": null},
                {"type": "New", "status": "Unknown"},
                {"$patch": "delete", "type": "Gone"}
            ]
        })
    );
}

#[test]
fn the_same_items_in_another_order_are_no_change() {
    let old = json!({"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]});
    let new = json!({"conditions": [{"type": "B", "status": "True"}, {"type": "A", "status": "True"}]});
    assert_eq!(diff(old, new, KEYS), json!({}));
}

#[test]
fn lists_without_a_merge_key_are_replaced_whole() {
    let p = diff(
        json!({"containerStatuses": [{"name": "a", "ready": false}, {"name": "b", "ready": true}]}),
        json!({"containerStatuses": [{"name": "a", "ready": true}, {"name": "b", "ready": true}]}),
        KEYS,
    );
    assert_eq!(
        p,
        json!({"containerStatuses": [{"name": "a", "ready": true}, {"name": "b", "ready": true}]})
    );
}

#[test]
fn empty_values_are_no_values_on_either_side() {
    // What the API server stores back: null times, `{}` states, `[]` lists.
    let api = json!({"conditions": [{"type": "A", "status": "True", "lastProbeTime": null}],
        "lastState": {}, "ips": [], "phase": "Running"});
    let ours = json!({"conditions": [{"type": "A", "status": "True"}], "phase": "Running"});
    assert_eq!(diff(api.clone(), ours.clone(), KEYS), json!({}));
    assert_eq!(diff(ours, api, KEYS), json!({}));
    // An empty value where there was one deletes it.
    let p = diff(
        json!({"ips": [{"ip": "a"}], "m": {"x": 1}}),
        json!({"ips": [], "m": {}}),
        KEYS,
    );
    assert_eq!(p, json!({"ips": null, "m": null}));
}

#[test]
fn merge_keys_apply_at_any_depth_and_only_to_their_fields() {
    let p = diff(
        json!({"inner": {"ips": [{"ip": "a"}, {"ip": "b"}]}, "other": [{"ip": "a"}]}),
        json!({"inner": {"ips": [{"ip": "b"}]}, "other": [{"ip": "c"}]}),
        KEYS,
    );
    assert_eq!(
        p,
        json!({
            "inner": {"$setElementOrder/ips": [{"ip": "b"}], "ips": [{"$patch": "delete", "ip": "a"}]},
            "other": [{"ip": "c"}]
        })
    );
}

#[test]
fn equal_objects_give_an_empty_patch() {
    let v = json!({"conditions": [{"type": "A", "status": "True"}], "m": {"x": [1, 2]}});
    assert_eq!(diff(v.clone(), v, KEYS), json!({}));
    assert_eq!(diff(json!({}), json!({}), KEYS), json!({}));
}
