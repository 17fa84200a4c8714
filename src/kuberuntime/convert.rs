//! CRI answers → [`RuntimePodStatus`] (upstream `GetPodStatus`,
//! `toKubeContainerStatus`, `determinePodSandboxIPs`).
//!
//! - Sandboxes and containers are grouped by the `io.kubernetes.pod.uid`
//!   label and sorted newest first (ties: higher attempt / restart count).
//! - Hash and restart count come from the container annotations; the
//!   container name from its label (falling back to the CRI metadata).
//! - CRI timestamps are nanoseconds; `0` means "not reached" (`None`).
//! - Pod IPs are those of the newest sandbox when it is ready.
//! - [`SandboxStatus::ips`] is empty when the network status is unknown (list
//!   answers) and `[""]` when the runtime reports no IP; only statuses built
//!   from `PodSandboxStatus` (as [`get_pod_status`] does) know the network
//!   mode and IPs, so compute actions from those.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use k8s_openapi::jiff::Timestamp;
use tonic::Code;

use super::labels::{
    POD_UID_LABEL, container_info_from_annotations, container_info_from_labels, sandbox_info_from_labels,
};
use super::pod_status::{ContainerState, ContainerStatus, RuntimePodStatus, SandboxState, SandboxStatus};
use super::termination_message::read_message;
use crate::cri::v1::{self, NamespaceMode};
use crate::cri::{CriError, CriResult, Runtime};
use crate::messages::PodUid;

/// A CRI timestamp (ns since the epoch) → `Some(Timestamp)`, `None` for 0
/// (or out of range).
pub fn timestamp_from_nanos(nanos: i64) -> Option<Timestamp> {
    (nanos != 0)
        .then(|| Timestamp::from_nanosecond(i128::from(nanos)).ok())
        .flatten()
}

pub use crate::clock::{system_now, timestamp_from_system_time};

fn created(nanos: i64) -> Timestamp {
    timestamp_from_nanos(nanos).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn sandbox_state(state: i32) -> SandboxState {
    match v1::PodSandboxState::try_from(state) {
        Ok(v1::PodSandboxState::SandboxReady) => SandboxState::Ready,
        _ => SandboxState::NotReady,
    }
}

fn container_state(state: i32) -> ContainerState {
    match v1::ContainerState::try_from(state) {
        Ok(v1::ContainerState::ContainerCreated) => ContainerState::Created,
        Ok(v1::ContainerState::ContainerRunning) => ContainerState::Running,
        Ok(v1::ContainerState::ContainerExited) => ContainerState::Exited,
        _ => ContainerState::Unknown,
    }
}

/// IPs of a sandbox: primary then additional; `[""]` when it has none;
/// empty when the network status is missing.
fn sandbox_ips(network: Option<&v1::PodSandboxNetworkStatus>) -> Vec<String> {
    let Some(n) = network else { return vec![] };
    std::iter::once(n.ip.clone())
        .chain(n.additional_ips.iter().map(|ip| ip.ip.clone()))
        .collect()
}

/// A sandbox from its `PodSandboxStatus`.
pub fn sandbox_from_status(s: &v1::PodSandboxStatus) -> SandboxStatus {
    let network_mode = s
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref());
    SandboxStatus {
        id: s.id.clone(),
        state: sandbox_state(s.state),
        created_at: created(s.created_at),
        attempt: s.metadata.as_ref().map(|m| m.attempt).unwrap_or(0),
        ips: sandbox_ips(s.network.as_ref()),
        host_network: network_mode.is_some_and(|o| o.network() == NamespaceMode::Node),
    }
}

/// A sandbox from a `ListPodSandbox` item (network unknown).
pub fn sandbox_from_list(s: &v1::PodSandbox) -> SandboxStatus {
    SandboxStatus {
        id: s.id.clone(),
        state: sandbox_state(s.state),
        created_at: created(s.created_at),
        attempt: s.metadata.as_ref().map(|m| m.attempt).unwrap_or(0),
        ips: vec![],
        host_network: false,
    }
}

fn container_name(labels: &HashMap<String, String>, metadata: Option<&v1::ContainerMetadata>) -> String {
    let from_label = container_info_from_labels(labels).container_name;
    if from_label.is_empty() {
        metadata.map(|m| m.name.clone()).unwrap_or_default()
    } else {
        from_label
    }
}

/// A container from its `ContainerStatus` (`sandbox_id` comes from the list).
pub fn container_from_status(s: &v1::ContainerStatus, sandbox_id: &str) -> ContainerStatus {
    let state = container_state(s.state);
    let info = container_info_from_annotations(&s.annotations);
    let exited = state == ContainerState::Exited;
    let image = s.image.as_ref();
    let user_image = image.map(|i| i.user_specified_image.clone()).filter(|i| !i.is_empty());
    ContainerStatus {
        id: s.id.clone(),
        name: container_name(&s.labels, s.metadata.as_ref()),
        state,
        created_at: created(s.created_at),
        started_at: if state == ContainerState::Created {
            None
        } else {
            timestamp_from_nanos(s.started_at)
        },
        finished_at: if exited {
            timestamp_from_nanos(s.finished_at)
        } else {
            None
        },
        exit_code: if exited { s.exit_code } else { 0 },
        image: user_image
            .or_else(|| image.map(|i| i.image.clone()))
            .unwrap_or_default(),
        image_ref: s.image_ref.clone(),
        image_id: if s.image_id.is_empty() {
            s.image_ref.clone()
        } else {
            s.image_id.clone()
        },
        hash: info.hash,
        restart_count: info.restart_count,
        reason: if exited { s.reason.clone() } else { String::new() },
        message: if exited { s.message.clone() } else { String::new() },
        sandbox_id: sandbox_id.to_string(),
        resources: s
            .resources
            .as_ref()
            .and_then(|r| r.linux.as_ref())
            .map(super::pod_status::ActualResources::of),
        user: s
            .user
            .as_ref()
            .and_then(|u| u.linux.as_ref())
            .map(|l| super::pod_status::ContainerUserIds {
                uid: l.uid,
                gid: l.gid,
                supplemental_groups: l.supplemental_groups.clone(),
            }),
        log_path: s.log_path.clone(),
    }
}

/// A container from a `ListContainers` item (no times beyond creation, no exit).
pub fn container_from_list(c: &v1::Container) -> ContainerStatus {
    let info = container_info_from_annotations(&c.annotations);
    ContainerStatus {
        id: c.id.clone(),
        name: container_name(&c.labels, c.metadata.as_ref()),
        state: container_state(c.state),
        created_at: created(c.created_at),
        started_at: None,
        finished_at: None,
        exit_code: 0,
        image: c.image.as_ref().map(|i| i.image.clone()).unwrap_or_default(),
        image_ref: c.image_ref.clone(),
        image_id: if c.image_id.is_empty() {
            c.image_ref.clone()
        } else {
            c.image_id.clone()
        },
        hash: info.hash,
        restart_count: info.restart_count,
        reason: String::new(),
        message: String::new(),
        sandbox_id: c.pod_sandbox_id.clone(),
        resources: None,
        user: None,
        log_path: String::new(),
    }
}

/// Assembles one pod's status: sorts newest first and takes the pod IPs from
/// the newest sandbox if it is ready (all IPs must parse, as upstream).
pub fn build_pod_status(
    uid: PodUid,
    name: &str,
    namespace: &str,
    mut sandboxes: Vec<SandboxStatus>,
    mut containers: Vec<ContainerStatus>,
) -> RuntimePodStatus {
    sandboxes.sort_by(|a, b| (b.created_at, b.attempt, &b.id).cmp(&(a.created_at, a.attempt, &a.id)));
    containers.sort_by(|a, b| (b.created_at, b.restart_count, &b.id).cmp(&(a.created_at, a.restart_count, &a.id)));
    let ips = match sandboxes.first() {
        Some(s) if s.state == SandboxState::Ready => {
            let ips: Vec<String> = s.ips.iter().filter(|ip| !ip.is_empty()).cloned().collect();
            if ips.iter().all(|ip| ip.parse::<IpAddr>().is_ok()) {
                ips
            } else {
                vec![]
            }
        }
        _ => vec![],
    };
    RuntimePodStatus {
        uid,
        name: name.to_string(),
        namespace: namespace.to_string(),
        ips,
        sandboxes,
        containers,
    }
}

/// Every pod the lists mention, grouped by the pod UID label (objects without
/// it are not the kubelet's and are skipped). Network facts are unknown; use
/// this for change detection, and [`get_pod_status`] before acting.
pub fn pod_statuses_from_lists(sandboxes: &[v1::PodSandbox], containers: &[v1::Container]) -> Vec<RuntimePodStatus> {
    #[derive(Default)]
    struct Group {
        name: String,
        namespace: String,
        sandboxes: Vec<SandboxStatus>,
        containers: Vec<ContainerStatus>,
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for s in sandboxes {
        let info = sandbox_info_from_labels(&s.labels);
        if info.pod_uid.is_empty() {
            continue;
        }
        let g = groups.entry(info.pod_uid).or_default();
        (g.name, g.namespace) = (info.pod_name, info.pod_namespace);
        g.sandboxes.push(sandbox_from_list(s));
    }
    for c in containers {
        let info = container_info_from_labels(&c.labels);
        if info.pod_uid.is_empty() {
            continue;
        }
        let g = groups.entry(info.pod_uid).or_default();
        if g.name.is_empty() {
            (g.name, g.namespace) = (info.pod_name, info.pod_namespace);
        }
        g.containers.push(container_from_list(c));
    }
    groups
        .into_iter()
        .map(|(uid, g)| build_pod_status(PodUid::new(uid), &g.name, &g.namespace, g.sandboxes, g.containers))
        .collect()
}

/// Reads one pod's status from the runtime (upstream `GetPodStatus`):
/// `ListPodSandbox` and `ListContainers` by the pod UID label, then
/// `PodSandboxStatus` and `ContainerStatus` for each. Objects removed between
/// the list and the status call are skipped.
pub async fn get_pod_status(
    runtime: &dyn Runtime,
    uid: &PodUid,
    name: &str,
    namespace: &str,
) -> CriResult<RuntimePodStatus> {
    let selector = HashMap::from([(POD_UID_LABEL.to_string(), uid.to_string())]);
    let listed = runtime
        .list_pod_sandbox(v1::ListPodSandboxRequest {
            filter: Some(v1::PodSandboxFilter {
                label_selector: selector.clone(),
                ..Default::default()
            }),
        })
        .await?;
    let mut sandboxes = Vec::new();
    for item in listed.items {
        let req = v1::PodSandboxStatusRequest {
            pod_sandbox_id: item.id.clone(),
            verbose: false,
        };
        match runtime.pod_sandbox_status(req).await {
            Ok(resp) => match resp.status {
                Some(status) => sandboxes.push(sandbox_from_status(&status)),
                None => {
                    return Err(CriError::new(
                        "PodSandboxStatus",
                        Code::Internal,
                        "pod sandbox status is nil",
                    ));
                }
            },
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        }
    }
    let listed = runtime
        .list_containers(v1::ListContainersRequest {
            filter: Some(v1::ContainerFilter {
                label_selector: selector,
                ..Default::default()
            }),
        })
        .await?;
    let mut containers = Vec::new();
    for item in listed.containers {
        let req = v1::ContainerStatusRequest {
            container_id: item.id.clone(),
            verbose: false,
        };
        match runtime.container_status(req).await {
            Ok(resp) => match resp.status {
                Some(status) => {
                    let mut c = container_from_status(&status, &item.pod_sandbox_id);
                    if c.state == ContainerState::Exited {
                        let info = container_info_from_annotations(&status.annotations);
                        let path = &info.termination_message_path;
                        let message = read_message(&status, path, &info.termination_message_policy).await;
                        if !message.is_empty() {
                            if !c.message.is_empty() {
                                c.message.push_str(": ");
                            }
                            c.message.push_str(&message);
                        }
                    }
                    containers.push(c);
                }
                None => {
                    return Err(CriError::new(
                        "ContainerStatus",
                        Code::Internal,
                        "container status is nil",
                    ));
                }
            },
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(build_pod_status(uid.clone(), name, namespace, sandboxes, containers))
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
