//! The status manager's rules for accepting a new status (upstream v1.30
//! `updateStatusInternal`, `checkContainerStateTransition`,
//! `updateLastTransitionTime`, `normalizeStatus`, `isPodStatusByKubeletEqual`).

use k8s_openapi::api::core::v1::{Container, ContainerState, ContainerStatus, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::conditions::stamp_transition_times;
use super::phase::is_terminal_phase;
use super::pod_predicates::{init_containers, is_restartable_init_container, restart_policy, spec, terminated};
use super::reasons::{is_kubelet_condition, is_shared_condition};
use crate::container_restart::container_should_restart;

/// Upstream `MaxPodTerminationMessageLogLength`: the termination messages of
/// all containers of a pod share this many bytes.
pub const MAX_TERMINATION_MESSAGE_BYTES: usize = 1024 * 12;

/// What the rules need to know of the pod's spec.
#[derive(Clone, Debug, PartialEq)]
pub struct TransitionRules {
    /// `spec.restartPolicy` (`Always`, `OnFailure`, `Never`).
    pub restart_policy: String,
    /// Init container names in spec order, with whether each is a sidecar.
    pub init_containers: Vec<(String, bool)>,
    /// Containers of all kinds in the spec (0 = unknown).
    pub container_count: usize,
    /// Regular and init containers (not sidecars) with a `restartPolicy` of
    /// their own, trimmed to name, policy and `restartPolicyRules`
    /// (KEP-5307): they decide for themselves whether they restart.
    pub overrides: Vec<Container>,
}

impl Default for TransitionRules {
    /// Rules for a pod whose spec is unknown: restart policy `Always`, so no
    /// container transition is refused (the terminal phase still is).
    fn default() -> Self {
        Self {
            restart_policy: "Always".into(),
            init_containers: Vec::new(),
            container_count: 0,
            overrides: Vec::new(),
        }
    }
}

impl TransitionRules {
    /// The rules for `pod`.
    pub fn from_pod(pod: &Pod) -> Self {
        let spec = spec(pod);
        let inits = init_containers(spec);
        Self {
            restart_policy: restart_policy(spec).to_owned(),
            init_containers: inits
                .iter()
                .map(|c| (c.name.clone(), is_restartable_init_container(c)))
                .collect(),
            container_count: spec.containers.len()
                + inits.len()
                + spec.ephemeral_containers.as_ref().map_or(0, Vec::len),
            overrides: spec
                .containers
                .iter()
                .chain(inits.iter().filter(|c| !is_restartable_init_container(c)))
                .filter(|c| c.restart_policy.is_some())
                .map(|c| Container {
                    name: c.name.clone(),
                    restart_policy: c.restart_policy.clone(),
                    restart_policy_rules: c.restart_policy_rules.clone(),
                    ..Default::default()
                })
                .collect(),
        }
    }

    /// Whether container `name`, terminated with `exit_code`, may run again
    /// (its own policy and rules, else the pod's).
    fn may_restart(&self, name: &str, exit_code: i32) -> bool {
        let spec = PodSpec {
            restart_policy: Some(self.restart_policy.clone()),
            ..Default::default()
        };
        let own = self.overrides.iter().find(|c| c.name == name);
        container_should_restart(own.unwrap_or(&Container::default()), &spec, exit_code)
    }
}

/// Why a new status was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    /// The pod is `Succeeded`/`Failed` and the new status says otherwise.
    #[error("pod phase {from} is terminal; refusing transition to {to:?}")]
    LeavesTerminalPhase {
        /// The terminal phase held.
        from: String,
        /// The phase offered.
        to: Option<String>,
    },
    /// A container that terminated for good shows up not terminated.
    #[error("terminated container {name} attempted illegal transition to non-terminated state")]
    ContainerLeftTerminated {
        /// The container.
        name: String,
    },
    /// An init container that terminated for good shows up not terminated.
    #[error("terminated init container {name} attempted illegal transition to non-terminated state")]
    InitContainerLeftTerminated {
        /// The init container.
        name: String,
    },
}

/// The first container of `old` that terminated for good but is not
/// terminated in `new`. `skip` exempts containers (sidecars).
fn left_terminated<'a>(
    old: &'a [ContainerStatus],
    new: &[ContainerStatus],
    rules: &TransitionRules,
    skip: impl Fn(&str) -> bool,
) -> Option<&'a str> {
    old.iter()
        .filter(|o| !skip(&o.name))
        .filter(|o| terminated(o).is_some_and(|t| !rules.may_restart(&o.name, t.exit_code)))
        .find(|o| new.iter().any(|n| n.name == o.name && terminated(n).is_none()))
        .map(|o| o.name.as_str())
}

/// Checks that `new` may follow `old`: a terminal phase is never left, and
/// a container terminated for good — any exit under `Never`, exit 0 under
/// `OnFailure`, by its own policy and rules where it has them — never turns
/// back to running or waiting. Sidecars may always restart.
pub fn validate_transition(old: &PodStatus, new: &PodStatus, rules: &TransitionRules) -> Result<(), TransitionError> {
    if is_terminal_phase(old.phase.as_deref()) && old.phase != new.phase {
        return Err(TransitionError::LeavesTerminalPhase {
            from: old.phase.clone().unwrap_or_default(),
            to: new.phase.clone(),
        });
    }
    if rules.restart_policy == "Always" && rules.overrides.is_empty() {
        return Ok(());
    }
    let list = |v: &Option<Vec<ContainerStatus>>| v.clone().unwrap_or_default();
    if let Some(name) = left_terminated(
        &list(&old.container_statuses),
        &list(&new.container_statuses),
        rules,
        |_| false,
    ) {
        return Err(TransitionError::ContainerLeftTerminated { name: name.to_owned() });
    }
    let is_sidecar = |name: &str| rules.init_containers.iter().any(|(n, sidecar)| n == name && *sidecar);
    let (old_init, new_init) = (list(&old.init_container_statuses), list(&new.init_container_statuses));
    if let Some(name) = left_terminated(&old_init, &new_init, rules, is_sidecar) {
        return Err(TransitionError::InitContainerLeftTerminated { name: name.to_owned() });
    }
    Ok(())
}

/// Accepts `new` after `old` (the cached status, if any): validates the
/// transition, keeps condition transition times and the start time, and
/// normalizes. The result is what the status manager stores.
pub fn merge_status(
    old: Option<&PodStatus>,
    mut new: PodStatus,
    rules: &TransitionRules,
    now: Timestamp,
) -> Result<PodStatus, TransitionError> {
    if let Some(old) = old {
        validate_transition(old, &new, rules)?;
    }
    let old_conditions = old.and_then(|o| o.conditions.as_deref()).unwrap_or_default();
    stamp_transition_times(new.conditions.as_deref_mut().unwrap_or_default(), old_conditions, now);
    new.start_time = old
        .and_then(|o| o.start_time.clone())
        .or(new.start_time)
        .or(Some(Time(now)));
    normalize_status(&mut new, rules);
    Ok(new)
}

fn truncate_to_second(t: &mut Time) {
    if let Ok(ts) = Timestamp::from_second(t.0.as_second()) {
        t.0 = ts;
    }
}

fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

fn normalize_state(state: Option<&mut ContainerState>, max_message: usize) {
    let Some(state) = state else { return };
    if let Some(r) = &mut state.running {
        r.started_at.iter_mut().for_each(truncate_to_second);
    }
    if let Some(t) = &mut state.terminated {
        t.started_at
            .iter_mut()
            .chain(t.finished_at.iter_mut())
            .for_each(truncate_to_second);
        t.message.iter_mut().for_each(|m| truncate_bytes(m, max_message));
    }
}

/// Normalizes like the API server would store it (upstream `normalizeStatus`):
/// times to RFC 3339 seconds, termination messages cut to their share of
/// [`MAX_TERMINATION_MESSAGE_BYTES`], container statuses sorted by name and
/// init container statuses in spec order.
pub fn normalize_status(status: &mut PodStatus, rules: &TransitionRules) {
    let counted = [
        &status.container_statuses,
        &status.init_container_statuses,
        &status.ephemeral_container_statuses,
    ]
    .iter()
    .map(|v| v.as_ref().map_or(0, Vec::len))
    .sum::<usize>();
    let containers = if rules.container_count > 0 {
        rules.container_count
    } else {
        counted
    };
    let max_message = MAX_TERMINATION_MESSAGE_BYTES / containers.max(1);

    status.start_time.iter_mut().for_each(truncate_to_second);
    for c in status.conditions.iter_mut().flatten() {
        c.last_probe_time
            .iter_mut()
            .chain(c.last_transition_time.iter_mut())
            .for_each(truncate_to_second);
    }
    for list in [
        &mut status.container_statuses,
        &mut status.init_container_statuses,
        &mut status.ephemeral_container_statuses,
    ] {
        for s in list.iter_mut().flatten() {
            normalize_state(s.state.as_mut(), max_message);
            normalize_state(s.last_state.as_mut(), max_message);
        }
    }
    status
        .container_statuses
        .iter_mut()
        .for_each(|v| v.sort_by(|a, b| a.name.cmp(&b.name)));
    status
        .ephemeral_container_statuses
        .iter_mut()
        .for_each(|v| v.sort_by(|a, b| a.name.cmp(&b.name)));
    let position = |name: &str| {
        rules
            .init_containers
            .iter()
            .position(|(n, _)| n == name)
            .unwrap_or(usize::MAX)
    };
    status
        .init_container_statuses
        .iter_mut()
        .for_each(|v| v.sort_by_key(|s| position(&s.name)));
}

/// Whether `new` says nothing `old` did not (upstream
/// `isPodStatusByKubeletEqual`): the kubelet's and shared conditions of `new`
/// must match `old`'s by status, reason and message — their times are
/// ignored — and everything else must be equal.
pub fn status_equal_ignoring_time(old: &PodStatus, new: &PodStatus) -> bool {
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    for c in new.conditions.iter().flatten() {
        if !is_kubelet_condition(&c.type_) && !is_shared_condition(&c.type_) {
            continue;
        }
        let same = old
            .conditions
            .iter()
            .flatten()
            .find(|o| o.type_ == c.type_)
            .is_some_and(|o| {
                o.status == c.status && text(&o.reason) == text(&c.reason) && text(&o.message) == text(&c.message)
            });
        if !same {
            return false;
        }
    }
    let old_copy = PodStatus {
        conditions: new.conditions.clone(),
        ..old.clone()
    };
    &old_copy == new
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
