//! Init containers of a pod with native sidecars (init containers with
//! `restartPolicy: Always`, KEP-753): upstream v1.36
//! `computeInitContainerActions`.
//!
//! # Rules
//! - Init containers are walked from the last to the first; the first one
//!   found to have run decides where initialization stands.
//! - A regular init container must exit 0 before the next one starts; a
//!   failed one is retried (or, with `restartPolicy: Never`, the pod is
//!   killed).
//! - A sidecar counts as initialized once it runs and its startup probe (if
//!   any) passed: only then does the next init container start.
//! - A sidecar is restarted whenever it is not running (exited, created,
//!   unknown, or gone after initialization), whatever the pod's restart
//!   policy; it is killed and restarted when its startup or liveness probe
//!   failed or its spec changed.
//! - Once a regular container runs, regular init containers are done for
//!   good; only sidecars are kept running.
//!
//! Pods without sidecars keep the classic rules of [`super::restart_rules`].
//! Tests: `actions_sidecar_tests.rs`.

use k8s_openapi::api::core::v1::{Container, Pod};

use super::actions::{ContainerToKill, KillReason, PodActions, ProbeView};
use super::hash::container_hash;
use super::pod_status::{ContainerState, RuntimePodStatus};
use super::restart_rules::{containers, init_containers, is_init_container_failed, restarts_after_kill};

/// Upstream `IsRestartableInitContainer`.
pub fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// Whether the pod has native sidecars.
pub fn has_sidecars(pod: &Pod) -> bool {
    init_containers(pod).iter().any(is_sidecar)
}

fn kill(changes: &mut PodActions, id: &str, c: &Container, message: String, reason: KillReason) {
    let kill = ContainerToKill {
        name: c.name.clone(),
        message,
        reason,
    };
    changes.containers_to_kill.insert(id.to_string(), kill);
}

fn state_name(state: ContainerState) -> &'static str {
    match state {
        ContainerState::Created => "created",
        ContainerState::Running => "running",
        ContainerState::Exited => "exited",
        ContainerState::Unknown => "unknown",
    }
}

/// Upstream `computeInitContainerActions`: fills
/// `changes.init_containers_to_start` (in spec order) and the kills; true
/// when the pod is initialized (regular containers may be looked at).
pub fn compute_init_container_actions(
    pod: &Pod,
    status: &RuntimePodStatus,
    probes: &ProbeView,
    changes: &mut PodActions,
) -> bool {
    let inits = init_containers(pod);
    if inits.is_empty() {
        return true;
    }
    let mut initialized = containers(pod).iter().any(|c| {
        status
            .find_container(&c.name)
            .is_some_and(|s| matches!(s.state, ContainerState::Created | ContainerState::Running))
    });
    let mut previously_initialized = initialized;
    let mut to_start = Vec::new();
    let last = inits.len() - 1;
    for (i, c) in inits.iter().enumerate().rev() {
        let sidecar = is_sidecar(c);
        let Some(s) = status.find_container(&c.name) else {
            if previously_initialized && sidecar {
                to_start.push(i);
            }
            continue;
        };
        if previously_initialized && !sidecar {
            continue;
        }
        match s.state {
            ContainerState::Created => to_start.push(i),
            ContainerState::Running if sidecar => 'running: {
                if c.startup_probe.is_some() && !probes.startup_succeeded(&s.id) {
                    if probes.startup_failed(&s.id) {
                        let message = format!("Init container {} failed startup probe", c.name);
                        kill(changes, &s.id, c, message, KillReason::StartupProbe);
                        to_start.push(i);
                    }
                    break 'running;
                }
                if i == last {
                    initialized = true;
                } else if !previously_initialized {
                    to_start.push(i + 1);
                }
                if s.hash != container_hash(c) {
                    let message = format!("Init container {} definition changed", c.name);
                    kill(changes, &s.id, c, message, KillReason::DefinitionChanged);
                    to_start.push(i);
                    break 'running;
                }
                if probes.liveness_failed(&s.id) {
                    let message = format!("Init container {} failed liveness probe", c.name);
                    kill(changes, &s.id, c, message, KillReason::LivenessProbe);
                    to_start.push(i);
                }
            }
            ContainerState::Running => {} // a regular init container: wait for it
            ContainerState::Exited if sidecar => to_start.push(i),
            ContainerState::Exited if is_init_container_failed(s) => {
                if !restarts_after_kill(c, pod) {
                    changes.kill_pod = true;
                    changes.init_containers_to_start.clear();
                    return false;
                }
                to_start.push(i);
            }
            ContainerState::Exited => {
                if i == last {
                    initialized = true;
                } else {
                    to_start.push(i + 1);
                }
            }
            ContainerState::Unknown => {
                if !sidecar && !restarts_after_kill(c, pod) {
                    changes.kill_pod = true;
                    changes.init_containers_to_start.clear();
                    return false;
                }
                let message = format!(
                    "Init container is in {:?} state, try killing it before restart",
                    state_name(s.state)
                );
                kill(changes, &s.id, c, message, KillReason::Unknown);
                to_start.push(i);
            }
        }
        previously_initialized = true;
    }
    if !previously_initialized {
        to_start.push(0);
    }
    to_start.reverse();
    changes.init_containers_to_start = to_start;
    initialized
}
