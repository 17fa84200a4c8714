//! Fixtures shared by the `status_*` tests (included with `#[path]`; also
//! built as an empty test target of its own).
#![allow(dead_code)]

use actlet::kuberuntime::pod_status::{ContainerState, ContainerStatus, RuntimePodStatus, SandboxState, SandboxStatus};
use actlet::messages::PodUid;
use k8s_openapi::api::core::v1::{self as api, Pod, PodStatus};
use k8s_openapi::jiff::Timestamp;

/// A pod from inline YAML.
pub fn pod(yaml: &str) -> Pod {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad pod yaml: {e}"))
}

/// A status from inline YAML.
pub fn pod_status(yaml: &str) -> PodStatus {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad status yaml: {e}"))
}

/// `secs` after the epoch.
pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap_or_else(|e| panic!("{e}"))
}

/// A ready sandbox with `ips`.
pub fn sandbox(ips: &[&str]) -> SandboxStatus {
    SandboxStatus {
        id: "sb1".into(),
        state: SandboxState::Ready,
        created_at: at(10),
        attempt: 0,
        ips: ips.iter().map(|s| (*s).to_owned()).collect(),
        host_network: false,
    }
}

/// A runtime container attempt.
pub fn ctr(id: &str, name: &str, state: ContainerState, created: i64) -> ContainerStatus {
    ContainerStatus {
        id: id.into(),
        name: name.into(),
        state,
        created_at: at(created),
        started_at: (state != ContainerState::Created).then(|| at(created + 1)),
        finished_at: None,
        exit_code: 0,
        image: format!("docker.io/library/{name}:1"),
        image_ref: format!("sha256:{name}"),
        image_id: format!("sha256:{name}"),
        hash: "h".into(),
        restart_count: 0,
        reason: String::new(),
        message: String::new(),
        sandbox_id: "sb1".into(),
        resources: None,
        user: None,
        log_path: String::new(),
    }
}

/// An exited attempt with `code` and the runtime's `reason`.
pub fn exited(id: &str, name: &str, code: i32, reason: &str, created: i64) -> ContainerStatus {
    ContainerStatus {
        exit_code: code,
        reason: reason.into(),
        finished_at: Some(at(created + 5)),
        ..ctr(id, name, ContainerState::Exited, created)
    }
}

/// The runtime's view of `pod`.
pub fn runtime(pod: &Pod, sandboxes: Vec<SandboxStatus>, containers: Vec<ContainerStatus>) -> RuntimePodStatus {
    let mut containers = containers;
    containers.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    RuntimePodStatus {
        uid: PodUid::from(pod.metadata.uid.clone().unwrap_or_default()),
        name: pod.metadata.name.clone().unwrap_or_default(),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        ips: sandboxes.first().map(|s| s.ips.clone()).unwrap_or_default(),
        sandboxes,
        containers,
    }
}

/// (status, reason, message) of condition `type_`.
pub fn cond(s: &PodStatus, type_: &str) -> (String, Option<String>, Option<String>) {
    let c = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// `lastTransitionTime` of condition `type_`.
pub fn transition(s: &PodStatus, type_: &str) -> Option<Timestamp> {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// The status of container `name` (regular or init).
pub fn container<'a>(s: &'a PodStatus, name: &str) -> &'a api::ContainerStatus {
    s.container_statuses
        .iter()
        .flatten()
        .chain(s.init_container_statuses.iter().flatten())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no status for {name}"))
}

/// A container state in short: `waiting:Reason`, `running`, `terminated:Reason:code`, `none`.
pub fn short(state: Option<&api::ContainerState>) -> String {
    match state {
        Some(api::ContainerState { waiting: Some(w), .. }) => format!("waiting:{}", w.reason.as_deref().unwrap_or("")),
        Some(api::ContainerState { running: Some(_), .. }) => "running".into(),
        Some(api::ContainerState {
            terminated: Some(t), ..
        }) => {
            format!("terminated:{}:{}", t.reason.as_deref().unwrap_or(""), t.exit_code)
        }
        _ => "none".into(),
    }
}

/// `(state, lastState)` of container `name`, in short.
pub fn states(s: &PodStatus, name: &str) -> (String, String) {
    let c = container(s, name);
    (short(c.state.as_ref()), short(c.last_state.as_ref()))
}

/// The phase.
pub fn phase(s: &PodStatus) -> &str {
    s.phase.as_deref().unwrap_or("")
}
