//! The three patch types of PATCH requests, applied to an object's JSON.
//!
//! * JSON merge patch (RFC 7386): maps merged, `null` deletes, lists replaced wholesale.
//! * JSON patch (RFC 6902): add/remove/replace/move/copy/test in order; any failure rejects
//!   the whole patch.
//! * Strategic merge patch, with the patch metadata of the types the kubelet writes (lists
//!   merged by `patchMergeKey`: pod/node `conditions` by `type`, node `addresses` by `type`,
//!   containers by `name`…; `containerStatuses` has no merge key upstream and is replaced) and
//!   the directives `$patch: replace|delete|merge`, `$setElementOrder/<list>`,
//!   `$deleteFromPrimitiveList/<list>` and `$retainKeys`, ordering the merged list like
//!   apimachinery's `normalizeElementOrder`.

use std::collections::HashSet;

use serde_json::{Map, Value};

/// How a strategic merge patch treats a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListStrategy {
    /// No `patchStrategy:"merge"`: the patch's list replaces the original.
    Atomic,
    /// Merge items with the same value of this key.
    MergeKey(&'static str),
    /// A merged set of scalars (finalizers, podCIDRs).
    MergePrimitive,
}

/// The patch metadata of the list at `path` (map keys from the object root) in a `kind`.
pub fn list_strategy(kind: &str, path: &[String]) -> ListStrategy {
    use ListStrategy::*;
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let last = p.last().copied().unwrap_or("");
    let parent = if p.len() >= 2 { p[p.len() - 2] } else { "" };
    let in_container = p
        .iter()
        .any(|s| matches!(*s, "containers" | "initContainers" | "ephemeralContainers"));
    match p.as_slice() {
        ["metadata", "ownerReferences"] => return MergeKey("uid"),
        ["metadata", "finalizers"] => return MergePrimitive,
        _ => {}
    }
    match kind {
        "Pod" | "PodTemplate" => match (parent, last) {
            ("spec", "containers" | "initContainers" | "ephemeralContainers") => MergeKey("name"),
            ("spec", "volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates") => MergeKey("name"),
            ("spec", "hostAliases") => MergeKey("ip"),
            ("status", "conditions") => MergeKey("type"),
            ("status", "podIPs" | "hostIPs") => MergeKey("ip"),
            ("status", "resourceClaimStatuses") => MergeKey("name"),
            (_, "ports") if in_container => MergeKey("containerPort"),
            (_, "env") if in_container => MergeKey("name"),
            (_, "volumeMounts") if in_container => MergeKey("mountPath"),
            (_, "volumeDevices") if in_container => MergeKey("devicePath"),
            _ => Atomic,
        },
        "Node" => match (parent, last) {
            ("status", "conditions") => MergeKey("type"),
            ("status", "addresses") => MergeKey("type"),
            ("spec", "podCIDRs") => MergePrimitive,
            _ => Atomic,
        },
        _ => Atomic,
    }
}

/// A copy without `$` directives and without `null` values in maps.
fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, x)| !k.starts_with('$') && !x.is_null())
                .map(|(k, x)| (k.clone(), clean(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|x| !(x.is_object() && x.get("$patch").is_some()))
                .map(clean)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch to `original`.
pub fn strategic_merge(kind: &str, original: &Value, patch: &Value) -> Result<Value, String> {
    let mut out = original.clone();
    match (&mut out, patch) {
        (Value::Object(o), Value::Object(p)) => {
            merge_map(kind, o, p, &mut Vec::new())?;
            Ok(out)
        }
        _ => Err("strategic merge patch must be a JSON object".into()),
    }
}

fn merge_map(
    kind: &str,
    orig: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<(), String> {
    match patch.get("$patch").map(|d| d.as_str()) {
        None | Some(Some("merge")) => {}
        Some(Some("replace")) => {
            let Value::Object(m) = clean(&Value::Object(patch.clone())) else {
                unreachable!()
            };
            *orig = m;
            return Ok(());
        }
        Some(Some("delete")) => {
            orig.clear();
            return Ok(());
        }
        Some(_) => return Err(format!("Unknown patch type: {}", patch["$patch"])),
    }
    if let Some(keys) = patch.get("$retainKeys") {
        let keep: HashSet<&str> = keys
            .as_array()
            .ok_or("$retainKeys must be a list")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        orig.retain(|k, _| keep.contains(k.as_str()));
    }
    let mut fields: Vec<&str> = patch
        .keys()
        .filter(|k| !k.starts_with('$'))
        .map(String::as_str)
        .collect();
    for k in patch.keys() {
        for prefix in ["$setElementOrder/", "$deleteFromPrimitiveList/"] {
            if let Some(f) = k.strip_prefix(prefix) {
                if !fields.contains(&f) {
                    fields.push(f);
                }
            }
        }
    }
    for k in fields {
        path.push(k.to_string());
        let pv = patch.get(k);
        let order = patch.get(&format!("$setElementOrder/{k}")).and_then(Value::as_array);
        let deletes = patch
            .get(&format!("$deleteFromPrimitiveList/{k}"))
            .and_then(Value::as_array);
        match pv {
            Some(Value::Null) => {
                orig.remove(k);
            }
            Some(Value::Object(pm)) => match orig.get_mut(k) {
                Some(Value::Object(om)) => merge_map(kind, om, pm, path)?,
                _ => {
                    if pm.get("$patch").and_then(Value::as_str) != Some("delete") {
                        orig.insert(k.to_string(), clean(&Value::Object(pm.clone())));
                    }
                }
            },
            Some(Value::Array(_)) | None => {
                let patch_list: &[Value] = pv.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
                let strategy = list_strategy(kind, path);
                if strategy == ListStrategy::Atomic {
                    if let Some(pv) = pv {
                        orig.insert(k.to_string(), clean(pv));
                    }
                } else {
                    let original: Vec<Value> = orig.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
                    let merged = merge_list(kind, original, patch_list, strategy, order, deletes, path)?;
                    if pv.is_some() || orig.contains_key(k) {
                        orig.insert(k.to_string(), Value::Array(merged));
                    }
                }
            }
            Some(other) => {
                orig.insert(k.to_string(), other.clone());
            }
        }
        path.pop();
    }
    Ok(())
}

fn merge_list(
    kind: &str,
    original: Vec<Value>,
    patch: &[Value],
    strategy: ListStrategy,
    order: Option<&Vec<Value>>,
    deletes: Option<&Vec<Value>>,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    match strategy {
        ListStrategy::Atomic => Ok(patch.iter().map(clean).collect()),
        ListStrategy::MergePrimitive => {
            let mut out = original.clone();
            for p in patch {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
            if let Some(d) = deletes {
                out.retain(|x| !d.contains(x));
            }
            let order: Vec<Value> = order.cloned().unwrap_or_else(|| patch.to_vec());
            let (patch_items, server_only): (Vec<Value>, Vec<Value>) = out.into_iter().partition(|x| order.contains(x));
            Ok(normalize_order(patch_items, server_only, &order, &original, |v| {
                Some(v.clone())
            }))
        }
        ListStrategy::MergeKey(key) => {
            let key_of = |v: &Value| v.get(key).cloned();
            if patch
                .iter()
                .any(|p| p.get("$patch").and_then(Value::as_str) == Some("replace"))
            {
                return Ok(patch.iter().filter(|p| p.get("$patch").is_none()).map(clean).collect());
            }
            let mut out = original.clone();
            for p in patch {
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    let kv = key_of(p);
                    out.retain(|o| key_of(o) != kv);
                }
            }
            for p in patch
                .iter()
                .filter(|p| p.get("$patch").and_then(Value::as_str) != Some("delete"))
            {
                let Value::Object(pm) = p else {
                    return Err(format!("expected a map in the list at {}", path.join(".")));
                };
                let kv = key_of(p).ok_or_else(|| format!("map: {p} does not contain declared merge key: {key}"))?;
                match out.iter().position(|o| o.get(key) == Some(&kv)) {
                    Some(i) => match &mut out[i] {
                        Value::Object(om) => merge_map(kind, om, pm, path)?,
                        other => *other = clean(p),
                    },
                    None => out.push(clean(p)),
                }
            }
            let order: Vec<Value> = match order {
                Some(o) => o.iter().filter_map(key_of).collect(),
                None => patch
                    .iter()
                    .filter(|p| p.get("$patch").is_none())
                    .filter_map(key_of)
                    .collect(),
            };
            let (patch_items, server_only): (Vec<Value>, Vec<Value>) = out
                .into_iter()
                .partition(|x| key_of(x).is_some_and(|k| order.contains(&k)));
            let original_keys: Vec<Value> = original.iter().filter_map(key_of).collect();
            Ok(normalize_order(
                patch_items,
                server_only,
                &order,
                &original_keys,
                key_of,
            ))
        }
    }
}

/// apimachinery's `normalizeElementOrder`: patch items sorted by the patch order, server-only
/// items kept in server order, then merged so that a server-only item goes first only when
/// both are in the server's list and it came first there.
fn normalize_order(
    mut patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key_of: impl Fn(&Value) -> Option<Value>,
) -> Vec<Value> {
    let index = |list: &[Value], v: &Value| key_of(v).and_then(|k| list.iter().position(|x| *x == k));
    patch_items.sort_by_key(|v| index(patch_order, v).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let (mut i, mut j) = (0, 0);
    while i < server_only.len() || j < patch_items.len() {
        if i >= server_only.len() {
            out.push(patch_items[j].clone());
            j += 1;
        } else if j >= patch_items.len() {
            out.push(server_only[i].clone());
            i += 1;
        } else {
            let l = index(server_order, &server_only[i]);
            let r = index(server_order, &patch_items[j]);
            if matches!((l, r), (Some(l), Some(r)) if l < r) {
                out.push(server_only[i].clone());
                i += 1;
            } else {
                out.push(patch_items[j].clone());
                j += 1;
            }
        }
    }
    out
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    if let Value::Object(p) = patch {
        if !target.is_object() {
            *target = Value::Object(Map::new());
        }
        let t = target.as_object_mut().expect("object");
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    } else {
        *target = patch.clone();
    }
}

/// Why a JSON patch was refused: a malformed patch (400) or an op that does not apply (422).
#[derive(Debug)]
pub enum JsonPatchError {
    Decode(String),
    Apply(String),
}

fn pointer(path: &str) -> Result<Vec<String>, JsonPatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| JsonPatchError::Apply(format!("invalid JSON pointer {path:?}")))?;
    Ok(rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn get<'a>(doc: &'a Value, parts: &[String]) -> Option<&'a Value> {
    parts.iter().try_fold(doc, |v, p| match v {
        Value::Object(m) => m.get(p),
        Value::Array(a) => p.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn parent_mut<'a>(doc: &'a mut Value, parts: &[String]) -> Result<&'a mut Value, JsonPatchError> {
    let missing = || JsonPatchError::Apply(format!("doc is missing path: /{}", parts.join("/")));
    let mut v = doc;
    for p in &parts[..parts.len() - 1] {
        v = match v {
            Value::Object(m) => m.get_mut(p).ok_or_else(missing)?,
            Value::Array(a) => p.parse::<usize>().ok().and_then(|i| a.get_mut(i)).ok_or_else(missing)?,
            _ => return Err(missing()),
        };
    }
    Ok(v)
}

fn add(doc: &mut Value, parts: &[String], value: Value) -> Result<(), JsonPatchError> {
    if parts.is_empty() {
        *doc = value;
        return Ok(());
    }
    let last = &parts[parts.len() - 1];
    match parent_mut(doc, parts)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>()
                    .ok()
                    .filter(|i| *i <= a.len())
                    .ok_or_else(|| JsonPatchError::Apply(format!("add operation index out of bounds: {last}")))?
            };
            a.insert(i, value);
            Ok(())
        }
        _ => Err(JsonPatchError::Apply("add operation does not apply".into())),
    }
}

fn remove(doc: &mut Value, parts: &[String]) -> Result<Value, JsonPatchError> {
    let missing = || {
        JsonPatchError::Apply(format!(
            "remove operation does not apply: doc is missing path: /{}",
            parts.join("/")
        ))
    };
    if parts.is_empty() {
        return Err(missing());
    }
    let last = &parts[parts.len() - 1];
    match parent_mut(doc, parts)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => match last.parse::<usize>() {
            Ok(i) if i < a.len() => Ok(a.remove(i)),
            _ => Err(missing()),
        },
        _ => Err(missing()),
    }
}

/// RFC 6902 JSON patch, all or nothing.
pub fn json_patch(doc: &Value, ops: &Value) -> Result<Value, JsonPatchError> {
    let ops = ops.as_array().ok_or_else(|| {
        JsonPatchError::Decode("json: cannot unmarshal object into Go value of type jsonpatch.Patch".into())
    })?;
    let mut out = doc.clone();
    for op in ops {
        let name = op["op"]
            .as_str()
            .ok_or_else(|| JsonPatchError::Decode("operation missing op".into()))?;
        let path = pointer(op["path"].as_str().unwrap_or(""))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| JsonPatchError::Decode(format!("{name} operation missing value")))
        };
        let from = || pointer(op["from"].as_str().unwrap_or(""));
        match name {
            "add" => add(&mut out, &path, value()?)?,
            "remove" => {
                remove(&mut out, &path)?;
            }
            "replace" => {
                remove(&mut out, &path).map_err(|_| {
                    JsonPatchError::Apply("replace operation does not apply: doc is missing key".into())
                })?;
                add(&mut out, &path, value()?)?;
            }
            "move" => {
                let v = remove(&mut out, &from()?)?;
                add(&mut out, &path, v)?;
            }
            "copy" => {
                let v = get(&out, &from()?)
                    .cloned()
                    .ok_or_else(|| JsonPatchError::Apply("copy operation does not apply".into()))?;
                add(&mut out, &path, v)?;
            }
            "test" => {
                if get(&out, &path) != Some(&value()?) {
                    return Err(JsonPatchError::Apply(format!(
                        "testing value {} failed: test failed",
                        op["path"].as_str().unwrap_or("")
                    )));
                }
            }
            other => return Err(JsonPatchError::Decode(format!("Unexpected kind: {other}"))),
        }
    }
    Ok(out)
}
