//! The API status of a pod from the runtime's view of it (upstream v1.30
//! `generateAPIPodStatus` + `convertStatusToAPIStatus`), as a pure function.

use std::collections::HashMap;
use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::conditions::{self, stamp_transition_times};
use super::container_statuses::{ContainerKind, ConvertContext, convert_container_statuses};
use super::phase::{Phase, get_phase};
use super::pod_predicates::{is_host_network, spec};
use super::probe_results::ProbeResults;
use super::reasons::{DISRUPTION_TARGET, TERMINATION_BY_KUBELET, is_kubelet_condition};
use crate::kuberuntime::pod_status::{RuntimePodStatus, SandboxState};

/// The container ID scheme used when the input names none.
pub const DEFAULT_RUNTIME_NAME: &str = "containerd";

static NO_WAITING: LazyLock<HashMap<String, (String, String)>> = LazyLock::new(HashMap::new);
static NO_RESULTS: LazyLock<HashMap<String, bool>> = LazyLock::new(HashMap::new);

/// A terminal verdict that overrides the generated phase (eviction,
/// admission rejection): upstream `PodSyncHandlers.ShouldEvict`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalOverride {
    /// The phase to report (normally [`Phase::Failed`]).
    pub phase: Phase,
    /// `status.reason`, e.g. `Evicted`.
    pub reason: String,
    /// `status.message`.
    pub message: String,
    /// Add a `DisruptionTarget` condition (reason `TerminationByKubelet`,
    /// the message above), as upstream's eviction and shutdown managers do.
    pub disruption: bool,
}

/// Everything [`generate_api_pod_status`] reads. Build it with
/// [`StatusInput::new`] and override fields with struct update syntax.
#[derive(Clone, Debug)]
pub struct StatusInput<'a> {
    /// The pod (its `status` is the API's view, used when `previous` is unset).
    pub pod: &'a Pod,
    /// The runtime's view of the pod.
    pub runtime: &'a RuntimePodStatus,
    /// The status the status manager holds for the pod, if any.
    pub previous: Option<&'a PodStatus>,
    /// Why containers wait (reason, message) by container name, from the last
    /// sync: `CrashLoopBackOff`, `ErrImagePull`, `CreateContainerConfigError`…
    pub waiting: &'a HashMap<String, (String, String)>,
    /// Readiness probe results by container id (bare or `runtime://id`).
    pub readiness: &'a HashMap<String, bool>,
    /// Startup probe results by container id (bare or `runtime://id`).
    pub started: &'a HashMap<String, bool>,
    /// The node's IP (`hostIP`; also `podIP` of hostNetwork pods).
    pub host_ip: Option<String>,
    /// The runtime name prefixed to container IDs (`containerd://…`).
    pub runtime_name: &'a str,
    /// The pod worker stopped the pod for good: containers won't restart.
    pub pod_is_terminal: bool,
    /// A terminal verdict overriding phase, reason and message.
    pub terminal_override: Option<TerminalOverride>,
    /// The current time (start time and condition transitions).
    pub now: Timestamp,
    /// A running container does not run with its spec's resources yet.
    pub resize_in_progress: bool,
    /// Why the last attempt to resize failed (with `resize_in_progress`).
    pub resize_error: Option<String>,
    /// A resize the node has not allocated: `Infeasible`/`Deferred` and why.
    pub resize_pending: Option<(String, String)>,
}

impl<'a> StatusInput<'a> {
    /// An input with no previous status, no waiting reasons, no probe results,
    /// no host IP, runtime `containerd`, not terminal, no override.
    pub fn new(pod: &'a Pod, runtime: &'a RuntimePodStatus, now: Timestamp) -> Self {
        Self {
            pod,
            runtime,
            previous: None,
            waiting: &NO_WAITING,
            readiness: &NO_RESULTS,
            started: &NO_RESULTS,
            host_ip: None,
            runtime_name: DEFAULT_RUNTIME_NAME,
            pod_is_terminal: false,
            terminal_override: None,
            now,
            resize_in_progress: false,
            resize_error: None,
            resize_pending: None,
        }
    }
}

/// Whether a ready sandbox with networking exists, so no new sandbox is needed
/// (upstream `PodSandboxChanged` negated).
pub fn sandbox_ready(pod: &Pod, runtime: &RuntimePodStatus) -> bool {
    let Some(newest) = runtime.sandboxes.first() else {
        return false;
    };
    let ready = runtime
        .sandboxes
        .iter()
        .filter(|s| s.state == SandboxState::Ready)
        .count();
    let host_network = is_host_network(pod);
    let has_ip = newest.ips.first().is_some_and(|ip| !ip.is_empty());
    ready == 1 && newest.state == SandboxState::Ready && newest.host_network == host_network && (host_network || has_ip)
}

fn non_empty(v: Vec<ContainerStatus>) -> Option<Vec<ContainerStatus>> {
    (!v.is_empty()).then_some(v)
}

/// Generates the pod's API status. Pure: same input, same output.
pub fn generate_api_pod_status(input: &StatusInput<'_>) -> PodStatus {
    let pod = input.pod;
    let empty = PodStatus::default();
    let api = pod.status.as_ref().unwrap_or(&empty);
    let old = input.previous.unwrap_or(api);
    let mut s = PodStatus::default();

    let ips: Vec<PodIP> = input
        .runtime
        .ips
        .iter()
        .filter(|ip| !ip.is_empty())
        .map(|ip| PodIP { ip: ip.clone() })
        .collect();
    s.pod_ip = ips.first().map(|ip| ip.ip.clone());
    s.pod_ips = (!ips.is_empty()).then_some(ips);
    s.qos_class = Some(crate::kuberuntime::qos::pod_qos(pod).as_str().to_owned());

    convert_all(input, old, &mut s);
    let phase = decide_phase(input, old, api, &mut s);
    ProbeResults {
        readiness: input.readiness,
        started: input.started,
    }
    .apply(pod, &mut s);
    s.conditions = Some(build_conditions(input, old, api, &s, phase));
    super::resources::apply(pod, input.resize_in_progress, old, &mut s);
    // Upstream `CalculatePodStatusObservedGeneration` (GA 1.35).
    s.observed_generation = pod.metadata.generation;

    if let Some(host_ip) = input.host_ip.as_ref().filter(|ip| !ip.is_empty()) {
        s.host_ip = Some(host_ip.clone());
        s.host_ips = Some(vec![HostIP { ip: host_ip.clone() }]);
        if is_host_network(pod) && s.pod_ip.is_none() {
            s.pod_ip = Some(host_ip.clone());
            s.pod_ips = Some(vec![PodIP { ip: host_ip.clone() }]);
        }
    }

    s.start_time = old.start_time.clone().or(Some(Time(input.now)));
    s
}

/// Regular, init and ephemeral container statuses.
fn convert_all(input: &StatusInput<'_>, old: &PodStatus, s: &mut PodStatus) {
    let ctx = ConvertContext {
        pod: input.pod,
        runtime: input.runtime,
        waiting: input.waiting,
        runtime_name: input.runtime_name,
    };
    let convert = |previous: &Option<Vec<ContainerStatus>>, kind| {
        convert_container_statuses(&ctx, previous.as_deref().unwrap_or_default(), kind)
    };
    s.container_statuses = Some(convert(&old.container_statuses, ContainerKind::Regular));
    s.init_container_statuses = non_empty(convert(&old.init_container_statuses, ContainerKind::Init));
    s.ephemeral_container_statuses = non_empty(convert(&old.ephemeral_container_statuses, ContainerKind::Ephemeral));
}

/// The phase, merged three ways with the manager's (`old`) and the API's
/// phase so a terminal phase sticks; sets phase, reason and message.
fn decide_phase(input: &StatusInput<'_>, old: &PodStatus, api: &PodStatus, s: &mut PodStatus) -> Phase {
    let all: Vec<ContainerStatus> = s
        .container_statuses
        .iter()
        .flatten()
        .chain(s.init_container_statuses.iter().flatten())
        .cloned()
        .collect();
    let mut phase = get_phase(input.pod, &all, input.pod_is_terminal);
    let old_phase = Phase::parse(old.phase.as_deref());
    let api_phase = Phase::parse(api.phase.as_deref());
    if !phase.is_terminal() {
        let terminal = |p: &Phase| p.is_terminal();
        if let Some(p) = old_phase.filter(terminal).or(api_phase.filter(terminal)) {
            phase = p;
        }
    }
    if Some(phase) == old_phase {
        let keep = |o: &Option<String>, a: &Option<String>| o.clone().filter(|v| !v.is_empty()).or_else(|| a.clone());
        s.reason = keep(&old.reason, &api.reason);
        s.message = keep(&old.message, &api.message);
    }
    if let Some(o) = &input.terminal_override {
        phase = o.phase;
        s.reason = Some(o.reason.clone());
        s.message = Some(o.message.clone());
    }
    if let Some(p) = api_phase.filter(|p| p.is_terminal() && *p != phase) {
        let pod = &input.pod.metadata.name;
        tracing::error!(?pod, from = %p, to = %phase, "pod attempted illegal phase transition");
        phase = p;
    }
    s.phase = Some(phase.as_str().to_owned());
    phase
}

/// Others' conditions from the API (then the manager's), the disruption
/// target from the manager, then the kubelet's own, with transition times.
fn build_conditions(
    input: &StatusInput<'_>,
    old: &PodStatus,
    api: &PodStatus,
    s: &PodStatus,
    phase: Phase,
) -> Vec<PodCondition> {
    let spec = spec(input.pod);
    let mut conds: Vec<_> = api
        .conditions
        .iter()
        .flatten()
        .filter(|c| !is_kubelet_condition(&c.type_))
        .cloned()
        .collect();
    for c in old.conditions.iter().flatten() {
        let foreign = !is_kubelet_condition(&c.type_) && c.type_ != DISRUPTION_TARGET;
        if foreign && !conds.iter().any(|k| k.type_ == c.type_) {
            conds.push(c.clone());
        }
    }
    if let Some(dt) = old.conditions.iter().flatten().find(|c| c.type_ == DISRUPTION_TARGET) {
        match conds.iter_mut().find(|c| c.type_ == DISRUPTION_TARGET) {
            Some(c) => *c = dt.clone(),
            None => conds.push(dt.clone()),
        }
    }
    if let Some(o) = input.terminal_override.as_ref().filter(|o| o.disruption)
        && !conds.iter().any(|c| c.type_ == DISRUPTION_TARGET && c.status == "True")
    {
        conds.retain(|c| c.type_ != DISRUPTION_TARGET);
        conds.push(PodCondition {
            type_: DISRUPTION_TARGET.into(),
            status: "True".into(),
            reason: Some(TERMINATION_BY_KUBELET.into()),
            message: Some(o.message.clone()),
            last_transition_time: Some(Time(input.now)),
            ..Default::default()
        });
    }
    let statuses: Vec<ContainerStatus> = s
        .init_container_statuses
        .iter()
        .flatten()
        .chain(s.container_statuses.iter().flatten())
        .cloned()
        .collect();
    conds.push(conditions::ready_to_start_containers(sandbox_ready(
        input.pod,
        input.runtime,
    )));
    conds.push(conditions::initialized(spec, Some(&statuses), phase));
    let ready = conditions::pod_ready(spec, &conds, Some(&statuses), phase);
    conds.push(ready);
    conds.push(conditions::containers_ready(spec, Some(&statuses), phase));
    conds.push(conditions::pod_scheduled());
    if input.resize_in_progress {
        conds.push(conditions::resize_in_progress(input.resize_error.as_deref()));
    }
    if let Some((reason, message)) = &input.resize_pending {
        conds.push(conditions::resize_pending(reason, message));
    }
    // Upstream `CalculatePodConditionObservedGeneration` (GA 1.35): the
    // kubelet's own conditions carry the generation of the spec they saw.
    let generation = input.pod.metadata.generation;
    for c in conds.iter_mut().filter(|c| is_kubelet_condition(&c.type_)) {
        c.observed_generation = generation;
    }
    stamp_transition_times(&mut conds, old.conditions.as_deref().unwrap_or_default(), input.now);
    conds
}
