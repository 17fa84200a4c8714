//! The resources a pod's cgroup gets (upstream `ResourceConfigForPod` in
//! `helpers_linux.go`), the QoS and node allocatable cgroups' resources
//! (`qos_container_manager_linux.go`, `node_container_manager_linux.go`),
//! and the cgroup v2 conversions (`CpuSharesToCpuWeight`).
//!
//! Pod requests and limits are summed as upstream `PodRequests`/`PodLimits`:
//! regular containers and restartable init containers (sidecars) add up,
//! each regular init container counts together with the sidecars started
//! before it, and the pod gets the larger of the two; `spec.overhead` is
//! added to every request and to the limits that are set; pod-level
//! `spec.resources` (KEP-2837) replaces the aggregate for `cpu` and `memory`.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::kuberuntime::qos::{
    self, MIN_SHARES, QUOTA_PERIOD_US, QosClass, milli_cpu_to_quota, milli_cpu_to_shares, pod_qos,
};
use crate::quantity::ParsedQuantity;

/// What one cgroup is set to; `None` leaves the setting alone (upstream
/// `ResourceConfig`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceConfig {
    /// `cpu.shares` (v1; v2 writes [`cpu_shares_to_weight`] to `cpu.weight`).
    pub cpu_shares: Option<u64>,
    /// CFS quota in µs; `-1` is unlimited.
    pub cpu_quota: Option<i64>,
    /// CFS period in µs.
    pub cpu_period: Option<u64>,
    /// Memory limit in bytes.
    pub memory: Option<i64>,
    /// Maximum number of processes; `-1` is unlimited.
    pub pids_limit: Option<i64>,
}

/// cpu and memory amounts of a pod: milli-cpu and bytes; `None` when not set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuMemory {
    /// milli-cpu.
    pub cpu_milli: Option<i64>,
    /// bytes.
    pub memory: Option<i64>,
}

impl CpuMemory {
    fn add(self, o: Self) -> Self {
        let sum = |a: Option<i64>, b: Option<i64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
        Self {
            cpu_milli: sum(self.cpu_milli, o.cpu_milli),
            memory: sum(self.memory, o.memory),
        }
    }

    fn max(self, o: Self) -> Self {
        Self {
            cpu_milli: self.cpu_milli.max(o.cpu_milli),
            memory: self.memory.max(o.memory),
        }
    }
}

fn amounts(cpu: Option<ParsedQuantity>, memory: Option<ParsedQuantity>) -> CpuMemory {
    CpuMemory {
        cpu_milli: cpu.map(|q| q.milli_value()),
        memory: memory.map(|q| q.value()),
    }
}

fn container_requests(c: &Container) -> CpuMemory {
    amounts(qos::request(c, "cpu"), qos::request(c, "memory"))
}

fn container_limits(c: &Container) -> CpuMemory {
    amounts(qos::limit(c, "cpu"), qos::limit(c, "memory"))
}

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// Upstream `AggregateContainerRequests`/`AggregateContainerLimits`.
fn aggregate(pod: &Pod, of: fn(&Container) -> CpuMemory) -> CpuMemory {
    let Some(spec) = pod.spec.as_ref() else {
        return CpuMemory::default();
    };
    let mut total = spec
        .containers
        .iter()
        .map(of)
        .fold(CpuMemory::default(), CpuMemory::add);
    let (mut sidecars, mut init_max) = (CpuMemory::default(), CpuMemory::default());
    for c in spec.init_containers.iter().flatten() {
        let own = of(c);
        let effective = if is_sidecar(c) {
            total = total.add(own);
            sidecars = sidecars.add(own);
            sidecars
        } else {
            own.add(sidecars)
        };
        init_max = init_max.max(effective);
    }
    total.max(init_max)
}

fn pod_level(pod: &Pod) -> (CpuMemory, CpuMemory) {
    let res = pod.spec.as_ref().and_then(|s| s.resources.as_ref());
    let get =
        |m: Option<&std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
         name: &str| {
            m.and_then(|m| m.get(name))
                .and_then(|q| ParsedQuantity::from_quantity(q).ok())
        };
    let limits = res.and_then(|r| r.limits.as_ref());
    let requests = res.and_then(|r| r.requests.as_ref());
    let lim = amounts(get(limits, "cpu"), get(limits, "memory"));
    // API defaulting: a pod-level request defaults to the pod-level limit.
    let req = CpuMemory {
        cpu_milli: get(requests, "cpu").map(|q| q.milli_value()).or(lim.cpu_milli),
        memory: get(requests, "memory").map(|q| q.value()).or(lim.memory),
    };
    (req, lim)
}

fn overhead(pod: &Pod) -> CpuMemory {
    let o = pod.spec.as_ref().and_then(|s| s.overhead.as_ref());
    let get = |n: &str| {
        o.and_then(|m| m.get(n))
            .and_then(|q| ParsedQuantity::from_quantity(q).ok())
    };
    amounts(get("cpu"), get("memory"))
}

/// The pod's effective requests (upstream `PodRequests`): aggregate,
/// replaced by pod-level requests where set, plus overhead.
pub fn pod_requests(pod: &Pod) -> CpuMemory {
    let mut reqs = aggregate(pod, container_requests);
    let (level, _) = pod_level(pod);
    reqs.cpu_milli = level.cpu_milli.or(reqs.cpu_milli);
    reqs.memory = level.memory.or(reqs.memory);
    reqs.add(overhead(pod))
}

/// The pod's effective limits (upstream `PodLimits`): aggregate, replaced
/// by pod-level limits where set, plus overhead on the limits that are set.
pub fn pod_limits(pod: &Pod) -> CpuMemory {
    let mut lims = aggregate(pod, container_limits);
    let (_, level) = pod_level(pod);
    lims.cpu_milli = level.cpu_milli.or(lims.cpu_milli);
    lims.memory = level.memory.or(lims.memory);
    let o = overhead(pod);
    CpuMemory {
        cpu_milli: lims.cpu_milli.map(|v| v.saturating_add(o.cpu_milli.unwrap_or(0))),
        memory: lims.memory.map(|v| v.saturating_add(o.memory.unwrap_or(0))),
    }
}

/// Whether every container (init containers included) declares a non-zero
/// cpu / memory limit, or the pod declares one at pod level.
fn limits_declared(pod: &Pod) -> (bool, bool) {
    let spec = pod.spec.as_ref();
    let all = spec
        .into_iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()));
    let (mut cpu, mut memory) = (true, true);
    for c in all {
        let l = container_limits(c);
        cpu &= l.cpu_milli.is_some_and(|v| v != 0);
        memory &= l.memory.is_some_and(|v| v != 0);
    }
    let (_, level) = pod_level(pod);
    (
        cpu || level.cpu_milli.is_some_and(|v| v != 0),
        memory || level.memory.is_some_and(|v| v != 0),
    )
}

/// Upstream `ResourceConfigForPod`: Guaranteed pods get shares, quota and
/// memory limit; Burstable pods shares, and quota / memory limit only when
/// every container declares that limit; BestEffort pods the minimum shares.
/// Without `cpu_cfs_quota` the quota is `-1` (unlimited). `pod_pids_limit`
/// > 0 becomes the pids limit (upstream `podPidsLimit`).
pub fn resource_config_for_pod(pod: &Pod, cpu_cfs_quota: bool, pod_pids_limit: i64) -> ResourceConfig {
    let reqs = pod_requests(pod);
    let lims = pod_limits(pod);
    let (cpu_declared, memory_declared) = limits_declared(pod);
    let shares = milli_cpu_to_shares(reqs.cpu_milli.unwrap_or(0)) as u64;
    let mut quota = milli_cpu_to_quota(lims.cpu_milli.unwrap_or(0), QUOTA_PERIOD_US);
    if !cpu_cfs_quota {
        quota = -1;
    }
    let period = QUOTA_PERIOD_US as u64;
    let memory = lims.memory.unwrap_or(0);
    let mut out = ResourceConfig::default();
    match pod_qos(pod) {
        QosClass::Guaranteed => {
            out.cpu_shares = Some(shares);
            out.cpu_quota = Some(quota);
            out.cpu_period = Some(period);
            out.memory = Some(memory);
        }
        QosClass::Burstable => {
            out.cpu_shares = Some(shares);
            if cpu_declared {
                out.cpu_quota = Some(quota);
                out.cpu_period = Some(period);
            }
            if memory_declared {
                out.memory = Some(memory);
            }
        }
        QosClass::BestEffort => out.cpu_shares = Some(MIN_SHARES as u64),
    }
    if pod_pids_limit > 0 {
        out.pids_limit = Some(pod_pids_limit);
    }
    out
}

/// The Burstable QoS cgroup's cpu shares: the sum of the cpu requests of
/// the active Burstable pods (upstream `setCPUCgroupConfig`).
pub fn burstable_qos_config<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> ResourceConfig {
    let milli: i64 = pods
        .into_iter()
        .filter(|p| pod_qos(p) == QosClass::Burstable)
        .map(|p| pod_requests(p).cpu_milli.unwrap_or(0))
        .fold(0, i64::saturating_add);
    ResourceConfig {
        cpu_shares: Some(milli_cpu_to_shares(milli) as u64),
        ..ResourceConfig::default()
    }
}

/// The BestEffort QoS cgroup: the minimum shares (2).
pub fn besteffort_qos_config() -> ResourceConfig {
    ResourceConfig {
        cpu_shares: Some(MIN_SHARES as u64),
        ..ResourceConfig::default()
    }
}

/// Node capacity or allocatable in the units cgroups use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeResources {
    /// milli-cpu.
    pub cpu_milli: i64,
    /// bytes.
    pub memory: i64,
}

/// The `kubepods` cgroup (upstream `getCgroupConfig` of node allocatable):
/// cpu shares and memory limit of `capacity − kube/system reserved` when
/// `enforceNodeAllocatable` holds `pods`, of the whole capacity otherwise.
/// The eviction threshold is not subtracted (upstream neither).
pub fn node_allocatable_config(capacity: NodeResources, reserved: NodeResources, enforce_pods: bool) -> ResourceConfig {
    let (cpu, memory) = if enforce_pods {
        (
            (capacity.cpu_milli - reserved.cpu_milli).max(0),
            (capacity.memory - reserved.memory).max(0),
        )
    } else {
        (capacity.cpu_milli, capacity.memory)
    };
    ResourceConfig {
        cpu_shares: Some(milli_cpu_to_shares(cpu) as u64),
        memory: Some(memory),
        ..ResourceConfig::default()
    }
}

/// Upstream `CpuSharesToCpuWeight`: shares `[2, 262144]` onto cgroup v2
/// `cpu.weight` `[1, 10000]`.
pub fn cpu_shares_to_weight(shares: u64) -> u64 {
    let shares = shares.clamp(2, 262_144);
    1 + ((shares - 2) * 9999) / 262_142
}

/// cgroup v2 `cpu.max`: `"<quota> <period>"`, `"max <period>"` when unlimited.
pub fn cpu_max(quota: Option<i64>, period: Option<u64>) -> Option<String> {
    let period = period.unwrap_or(QUOTA_PERIOD_US as u64);
    match quota {
        None => None,
        Some(q) if q <= 0 => Some(format!("max {period}")),
        Some(q) => Some(format!("{q} {period}")),
    }
}

/// A limit as cgroup v2 writes it: the value, `max` when not positive.
pub fn v2_limit(value: i64) -> String {
    if value > 0 { value.to_string() } else { "max".into() }
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
