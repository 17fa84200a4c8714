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
//! joining it (two IPv4 pod IPs are invalid: the API server answers 422).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Map, Value, json};

/// Top-level fields the kubelet owns that a new status may drop: cleared on
/// the API when the new status has none (other fields absent from it are left
/// alone, e.g. the scheduler's `nominatedNodeName`).
const CLEARED_WHEN_ABSENT: [&str; 2] = ["message", "reason"];

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Drops null, `{}` and `[]` values (after pruning inside them): the API
/// server stores Go structs, so an empty `lastState` comes back as `{}` and a
/// `lastProbeTime` as `null`; an empty list patches nothing, like none.
fn prune_empty(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for f in m.values_mut() {
                prune_empty(f);
            }
            m.retain(|_, f| !is_empty(f));
        }
        Value::Array(a) => a.iter_mut().for_each(prune_empty),
        _ => {}
    }
}

/// Whether two values are the same once empty values are pruned.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let norm = |v: Option<&Value>| {
        let mut v = v.cloned().unwrap_or(Value::Null);
        prune_empty(&mut v);
        if is_empty(&v) { Value::Null } else { v }
    };
    norm(a) == norm(b)
}

fn object(status: Option<&PodStatus>) -> Map<String, Value> {
    match status.map(serde_json::to_value) {
        Some(Ok(Value::Object(m))) => m,
        _ => Map::new(),
    }
}

/// Lists of the status merged by a key (strategic merge patch), and whether
/// the list is left alone when the new status has none (the IPs of a pod
/// whose sandbox is gone stay as they were).
const KEYED_LISTS: [(&str, &str, bool); 3] = [
    ("conditions", "type", false),
    ("podIPs", "ip", true),
    ("hostIPs", "ip", true),
];

fn items(m: &Map<String, Value>, list: &str) -> Vec<Map<String, Value>> {
    m.get(list)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|c| c.as_object().cloned()).collect())
        .unwrap_or_default()
}

fn key_of<'a>(c: &'a Map<String, Value>, key: &str) -> &'a str {
    c.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The diff of the list `list` merged by `key`: changed or new items (with
/// `null` for fields they lost), deletions, and the new order.
fn diff_keyed_list(
    list: &str,
    key: &str,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    out: &mut Map<String, Value>,
) {
    let old_items = items(old, list);
    let new_items = items(new, list);
    let k = |c: &Map<String, Value>| key_of(c, key).to_string();
    let by_key: HashMap<String, &Map<String, Value>> = old_items.iter().map(|c| (k(c), c)).collect();
    let mut patch = Vec::new();
    for c in &new_items {
        let before = by_key.get(&k(c)).copied();
        let unchanged = before.is_some_and(|b| {
            let keys = b.keys().chain(c.keys());
            keys.into_iter().all(|k| same(b.get(k), c.get(k)))
        });
        if unchanged {
            continue;
        }
        let mut entry = c.clone();
        for (k, v) in before.into_iter().flatten() {
            if !c.contains_key(k) && !is_empty(v) {
                entry.insert(k.clone(), Value::Null);
            }
        }
        patch.push(Value::Object(entry));
    }
    for o in &old_items {
        if !new_items.iter().any(|c| k(c) == k(o)) {
            patch.push(json!({"$patch": "delete", key: k(o)}));
        }
    }
    if !patch.is_empty() {
        let order = new_items.iter().map(|c| json!({key: k(c)})).collect();
        out.insert(format!("$setElementOrder/{list}"), Value::Array(order));
        out.insert(list.into(), Value::Array(patch));
    }
}

/// The status part of the patch turning `api` into `new`; empty when nothing
/// would change. Times compare to the second (as the API stores them) and
/// empty values as none.
pub fn status_diff(api: Option<&PodStatus>, new: &PodStatus) -> Map<String, Value> {
    let old = object(api);
    let new_m = object(Some(new));
    let mut out = Map::new();
    let keyed = |k: &str| KEYED_LISTS.iter().any(|(list, _, _)| *list == k);
    for (k, v) in &new_m {
        if !keyed(k) && !same(old.get(k), Some(v)) {
            out.insert(k.clone(), v.clone());
        }
    }
    for k in CLEARED_WHEN_ABSENT {
        if !new_m.contains_key(k) && old.get(k).is_some_and(|v| !is_empty(v)) {
            out.insert(k.into(), Value::Null);
        }
    }
    for (list, key, keep_when_absent) in KEYED_LISTS {
        if keep_when_absent && items(&new_m, list).is_empty() {
            continue;
        }
        diff_keyed_list(list, key, &old, &new_m, &mut out);
    }
    out
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
