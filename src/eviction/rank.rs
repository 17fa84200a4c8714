//! Pure: which pod to evict first for a starved resource (upstream
//! `rankMemoryPressure`, `rankDiskPressureFunc`, `rankPIDPressure`), and the
//! message and annotations the eviction carries (upstream `evictionMessage`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::signals::Observation;
use super::thresholds::{Signal, Threshold};
use crate::admission::pod_request;
use crate::stats::types::PodStats;

/// Event annotation: the containers using more than they requested.
pub const OFFENDING_CONTAINERS: &str = "offending_containers";
/// Event annotation: their usage.
pub const OFFENDING_CONTAINERS_USAGE: &str = "offending_containers_usage";
/// Event annotation: the starved resource.
pub const STARVED_RESOURCE: &str = "starved_resource";

/// A pod's usage of what is starved, from its stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Working set (sum over containers).
    pub memory: Option<i64>,
    /// Ephemeral storage bytes (rootfs, logs, local volumes).
    pub disk: Option<i64>,
    /// Inodes used.
    pub inodes: Option<i64>,
    /// Processes.
    pub processes: Option<i64>,
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Usage {
    /// From a pod's summary entry.
    pub fn of(stats: &PodStats) -> Self {
        let containers: Vec<u64> = stats
            .containers
            .iter()
            .filter_map(|c| c.memory.as_ref()?.working_set_bytes)
            .collect();
        let memory = if containers.is_empty() {
            stats.memory.as_ref().and_then(|m| m.working_set_bytes).map(i)
        } else {
            Some(containers.into_iter().map(i).fold(0, i64::saturating_add))
        };
        let eph = stats.ephemeral_storage.as_ref();
        Self {
            memory,
            disk: eph.and_then(|f| f.used_bytes).map(i),
            inodes: eph.and_then(|f| f.inodes_used).map(i),
            processes: stats.process_stats.as_ref().and_then(|p| p.process_count).map(i),
        }
    }

    fn of_resource(&self, resource: &str) -> Option<i64> {
        match resource {
            "memory" => self.memory,
            "ephemeral-storage" => self.disk,
            "inodes" => self.inodes,
            _ => self.processes,
        }
    }
}

/// A candidate: the pod and its usage (`None`: no stats).
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The pod.
    pub pod: Arc<Pod>,
    /// Its usage, when the summary has the pod.
    pub usage: Option<Usage>,
}

fn priority(p: &Pod) -> i32 {
    p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// Pods without stats first (upstream `cmpBool(!p1Found, !p2Found)`).
fn missing_first(a: &Candidate, b: &Candidate) -> Option<Ordering> {
    match (a.usage.is_some(), b.usage.is_some()) {
        (true, true) => None,
        (x, y) => Some(x.cmp(&y)),
    }
}

fn request(p: &Pod, resource: &str) -> i64 {
    match resource {
        "memory" | "ephemeral-storage" => pod_request(p, resource),
        _ => 0,
    }
}

fn over_request(c: &Candidate, resource: &str) -> i64 {
    let used = c.usage.and_then(|u| u.of_resource(resource)).unwrap_or(0);
    used.saturating_sub(request(&c.pod, resource))
}

fn exceeds(c: &Candidate, resource: &str) -> bool {
    c.usage
        .and_then(|u| u.of_resource(resource))
        .is_some_and(|used| used > request(&c.pod, resource))
}

fn compare(a: &Candidate, b: &Candidate, resource: &str) -> Ordering {
    if resource == "pids" {
        // rankPIDPressure: priority, then most processes.
        return priority(&a.pod).cmp(&priority(&b.pod)).then_with(|| {
            missing_first(a, b).unwrap_or_else(|| {
                let p = |c: &Candidate| c.usage.and_then(|u| u.processes).unwrap_or(0);
                p(b).cmp(&p(a))
            })
        });
    }
    // exceed{Memory,Disk}Requests, priority, then usage above requests.
    missing_first(a, b)
        .unwrap_or_else(|| exceeds(b, resource).cmp(&exceeds(a, resource)))
        .then_with(|| priority(&a.pod).cmp(&priority(&b.pod)))
        .then_with(|| missing_first(a, b).unwrap_or_else(|| over_request(b, resource).cmp(&over_request(a, resource))))
}

/// Sorts `pods` so the first is the one to evict for `signal` (stable: ties
/// keep their order).
///
/// ```
/// use std::sync::Arc;
/// use actlet::eviction::{Candidate, Signal, Usage, rank};
/// use actlet::testing::PodBuilder;
/// let besteffort = Candidate { pod: Arc::new(PodBuilder::new("be").build()), usage: Some(Usage { memory: Some(10 << 20), ..Default::default() }) };
/// let g = PodBuilder::new("g").container("c", "busybox", ["sleep", "1d"]).requests("c", &[("memory", "1Gi")]);
/// let guaranteed = Candidate {
///     pod: Arc::new(g.build()),
///     usage: Some(Usage { memory: Some(900 << 20), ..Default::default() }),
/// };
/// let mut pods = vec![guaranteed, besteffort];
/// rank(&mut pods, Signal::MemoryAvailable);
/// assert_eq!(pods[0].pod.metadata.name.as_deref(), Some("be")); // over its (zero) request
/// ```
pub fn rank(pods: &mut [Candidate], signal: Signal) {
    let resource = signal.resource();
    pods.sort_by(|a, b| compare(a, b, resource));
}

/// Upstream `evictionMessage`: the message of the pod's eviction and the
/// annotations of its `Evicted` event.
pub fn message(
    pod: &Pod,
    stats: Option<&PodStats>,
    threshold: &Threshold,
    observed: Option<&Observation>,
) -> (String, BTreeMap<String, String>) {
    let resource = threshold.signal.resource();
    let mut msg = format!("The node was low on resource: {resource}. ");
    if let Some(o) = observed {
        msg += &format!(
            "Threshold quantity: {}, available: {}. ",
            binary_si(threshold.value.quantity(o.capacity)),
            binary_si(o.available)
        );
    }
    let mut annotations = BTreeMap::new();
    let Some(stats) = stats else {
        return (msg, annotations);
    };
    let (mut names, mut usages) = (vec![], vec![]);
    let spec_containers = pod.spec.iter().flat_map(|s| s.containers.iter());
    for c in spec_containers {
        let Some(cs) = stats.containers.iter().find(|s| s.name == c.name) else {
            continue;
        };
        let used = match resource {
            "memory" => cs.memory.as_ref().and_then(|m| m.working_set_bytes).map(i),
            "ephemeral-storage" => match (
                cs.rootfs.as_ref().and_then(|f| f.used_bytes),
                cs.logs.as_ref().and_then(|f| f.used_bytes),
            ) {
                (Some(r), Some(l)) => Some(i(r).saturating_add(i(l))),
                _ => None,
            },
            _ => None,
        };
        let request = c
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(resource));
        let requested = request
            .and_then(|q| crate::quantity::ParsedQuantity::from_quantity(q).ok())
            .map_or(0, |q| q.value());
        if let Some(used) = used.filter(|u| *u > requested) {
            let requested = request.map_or("0", |q| q.0.as_str());
            msg += &format!(
                "Container {} was using {}, request is {requested}, has larger consumption of {resource}. ",
                c.name,
                binary_si(used)
            );
            names.push(c.name.clone());
            usages.push(binary_si(used));
        }
    }
    annotations.insert(OFFENDING_CONTAINERS.into(), names.join(","));
    annotations.insert(OFFENDING_CONTAINERS_USAGE.into(), usages.join(","));
    annotations.insert(STARVED_RESOURCE.into(), resource.into());
    (msg, annotations)
}

/// A quantity printed as Go's `resource.Quantity` prints a `BinarySI` value:
/// the largest binary suffix that divides it exactly, else the plain number.
///
/// ```
/// use actlet::eviction::rank::binary_si;
/// assert_eq!(binary_si(100 << 20), "100Mi");
/// assert_eq!(binary_si(1536), "1536");
/// assert_eq!(binary_si(3 << 30), "3Gi");
/// assert_eq!(binary_si(0), "0");
/// ```
pub fn binary_si(v: i64) -> String {
    const SUFFIXES: [(&str, u32); 6] = [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)];
    if v != 0 {
        for (s, shift) in SUFFIXES {
            let unit = 1i64 << shift;
            if v % unit == 0 {
                return format!("{}{s}", v / unit);
            }
        }
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::eviction::thresholds::Value;
    use crate::testing::PodBuilder;

    fn cand(name: &str, prio: Option<i32>, mem_req: Option<&str>, used: Option<i64>) -> Candidate {
        let mut b = PodBuilder::new(name).container("c", "busybox", ["sleep", "1d"]);
        if let Some(r) = mem_req {
            b = b.requests("c", &[("memory", r)]);
        }
        let mut pod = b.build();
        if let Some(spec) = pod.spec.as_mut() {
            spec.priority = prio;
        }
        Candidate {
            pod: Arc::new(pod),
            usage: used.map(|m| Usage {
                memory: Some(m),
                disk: Some(m),
                processes: Some(m),
                ..Default::default()
            }),
        }
    }

    fn names(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(|c| c.pod.metadata.name.as_deref().unwrap_or("")).collect()
    }

    #[test]
    fn memory_ranking_is_upstreams() {
        let mut pods = vec![
            cand("within-requests", Some(0), Some("100Mi"), Some(50 << 20)),
            cand("over-low-prio", Some(-5), Some("10Mi"), Some(20 << 20)),
            cand("over-big", Some(0), Some("10Mi"), Some(500 << 20)),
            cand("over-small", Some(0), Some("10Mi"), Some(30 << 20)),
            cand("no-stats", Some(1000), None, None),
        ];
        rank(&mut pods, Signal::MemoryAvailable);
        assert_eq!(
            names(&pods),
            ["no-stats", "over-low-prio", "over-big", "over-small", "within-requests"]
        );
    }

    #[test]
    fn pid_ranking_is_priority_then_processes() {
        let mut pods = vec![
            cand("few", Some(0), None, Some(3)),
            cand("many", Some(0), None, Some(300)),
            cand("important", Some(100), None, Some(3000)),
        ];
        rank(&mut pods, Signal::PidAvailable);
        assert_eq!(names(&pods), ["many", "few", "important"]);
    }

    #[test]
    fn message_names_offending_containers() {
        let pod = PodBuilder::new("hog")
            .container("c", "busybox", ["sleep", "1d"])
            .requests("c", &[("memory", "10Mi")])
            .build();
        let stats: PodStats = serde_json::from_value(serde_json::json!({
            "podRef": {"name": "hog", "namespace": "default", "uid": "u"},
            "startTime": "2026-01-01T00:00:00Z",
            "containers": [{"name": "c", "startTime": "2026-01-01T00:00:00Z",
                            "memory": {"time": "2026-01-01T00:00:00Z", "workingSetBytes": 52428800}}]
        }))
        .unwrap();
        let container = pod.spec.as_ref().unwrap().containers[0].name.clone();
        let stats = PodStats {
            containers: stats
                .containers
                .into_iter()
                .map(|mut c| {
                    c.name = container.clone();
                    c
                })
                .collect(),
            ..stats
        };
        let t = Threshold {
            signal: Signal::MemoryAvailable,
            value: Value::Quantity(100 << 20),
            grace_period: Duration::ZERO,
            min_reclaim: None,
        };
        let obs = Observation {
            available: 50 << 20,
            capacity: 1 << 30,
        };
        let (msg, ann) = message(&pod, Some(&stats), &t, Some(&obs));
        assert_eq!(
            msg,
            format!(
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
                 Container {container} was using 50Mi, request is 10Mi, has larger consumption of memory. "
            )
        );
        assert_eq!(ann[OFFENDING_CONTAINERS], container);
        assert_eq!(ann[OFFENDING_CONTAINERS_USAGE], "50Mi");
        assert_eq!(ann[STARVED_RESOURCE], "memory");
        let (bare, ann) = message(&pod, None, &t, None);
        assert_eq!(bare, "The node was low on resource: memory. ");
        assert!(ann.is_empty());
    }
}
