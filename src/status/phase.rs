//! The pod phase (upstream v1.36 `getPhase` in `kubelet_pods.go`).

use std::fmt;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use super::pod_predicates::{
    find_status, has_any_regular_container_started, init_containers, is_restartable_init_container, is_static_pod,
    last_terminated, running, spec, terminated, waiting,
};
use crate::container_restart::container_should_restart;

/// A pod phase (`status.phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Accepted, but one or more containers have not started.
    Pending,
    /// All containers started and at least one runs (or restarts).
    Running,
    /// All containers terminated in success and will not restart.
    Succeeded,
    /// All containers terminated, at least one in failure, none will restart.
    Failed,
    /// The state could not be obtained.
    Unknown,
}

impl Phase {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }
    }

    /// Parses the API spelling; `None` for anything else (including unset).
    pub fn parse(phase: Option<&str>) -> Option<Phase> {
        match phase? {
            "Pending" => Some(Phase::Pending),
            "Running" => Some(Phase::Running),
            "Succeeded" => Some(Phase::Succeeded),
            "Failed" => Some(Phase::Failed),
            "Unknown" => Some(Phase::Unknown),
            _ => None,
        }
    }

    /// `Succeeded` or `Failed`: a pod never leaves these.
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an API phase string is terminal.
pub fn is_terminal_phase(phase: Option<&str>) -> bool {
    Phase::parse(phase).is_some_and(Phase::is_terminal)
}

/// The phase of `pod` given the API statuses of all its containers (regular
/// and init, as generated). `pod_is_terminal` says the pod worker has stopped
/// the pod for good, so its containers will not restart whatever the policy.
///
/// Mirrors upstream v1.36 `getPhase` rule for rule (with
/// `ContainerRestartRules`, on by default: whether a stopped container
/// counts as restarting is asked per container).
pub fn get_phase(pod: &Pod, statuses: &[ContainerStatus], pod_is_terminal: bool) -> Phase {
    let spec = spec(pod);
    let mut pending_restartable_init = 0;
    let mut pending_regular_init = 0;
    let mut failed_initialization_not_restartable = 0;

    for c in init_containers(spec)
        .iter()
        .filter(|c| !is_restartable_init_container(c))
    {
        let Some(s) = find_status(statuses, &c.name) else {
            pending_regular_init += 1;
            continue;
        };
        let mut failed = |exit_code: i32| {
            if !container_should_restart(c, spec, exit_code) {
                failed_initialization_not_restartable += 1;
            }
        };
        if running(s).is_some() {
            pending_regular_init += 1;
        } else if let Some(t) = terminated(s) {
            if t.exit_code != 0 {
                failed(t.exit_code);
            }
        } else if waiting(s).is_some() {
            match last_terminated(s) {
                Some(t) if t.exit_code != 0 => failed(t.exit_code),
                Some(_) => {}
                None => pending_regular_init += 1,
            }
        } else {
            pending_regular_init += 1;
        }
    }

    let (mut unknown, mut running_n, mut waiting_n, mut stopped, mut succeeded) = (0, 0, 0, 0, 0);
    let mut stopped_not_restartable = 0;

    for c in init_containers(spec)
        .iter()
        .filter(|c| is_restartable_init_container(c))
    {
        let Some(s) = find_status(statuses, &c.name) else {
            unknown += 1;
            continue;
        };
        if running(s).is_some() {
            if s.started != Some(true) {
                pending_restartable_init += 1;
            }
            running_n += 1;
        } else if terminated(s).is_some() {
            // Terminated sidecars do not count towards the phase.
        } else if waiting(s).is_some() {
            if last_terminated(s).is_none() {
                pending_restartable_init += 1;
                waiting_n += 1;
            }
        } else {
            pending_restartable_init += 1;
            unknown += 1;
        }
    }

    for c in &spec.containers {
        let Some(s) = find_status(statuses, &c.name) else {
            unknown += 1;
            continue;
        };
        if running(s).is_some() {
            running_n += 1;
        } else if let Some(t) = terminated(s) {
            stopped += 1;
            if !container_should_restart(c, spec, t.exit_code) {
                stopped_not_restartable += 1;
            }
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if waiting(s).is_some() {
            if let Some(t) = last_terminated(s) {
                stopped += 1;
                if !container_should_restart(c, spec, t.exit_code) {
                    stopped_not_restartable += 1;
                }
            } else {
                waiting_n += 1;
            }
        } else {
            unknown += 1;
        }
    }

    // An init container failed and will not run again (its own or the
    // pod's restart policy and rules; upstream with ContainerRestartRules).
    if failed_initialization_not_restartable > 0 {
        return Phase::Failed;
    }

    let initializing = pending_regular_init > 0
        || (pending_restartable_init > 0 && !has_any_regular_container_started(spec, statuses));
    if initializing || waiting_n > 0 {
        return Phase::Pending;
    }
    if running_n > 0 && unknown == 0 {
        return Phase::Running;
    }
    if running_n == 0 && stopped > 0 && unknown == 0 {
        // A terminal pod's containers will not restart, whatever the policy
        // (static pods excepted, as upstream: TODO #116484).
        if pod_is_terminal && !is_static_pod(pod) {
            return if stopped == succeeded {
                Phase::Succeeded
            } else {
                Phase::Failed
            };
        }
        // Some container is about to restart.
        if stopped != stopped_not_restartable {
            return Phase::Running;
        }
        return if stopped == succeeded {
            Phase::Succeeded
        } else {
            Phase::Failed
        };
    }
    Phase::Pending
}

#[cfg(test)]
#[path = "phase_tests.rs"]
mod tests;
