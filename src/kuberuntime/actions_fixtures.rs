//! Fixtures for the `compute_pod_actions` table tests: pods from inline YAML
//! and runtime statuses whose containers carry the spec's hash.

use super::*;
pub(super) use crate::kuberuntime::pod_status::{ContainerStatus, SandboxStatus};
pub(super) use crate::kuberuntime::test_support::{container, pod, sandbox, status_of};

/// A pod with the given `spec:` body (YAML, indented two spaces).
pub(super) fn spec(body: &str) -> Pod {
    pod(&format!(
        "metadata: {{name: web, namespace: prod, uid: u1}}\nspec:\n{body}"
    ))
}

/// Two regular containers `a` and `b`, with `policy`.
pub(super) fn two(policy: &str) -> Pod {
    spec(&format!(
        "  restartPolicy: {policy}\n  containers: [{{name: a, image: busybox}}, {{name: b, image: busybox}}]"
    ))
}

/// Init containers `i0`, `i1`; regular container `a`; `policy`.
pub(super) fn with_init(policy: &str) -> Pod {
    spec(&format!(
        "  restartPolicy: {policy}\n  initContainers: [{{name: i0, image: busybox}}, {{name: i1, image: busybox}}]\n  containers: [{{name: a, image: busybox}}]"
    ))
}

pub(super) fn spec_hash(p: &Pod, name: &str) -> String {
    let s = p.spec.as_ref().unwrap();
    let c = s
        .containers
        .iter()
        .chain(s.init_containers.iter().flatten())
        .find(|c| c.name == name);
    c.map(container_hash).unwrap_or_default()
}

/// A container status with the spec's current hash.
pub(super) fn ctr(p: &Pod, id: &str, name: &str, state: ContainerState, exit: i32) -> ContainerStatus {
    container(id, name, state, exit, &spec_hash(p, name))
}

pub(super) fn ready() -> SandboxStatus {
    sandbox("sb1", SandboxState::Ready, 0, 10)
}

pub(super) fn st(p: &Pod, sandboxes: Vec<SandboxStatus>, containers: Vec<ContainerStatus>) -> RuntimePodStatus {
    RuntimePodStatus {
        sandboxes,
        containers,
        ..status_of(p)
    }
}

pub(super) fn act(p: &Pod, s: &RuntimePodStatus) -> PodActions {
    compute_pod_actions(p, s, &ProbeView::new())
}

/// Actions that keep the current sandbox `sb1`.
pub(super) fn keep() -> PodActions {
    PodActions {
        sandbox_id: "sb1".into(),
        ..Default::default()
    }
}

pub(super) fn kill(name: &str, message: &str, reason: KillReason) -> ContainerToKill {
    ContainerToKill {
        name: name.into(),
        message: message.into(),
        reason,
    }
}

pub(super) use ContainerState::{Created, Exited, Running, Unknown};
