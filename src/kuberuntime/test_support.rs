//! Test helpers shared by the kuberuntime unit tests: pods from inline YAML
//! and runtime statuses built field by field.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::pod_status::{ContainerState, ContainerStatus, RuntimePodStatus, SandboxState, SandboxStatus};
use crate::messages::PodUid;

/// Parses a pod from YAML, panicking with the parse error (tests only).
pub fn pod(yaml: &str) -> Pod {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad test pod YAML: {e}\n{yaml}"))
}

/// A timestamp `secs` seconds after the epoch.
pub fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap_or_else(|e| panic!("{e}"))
}

/// An empty runtime status for the pod.
pub fn status_of(pod: &Pod) -> RuntimePodStatus {
    let m = &pod.metadata;
    RuntimePodStatus::empty(
        PodUid::new(m.uid.clone().unwrap_or_default()),
        m.name.clone().unwrap_or_default(),
        m.namespace.clone().unwrap_or_default(),
    )
}

/// A sandbox with an IP.
pub fn sandbox(id: &str, state: SandboxState, attempt: u32, created: i64) -> SandboxStatus {
    SandboxStatus {
        id: id.into(),
        state,
        created_at: ts(created),
        attempt,
        ips: vec!["10.88.0.5".into()],
        host_network: false,
    }
}

/// A container status; `exit_code` matters only for exited containers.
pub fn container(id: &str, name: &str, state: ContainerState, exit_code: i32, hash: &str) -> ContainerStatus {
    ContainerStatus {
        id: id.into(),
        name: name.into(),
        state,
        created_at: ts(100),
        started_at: (state != ContainerState::Created).then(|| ts(101)),
        finished_at: (state == ContainerState::Exited).then(|| ts(102)),
        exit_code,
        image: "busybox".into(),
        image_ref: "sha256:busybox".into(),
        image_id: "sha256:busybox".into(),
        hash: hash.into(),
        restart_count: 0,
        reason: String::new(),
        message: String::new(),
        sandbox_id: "sb1".into(),
        resources: None,
        user: None,
        log_path: String::new(),
    }
}
