//! The kubelet-owned pod conditions (upstream `pkg/kubelet/status/generate.go`)
//! and how their `lastTransitionTime` is kept across updates
//! (`updateLastTransitionTime`).

use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::phase::Phase;
use super::pod_predicates::{
    find_status, has_any_regular_container_started, init_containers, is_restartable_init_container,
};
use super::reasons::{
    CONTAINERS_NOT_INITIALIZED, CONTAINERS_NOT_READY, CONTAINERS_READY, FALSE, INITIALIZED, POD_COMPLETED, POD_FAILED,
    POD_READY_TO_START_CONTAINERS, POD_SCHEDULED, READINESS_GATES_NOT_READY, READY, TRUE, UNKNOWN_CONTAINER_STATUSES,
    is_kubelet_condition, is_shared_condition,
};

fn condition(type_: &str, status: &str, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.map(str::to_owned),
        message: message.filter(|m| !m.is_empty()),
        ..Default::default()
    }
}

/// Go's `%s` of a `[]string`: `[a b]`.
fn go_list(names: &[&str]) -> String {
    format!("[{}]", names.join(" "))
}

/// `ContainersReady`: true when every regular container and every sidecar is
/// ready. `statuses` holds init and regular statuses; `None` means unknown.
pub fn containers_ready(spec: &PodSpec, statuses: Option<&[ContainerStatus]>, phase: Phase) -> PodCondition {
    let Some(statuses) = statuses else {
        return condition(CONTAINERS_READY, FALSE, Some(UNKNOWN_CONTAINER_STATUSES), None);
    };
    let mut unknown = Vec::new();
    let mut unready = Vec::new();
    let sidecars = init_containers(spec)
        .iter()
        .filter(|c| is_restartable_init_container(c));
    for c in sidecars.chain(&spec.containers) {
        match find_status(statuses, &c.name) {
            Some(s) if !s.ready => unready.push(c.name.as_str()),
            Some(_) => {}
            None => unknown.push(c.name.as_str()),
        }
    }
    if (phase == Phase::Succeeded && unknown.is_empty()) || phase == Phase::Failed {
        let reason = if phase == Phase::Failed {
            POD_FAILED
        } else {
            POD_COMPLETED
        };
        return condition(CONTAINERS_READY, FALSE, Some(reason), None);
    }
    let mut messages = Vec::new();
    if !unknown.is_empty() {
        messages.push(format!("containers with unknown status: {}", go_list(&unknown)));
    }
    if !unready.is_empty() {
        messages.push(format!("containers with unready status: {}", go_list(&unready)));
    }
    if messages.is_empty() {
        return condition(CONTAINERS_READY, TRUE, None, None);
    }
    condition(
        CONTAINERS_READY,
        FALSE,
        Some(CONTAINERS_NOT_READY),
        Some(messages.join(", ")),
    )
}

/// `Ready`: `ContainersReady` and every readiness gate's condition (looked up
/// in `conditions`) is `True`.
pub fn pod_ready(
    spec: &PodSpec,
    conditions: &[PodCondition],
    statuses: Option<&[ContainerStatus]>,
    phase: Phase,
) -> PodCondition {
    let ready = containers_ready(spec, statuses, phase);
    if ready.status != TRUE {
        return PodCondition {
            type_: READY.into(),
            ..ready
        };
    }
    let mut messages = Vec::new();
    for gate in spec.readiness_gates.iter().flatten() {
        let gate_type = &gate.condition_type;
        match conditions.iter().find(|c| &c.type_ == gate_type) {
            None => messages.push(format!(
                "corresponding condition of pod readiness gate \"{gate_type}\" does not exist."
            )),
            Some(c) if c.status != TRUE => messages.push(format!(
                "the status of pod readiness gate \"{gate_type}\" is not \"True\", but {}",
                c.status
            )),
            Some(_) => {}
        }
    }
    if messages.is_empty() {
        return condition(READY, TRUE, None, None);
    }
    condition(READY, FALSE, Some(READINESS_GATES_NOT_READY), Some(messages.join(", ")))
}

/// `Initialized`: every regular init container succeeded (is ready) and every
/// sidecar has started — or a regular container has already run.
pub fn initialized(spec: &PodSpec, statuses: Option<&[ContainerStatus]>, phase: Phase) -> PodCondition {
    let inits = init_containers(spec);
    if statuses.is_none() && !inits.is_empty() {
        return condition(INITIALIZED, FALSE, Some(UNKNOWN_CONTAINER_STATUSES), None);
    }
    let statuses = statuses.unwrap_or_default();
    let mut unknown = Vec::new();
    let mut incomplete = Vec::new();
    for c in inits {
        let Some(s) = find_status(statuses, &c.name) else {
            unknown.push(c.name.as_str());
            continue;
        };
        let done = if is_restartable_init_container(c) {
            s.started == Some(true)
        } else {
            s.ready
        };
        if !done {
            incomplete.push(c.name.as_str());
        }
    }
    if phase == Phase::Succeeded && unknown.is_empty() {
        return condition(INITIALIZED, TRUE, Some(POD_COMPLETED), None);
    }
    if has_any_regular_container_started(spec, statuses) {
        return condition(INITIALIZED, TRUE, None, None);
    }
    let mut messages = Vec::new();
    if !unknown.is_empty() {
        messages.push(format!("containers with unknown status: {}", go_list(&unknown)));
    }
    if !incomplete.is_empty() {
        messages.push(format!("containers with incomplete status: {}", go_list(&incomplete)));
    }
    if messages.is_empty() {
        return condition(INITIALIZED, TRUE, None, None);
    }
    condition(
        INITIALIZED,
        FALSE,
        Some(CONTAINERS_NOT_INITIALIZED),
        Some(messages.join(", ")),
    )
}

/// `PodReadyToStartContainers`: a sandbox with networking exists, i.e. no new
/// sandbox is needed.
pub fn ready_to_start_containers(sandbox_ready: bool) -> PodCondition {
    condition(
        POD_READY_TO_START_CONTAINERS,
        if sandbox_ready { TRUE } else { FALSE },
        None,
        None,
    )
}

/// `PodResizeInProgress`: a running container does not run with its
/// spec's resources yet (present only while that is so, as upstream); with
/// reason `Error` and the message when the last attempt failed.
pub fn resize_in_progress(error: Option<&str>) -> PodCondition {
    let reason = error.map(|_| super::reasons::ERROR);
    condition(
        super::reasons::POD_RESIZE_IN_PROGRESS,
        TRUE,
        reason,
        error.map(str::to_owned),
    )
}

/// `PodResizePending`: a resize the node has not allocated (reason
/// `Infeasible` or `Deferred`).
pub fn resize_pending(reason: &str, message: &str) -> PodCondition {
    condition(
        super::reasons::POD_RESIZE_PENDING,
        TRUE,
        Some(reason),
        Some(message.to_owned()),
    )
}

/// `PodScheduled`: always `True` on the node (static pods too).
pub fn pod_scheduled() -> PodCondition {
    condition(POD_SCHEDULED, TRUE, None, None)
}

/// Sets `lastTransitionTime` on the kubelet-owned and shared conditions of
/// `conditions`: kept from `old` when the status did not change, otherwise the
/// condition's own time if it has one, else `now`. Other conditions are left
/// as they are (their owners stamp them). Upstream `updateLastTransitionTime`,
/// except that an unchanged condition whose old time is unset gets a time.
pub fn stamp_transition_times(conditions: &mut [PodCondition], old: &[PodCondition], now: Timestamp) {
    for c in conditions
        .iter_mut()
        .filter(|c| is_kubelet_condition(&c.type_) || is_shared_condition(&c.type_))
    {
        match old.iter().find(|o| o.type_ == c.type_) {
            Some(o) if o.status == c.status && o.last_transition_time.is_some() => {
                c.last_transition_time = o.last_transition_time.clone();
            }
            _ if c.last_transition_time.is_some() => {}
            _ => c.last_transition_time = Some(Time(now)),
        }
    }
}

#[cfg(test)]
#[path = "conditions_tests.rs"]
mod tests;
