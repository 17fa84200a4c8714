//! Pure: the node flags' values — `--node-labels`, `--register-with-taints`,
//! `--kube-reserved` / `--system-reserved` — parsed and checked like upstream.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;

use crate::quantity::ParsedQuantity;

/// Resources held back from pods (`kubeReserved` or `systemReserved`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    /// CPU in millicores.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory_bytes: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage_bytes: i64,
    /// Process IDs (`pid`); recorded, not subtracted from anything reported.
    pub pids: i64,
}

impl Reserved {
    /// The sum of two reservations.
    pub fn plus(self, other: Self) -> Self {
        Self {
            cpu_milli: self.cpu_milli.saturating_add(other.cpu_milli),
            memory_bytes: self.memory_bytes.saturating_add(other.memory_bytes),
            ephemeral_storage_bytes: self
                .ephemeral_storage_bytes
                .saturating_add(other.ephemeral_storage_bytes),
            pids: self.pids.saturating_add(other.pids),
        }
    }
}

/// Splits repeated `a=b,c=d` flag values into `(key, value)` pairs.
fn pairs(values: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut out = vec![];
    for item in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?} is not key=value"))?;
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// The labels a kubelet may set on its own Node besides any outside the
/// `kubernetes.io` / `k8s.io` namespaces (upstream `kubeletapis.KubeletLabels`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

fn is_kubelet_settable(label: &str) -> bool {
    let ns = label.split_once('/').map_or("", |(ns, _)| ns);
    let under = |domain: &str| ns == domain || ns.ends_with(&format!(".{domain}"));
    if under("node-restriction.kubernetes.io") {
        return false;
    }
    if !(under("kubernetes.io") || under("k8s.io")) {
        return true;
    }
    KUBELET_LABELS.contains(&label) || under("kubelet.kubernetes.io") || under("node.kubernetes.io")
}

/// `--node-labels`: `key=value` pairs; labels in the `kubernetes.io` / `k8s.io`
/// namespaces a kubelet may not set are refused as upstream does at start-up.
pub fn parse_node_labels(values: &[String]) -> Result<BTreeMap<String, String>, String> {
    let labels: BTreeMap<String, String> = pairs(values)?.into_iter().collect();
    let bad: Vec<&str> = labels
        .keys()
        .filter(|k| !is_kubelet_settable(k))
        .map(String::as_str)
        .collect();
    if !bad.is_empty() {
        return Err(format!(
            "unknown 'kubernetes.io' or 'k8s.io' labels specified: {}",
            bad.join(", ")
        ));
    }
    if let Some(k) = labels.keys().find(|k| k.is_empty()) {
        return Err(format!("empty label key {k:?}"));
    }
    Ok(labels)
}

/// `--register-with-taints`: `key=value:Effect` or `key:Effect`, comma separated.
pub fn parse_taints(values: &[String]) -> Result<Vec<Taint>, String> {
    let mut out: Vec<Taint> = vec![];
    for item in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let (kv, effect) = item
            .rsplit_once(':')
            .ok_or_else(|| format!("invalid taint spec: {item:?} (want key=value:Effect)"))?;
        if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            return Err(format!(
                "invalid taint effect: {effect:?}, unsupported taint effect (NoSchedule, PreferNoSchedule, NoExecute)"
            ));
        }
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (kv.to_string(), None),
        };
        if key.is_empty() {
            return Err(format!("invalid taint spec: {item:?}: empty key"));
        }
        if out.iter().any(|t| t.key == key && t.effect == effect) {
            return Err(format!("duplicated taint: {key}:{effect}"));
        }
        out.push(Taint {
            key,
            value: value.filter(|v| !v.is_empty()),
            effect: effect.to_string(),
            time_added: None,
        });
    }
    Ok(out)
}

/// `--kube-reserved` / `--system-reserved`: `cpu`, `memory`,
/// `ephemeral-storage`, `pid` quantities.
pub fn parse_reserved(values: &[String]) -> Result<Reserved, String> {
    let mut r = Reserved::default();
    for (k, v) in pairs(values)? {
        let q = ParsedQuantity::parse(&v).map_err(|e| format!("{k}: {e}"))?;
        if q.nanos() < 0 {
            return Err(format!("{k}={v}: must not be negative"));
        }
        match k.as_str() {
            "cpu" => r.cpu_milli = q.milli_value(),
            "memory" => r.memory_bytes = q.value(),
            "ephemeral-storage" => r.ephemeral_storage_bytes = q.value(),
            "pid" => r.pids = q.value(),
            other => {
                return Err(format!(
                    "unsupported resource {other:?} (cpu, memory, ephemeral-storage, pid)"
                ));
            }
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn labels_merge_repeats_and_refuse_reserved_namespaces() {
        let l = parse_node_labels(&v(&[
            "a=b, c=d",
            "node-role.example.com/x=",
            "node.kubernetes.io/pool=p",
        ]))
        .unwrap_or_default();
        assert_eq!(l.len(), 4);
        assert_eq!(l["c"], "d");
        assert_eq!(l["node-role.example.com/x"], "");
        let e = parse_node_labels(&v(&["node-role.kubernetes.io/master="])).unwrap_err();
        assert!(e.contains("node-role.kubernetes.io/master"), "{e}");
        assert!(parse_node_labels(&v(&["node-restriction.kubernetes.io/a=b"])).is_err());
        assert!(parse_node_labels(&v(&["novalue"])).is_err());
    }

    #[test]
    fn taints_parse_with_and_without_value() {
        let t = parse_taints(&v(&["dedicated=gpu:NoSchedule,maint:NoExecute"])).unwrap_or_default();
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].key.as_str(), t[0].value.as_deref(), t[0].effect.as_str()),
            ("dedicated", Some("gpu"), "NoSchedule")
        );
        assert_eq!((t[1].key.as_str(), t[1].value.as_deref()), ("maint", None));
        assert!(parse_taints(&v(&["a=b:Sometimes"])).unwrap_err().contains("effect"));
        assert!(parse_taints(&v(&["a=b"])).is_err());
        assert!(
            parse_taints(&v(&["a:NoSchedule,a=x:NoSchedule"]))
                .unwrap_err()
                .contains("duplicated")
        );
    }

    #[test]
    fn reserved_quantities_are_exact() {
        let r = parse_reserved(&v(&["cpu=100m,memory=100Mi", "ephemeral-storage=1G,pid=1000"])).unwrap_or_default();
        assert_eq!(
            r,
            Reserved {
                cpu_milli: 100,
                memory_bytes: 100 << 20,
                ephemeral_storage_bytes: 1_000_000_000,
                pids: 1000
            }
        );
        assert!(parse_reserved(&v(&["gpu=1"])).unwrap_err().contains("gpu"));
        assert!(parse_reserved(&v(&["cpu=lots"])).is_err());
        assert!(parse_reserved(&v(&["memory=-1"])).is_err());
        assert_eq!(r.plus(r).cpu_milli, 200);
    }
}
