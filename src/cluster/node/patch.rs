//! Pure: two-way strategic merge patches (apimachinery
//! `CreateTwoWayMergePatch`) for what the kubelet writes on its Node.
//!
//! Maps are diffed key by key (`null` deletes); lists with a merge key
//! (`conditions` and `addresses`, both keyed by `type`) are diffed element by
//! element with `$setElementOrder/<list>` and `$patch: delete`; other lists
//! are replaced whole.

use serde_json::{Map, Value};

/// The merge key of the list under `field`, if it has one.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "conditions" | "addresses" => Some("type"),
        _ => None,
    }
}

/// The patch turning `original` into `modified` (objects); empty when equal.
pub fn diff_objects(original: &Map<String, Value>, modified: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, new) in modified {
        let Some(old) = original.get(k) else {
            out.insert(k.clone(), new.clone());
            continue;
        };
        if old == new {
            continue;
        }
        match (old, new, merge_key(k)) {
            (Value::Object(o), Value::Object(n), _) => {
                let d = diff_objects(o, n);
                if !d.is_empty() {
                    out.insert(k.clone(), Value::Object(d));
                }
            }
            (Value::Array(o), Value::Array(n), Some(key)) => {
                let (order, items) = diff_keyed_list(o, n, key);
                out.insert(format!("$setElementOrder/{k}"), Value::Array(order));
                out.insert(k.clone(), Value::Array(items));
            }
            _ => {
                out.insert(k.clone(), new.clone());
            }
        }
    }
    for k in original.keys() {
        if !modified.contains_key(k) {
            out.insert(k.clone(), Value::Null);
        }
    }
    out
}

fn diff_keyed_list(original: &[Value], modified: &[Value], key: &str) -> (Vec<Value>, Vec<Value>) {
    let key_of = |v: &Value| v.get(key).cloned().unwrap_or(Value::Null);
    let order = modified
        .iter()
        .map(|n| Value::Object(Map::from_iter([(key.to_string(), key_of(n))])))
        .collect();
    let mut items = vec![];
    for n in modified {
        match original.iter().find(|o| key_of(o) == key_of(n)) {
            None => items.push(n.clone()),
            Some(o) if o == n => {}
            Some(o) => match (o.as_object(), n.as_object()) {
                (Some(om), Some(nm)) => {
                    let mut d = diff_objects(om, nm);
                    d.insert(key.to_string(), key_of(n));
                    items.push(Value::Object(d));
                }
                _ => items.push(n.clone()),
            },
        }
    }
    for o in original {
        if !modified.iter().any(|n| key_of(n) == key_of(o)) {
            items.push(Value::Object(Map::from_iter([
                ("$patch".to_string(), Value::String("delete".into())),
                (key.to_string(), key_of(o)),
            ])));
        }
    }
    (order, items)
}

/// The `nodes/<name>/status` patch from `original` to `modified` status
/// (both as JSON): `{"status": {...}}`, or `None` when nothing differs.
pub fn status_patch(original: &Value, modified: &Value) -> Option<Value> {
    let empty = Map::new();
    let d = diff_objects(
        original.as_object().unwrap_or(&empty),
        modified.as_object().unwrap_or(&empty),
    );
    (!d.is_empty()).then(|| serde_json::json!({ "status": d }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn heartbeat_and_ready_patch_has_the_recorded_shape() {
        let cond = |t: &str, hb: &str| json!({"type": t, "status": "False", "lastHeartbeatTime": hb, "lastTransitionTime": "T0", "reason": "r", "message": "m"});
        let old = json!({"conditions": [cond("MemoryPressure", "T0"), cond("Ready", "T0")], "capacity": {"cpu": "2"}});
        let mut new =
            json!({"conditions": [cond("MemoryPressure", "T1"), cond("Ready", "T1")], "capacity": {"cpu": "2"}});
        new["conditions"][1]["status"] = "True".into();
        new["conditions"][1]["lastTransitionTime"] = "T1".into();
        let p = status_patch(&old, &new).unwrap_or_default();
        assert_eq!(
            p,
            json!({"status": {
                "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "Ready"}],
                "conditions": [
                    {"type": "MemoryPressure", "lastHeartbeatTime": "T1"},
                    {"type": "Ready", "lastHeartbeatTime": "T1", "lastTransitionTime": "T1", "status": "True"}
                ]
            }})
        );
    }

    #[test]
    fn maps_set_and_delete_keys_and_lists_delete_elements() {
        let old = json!({"capacity": {"cpu": "2", "gone": "1"}, "addresses": [{"type": "InternalIP", "address": "a"}, {"type": "Hostname", "address": "h"}], "images": [1]});
        let new = json!({"capacity": {"cpu": "4"}, "addresses": [{"type": "Hostname", "address": "h"}], "images": [2]});
        let p = status_patch(&old, &new).unwrap_or_default();
        assert_eq!(p["status"]["capacity"], json!({"cpu": "4", "gone": null}));
        assert_eq!(
            p["status"]["addresses"],
            json!([{"$patch": "delete", "type": "InternalIP"}])
        );
        assert_eq!(p["status"]["$setElementOrder/addresses"], json!([{"type": "Hostname"}]));
        assert_eq!(p["status"]["images"], json!([2]));
        assert_eq!(status_patch(&new, &new), None);
    }
}
