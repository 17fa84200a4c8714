//! The pod QoS class (upstream v1.30 `ComputePodQOS`). Private to the status
//! module for now; a shared one is being written in `kuberuntime`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::pod_predicates::{init_containers, spec};

/// `Guaranteed`, `Burstable` or `BestEffort` for the pod: the API status's
/// class when already set (upstream `GetPodQOS`), else computed.
pub(crate) fn pod_qos_class(pod: &Pod) -> &str {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some(class) if !class.is_empty() => class,
        _ => compute_pod_qos(pod),
    }
}

/// Computes the QoS class from the containers' cpu and memory requests and
/// limits. A request left unset defaults to the limit, as API defaulting does.
pub(crate) fn compute_pod_qos(pod: &Pod) -> &'static str {
    let spec = spec(pod);
    let mut requests: BTreeMap<&str, i128> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i128> = BTreeMap::new();
    let mut guaranteed = true;
    for c in spec.containers.iter().chain(init_containers(spec)) {
        let res = c.resources.as_ref();
        let lims = res.and_then(|r| r.limits.as_ref());
        let reqs = res.and_then(|r| r.requests.as_ref());
        let mut limits_found = BTreeSet::new();
        for name in ["cpu", "memory"] {
            let limit = lims.and_then(|l| l.get(name)).map(parse_quantity).unwrap_or(0);
            let request = reqs.and_then(|r| r.get(name)).map_or(limit, parse_quantity);
            if request > 0 {
                *requests.entry(name).or_default() += request;
            }
            if limit > 0 {
                limits_found.insert(name);
                *limits.entry(name).or_default() += limit;
            }
        }
        if limits_found.len() != 2 {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.len() == limits.len() && requests.iter().all(|(name, req)| limits.get(name) == Some(req))
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// A quantity in nano-units (`"100m"` → 100_000_000, `"1Ki"` → 1024·10⁹);
/// unparsable quantities count as zero.
fn parse_quantity(q: &Quantity) -> i128 {
    parse(q.0.trim()).unwrap_or(0)
}

fn parse(s: &str) -> Option<i128> {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let mantissa: i128 = digits.parse().ok()?;
    // value = mantissa · 10^(exp10 - frac digits) · 2^exp2, in nano units (+9).
    let (mut exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => (other.strip_prefix(['e', 'E'])?.parse().ok()?, 0),
    };
    exp10 += 9 - i32::try_from(frac_part.len()).ok()?;
    let mut value = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    if exp10 >= 0 {
        value = value.checked_mul(10i128.checked_pow(exp10.unsigned_abs())?)?;
    } else {
        let div = 10i128.checked_pow(exp10.unsigned_abs())?;
        value = (value + div - 1) / div; // round up, as the API does
    }
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};

    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.into())
    }

    #[test]
    fn parses_quantities() {
        let cases = [
            ("1", 1_000_000_000),
            ("100m", 100_000_000),
            ("0.5", 500_000_000),
            (".5", 500_000_000),
            ("1.5Gi", 1_610_612_736_000_000_000),
            ("1Ki", 1_024_000_000_000),
            ("2k", 2_000_000_000_000),
            ("1e3", 1_000_000_000_000),
            ("1E-3", 1_000_000),
            ("3n", 3),
            ("1u", 1_000),
            ("-1", -1_000_000_000),
            ("+2", 2_000_000_000),
        ];
        for (s, nanos) in cases {
            assert_eq!(parse_quantity(&q(s)), nanos, "{s}");
        }
        for bad in ["", "abc", "1Xi", ".", "1e", "m"] {
            assert_eq!(parse_quantity(&q(bad)), 0, "{bad:?}");
        }
    }

    fn res(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Option<ResourceRequirements> {
        let map = |kv: &[(&str, &str)]| (!kv.is_empty()).then(|| kv.iter().map(|(k, v)| ((*k).into(), q(v))).collect());
        Some(ResourceRequirements {
            requests: map(requests),
            limits: map(limits),
            ..Default::default()
        })
    }

    fn pod(containers: Vec<Option<ResourceRequirements>>, init: Vec<Option<ResourceRequirements>>) -> Pod {
        let mk = |r: Option<ResourceRequirements>| Container {
            name: "c".into(),
            resources: r,
            ..Default::default()
        };
        Pod {
            spec: Some(PodSpec {
                containers: containers.into_iter().map(mk).collect(),
                init_containers: Some(init.into_iter().map(mk).collect()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn qos_table() {
        let full = || {
            res(
                &[("cpu", "1"), ("memory", "1Gi")],
                &[("cpu", "1000m"), ("memory", "1024Mi")],
            )
        };
        let cases = [
            ("no resources", pod(vec![None], vec![]), "BestEffort"),
            (
                "zero requests",
                pod(vec![res(&[("cpu", "0")], &[])], vec![]),
                "BestEffort",
            ),
            (
                "other resources only",
                pod(
                    vec![res(&[("nvidia.com/gpu", "1")], &[("ephemeral-storage", "1Gi")])],
                    vec![],
                ),
                "BestEffort",
            ),
            (
                "requests == limits",
                pod(vec![full(), full()], vec![full()]),
                "Guaranteed",
            ),
            (
                "limits only (requests default)",
                pod(vec![res(&[], &[("cpu", "1"), ("memory", "1Gi")])], vec![]),
                "Guaranteed",
            ),
            (
                "request below limit",
                pod(
                    vec![res(
                        &[("cpu", "500m"), ("memory", "1Gi")],
                        &[("cpu", "1"), ("memory", "1Gi")],
                    )],
                    vec![],
                ),
                "Burstable",
            ),
            (
                "cpu limit only",
                pod(vec![res(&[], &[("cpu", "1")])], vec![]),
                "Burstable",
            ),
            (
                "one container without limits",
                pod(vec![full(), None], vec![]),
                "Burstable",
            ),
            (
                "init container without limits",
                pod(vec![full()], vec![res(&[("cpu", "1")], &[])]),
                "Burstable",
            ),
        ];
        for (name, p, expected) in cases {
            assert_eq!(compute_pod_qos(&p), expected, "{name}");
        }
    }

    #[test]
    fn api_qos_class_wins() {
        let mut p = pod(vec![None], vec![]);
        assert_eq!(pod_qos_class(&p), "BestEffort");
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            qos_class: Some("Burstable".into()),
            ..Default::default()
        });
        assert_eq!(pod_qos_class(&p), "Burstable");
    }
}
