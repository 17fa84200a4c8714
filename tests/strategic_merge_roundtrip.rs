//! The kubelet's two-way strategic merge patches
//! (`actlet::cluster::strategic_merge`, used for node and pod status), applied
//! by the fake API server's strategic merge (tests/support/apiserver/patch.rs,
//! apimachinery's rules per Go type), turn the API's status into the
//! kubelet's: for many generated pairs of pod and node statuses, the patched
//! original equals the modified status (empty values as none, merged lists as
//! sets), and an empty patch means nothing differs.
//!
//! The statuses come from a fixed-seed generator, so a failure repeats.

#[path = "support/apiserver/patch.rs"]
#[allow(dead_code)]
mod patch;

use actlet::cluster::strategic_merge::{MergeKeys, NODE_STATUS, POD_STATUS, prune_empty, two_way};
use serde_json::{Map, Value, json};

/// xorshift64*: a small deterministic generator.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self) -> bool {
        self.below(2) == 0
    }
    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[self.below(of.len())]
    }
    /// A random subset of `of`, in random order.
    fn subset<'a>(&mut self, of: &[&'a str]) -> Vec<&'a str> {
        let mut out: Vec<&str> = of.iter().copied().filter(|_| self.chance()).collect();
        for i in (1..out.len()).rev() {
            let j = self.below(i + 1);
            out.swap(i, j);
        }
        out
    }
}

fn condition(g: &mut Gen, type_: &str) -> Value {
    let mut c = Map::new();
    c.insert("type".into(), json!(type_));
    c.insert("status".into(), json!(g.pick(&["True", "False", "Unknown"])));
    for (field, values) in [
        ("reason", &["ContainersNotReady", "PodCompleted", "KubeletReady"][..]),
        (
            "message",
            &[
                "containers with unready status: [app]",
                "kubelet is posting ready status",
            ][..],
        ),
        (
            "lastTransitionTime",
            &["2026-12-01T00:00:00Z", "2026-12-01T00:00:05Z"][..],
        ),
    ] {
        if g.chance() {
            c.insert(field.into(), json!(g.pick(values)));
        }
    }
    if g.chance() {
        // What the API server answers for a Go struct's zero time.
        c.insert("lastProbeTime".into(), Value::Null);
    }
    Value::Object(c)
}

fn pod_status(g: &mut Gen) -> Value {
    let mut s = Map::new();
    s.insert("phase".into(), json!(g.pick(&["Pending", "Running", "Succeeded"])));
    if g.chance() {
        s.insert("reason".into(), json!(g.pick(&["Evicted", "NodeShutdown"])));
    }
    if g.chance() {
        s.insert("message".into(), json!("the node was low on memory"));
    }
    let types = g.subset(&[
        "PodScheduled",
        "Initialized",
        "Ready",
        "ContainersReady",
        "example.com/gate",
    ]);
    s.insert("conditions".into(), types.iter().map(|t| condition(g, t)).collect());
    let ips = g.subset(&["10.88.0.2", "10.88.0.3", "fd00::3"]);
    if let Some(first) = ips.first() {
        s.insert("podIP".into(), json!(first));
    }
    s.insert("podIPs".into(), ips.iter().map(|ip| json!({"ip": ip})).collect());
    s.insert(
        "hostIPs".into(),
        g.subset(&["10.0.0.1", "10.0.0.2"])
            .iter()
            .map(|ip| json!({"ip": ip}))
            .collect(),
    );
    let containers: Vec<Value> = g
        .subset(&["app", "sidecar"])
        .iter()
        .map(|n| {
            json!({"name": n, "ready": g.chance(), "restartCount": g.below(3),
                "lastState": {}, "state": {"running": {"startedAt": "2026-12-01T00:00:01Z"}}})
        })
        .collect();
    s.insert("containerStatuses".into(), Value::Array(containers));
    Value::Object(s)
}

fn node_status(g: &mut Gen) -> Value {
    let mut s = Map::new();
    let types = g.subset(&["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]);
    s.insert("conditions".into(), types.iter().map(|t| condition(g, t)).collect());
    let addresses: Vec<Value> = g
        .subset(&["InternalIP", "Hostname", "ExternalIP"])
        .iter()
        .map(|t| json!({"type": t, "address": g.pick(&["10.0.0.1", "10.0.0.2", "node-a"])}))
        .collect();
    s.insert("addresses".into(), Value::Array(addresses));
    let mut capacity = Map::new();
    for r in g.subset(&["cpu", "memory", "pods"]) {
        capacity.insert(r.into(), json!(g.pick(&["2", "4", "110"])));
    }
    s.insert("capacity".into(), Value::Object(capacity));
    let images: Vec<Value> = g
        .subset(&["busybox", "pause"])
        .iter()
        .map(|i| json!({"names": [i], "sizeBytes": 1}))
        .collect();
    s.insert("images".into(), Value::Array(images));
    s.insert(
        "nodeInfo".into(),
        json!({"kubeletVersion": g.pick(&["v1.36.0", "v1.36.1"]), "bootID": ""}),
    );
    Value::Object(s)
}

/// `v` with empty values dropped and every list merged by a key sorted by it.
fn normal(v: &Value, keys: &MergeKeys) -> Value {
    fn sort(v: &mut Value, keys: &MergeKeys) {
        if let Value::Object(m) = v {
            for (field, item) in m.iter_mut() {
                sort(item, keys);
                if let (Some((_, key)), Value::Array(items)) = (keys.iter().find(|(f, _)| f == field), item) {
                    items.sort_by_key(|i| i.get(*key).map(Value::to_string));
                }
            }
        }
    }
    let mut v = v.clone();
    prune_empty(&mut v);
    sort(&mut v, keys);
    v
}

fn roundtrip(kind: &str, keys: &MergeKeys, make: fn(&mut Gen) -> Value) {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let (mut empty, mut applied) = (0, 0);
    for case in 0..2_000 {
        let (old, new) = (make(&mut g), make(&mut g));
        let as_map = |v: &Value| v.as_object().cloned().unwrap_or_default();
        let diff = two_way(&as_map(&old), &as_map(&new), keys);
        let same = normal(&old, keys) == normal(&new, keys);
        assert_eq!(diff.is_empty(), same, "case {case}: {old} → {new}: {diff:?}");
        let patched = patch::strategic_merge(kind, &json!({"status": old}), &json!({"status": diff}))
            .unwrap_or_else(|e| panic!("case {case}: the API server refuses {diff:?}: {e}"));
        assert_eq!(
            normal(&patched["status"], keys),
            normal(&new, keys),
            "case {case}: {old} patched with {diff:?}"
        );
        if diff.is_empty() {
            empty += 1;
        } else {
            applied += 1;
        }
    }
    assert!(
        applied > 1_000,
        "the generator makes differing pairs: {applied} of 2000"
    );
    eprintln!("{kind}: {applied} patches applied, {empty} pairs without a difference");
}

#[test]
fn pod_status_patches_turn_the_api_status_into_the_kubelets() {
    roundtrip("Pod", POD_STATUS, pod_status);
}

#[test]
fn node_status_patches_turn_the_api_status_into_the_kubelets() {
    roundtrip("Node", NODE_STATUS, node_status);
}

#[test]
fn a_changed_item_of_a_merged_list_is_applied_in_the_new_order() {
    let old = json!({"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False", "reason": "R"}]});
    let new = json!({"conditions": [{"type": "B", "status": "True"}, {"type": "A", "status": "True"}]});
    let diff = two_way(
        old.as_object().unwrap_or(&Map::new()),
        new.as_object().unwrap_or(&Map::new()),
        NODE_STATUS,
    );
    let patched = patch::strategic_merge("Node", &json!({"status": old}), &json!({"status": diff}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched["status"], new, "order and the cleared reason: {diff:?}");
}
