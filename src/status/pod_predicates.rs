//! Small facts about pods and API container statuses that the status logic
//! asks again and again (upstream `podutil`, `kubetypes` and
//! `kubecontainer` helpers).

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    Pod, PodSpec,
};

/// The annotation naming where a pod came from (`file`, `http`, `api`).
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";

static EMPTY_SPEC: LazyLock<PodSpec> = LazyLock::new(PodSpec::default);

/// The pod's spec, or an empty one.
pub fn spec(pod: &Pod) -> &PodSpec {
    pod.spec.as_ref().unwrap_or(&EMPTY_SPEC)
}

/// The pod's `restartPolicy`, defaulted to `Always`.
pub fn restart_policy(spec: &PodSpec) -> &str {
    spec.restart_policy.as_deref().unwrap_or("Always")
}

/// The pod's init containers (empty when none).
pub fn init_containers(spec: &PodSpec) -> &[Container] {
    spec.init_containers.as_deref().unwrap_or_default()
}

/// An init container with `restartPolicy: Always` (a sidecar).
pub fn is_restartable_init_container(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// A static pod: its config source annotation exists and is not `api`
/// (upstream `kubetypes.IsStaticPod`).
pub fn is_static_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_SOURCE_ANNOTATION))
        .is_some_and(|source| source != "api")
}

/// The pod uses the host's network namespace.
pub fn is_host_network(pod: &Pod) -> bool {
    spec(pod).host_network.unwrap_or(false)
}

/// The first status named `name`.
pub fn find_status<'a>(statuses: &'a [ContainerStatus], name: &str) -> Option<&'a ContainerStatus> {
    statuses.iter().find(|s| s.name == name)
}

/// The current state's `running` part.
pub fn running(status: &ContainerStatus) -> Option<&ContainerStateRunning> {
    status.state.as_ref().and_then(|s| s.running.as_ref())
}

/// The current state's `terminated` part.
pub fn terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    status.state.as_ref().and_then(|s| s.terminated.as_ref())
}

/// The current state's `waiting` part.
pub fn waiting(status: &ContainerStatus) -> Option<&ContainerStateWaiting> {
    status.state.as_ref().and_then(|s| s.waiting.as_ref())
}

/// The last state's `terminated` part.
pub fn last_terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    status.last_state.as_ref().and_then(|s| s.terminated.as_ref())
}

/// A state that is `waiting` with the given reason and message.
pub fn waiting_state(reason: Option<&str>, message: Option<&str>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: reason.filter(|r| !r.is_empty()).map(str::to_owned),
            message: message.filter(|m| !m.is_empty()).map(str::to_owned),
        }),
        ..Default::default()
    }
}

/// Whether any regular container has ever run: its status is running or
/// terminated (upstream v1.30 `HasAnyRegularContainerStarted`). Once true, the
/// pod has been initialized.
pub fn has_any_regular_container_started(spec: &PodSpec, statuses: &[ContainerStatus]) -> bool {
    statuses.iter().any(|status| {
        spec.containers.iter().any(|c| c.name == status.name)
            && (running(status).is_some() || terminated(status).is_some())
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn status(name: &str, state: ContainerState) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            state: Some(state),
            ..Default::default()
        }
    }

    #[test]
    fn restart_policy_defaults_to_always() {
        assert_eq!(restart_policy(&PodSpec::default()), "Always");
        let spec = PodSpec {
            restart_policy: Some("Never".into()),
            ..Default::default()
        };
        assert_eq!(restart_policy(&spec), "Never");
    }

    #[test]
    fn restartable_init_container_needs_always() {
        let mut c = Container {
            name: "s".into(),
            ..Default::default()
        };
        assert!(!is_restartable_init_container(&c));
        c.restart_policy = Some("Always".into());
        assert!(is_restartable_init_container(&c));
    }

    #[test]
    fn static_pod_by_source_annotation() {
        let mut pod = Pod::default();
        assert!(!is_static_pod(&pod), "no annotation: not static");
        for (source, expected) in [("file", true), ("http", true), ("api", false)] {
            pod.metadata.annotations = Some(BTreeMap::from([(CONFIG_SOURCE_ANNOTATION.into(), source.into())]));
            assert_eq!(is_static_pod(&pod), expected, "{source}");
        }
    }

    #[test]
    fn host_network_and_spec_defaults() {
        let mut pod = Pod::default();
        assert!(!is_host_network(&pod));
        assert!(init_containers(spec(&pod)).is_empty());
        pod.spec = Some(PodSpec {
            host_network: Some(true),
            ..Default::default()
        });
        assert!(is_host_network(&pod));
    }

    #[test]
    fn regular_container_started_only_counts_regular_running_or_terminated() {
        let spec = PodSpec {
            containers: vec![Container {
                name: "app".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let run = ContainerState {
            running: Some(Default::default()),
            ..Default::default()
        };
        let term = ContainerState {
            terminated: Some(Default::default()),
            ..Default::default()
        };
        assert!(!has_any_regular_container_started(&spec, &[]));
        assert!(!has_any_regular_container_started(
            &spec,
            &[status("init", run.clone())]
        ));
        assert!(!has_any_regular_container_started(
            &spec,
            &[status("app", waiting_state(Some("X"), None))]
        ));
        assert!(has_any_regular_container_started(&spec, &[status("app", run)]));
        assert!(has_any_regular_container_started(&spec, &[status("app", term)]));
    }

    #[test]
    fn waiting_state_drops_empty_strings() {
        let w = waiting_state(Some(""), Some("")).waiting.unwrap();
        assert_eq!((w.reason, w.message), (None, None));
        let w = waiting_state(Some("R"), Some("M")).waiting.unwrap();
        assert_eq!((w.reason.as_deref(), w.message.as_deref()), (Some("R"), Some("M")));
    }

    #[test]
    fn state_accessors() {
        let mut s = status(
            "a",
            ContainerState {
                running: Some(Default::default()),
                ..Default::default()
            },
        );
        assert!(running(&s).is_some() && terminated(&s).is_none() && waiting(&s).is_none());
        s.last_state = Some(ContainerState {
            terminated: Some(Default::default()),
            ..Default::default()
        });
        assert!(last_terminated(&s).is_some());
        assert_eq!(
            find_status(std::slice::from_ref(&s), "a").map(|s| s.name.as_str()),
            Some("a")
        );
        assert!(find_status(&[s], "b").is_none());
    }
}
