//! Quality of service: the pod's QoS class, its cgroup parent, and each
//! container's cgroup resources (cpu shares, CFS quota, memory limit,
//! `oom_score_adj`), as upstream computes them (`v1qos.GetPodQOS`,
//! `qos.GetContainerOOMScoreAdjust`, `cm.MilliCPUToShares`,
//! `calculateLinuxResources`).
//!
//! Requests default to limits where only a limit is given (the API server's
//! `SetDefaults_Pod`), so static pods that were never defaulted get the same
//! class as API pods. Unparsable quantities count as absent (the API server
//! would have rejected them); a warning is logged.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::cri::v1::LinuxContainerResources;
use crate::quantity::ParsedQuantity;

/// Upstream `v1.PodQOSClass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QosClass {
    /// Every container has equal, non-zero cpu and memory requests and limits.
    Guaranteed,
    /// Some requests or limits, but not Guaranteed.
    Burstable,
    /// No cpu or memory requests or limits at all.
    BestEffort,
}

impl QosClass {
    /// The upstream name (`Guaranteed`, `Burstable`, `BestEffort`).
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "Guaranteed" => Some(QosClass::Guaranteed),
            "Burstable" => Some(QosClass::Burstable),
            "BestEffort" => Some(QosClass::BestEffort),
            _ => None,
        }
    }
}

/// `oom_score_adj` of Guaranteed (and node-critical) containers.
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
/// `oom_score_adj` of BestEffort containers.
pub const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// Minimum cpu shares (`cm.MinShares`).
pub const MIN_SHARES: i64 = 2;
/// Maximum cpu shares (`cm.MaxShares`).
pub const MAX_SHARES: i64 = 262_144;
/// Default CFS period in microseconds (`cm.QuotaPeriod`, 100ms).
pub const QUOTA_PERIOD_US: i64 = 100_000;
/// Minimum CFS quota in microseconds (`cm.MinQuotaPeriod`, 1ms).
pub const MIN_QUOTA_PERIOD_US: i64 = 1_000;
/// Priority at and above which a pod is critical (`scheduling.SystemCriticalPriority`).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

const CPU: &str = "cpu";
const MEMORY: &str = "memory";

/// Init containers then regular containers of the pod.
fn all_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    let spec = pod.spec.as_ref();
    let regular = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
    let init = spec.and_then(|s| s.init_containers.as_deref()).unwrap_or_default();
    regular.iter().chain(init)
}

fn parse(name: &str, q: &Quantity) -> Option<ParsedQuantity> {
    match ParsedQuantity::from_quantity(q) {
        Ok(v) => Some(v),
        Err(err) => {
            tracing::warn!(resource = name, %err, "ignoring invalid resource quantity");
            None
        }
    }
}

fn get(map: Option<&BTreeMap<String, Quantity>>, name: &str) -> Option<ParsedQuantity> {
    map.and_then(|m| m.get(name)).and_then(|q| parse(name, q))
}

/// The container's limit for `resource` (`cpu`, `memory`, …).
pub fn limit(container: &Container, resource: &str) -> Option<ParsedQuantity> {
    get(container.resources.as_ref().and_then(|r| r.limits.as_ref()), resource)
}

/// The container's request for `resource`, defaulted to its limit when only
/// the limit is set (API defaulting).
pub fn request(container: &Container, resource: &str) -> Option<ParsedQuantity> {
    let requests = container.resources.as_ref().and_then(|r| r.requests.as_ref());
    if requests.is_some_and(|m| m.contains_key(resource)) {
        get(requests, resource)
    } else {
        limit(container, resource)
    }
}

/// All (resource, request) and (resource, limit) pairs of a container, with
/// requests defaulted from limits.
/// (resource name, quantity) pairs.
type Amounts<'a> = Vec<(&'a str, ParsedQuantity)>;

fn requests_and_limits(c: &Container) -> (Amounts<'_>, Amounts<'_>) {
    let res = c.resources.as_ref();
    let limit_names = res.and_then(|r| r.limits.as_ref()).into_iter().flat_map(|m| m.keys());
    let request_names = res.and_then(|r| r.requests.as_ref()).into_iter().flat_map(|m| m.keys());
    let mut names: Vec<&str> = limit_names.chain(request_names).map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let requests = names.iter().filter_map(|n| request(c, n).map(|q| (*n, q))).collect();
    let limits = names.iter().filter_map(|n| limit(c, n).map(|q| (*n, q))).collect();
    (requests, limits)
}

/// The pod's QoS class: `status.qosClass` when set, else computed from the
/// spec exactly as upstream `ComputePodQOS` (init containers included; only
/// cpu and memory count; zero quantities are ignored); pod-level
/// `spec.resources` (KEP-2837), when set, decide alone.
pub fn pod_qos(pod: &Pod) -> QosClass {
    if let Some(class) = pod
        .status
        .as_ref()
        .and_then(|s| s.qos_class.as_deref())
        .and_then(QosClass::from_name)
    {
        return class;
    }
    let mut requests: BTreeMap<&str, ParsedQuantity> = BTreeMap::new();
    let mut limits: BTreeMap<&str, ParsedQuantity> = BTreeMap::new();
    let mut guaranteed = true;
    if let Some((reqs, lims)) = pod_level_resources(pod) {
        // KEP-2837: pod-level resources alone decide the class.
        for (name, q) in reqs {
            requests.insert(name, q);
        }
        let mut found = (false, false);
        for (name, q) in lims {
            found.0 |= name == CPU;
            found.1 |= name == MEMORY;
            limits.insert(name, q);
        }
        if !limits.is_empty() && found != (true, true) {
            guaranteed = false;
        }
    }
    let containers = if requests.is_empty() && limits.is_empty() {
        all_containers(pod).collect()
    } else {
        vec![]
    };
    for c in containers {
        let (reqs, lims) = requests_and_limits(c);
        for (name, q) in reqs {
            if (name == CPU || name == MEMORY) && q > ParsedQuantity::ZERO {
                let sum = requests.entry(name).or_default();
                *sum = sum.saturating_add(q);
            }
        }
        let mut found = (false, false);
        for (name, q) in lims {
            if (name == CPU || name == MEMORY) && q > ParsedQuantity::ZERO {
                if name == CPU {
                    found.0 = true
                } else {
                    found.1 = true
                }
                let sum = limits.entry(name).or_default();
                *sum = sum.saturating_add(q);
            }
        }
        if found != (true, true) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return QosClass::BestEffort;
    }
    if guaranteed && requests.iter().all(|(name, req)| limits.get(name) == Some(req)) && requests.len() == limits.len()
    {
        return QosClass::Guaranteed;
    }
    QosClass::Burstable
}

/// Pod-level `spec.resources` (KEP-2837): the non-zero cpu and memory
/// requests (defaulted from the limits, as the API server does) and
/// limits, or `None` when the pod sets none.
fn pod_level_resources(pod: &Pod) -> Option<(Amounts<'static>, Amounts<'static>)> {
    let res = pod.spec.as_ref()?.resources.as_ref()?;
    let pick = |m: Option<&BTreeMap<String, Quantity>>, name: &'static str| {
        get(m, name).filter(|q| *q > ParsedQuantity::ZERO).map(|q| (name, q))
    };
    let limits: Amounts<'static> = [CPU, MEMORY]
        .into_iter()
        .filter_map(|n| pick(res.limits.as_ref(), n))
        .collect();
    let requests: Amounts<'static> = [CPU, MEMORY]
        .into_iter()
        .filter_map(|n| {
            let set = res.requests.as_ref().is_some_and(|m| m.contains_key(n));
            if set {
                pick(res.requests.as_ref(), n)
            } else {
                limits.iter().find(|(l, _)| *l == n).copied()
            }
        })
        .collect();
    (!requests.is_empty() || !limits.is_empty()).then_some((requests, limits))
}

/// Upstream `IsCriticalPod`: static (from the file or HTTP source; an
/// embedder's own sources are not static, as [`PodSource::is_static`]
/// says), mirror, or priority ≥ system-critical.
///
/// [`PodSource::is_static`]: crate::messages::pod_update::PodSource::is_static
pub fn is_critical_pod(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    let source = annotations.and_then(|a| a.get("kubernetes.io/config.source"));
    let is_static = source.is_some_and(|s| s == "file" || s == "http");
    let is_mirror = annotations.is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let priority = pod.spec.as_ref().and_then(|s| s.priority);
    is_static || is_mirror || priority.is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
}

/// Upstream `IsNodeCriticalPod`: critical and priority class `system-node-critical`.
pub fn is_node_critical_pod(pod: &Pod) -> bool {
    let class = pod.spec.as_ref().and_then(|s| s.priority_class_name.as_deref());
    is_critical_pod(pod) && class == Some("system-node-critical")
}

/// Upstream `GetContainerOOMScoreAdjust`: Guaranteed and node-critical −997,
/// BestEffort 1000, Burstable `1000 − 1000·memoryRequest/memoryCapacity`
/// clamped to `[1000 − 997, 999]` = `[3, 999]`; a sidecar gets at most
/// the lowest score of the regular containers.
///
/// containerd here runs with `restrict_oom_score_adj = true`, so it raises a
/// negative value to its own score; the kubelet still sends upstream's value.
pub fn container_oom_score_adj(pod: &Pod, container: &Container, memory_capacity: i64) -> i64 {
    if is_node_critical_pod(pod) {
        return GUARANTEED_OOM_SCORE_ADJ;
    }
    match pod_qos(pod) {
        QosClass::Guaranteed => return GUARANTEED_OOM_SCORE_ADJ,
        QosClass::BestEffort => return BEST_EFFORT_OOM_SCORE_ADJ,
        QosClass::Burstable => {}
    }
    let capacity = memory_capacity.max(1);
    let raw = |c: &Container| {
        let memory_request = request(c, MEMORY).map(|q| q.value()).unwrap_or(0);
        let adj = 1000 - (1000i128 * i128::from(memory_request) / i128::from(capacity));
        i64::try_from(adj).unwrap_or(i64::MIN)
    };
    let mut adj = raw(container);
    // A sidecar (restartable init container) is killed no sooner than the
    // regular container least likely to be killed.
    if container.restart_policy.as_deref() == Some("Always") {
        let regular = pod.spec.iter().flat_map(|s| s.containers.iter());
        adj = regular.map(raw).fold(adj, i64::min);
    }
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ {
        1000 + GUARANTEED_OOM_SCORE_ADJ
    } else if adj == BEST_EFFORT_OOM_SCORE_ADJ {
        adj - 1
    } else {
        adj
    }
}

/// The pod cgroup parent for the cgroupfs driver: `/kubepods/pod<uid>` for
/// Guaranteed, `/kubepods/burstable/pod<uid>`, `/kubepods/besteffort/pod<uid>`.
pub fn pod_cgroup_parent(qos: QosClass, uid: &str) -> String {
    crate::cm::CgroupNaming::default().pod_cgroup_parent(qos, uid)
}

/// Upstream `MilliCPUToShares`: `milli·1024/1000`, clamped to `[2, 262144]`.
pub fn milli_cpu_to_shares(milli_cpu: i64) -> i64 {
    if milli_cpu <= 0 {
        return MIN_SHARES;
    }
    (milli_cpu.saturating_mul(1024) / 1000).clamp(MIN_SHARES, MAX_SHARES)
}

/// Upstream `milliCPUToQuota`: 0 (no quota) for no limit, else
/// `milli·period/1000`, at least 1ms.
pub fn milli_cpu_to_quota(milli_cpu: i64, period_us: i64) -> i64 {
    if milli_cpu <= 0 {
        return 0;
    }
    (milli_cpu.saturating_mul(period_us) / 1000).max(MIN_QUOTA_PERIOD_US)
}

/// A container's cgroup resources (upstream `generateLinuxContainerResources`):
/// cpu shares from the cpu request (or the limit when no request), CFS quota
/// from the cpu limit when `cpu_cfs_quota`, memory limit, `oom_score_adj`.
pub fn container_resources(
    pod: &Pod,
    container: &Container,
    memory_capacity: i64,
    cpu_cfs_quota: bool,
) -> LinuxContainerResources {
    let cpu_request = request(container, CPU).unwrap_or_default();
    let cpu_limit = limit(container, CPU).unwrap_or_default();
    let memory_limit = limit(container, MEMORY).map(|q| q.value()).unwrap_or(0);
    let cpu_shares = if cpu_request.is_zero() && !cpu_limit.is_zero() {
        milli_cpu_to_shares(cpu_limit.milli_value())
    } else {
        milli_cpu_to_shares(cpu_request.milli_value())
    };
    let mut resources = LinuxContainerResources {
        cpu_shares,
        memory_limit_in_bytes: memory_limit.max(0),
        oom_score_adj: container_oom_score_adj(pod, container, memory_capacity),
        ..Default::default()
    };
    if cpu_cfs_quota {
        resources.cpu_period = QUOTA_PERIOD_US;
        resources.cpu_quota = milli_cpu_to_quota(cpu_limit.milli_value(), QUOTA_PERIOD_US);
    }
    resources
}

#[cfg(test)]
#[path = "qos_tests.rs"]
mod tests;
