//! Ephemeral containers (`kubectl debug`; GA 1.25): added to a running pod
//! through the `ephemeralcontainers` subresource, started once in the pod's
//! current sandbox, never restarted, never counted for readiness or phase.
//!
//! As upstream (`computePodActions`, `SyncPod` step 5): one that has no
//! status yet is started — before init containers, so a pod whose
//! initialization fails can still be debugged — but not while the sandbox is
//! being (re)created; with `targetContainerName` it joins that container's
//! PID namespace (CRI `NamespaceMode::TARGET`).

use k8s_openapi::api::core::v1::{Container, EphemeralContainer, Pod};

use crate::cri::v1::{ContainerConfig, NamespaceMode};
use crate::kuberuntime::pod_status::RuntimePodStatus;

/// The pod's ephemeral containers.
pub fn ephemeral_containers(pod: &Pod) -> &[EphemeralContainer] {
    pod.spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_deref())
        .unwrap_or_default()
}

/// Whether `name` is one of the pod's ephemeral containers.
pub fn is_ephemeral(pod: &Pod, name: &str) -> bool {
    ephemeral_containers(pod).iter().any(|c| c.name == name)
}

/// Indexes of the ephemeral containers never started (no status by name).
pub fn to_start(pod: &Pod, status: &RuntimePodStatus) -> Vec<usize> {
    ephemeral_containers(pod)
        .iter()
        .enumerate()
        .filter(|(_, c)| status.find_container(&c.name).is_none())
        .map(|(i, _)| i)
        .collect()
}

/// The container an ephemeral container is (upstream converts
/// `EphemeralContainerCommon` to `Container` the same way: same fields).
pub fn as_container(ec: &EphemeralContainer) -> Container {
    let ec = ec.clone();
    Container {
        args: ec.args,
        command: ec.command,
        env: ec.env,
        env_from: ec.env_from,
        image: ec.image,
        image_pull_policy: ec.image_pull_policy,
        lifecycle: ec.lifecycle,
        liveness_probe: ec.liveness_probe,
        name: ec.name,
        ports: ec.ports,
        readiness_probe: ec.readiness_probe,
        resize_policy: ec.resize_policy,
        resources: ec.resources,
        restart_policy: ec.restart_policy,
        restart_policy_rules: ec.restart_policy_rules,
        security_context: ec.security_context,
        startup_probe: ec.startup_probe,
        stdin: ec.stdin,
        stdin_once: ec.stdin_once,
        termination_message_path: ec.termination_message_path,
        termination_message_policy: ec.termination_message_policy,
        tty: ec.tty,
        volume_devices: ec.volume_devices,
        volume_mounts: ec.volume_mounts,
        working_dir: ec.working_dir,
    }
}

/// The CRI id of the container whose PID namespace ephemeral container
/// `name` targets: `Ok(None)` without a target (or for any other
/// container), an error naming the target when it has no instance (upstream
/// `getTargetID`: "unable to find target container ...").
pub fn target_id(pod: &Pod, name: &str, status: &RuntimePodStatus) -> Result<Option<String>, String> {
    let Some(target) = ephemeral_containers(pod)
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.target_container_name.as_deref())
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    status
        .find_container(target)
        .map(|s| Some(s.id.clone()))
        .ok_or_else(|| format!("unable to find target container {target}"))
}

/// Puts the container into its target's PID namespace, unless the pod
/// shares one namespace already (host or pod mode), as upstream.
pub fn apply_pid_target(config: &mut ContainerConfig, target_id: &str) {
    let Some(ns) = config
        .linux
        .as_mut()
        .and_then(|l| l.security_context.as_mut())
        .and_then(|s| s.namespace_options.as_mut())
    else {
        return;
    };
    if ns.pid == NamespaceMode::Container as i32 {
        ns.pid = NamespaceMode::Target as i32;
        ns.target_id = target_id.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::v1::{LinuxContainerConfig, LinuxContainerSecurityContext, NamespaceOption};
    use crate::kuberuntime::pod_status::ContainerState;
    use crate::kuberuntime::test_support::{container, status_of};

    fn pod() -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "d", "uid": "u"},
            "spec": {
                "containers": [{"name": "app", "image": "busybox"}],
                "ephemeralContainers": [
                    {"name": "debugger", "image": "busybox", "stdin": true, "tty": true, "targetContainerName": "app",
                     "command": ["sh"], "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                    {"name": "plain", "image": "busybox"}
                ]
            }
        }))
        .unwrap_or_default()
    }

    fn status(names: &[(&str, &str)]) -> RuntimePodStatus {
        RuntimePodStatus {
            containers: names
                .iter()
                .map(|(name, id)| container(id, name, ContainerState::Running, 0, "h"))
                .collect(),
            ..status_of(&pod())
        }
    }

    #[test]
    fn only_those_never_started_are_started() {
        let p = pod();
        assert_eq!(to_start(&p, &status(&[("app", "1")])), vec![0, 1]);
        assert_eq!(to_start(&p, &status(&[("app", "1"), ("debugger", "2")])), vec![1]);
        assert!(is_ephemeral(&p, "plain") && !is_ephemeral(&p, "app"));
    }

    #[test]
    fn the_container_keeps_every_common_field() {
        let p = pod();
        let c = as_container(&ephemeral_containers(&p)[0]);
        assert_eq!(c.name, "debugger");
        assert_eq!((c.stdin, c.tty), (Some(true), Some(true)));
        assert_eq!(c.command, Some(vec!["sh".to_string()]));
        assert_eq!(c.volume_mounts.map(|m| m.len()), Some(1));
    }

    #[test]
    fn the_target_is_resolved_by_name_or_named_in_the_error() {
        let p = pod();
        assert_eq!(
            target_id(&p, "debugger", &status(&[("app", "c1")])),
            Ok(Some("c1".into()))
        );
        assert_eq!(target_id(&p, "plain", &status(&[("app", "c1")])), Ok(None));
        assert_eq!(
            target_id(&p, "app", &status(&[])),
            Ok(None),
            "not an ephemeral container"
        );
        assert_eq!(
            target_id(&p, "debugger", &status(&[])),
            Err("unable to find target container app".into())
        );
    }

    #[test]
    fn the_pid_namespace_is_the_targets_unless_shared() {
        let config = |pid: NamespaceMode| ContainerConfig {
            linux: Some(LinuxContainerConfig {
                security_context: Some(LinuxContainerSecurityContext {
                    namespace_options: Some(NamespaceOption {
                        pid: pid as i32,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let ns = |c: &ContainerConfig| {
            c.linux
                .as_ref()
                .and_then(|l| l.security_context.as_ref())
                .and_then(|s| s.namespace_options.clone())
                .unwrap_or_default()
        };
        let mut c = config(NamespaceMode::Container);
        apply_pid_target(&mut c, "c1");
        assert_eq!(
            (ns(&c).pid, ns(&c).target_id.as_str()),
            (NamespaceMode::Target as i32, "c1")
        );
        let mut shared = config(NamespaceMode::Pod);
        apply_pid_target(&mut shared, "c1");
        assert_eq!(
            (ns(&shared).pid, ns(&shared).target_id.as_str()),
            (NamespaceMode::Pod as i32, "")
        );
    }
}
