//! Pure: the `nodes/<name>/status` patch, the two-way strategic merge patch
//! ([`crate::cluster::strategic_merge`], `NodeStatus`'s merge keys) from the
//! API's status to the kubelet's. The kubelet owns the whole node status, so
//! every field it no longer has is deleted.

use serde_json::{Map, Value};

use crate::cluster::strategic_merge::{NODE_STATUS, two_way};

/// The `nodes/<name>/status` patch from `original` to `modified` status
/// (both as JSON): `{"status": {...}}`, or `None` when nothing differs.
pub fn status_patch(original: &Value, modified: &Value) -> Option<Value> {
    let empty = Map::new();
    let d = two_way(
        original.as_object().unwrap_or(&empty),
        modified.as_object().unwrap_or(&empty),
        NODE_STATUS,
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

    #[test]
    fn fields_the_node_no_longer_reports_are_deleted() {
        let old = json!({"volumesInUse": ["kubernetes.io/csi/x"], "config": {"active": {}}});
        let new = json!({"volumesInUse": []});
        let p = status_patch(&old, &new).unwrap_or_default();
        assert_eq!(
            p,
            json!({"status": {"volumesInUse": null}}),
            "an empty `config` is no config"
        );
    }
}
