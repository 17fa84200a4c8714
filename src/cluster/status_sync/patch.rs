//! The `pods/<name>/status` patch (upstream `statusutil.PatchPodStatus`): a
//! two-way strategic merge patch from the API's status to the new one, with
//! `metadata.uid` as the UID check (fixture 37).
//!
//! Sending the whole status is not enough: conditions merge by `type` field
//! by field, so a `reason` or `message` the new condition no longer has would
//! stay on the API. The diff sets such fields to `null`, deletes conditions
//! that went away (`$patch: delete`) and keeps their order
//! (`$setElementOrder/conditions`). `podIPs` and `hostIPs` (merged by `ip`)
//! are diffed the same way: a new sandbox's IP replaces the old one instead of
//! joining it (two IPv4 pod IPs are invalid: the API server answers 422). The
//! diff is the one node patches use too ([`crate::cluster::strategic_merge`],
//! `PodStatus`'s merge keys).

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Map, Value, json};

use crate::cluster::strategic_merge::{POD_STATUS, is_empty, two_way};

/// Top-level fields the kubelet owns that a new status may drop: cleared on
/// the API when the new status has none. Every other field absent from the
/// new status is the API's as it is (e.g. the scheduler's
/// `nominatedNodeName`, and `podIP`/`podIPs`/`hostIPs` of a pod whose sandbox
/// is gone), as upstream's `mergePodStatus` keeps what the kubelet does not
/// own.
const CLEARED_WHEN_ABSENT: [&str; 3] = ["message", "reason", "conditions"];

fn object(status: Option<&PodStatus>) -> Map<String, Value> {
    match status.map(serde_json::to_value) {
        Some(Ok(Value::Object(m))) => m,
        _ => Map::new(),
    }
}

/// The status part of the patch turning `api` into `new`; empty when nothing
/// would change. Times compare to the second (as the API stores them) and
/// empty values as none.
pub fn status_diff(api: Option<&PodStatus>, new: &PodStatus) -> Map<String, Value> {
    let old = object(api);
    let mut modified = object(Some(new));
    for (k, v) in &old {
        let absent = modified.get(k).is_none_or(is_empty);
        if absent && !CLEARED_WHEN_ABSENT.contains(&k.as_str()) {
            modified.insert(k.clone(), v.clone());
        }
    }
    two_way(&old, &modified, POD_STATUS)
}

/// Whether patching `new` would change the API's status `api`.
pub fn differs(api: Option<&PodStatus>, new: &PodStatus) -> bool {
    !status_diff(api, new).is_empty()
}

/// The strategic merge patch of `pods/<name>/status` from `api` to `new`,
/// checked against `uid`.
pub fn status_patch(uid: &str, api: Option<&PodStatus>, new: &PodStatus) -> Value {
    json!({"metadata": {"uid": uid}, "status": status_diff(api, new)})
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;
