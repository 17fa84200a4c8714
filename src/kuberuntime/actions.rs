//! What a sync must do to bring the runtime to the pod spec (upstream v1.30
//! `computePodActions`, without in-place resize; pods with native sidecars
//! use upstream's `computeInitContainerActions`, see [`super::sidecars`]).
//!
//! # Rules
//! 1. **Sandbox**: (re)create it when there is none, the newest is not ready,
//!    more than one is ready, its network mode (host or pod) differs from the
//!    spec, or a non-hostNetwork sandbox has no IP. Then everything is killed
//!    and started over from the first init container — except when the
//!    restart policy is `Never`, this is not the first sandbox and containers
//!    already ran (the pod is done: just kill it), or when initialization is
//!    done and no regular container would start.
//! 2. **Init containers** run one at a time, in order, each to exit 0. A failed
//!    one is retried unless the restart policy is `Never` (then the pod is
//!    killed). While any is pending, regular containers are not looked at.
//! 3. **Regular containers**: a container that is not running is started when
//!    the restart policy allows it (`Always`; `OnFailure` after a non-zero
//!    exit; `Never` only if it never ran). A running container is killed when
//!    its spec hash changed (and restarted, whatever the policy) or its
//!    liveness/startup probe failed (restarted unless `Never`).
//! 4. When no container keeps running and none is to start, the pod is
//!    killed (sandbox stopped too).
//! 5. Beyond upstream: running containers whose name is not in the spec are
//!    killed (upstream relies on the API forbidding such spec changes; static
//!    pod files have no such guard).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::Pod;

use super::hash::container_hash;
use super::pod_status::{ContainerState, RuntimePodStatus, SandboxState};
pub use super::restart_rules::{
    InitProgress, RestartPolicy, find_next_init_container_to_run, is_init_container_failed,
    should_container_be_restarted,
};
use super::restart_rules::{
    any_container_restartable, containers, exited_for_good, init_containers, is_host_network, restarts_after_kill,
};
use super::sidecars::{compute_init_container_actions, has_sidecars};

/// Probe results the actions depend on: containers (by CRI id) whose
/// liveness or startup probe has failed. Empty until the prober is wired in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeView {
    liveness_failed: HashSet<String>,
    startup_failed: HashSet<String>,
    startup_succeeded: HashSet<String>,
}

impl ProbeView {
    /// No probe failures.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks the liveness probe of container `id` as failed.
    pub fn with_liveness_failure(mut self, id: impl Into<String>) -> Self {
        self.liveness_failed.insert(id.into());
        self
    }

    /// Marks the startup probe of container `id` as failed.
    pub fn with_startup_failure(mut self, id: impl Into<String>) -> Self {
        self.startup_failed.insert(id.into());
        self
    }

    /// Marks the startup probe of container `id` as passed.
    pub fn with_startup_success(mut self, id: impl Into<String>) -> Self {
        self.startup_succeeded.insert(id.into());
        self
    }

    /// Whether container `id` passed its startup probe (sidecars wait for it).
    pub fn startup_succeeded(&self, id: &str) -> bool {
        self.startup_succeeded.contains(id)
    }

    /// Whether container `id` failed its liveness probe.
    pub fn liveness_failed(&self, id: &str) -> bool {
        self.liveness_failed.contains(id)
    }

    /// Whether container `id` failed its startup probe.
    pub fn startup_failed(&self, id: &str) -> bool {
        self.startup_failed.contains(id)
    }
}

/// Why a container is killed (upstream `containerKillReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillReason {
    /// Its spec changed (upstream leaves the reason empty).
    DefinitionChanged,
    /// Liveness probe failed.
    LivenessProbe,
    /// Startup probe failed.
    StartupProbe,
    /// Its state is unknown; killed before a restart.
    Unknown,
}

impl KillReason {
    /// The upstream reason string (`""` for a definition change).
    pub fn as_str(self) -> &'static str {
        match self {
            KillReason::DefinitionChanged => "",
            KillReason::LivenessProbe => "LivenessProbe",
            KillReason::StartupProbe => "StartupProbe",
            KillReason::Unknown => "Unknown",
        }
    }
}

/// A container to kill (upstream `containerToKillInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerToKill {
    /// Container name.
    pub name: String,
    /// Why, for the `Killing` event.
    pub message: String,
    /// Why, as a reason.
    pub reason: KillReason,
}

/// What to do for a pod (upstream `podActions`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodActions {
    /// Stop every running container and the sandbox(es).
    pub kill_pod: bool,
    /// Create a new sandbox (after killing the pod).
    pub create_sandbox: bool,
    /// The current sandbox id ("" when there is none to keep).
    pub sandbox_id: String,
    /// The sandbox attempt to create (or of the current sandbox).
    pub attempt: u32,
    /// Index in `spec.initContainers` of the init container to start next.
    pub next_init_container_to_start: Option<usize>,
    /// Pods with sidecars: indexes in `spec.initContainers` to start, in
    /// order (see [`super::sidecars`]).
    pub init_containers_to_start: Vec<usize>,
    /// Indexes in `spec.containers` of the containers to start.
    pub containers_to_start: Vec<usize>,
    /// Indexes in `spec.ephemeralContainers` of those to start (never
    /// started before; started ahead of init containers).
    pub ephemeral_containers_to_start: Vec<usize>,
    /// Containers to kill, by CRI container id.
    pub containers_to_kill: BTreeMap<String, ContainerToKill>,
}

impl PodActions {
    /// Whether the sync starts any container (ephemeral, init or regular);
    /// only then is the sandbox config needed.
    pub fn starts_any_container(&self) -> bool {
        self.next_init_container_to_start.is_some()
            || !self.init_containers_to_start.is_empty()
            || !self.containers_to_start.is_empty()
            || !self.ephemeral_containers_to_start.is_empty()
    }
}

/// Upstream `PodSandboxChanged`: (create a sandbox?, attempt, current sandbox id).
pub fn pod_sandbox_changed(pod: &Pod, status: &RuntimePodStatus) -> (bool, u32, String) {
    let Some(newest) = status.sandboxes.first() else {
        tracing::debug!("no sandbox for pod can be found, need to start a new one");
        return (true, 0, String::new());
    };
    let next = newest.attempt.saturating_add(1);
    let ready = status
        .sandboxes
        .iter()
        .filter(|s| s.state == SandboxState::Ready)
        .count();
    if ready > 1 {
        tracing::debug!("multiple sandboxes are ready for pod, need to reconcile them");
        return (true, next, newest.id.clone());
    }
    if newest.state != SandboxState::Ready {
        tracing::debug!("no ready sandbox for pod can be found, need to start a new one");
        return (true, next, newest.id.clone());
    }
    if newest.host_network != is_host_network(pod) {
        tracing::debug!("sandbox for pod has changed, need to start a new one");
        return (true, next, String::new());
    }
    // `ips` empty means the network status is unknown (not "no IP").
    if !is_host_network(pod) && newest.ips.first().is_some_and(|ip| ip.is_empty()) {
        tracing::debug!("sandbox for pod has no IP address, need to start a new one");
        return (true, next, newest.id.clone());
    }
    (false, newest.attempt, newest.id.clone())
}

fn state_name(state: ContainerState) -> &'static str {
    match state {
        ContainerState::Created => "created",
        ContainerState::Running => "running",
        ContainerState::Exited => "exited",
        ContainerState::Unknown => "unknown",
    }
}

/// Computes the actions for `pod` given what the runtime has (`status`) and
/// the probe results.
pub fn compute_pod_actions(pod: &Pod, status: &RuntimePodStatus, probes: &ProbeView) -> PodActions {
    let (create, attempt, sandbox_id) = pod_sandbox_changed(pod, status);
    let mut changes = PodActions {
        kill_pod: create,
        create_sandbox: create,
        sandbox_id,
        attempt,
        ..Default::default()
    };
    let policy = RestartPolicy::of(pod);

    if create {
        if policy == RestartPolicy::Never
            && attempt != 0
            && !status.containers.is_empty()
            && !any_container_restartable(pod)
        {
            // The pod is done; do not create a sandbox just to terminate it.
            changes.create_sandbox = false;
            return changes;
        }
        // Containers that exited for good stay exited in the new sandbox
        // (upstream: succeeded ones under OnFailure; per container with
        // restart rules).
        let to_start: Vec<usize> = containers(pod)
            .iter()
            .enumerate()
            .filter(|(_, c)| !exited_for_good(c, pod, status))
            .map(|(i, _)| i)
            .collect();
        if to_start.is_empty() && find_next_init_container_to_run(pod, status).done {
            changes.create_sandbox = false;
            return changes;
        }
        if has_sidecars(pod) {
            changes.init_containers_to_start = vec![0];
            return changes;
        }
        if !init_containers(pod).is_empty() {
            changes.next_init_container_to_start = Some(0);
            return changes;
        }
        changes.containers_to_start = to_start;
        return changes;
    }

    // Running containers the spec does not name (e.g. left from an older
    // spec) are killed. Not in upstream, where the API forbids removing one.
    let known = |name: &str| {
        containers(pod)
            .iter()
            .chain(init_containers(pod))
            .any(|c| c.name == name)
            || super::ephemeral::is_ephemeral(pod, name)
    };
    for s in status
        .containers
        .iter()
        .filter(|s| matches!(s.state, ContainerState::Running | ContainerState::Unknown))
    {
        if !known(&s.name) {
            let message = format!("Container {} is not in the pod spec", s.name);
            let kill = ContainerToKill {
                name: s.name.clone(),
                message,
                reason: KillReason::Unknown,
            };
            changes.containers_to_kill.insert(s.id.clone(), kill);
        }
    }

    // Ephemeral containers may start even while initialization is not done.
    changes.ephemeral_containers_to_start = super::ephemeral::to_start(pod, status);

    let sidecars = has_sidecars(pod);
    if sidecars {
        let initialized = compute_init_container_actions(pod, status, probes, &mut changes);
        if changes.kill_pod || !initialized {
            return changes;
        }
    }
    let init = find_next_init_container_to_run(pod, status);
    if !sidecars && !init.done {
        if let Some(next) = init.next {
            let failed_for_good = init_containers(pod)
                .get(next)
                .is_some_and(|c| init.failed.is_some() && !restarts_after_kill(c, pod));
            if failed_for_good {
                changes.kill_pod = true;
            } else {
                if let Some(failed) = init.failed.filter(|s| s.state == ContainerState::Unknown) {
                    let name = init_containers(pod)
                        .get(next)
                        .map(|c| c.name.clone())
                        .unwrap_or_default();
                    changes.containers_to_kill.insert(
                        failed.id.clone(),
                        ContainerToKill {
                            name,
                            message: format!(
                                "Init container is in {:?} state, try killing it before restart",
                                state_name(failed.state)
                            ),
                            reason: KillReason::Unknown,
                        },
                    );
                }
                changes.next_init_container_to_start = Some(next);
            }
        }
        // Initialization failed or in progress: regular containers wait.
        return changes;
    }

    let mut keep_count = 0;
    for (idx, container) in containers(pod).iter().enumerate() {
        let cs = status.find_container(&container.name);
        let Some(cs) = cs.filter(|s| s.state == ContainerState::Running) else {
            if should_container_be_restarted(container, pod, status) {
                changes.containers_to_start.push(idx);
                if let Some(s) = cs.filter(|s| s.state == ContainerState::Unknown) {
                    changes.containers_to_kill.insert(
                        s.id.clone(),
                        ContainerToKill {
                            name: s.name.clone(),
                            message: format!(
                                "Container is in {:?} state, try killing it before restart",
                                state_name(s.state)
                            ),
                            reason: KillReason::Unknown,
                        },
                    );
                }
            }
            continue;
        };
        let mut restart = restarts_after_kill(container, pod);
        let (message, reason) = if cs.hash != container_hash(container) {
            restart = true;
            (
                format!("Container {} definition changed", container.name),
                KillReason::DefinitionChanged,
            )
        } else if probes.liveness_failed(&cs.id) {
            (
                format!("Container {} failed liveness probe", container.name),
                KillReason::LivenessProbe,
            )
        } else if probes.startup_failed(&cs.id) {
            (
                format!("Container {} failed startup probe", container.name),
                KillReason::StartupProbe,
            )
        } else {
            keep_count += 1;
            continue;
        };
        let message = if restart {
            changes.containers_to_start.push(idx);
            format!("{message}, will be restarted")
        } else {
            message
        };
        tracing::info!(container = %container.name, container_id = %cs.id, %message, "container will be killed");
        changes.containers_to_kill.insert(
            cs.id.clone(),
            ContainerToKill {
                name: cs.name.clone(),
                message,
                reason,
            },
        );
    }

    if keep_count == 0 && changes.containers_to_start.is_empty() {
        changes.kill_pod = true;
        // Sidecars do not keep a pod alive.
        changes.init_containers_to_start.clear();
    }
    changes
}

#[cfg(test)]
#[path = "actions_container_tests.rs"]
mod container_tests;
#[cfg(test)]
#[path = "actions_fixtures.rs"]
mod fixtures;
#[cfg(test)]
#[path = "actions_sidecar_tests.rs"]
mod sidecar_tests;
#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
