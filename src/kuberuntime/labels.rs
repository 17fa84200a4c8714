//! Labels and annotations the kubelet puts on CRI sandboxes and containers
//! (upstream `kuberuntime/labels.go`), and reading them back, which is how a
//! restarted kubelet knows which pod and spec a container belongs to.
//!
//! - Sandbox labels: the pod's labels plus `io.kubernetes.pod.{name,namespace,uid}`.
//! - Sandbox annotations: the pod's annotations (so `kubernetes.io/config.*`
//!   pass through).
//! - Container labels: `io.kubernetes.pod.{name,namespace,uid}` and
//!   `io.kubernetes.container.name`.
//! - Container annotations: hash, restart count, termination message path and
//!   policy, the pod's grace periods, the preStop handler and the ports (JSON).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, ContainerPort, LifecycleHandler, Pod};

use super::hash::container_hash;

/// Pod name label.
pub const POD_NAME_LABEL: &str = "io.kubernetes.pod.name";
/// Pod namespace label.
pub const POD_NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";
/// Pod UID label.
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
/// Container name label.
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";
/// Container spec hash annotation.
pub const CONTAINER_HASH_ANNOTATION: &str = "io.kubernetes.container.hash";
/// Restart count annotation.
pub const CONTAINER_RESTART_COUNT_ANNOTATION: &str = "io.kubernetes.container.restartCount";
/// Termination message path annotation.
pub const TERMINATION_MESSAGE_PATH_ANNOTATION: &str = "io.kubernetes.container.terminationMessagePath";
/// Termination message policy annotation.
pub const TERMINATION_MESSAGE_POLICY_ANNOTATION: &str = "io.kubernetes.container.terminationMessagePolicy";
/// Pod `terminationGracePeriodSeconds` annotation.
pub const POD_TERMINATION_GRACE_PERIOD_ANNOTATION: &str = "io.kubernetes.pod.terminationGracePeriod";
/// Pod `deletionGracePeriodSeconds` annotation.
pub const POD_DELETION_GRACE_PERIOD_ANNOTATION: &str = "io.kubernetes.pod.deletionGracePeriod";
/// preStop handler annotation (JSON).
pub const PRE_STOP_HANDLER_ANNOTATION: &str = "io.kubernetes.container.preStopHandler";
/// Container ports annotation (JSON).
pub const CONTAINER_PORTS_ANNOTATION: &str = "io.kubernetes.container.ports";

/// API default `terminationMessagePath`.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";
/// API default `terminationMessagePolicy`.
pub const DEFAULT_TERMINATION_MESSAGE_POLICY: &str = "File";
/// API default `terminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE_PERIOD: i64 = 30;

fn meta(pod: &Pod) -> (&str, &str, &str) {
    let m = &pod.metadata;
    (
        m.name.as_deref().unwrap_or_default(),
        m.namespace.as_deref().unwrap_or_default(),
        m.uid.as_deref().unwrap_or_default(),
    )
}

/// Labels of the pod's sandbox: the pod labels plus the pod identity labels.
pub fn sandbox_labels(pod: &Pod) -> HashMap<String, String> {
    let (name, namespace, uid) = meta(pod);
    let mut labels: HashMap<String, String> = pod.metadata.labels.clone().unwrap_or_default().into_iter().collect();
    labels.insert(POD_NAME_LABEL.into(), name.into());
    labels.insert(POD_NAMESPACE_LABEL.into(), namespace.into());
    labels.insert(POD_UID_LABEL.into(), uid.into());
    labels
}

/// Annotations of the pod's sandbox: the pod annotations unchanged.
pub fn sandbox_annotations(pod: &Pod) -> HashMap<String, String> {
    pod.metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Labels of a container: pod identity and container name.
pub fn container_labels(pod: &Pod, container: &Container) -> HashMap<String, String> {
    let (name, namespace, uid) = meta(pod);
    HashMap::from([
        (POD_NAME_LABEL.into(), name.into()),
        (POD_NAMESPACE_LABEL.into(), namespace.into()),
        (POD_UID_LABEL.into(), uid.into()),
        (CONTAINER_NAME_LABEL.into(), container.name.clone()),
    ])
}

/// The pod's effective `terminationGracePeriodSeconds` (API default 30).
pub fn termination_grace_period(pod: &Pod) -> i64 {
    pod.spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD)
}

/// Annotations of a container (upstream `newContainerAnnotations`). Unset
/// termination message fields and grace period get their API defaults.
pub fn container_annotations(pod: &Pod, container: &Container, restart_count: u32) -> HashMap<String, String> {
    let mut a = HashMap::new();
    a.insert(CONTAINER_HASH_ANNOTATION.into(), container_hash(container));
    a.insert(CONTAINER_RESTART_COUNT_ANNOTATION.into(), restart_count.to_string());
    let path = container
        .termination_message_path
        .as_deref()
        .unwrap_or(DEFAULT_TERMINATION_MESSAGE_PATH);
    a.insert(TERMINATION_MESSAGE_PATH_ANNOTATION.into(), path.into());
    let policy = container
        .termination_message_policy
        .as_deref()
        .unwrap_or(DEFAULT_TERMINATION_MESSAGE_POLICY);
    a.insert(TERMINATION_MESSAGE_POLICY_ANNOTATION.into(), policy.into());
    if let Some(grace) = pod.metadata.deletion_grace_period_seconds {
        a.insert(POD_DELETION_GRACE_PERIOD_ANNOTATION.into(), grace.to_string());
    }
    a.insert(
        POD_TERMINATION_GRACE_PERIOD_ANNOTATION.into(),
        termination_grace_period(pod).to_string(),
    );
    if let Some(pre_stop) = container.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()) {
        match serde_json::to_string(pre_stop) {
            Ok(json) => {
                a.insert(PRE_STOP_HANDLER_ANNOTATION.into(), json);
            }
            Err(err) => tracing::error!(container = %container.name, %err, "unable to marshal preStop handler"),
        }
    }
    if let Some(ports) = container.ports.as_ref().filter(|p| !p.is_empty()) {
        match serde_json::to_string(ports) {
            Ok(json) => {
                a.insert(CONTAINER_PORTS_ANNOTATION.into(), json);
            }
            Err(err) => tracing::error!(container = %container.name, %err, "unable to marshal container ports"),
        }
    }
    a
}

/// What a sandbox's labels say (upstream `labeledPodSandboxInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxLabelInfo {
    /// `io.kubernetes.pod.name`.
    pub pod_name: String,
    /// `io.kubernetes.pod.namespace`.
    pub pod_namespace: String,
    /// `io.kubernetes.pod.uid`.
    pub pod_uid: String,
    /// The pod's own labels (identity labels removed).
    pub labels: HashMap<String, String>,
}

/// Reads a sandbox's labels back; missing labels read as empty.
pub fn sandbox_info_from_labels(labels: &HashMap<String, String>) -> SandboxLabelInfo {
    let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
    let own = labels
        .iter()
        .filter(|(k, _)| ![POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    SandboxLabelInfo {
        pod_name: get(POD_NAME_LABEL),
        pod_namespace: get(POD_NAMESPACE_LABEL),
        pod_uid: get(POD_UID_LABEL),
        labels: own,
    }
}

/// What a container's labels say (upstream `labeledContainerInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerLabelInfo {
    /// `io.kubernetes.container.name`.
    pub container_name: String,
    /// `io.kubernetes.pod.name`.
    pub pod_name: String,
    /// `io.kubernetes.pod.namespace`.
    pub pod_namespace: String,
    /// `io.kubernetes.pod.uid`.
    pub pod_uid: String,
}

/// Reads a container's labels back; missing labels read as empty.
pub fn container_info_from_labels(labels: &HashMap<String, String>) -> ContainerLabelInfo {
    let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
    ContainerLabelInfo {
        container_name: get(CONTAINER_NAME_LABEL),
        pod_name: get(POD_NAME_LABEL),
        pod_namespace: get(POD_NAMESPACE_LABEL),
        pod_uid: get(POD_UID_LABEL),
    }
}

/// What a container's annotations say (upstream `annotatedContainerInfo`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerAnnotationInfo {
    /// Spec hash ("" when missing).
    pub hash: String,
    /// Restart count (0 when missing or invalid).
    pub restart_count: u32,
    /// The pod's `deletionGracePeriodSeconds` when the container was created.
    pub pod_deletion_grace_period: Option<i64>,
    /// The pod's `terminationGracePeriodSeconds`.
    pub pod_termination_grace_period: Option<i64>,
    /// Termination message path.
    pub termination_message_path: String,
    /// Termination message policy (`File` or `FallbackToLogsOnError`).
    pub termination_message_policy: String,
    /// The preStop handler, when one was set.
    pub pre_stop_handler: Option<LifecycleHandler>,
    /// The container ports.
    pub container_ports: Vec<ContainerPort>,
}

/// Reads a container's annotations back. Invalid values are logged and read
/// as unset: annotations come from the runtime, which anyone can write to.
pub fn container_info_from_annotations(annotations: &HashMap<String, String>) -> ContainerAnnotationInfo {
    fn parsed<T: std::str::FromStr>(a: &HashMap<String, String>, key: &str) -> Option<T> {
        let value = a.get(key)?;
        let parsed = value.parse().ok();
        if parsed.is_none() {
            tracing::warn!(annotation = key, value = %value, "ignoring invalid container annotation");
        }
        parsed
    }
    fn json<T: serde::de::DeserializeOwned>(a: &HashMap<String, String>, key: &str) -> Option<T> {
        let value = a.get(key)?;
        serde_json::from_str(value)
            .inspect_err(|err| tracing::warn!(annotation = key, %err, "ignoring invalid container annotation"))
            .ok()
    }
    ContainerAnnotationInfo {
        hash: annotations.get(CONTAINER_HASH_ANNOTATION).cloned().unwrap_or_default(),
        restart_count: parsed(annotations, CONTAINER_RESTART_COUNT_ANNOTATION).unwrap_or(0),
        pod_deletion_grace_period: parsed(annotations, POD_DELETION_GRACE_PERIOD_ANNOTATION),
        pod_termination_grace_period: parsed(annotations, POD_TERMINATION_GRACE_PERIOD_ANNOTATION),
        termination_message_path: annotations
            .get(TERMINATION_MESSAGE_PATH_ANNOTATION)
            .cloned()
            .unwrap_or_default(),
        termination_message_policy: annotations
            .get(TERMINATION_MESSAGE_POLICY_ANNOTATION)
            .cloned()
            .unwrap_or_default(),
        pre_stop_handler: json(annotations, PRE_STOP_HANDLER_ANNOTATION),
        container_ports: json(annotations, CONTAINER_PORTS_ANNOTATION).unwrap_or_default(),
    }
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
