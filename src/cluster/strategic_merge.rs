//! Pure: the one two-way strategic merge patch (apimachinery
//! `strategicpatch.CreateTwoWayMergePatch`) behind every status the kubelet
//! patches: `nodes/<name>/status` (src/cluster/node/patch.rs) and
//! `pods/<name>/status` (src/cluster/status_sync/patch.rs).
//!
//! What the Go types say with `patchStrategy:"merge" patchMergeKey:"…"` is a
//! table here, [`MergeKeys`]: a list under one of its fields merges item by
//! item by that key, at any depth; every other list is atomic (replaced
//! whole, as `containerStatuses` or `images`). The rules:
//!
//! - Both sides are compared with empty values dropped (`null`, `{}`, `[]`,
//!   inside too): the API server stores Go structs, so an empty `lastState`
//!   comes back as `{}` and a `lastProbeTime` as `null`; an empty list patches
//!   nothing, like none.
//! - Objects are diffed key by key; a key the modified side lacks is set to
//!   `null` (deleted).
//! - A keyed list sends its new and changed items (a changed item as its own
//!   diff plus its key), `{"$patch": "delete", key}` for every item gone and,
//!   when anything changed, the new order as `$setElementOrder/<list>`. The
//!   same items in another order are no change.
//!
//! What a caller does not own it leaves out of the comparison before the diff
//! (the pod status keeps the fields other writers set; see its module).

use serde_json::{Map, Value};

/// The merge key of each list merged item by item, by field name (Go's
/// `patchMergeKey`); lists under other fields are replaced whole.
pub type MergeKeys = [(&'static str, &'static str)];

/// `NodeStatus`: `conditions` and `addresses`, both by `type`.
pub const NODE_STATUS: &MergeKeys = &[("conditions", "type"), ("addresses", "type")];

/// `PodStatus`: `conditions` by `type`, `podIPs` and `hostIPs` by `ip`.
pub const POD_STATUS: &MergeKeys = &[("conditions", "type"), ("podIPs", "ip"), ("hostIPs", "ip")];

/// Whether `v` is `null`, `{}` or `[]`.
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Drops empty values ([`is_empty`]) after pruning inside them.
pub fn prune_empty(v: &mut Value) {
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

/// The patch turning the object `original` into `modified`; empty when they
/// are the same (empty values dropped, lists keyed by `keys` compared as
/// sets of items).
pub fn two_way(original: &Map<String, Value>, modified: &Map<String, Value>, keys: &MergeKeys) -> Map<String, Value> {
    let pruned = |m: &Map<String, Value>| {
        let mut v = Value::Object(m.clone());
        prune_empty(&mut v);
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    };
    diff_objects(&pruned(original), &pruned(modified), keys)
}

fn merge_key(keys: &MergeKeys, field: &str) -> Option<&'static str> {
    keys.iter().find(|(f, _)| *f == field).map(|(_, k)| *k)
}

/// [`two_way`] on pruned objects.
fn diff_objects(original: &Map<String, Value>, modified: &Map<String, Value>, keys: &MergeKeys) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, new) in modified {
        let Some(old) = original.get(k) else {
            out.insert(k.clone(), new.clone());
            continue;
        };
        if old == new {
            continue;
        }
        match (old, new, merge_key(keys, k)) {
            (Value::Object(o), Value::Object(n), _) => {
                let d = diff_objects(o, n, keys);
                if !d.is_empty() {
                    out.insert(k.clone(), Value::Object(d));
                }
            }
            (Value::Array(o), Value::Array(n), Some(key)) => {
                if let Some((order, items)) = diff_keyed_list(o, n, key, keys) {
                    out.insert(format!("$setElementOrder/{k}"), Value::Array(order));
                    out.insert(k.clone(), Value::Array(items));
                }
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

/// The new order and the items to send of a list merged by `key`; `None`
/// when the lists hold the same items (in any order).
fn diff_keyed_list(
    original: &[Value],
    modified: &[Value],
    key: &str,
    keys: &MergeKeys,
) -> Option<(Vec<Value>, Vec<Value>)> {
    let key_of = |v: &Value| v.get(key).cloned().unwrap_or(Value::Null);
    let mut items = vec![];
    for n in modified {
        match original.iter().find(|o| key_of(o) == key_of(n)) {
            None => items.push(n.clone()),
            Some(o) if o == n => {}
            Some(o) => match (o.as_object(), n.as_object()) {
                (Some(om), Some(nm)) => {
                    let mut d = diff_objects(om, nm, keys);
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
    if items.is_empty() {
        return None;
    }
    let order = modified
        .iter()
        .map(|n| Value::Object(Map::from_iter([(key.to_string(), key_of(n))])))
        .collect();
    Some((order, items))
}

#[cfg(test)]
#[path = "strategic_merge_tests.rs"]
mod tests;
