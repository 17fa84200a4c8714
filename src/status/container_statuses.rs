//! API container statuses from the runtime's containers (upstream v1.30
//! `convertToAPIContainerStatuses`), including the `ContainerStatusUnknown`
//! handling of containers that were running and vanished.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, ContainerUser,
    LinuxContainerUser, Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::pod_predicates::{
    init_containers, is_restartable_init_container, last_terminated, running, spec, terminated, waiting, waiting_state,
};
use crate::container_restart::container_should_restart;

/// A container without a restart policy of its own.
static NO_OVERRIDE: std::sync::LazyLock<Container> = std::sync::LazyLock::new(Container::default);
use super::reasons::{
    COMPLETED, CONTAINER_CREATING, CONTAINER_STATUS_UNKNOWN, ERROR, EXIT_CODE_UNKNOWN, MSG_NOT_LOCATED_DELETED,
    MSG_NOT_LOCATED_TERMINATED, POD_INITIALIZING,
};
use crate::kuberuntime::pod_status::{ContainerState as RtState, ContainerStatus as RtStatus, RuntimePodStatus};

/// Which containers of the spec to convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerKind {
    /// `spec.containers`: output sorted by name, as upstream.
    Regular,
    /// `spec.initContainers`: output in spec order.
    Init,
    /// `spec.ephemeralContainers`: output sorted by name.
    Ephemeral,
}

/// What the conversion reads besides the previous statuses.
#[derive(Clone, Copy, Debug)]
pub struct ConvertContext<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The runtime's view of it.
    pub runtime: &'a RuntimePodStatus,
    /// Why containers wait, by name (upstream reason cache), e.g. `CrashLoopBackOff`.
    pub waiting: &'a HashMap<String, (String, String)>,
    /// The runtime name used as container ID scheme (`containerd://…`).
    pub runtime_name: &'a str,
}

/// The part of a spec container the conversion needs.
struct SpecContainer<'a> {
    name: &'a str,
    image: &'a str,
    sidecar: bool,
    /// The spec container (`None` for ephemeral ones).
    container: Option<&'a Container>,
}

fn spec_containers<'a>(pod: &'a Pod, kind: ContainerKind) -> Vec<SpecContainer<'a>> {
    let spec = spec(pod);
    match kind {
        ContainerKind::Regular => spec
            .containers
            .iter()
            .map(|c| SpecContainer {
                name: &c.name,
                image: c.image.as_deref().unwrap_or(""),
                sidecar: false,
                container: Some(c),
            })
            .collect(),
        ContainerKind::Init => init_containers(spec)
            .iter()
            .map(|c| SpecContainer {
                name: &c.name,
                image: c.image.as_deref().unwrap_or(""),
                sidecar: is_restartable_init_container(c),
                container: Some(c),
            })
            .collect(),
        ContainerKind::Ephemeral => spec
            .ephemeral_containers
            .iter()
            .flatten()
            .map(|c| SpecContainer {
                name: &c.name,
                image: c.image.as_deref().unwrap_or(""),
                sidecar: false,
                container: None,
            })
            .collect(),
    }
}

fn state_terminated(t: ContainerStateTerminated) -> ContainerState {
    ContainerState {
        terminated: Some(t),
        ..Default::default()
    }
}

fn unknown_termination(message: &str) -> ContainerState {
    state_terminated(ContainerStateTerminated {
        reason: Some(CONTAINER_STATUS_UNKNOWN.into()),
        message: Some(message.into()),
        exit_code: EXIT_CODE_UNKNOWN,
        ..Default::default()
    })
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// One runtime container as an API status (upstream `convertContainerStatus`).
fn convert_one(cs: &RtStatus, old: Option<&ContainerStatus>, runtime_name: &str) -> ContainerStatus {
    let cid = format!("{runtime_name}://{}", cs.id);
    let mut status = ContainerStatus {
        name: cs.name.clone(),
        restart_count: i32::try_from(cs.restart_count).unwrap_or(i32::MAX),
        image: cs.image.clone(),
        image_id: cs.image_ref.clone(),
        container_id: Some(cid.clone()),
        last_state: Some(ContainerState::default()),
        volume_mounts: old.and_then(|o| o.volume_mounts.clone()),
        user: cs.user.as_ref().map(|u| ContainerUser {
            linux: Some(LinuxContainerUser {
                uid: u.uid,
                gid: u.gid,
                supplemental_groups: Some(u.supplemental_groups.clone()),
            }),
        }),
        ..Default::default()
    };
    status.state = Some(match cs.state {
        RtState::Running => ContainerState {
            running: Some(ContainerStateRunning {
                started_at: cs.started_at.map(Time),
            }),
            ..Default::default()
        },
        RtState::Exited => {
            let fallback = if cs.exit_code == 0 { COMPLETED } else { ERROR };
            state_terminated(ContainerStateTerminated {
                exit_code: cs.exit_code,
                reason: Some(non_empty(&cs.reason).unwrap_or_else(|| fallback.into())),
                message: non_empty(&cs.message),
                started_at: cs.started_at.map(Time),
                finished_at: cs.finished_at.map(Time),
                container_id: Some(cid),
                ..Default::default()
            })
        }
        RtState::Unknown if old.is_some_and(|o| running(o).is_some()) => {
            // It ran and is gone: "ran and failed", not "never ran".
            status.restart_count = old.map_or(0, |o| o.restart_count.saturating_add(1));
            unknown_termination(MSG_NOT_LOCATED_TERMINATED)
        }
        // Created (not started) and any other unknown state: waiting.
        RtState::Created | RtState::Unknown => waiting_state(None, None),
    });
    status
}

/// Whether the container will be (re)started by the next sync (upstream
/// `ShouldContainerBeRestarted`: the exit code against the container's or
/// the pod's restart policy and rules; sidecars always restart, as the
/// runtime manager does for them).
fn should_restart(c: &SpecContainer<'_>, pod: &Pod, newest: Option<&RtStatus>) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(s) = newest else { return true };
    match s.state {
        RtState::Running => false,
        RtState::Unknown | RtState::Created => true,
        RtState::Exited if c.sidecar => true,
        // Ephemeral containers (no override allowed) read the pod's policy,
        // as upstream's converted container does.
        RtState::Exited => container_should_restart(c.container.unwrap_or(&NO_OVERRIDE), spec(pod), s.exit_code),
    }
}

/// Converts the runtime's containers of `kind` into API statuses, using
/// `previous` (the status manager's or the API's statuses) for what the
/// runtime no longer knows.
pub fn convert_container_statuses(
    ctx: &ConvertContext<'_>,
    previous: &[ContainerStatus],
    kind: ContainerKind,
) -> Vec<ContainerStatus> {
    let containers = spec_containers(ctx.pod, kind);
    let has_init = !init_containers(spec(ctx.pod)).is_empty();
    let default_reason = if has_init { POD_INITIALIZING } else { CONTAINER_CREATING };
    let old: HashMap<&str, &ContainerStatus> = previous.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut runtime: Vec<&RtStatus> = ctx.runtime.containers.iter().collect();
    runtime.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    let newest = |name: &str| runtime.iter().copied().find(|c| c.name == name);

    // Defaults: waiting, or the old terminated status, or old restart info.
    let mut statuses: BTreeMap<&str, ContainerStatus> = BTreeMap::new();
    for c in &containers {
        let mut status = ContainerStatus {
            name: c.name.into(),
            image: c.image.into(),
            state: Some(waiting_state(Some(default_reason), None)),
            last_state: Some(ContainerState::default()),
            ..Default::default()
        };
        if let Some(o) = old.get(c.name) {
            if terminated(o).is_some() {
                status = (*o).clone();
            } else {
                status.restart_count = o.restart_count;
                status.last_state = o.last_state.clone();
            }
        }
        statuses.insert(c.name, status);
    }

    // A container that was running and vanished from the runtime terminated
    // with an unknown result; record that rather than fall back to Pending.
    for c in containers.iter().filter(|c| newest(c.name).is_none()) {
        let Some(o) = old.get(c.name) else { continue };
        if terminated(o).is_some() || running(o).is_none() {
            continue;
        }
        let status = statuses
            .get_mut(c.name)
            .expect("every spec container has a default status");
        let is_default = waiting(status).is_some_and(|w| w.reason.as_deref() == Some(default_reason));
        if !is_default || last_terminated(status).is_some() {
            continue;
        }
        status.last_state = Some(unknown_termination(MSG_NOT_LOCATED_DELETED));
        if ctx.pod.metadata.deletion_timestamp.is_none() {
            status.restart_count = status.restart_count.saturating_add(1);
        }
    }

    // The newest attempt is the state; the one before it the last state.
    let mut seen: HashMap<&str, u8> = HashMap::new();
    for cs in &runtime {
        let Some(status) = statuses.get_mut(cs.name.as_str()) else {
            continue;
        };
        let count = seen.entry(cs.name.as_str()).or_default();
        match *count {
            0 => *status = convert_one(cs, old.get(cs.name.as_str()).copied(), ctx.runtime_name),
            1 => status.last_state = convert_one(cs, None, ctx.runtime_name).state,
            _ => continue,
        }
        *count += 1;
    }

    // Containers the next sync will (re)start wait, for the recorded reason.
    for c in &containers {
        let latest = newest(c.name);
        let init_succeeded =
            kind == ContainerKind::Init && latest.is_some_and(|s| s.state == RtState::Exited && s.exit_code == 0);
        if init_succeeded || !should_restart(c, ctx.pod, latest) {
            continue;
        }
        let Some((reason, message)) = ctx.waiting.get(c.name) else {
            continue;
        };
        let status = statuses
            .get_mut(c.name)
            .expect("every spec container has a default status");
        if terminated(status).is_some() {
            status.last_state = status.state.clone();
        }
        status.state = Some(waiting_state(Some(reason), Some(message)));
    }

    match kind {
        ContainerKind::Init => containers.iter().filter_map(|c| statuses.remove(c.name)).collect(),
        ContainerKind::Regular | ContainerKind::Ephemeral => statuses.into_values().collect(),
    }
}
