//! Metadata the server fills in: uids, timestamps, random name suffixes, managedFields.

use jiff::Timestamp;
use rand::Rng;
use serde_json::{Map, Value, json};

/// A random UUID v4, as the apiserver gives every object.
pub fn new_uid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `n` characters from Go's `utilrand.String` alphabet (generateName, kube-api-access-xxxxx).
pub fn rand_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..n)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// `metav1.Time`: RFC 3339 to the second, UTC.
pub fn time(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `metav1.MicroTime`: RFC 3339 with 6 fractional digits.
pub fn micro_time(ts: Timestamp) -> String {
    format!("{}.{:06}Z", ts.strftime("%Y-%m-%dT%H:%M:%S"), ts.subsec_microsecond())
}

/// The `Date` header.
pub fn http_date(ts: Timestamp) -> String {
    ts.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

pub fn parse_time(s: &str) -> Option<Timestamp> {
    s.parse().ok()
}

/// base64url without padding (JWT segments).
pub fn base64url(data: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The field manager: `fieldManager` if given, else the User-Agent's program name
/// (`kubelet/v1.24.0 (linux/amd64) …` → `kubelet`).
pub fn manager(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    user_agent
        .and_then(|ua| ua.split('/').next())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

const LIST_KEYS: [&str; 7] = ["name", "type", "uid", "ip", "containerPort", "mountPath", "key"];

/// A FieldsV1 set for the fields present in `v` (an approximation of structured-merge-diff's:
/// `f:` per field, `k:{…}` for list items with a well-known key, `.` for created maps).
pub fn fields_v1(v: &Value) -> Value {
    let mut out = Map::new();
    if let Value::Object(m) = v {
        for (k, x) in m {
            if k.starts_with('$') {
                continue;
            }
            out.insert(format!("f:{k}"), child_fields(x));
        }
    }
    Value::Object(out)
}

fn child_fields(x: &Value) -> Value {
    match x {
        Value::Object(m) if !m.is_empty() => {
            let mut f = fields_v1(x);
            f[".".to_string()] = json!({});
            f
        }
        Value::Array(items) => {
            let mut out = Map::new();
            for item in items {
                let Value::Object(m) = item else { continue };
                let Some(key) = LIST_KEYS.iter().find(|k| m.get(**k).is_some_and(|v| !v.is_null())) else {
                    continue;
                };
                let id = json!({ *key: m[*key] }).to_string();
                let mut f = fields_v1(item);
                f[".".to_string()] = json!({});
                out.insert(format!("k:{id}"), f);
            }
            if !out.is_empty() {
                out.insert(".".into(), json!({}));
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

fn union(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(existing) => union(existing, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (into, from) => *into = from.clone(),
    }
}

/// The part of a request body a manager claims: labels, annotations, ownerReferences and
/// finalizers of metadata plus every other top-level field (only `status` for the status
/// subresource).
pub fn intent_fields(intent: &Value, subresource: Option<&str>) -> Value {
    let mut claimed = Map::new();
    let Value::Object(m) = intent else {
        return Value::Object(claimed);
    };
    if subresource == Some("status") {
        if let Some(s) = m.get("status") {
            claimed.insert("status".into(), s.clone());
        }
        return fields_v1(&Value::Object(claimed));
    }
    for (k, v) in m {
        match k.as_str() {
            "kind" | "apiVersion" => {}
            "metadata" => {
                let mut meta = Map::new();
                for f in ["labels", "annotations", "ownerReferences", "finalizers"] {
                    if let Some(x) = v.get(f) {
                        meta.insert(f.into(), x.clone());
                    }
                }
                if !meta.is_empty() {
                    claimed.insert("metadata".into(), Value::Object(meta));
                }
            }
            _ => {
                claimed.insert(k.clone(), v.clone());
            }
        }
    }
    fields_v1(&Value::Object(claimed))
}

/// Adds or refreshes the `Update` entry of `manager` (per subresource) in `obj`'s managedFields.
pub fn record_managed_fields(
    obj: &mut Value,
    manager: &str,
    api_version: &str,
    subresource: Option<&str>,
    fields: Value,
    now: Timestamp,
) {
    if fields.as_object().is_some_and(Map::is_empty) {
        return;
    }
    let meta = &mut obj["metadata"];
    if !meta["managedFields"].is_array() {
        meta["managedFields"] = json!([]);
    }
    let entries = meta["managedFields"].as_array_mut().expect("array");
    let sub = subresource.unwrap_or("");
    let existing = entries.iter_mut().find(|e| {
        e["manager"] == manager && e["operation"] == "Update" && e["subresource"].as_str().unwrap_or("") == sub
    });
    match existing {
        Some(e) => {
            e["time"] = time(now).into();
            e["apiVersion"] = api_version.into();
            union(&mut e["fieldsV1"], &fields);
        }
        None => {
            let mut e = json!({"manager": manager, "operation": "Update", "apiVersion": api_version,
                "time": time(now), "fieldsType": "FieldsV1", "fieldsV1": fields});
            if !sub.is_empty() {
                e["subresource"] = sub.into();
            }
            entries.push(e);
        }
    }
}

/// `metadata.<field>` as a string ("" when absent).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}
