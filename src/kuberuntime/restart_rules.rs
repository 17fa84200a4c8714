//! The restart and initialization rules `computePodActions` applies per
//! container (upstream `ShouldContainerBeRestarted`,
//! `findNextInitContainerToRun`, `isInitContainerFailed`).

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::container_restart::{container_should_restart, is_container_restartable};

use super::pod_status::{ContainerState, ContainerStatus, RuntimePodStatus};

/// The pod's restart policy (`spec.restartPolicy`, default `Always`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestartPolicy {
    /// Always restart.
    Always,
    /// Restart after a non-zero exit.
    OnFailure,
    /// Never restart.
    Never,
}

impl RestartPolicy {
    /// The pod's policy; unknown values read as `Always` (the API default).
    pub fn of(pod: &Pod) -> Self {
        match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) {
            Some("OnFailure") => RestartPolicy::OnFailure,
            Some("Never") => RestartPolicy::Never,
            _ => RestartPolicy::Always,
        }
    }
}

/// The pod's regular containers.
pub(crate) fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default()
}

/// The pod's init containers.
pub(crate) fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
}

/// Whether the pod uses the host network.
pub(crate) fn is_host_network(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false)
}

/// Upstream `isInitContainerFailed`: OOM-killed, exited non-zero, or unknown.
pub fn is_init_container_failed(status: &ContainerStatus) -> bool {
    status.reason == "OOMKilled"
        || (status.state == ContainerState::Exited && status.exit_code != 0)
        || status.state == ContainerState::Unknown
}

/// Where initialization stands (upstream `findNextInitContainerToRun`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitProgress<'a> {
    /// The status of the failed init container to retry, if any.
    pub failed: Option<&'a ContainerStatus>,
    /// Index of the init container to start next.
    pub next: Option<usize>,
    /// All init containers succeeded (or a regular container is running).
    pub done: bool,
}

/// Upstream `findNextInitContainerToRun`.
pub fn find_next_init_container_to_run<'a>(pod: &Pod, status: &'a RuntimePodStatus) -> InitProgress<'a> {
    let inits = init_containers(pod);
    let progress = |failed, next, done| InitProgress { failed, next, done };
    if inits.is_empty() {
        return progress(None, None, true);
    }
    // A running regular container means initialization happened in the past.
    let running = |c: &Container| {
        status
            .find_container(&c.name)
            .is_some_and(|s| s.state == ContainerState::Running)
    };
    if containers(pod).iter().any(running) {
        return progress(None, None, true);
    }
    for (i, c) in inits.iter().enumerate().rev() {
        if let Some(s) = status.find_container(&c.name).filter(|s| is_init_container_failed(s)) {
            return progress(Some(s), Some(i), false);
        }
    }
    for (i, c) in inits.iter().enumerate().rev() {
        match status.find_container(&c.name).map(|s| s.state) {
            Some(ContainerState::Running) => return progress(None, None, false),
            Some(ContainerState::Exited) if i == inits.len() - 1 => return progress(None, None, true),
            Some(ContainerState::Exited) => return progress(None, Some(i + 1), false),
            _ => {}
        }
    }
    progress(None, Some(0), false)
}

/// Upstream `ShouldContainerBeRestarted` for a container that is not running
/// (an exited one by its own or the pod's restart policy and rules).
pub fn should_container_be_restarted(container: &Container, pod: &Pod, status: &RuntimePodStatus) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(s) = status.find_container(&container.name) else {
        return true;
    };
    match s.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited => match &pod.spec {
            Some(spec) => container_should_restart(container, spec, s.exit_code),
            None => true,
        },
    }
}

/// The container's newest instance exited and will not be started again
/// (its exit code against its or the pod's restart policy and rules).
pub(crate) fn exited_for_good(c: &Container, pod: &Pod, status: &RuntimePodStatus) -> bool {
    let spec = pod.spec.as_ref();
    status.find_container(&c.name).is_some_and(|s| {
        s.state == ContainerState::Exited && spec.is_some_and(|spec| !container_should_restart(c, spec, s.exit_code))
    })
}

/// Whether a container of the pod (killed while running, or an init
/// container that failed) is started again: its own `restartPolicy`, else
/// the pod's, is not `Never`.
pub(crate) fn restarts_after_kill(c: &Container, pod: &Pod) -> bool {
    match &pod.spec {
        Some(spec) => crate::container_restart::restarts_after_kill(c, spec),
        None => true,
    }
}

/// Whether any regular container of the pod may ever run again (the pod's
/// policy, or a container's own policy or rules).
pub(crate) fn any_container_restartable(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .is_none_or(|spec| spec.containers.iter().any(|c| is_container_restartable(spec, c)))
}
