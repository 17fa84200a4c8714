//! The resources a container status reports (in-place resize, GA 1.35):
//! `allocatedResources` — the requests the kubelet accepted (actlet accepts
//! every resize, so the spec's) — and, for a running container,
//! `resources` — the requests and limits it runs with: the spec's once a
//! resize is applied, the previous status's while it is in progress.

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodStatus, ResourceRequirements};

fn spec_resources(c: &Container) -> ResourceRequirements {
    let r = c.resources.clone().unwrap_or_default();
    ResourceRequirements {
        claims: None,
        limits: r.limits.filter(|m| !m.is_empty()),
        requests: r.requests.filter(|m| !m.is_empty()),
    }
}

fn fill(containers: &[Container], in_progress: bool, old: &[ContainerStatus], statuses: &mut [ContainerStatus]) {
    for status in statuses.iter_mut() {
        let Some(c) = containers.iter().find(|c| c.name == status.name) else {
            continue;
        };
        let spec = spec_resources(c);
        status.allocated_resources = spec.requests.clone();
        let running = status.state.as_ref().is_some_and(|s| s.running.is_some());
        let empty = spec.limits.is_none() && spec.requests.is_none();
        status.resources = if !running || empty {
            None
        } else if in_progress {
            old.iter()
                .find(|o| o.name == status.name)
                .and_then(|o| o.resources.clone())
                .or(Some(spec))
        } else {
            Some(spec)
        };
    }
}

/// Sets `allocatedResources` and `resources` of the regular and sidecar
/// container statuses in `s` (`old`: the previous status).
///
/// ```
/// use k8s_openapi::api::core::v1::{Pod, PodStatus};
/// let pod: Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "p"},
///     "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "20m"}, "limits": {"cpu": "30m"}}}]}
/// })).unwrap();
/// let mut s: PodStatus = serde_json::from_value(serde_json::json!({
///     "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]
/// })).unwrap();
/// actlet::status::resources::apply(&pod, false, &PodStatus::default(), &mut s);
/// let c = &s.container_statuses.unwrap()[0];
/// assert_eq!(c.resources.as_ref().unwrap().limits.as_ref().unwrap()["cpu"].0, "30m");
/// assert_eq!(c.allocated_resources.as_ref().unwrap()["cpu"].0, "20m");
/// ```
pub fn apply(pod: &Pod, in_progress: bool, old: &PodStatus, s: &mut PodStatus) {
    let Some(spec) = pod.spec.as_ref() else {
        return;
    };
    if let Some(statuses) = s.container_statuses.as_mut() {
        let old = old.container_statuses.as_deref().unwrap_or_default();
        fill(&spec.containers, in_progress, old, statuses);
    }
    let sidecars: Vec<Container> = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .cloned()
        .collect();
    if let Some(statuses) = s.init_container_statuses.as_mut() {
        let old = old.init_container_statuses.as_deref().unwrap_or_default();
        fill(&sidecars, in_progress, old, statuses);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(cpu: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "35Mi"}}},
                {"name": "w"}
            ]}
        }))
        .unwrap_or_default()
    }

    fn status(state: serde_json::Value, cpu: Option<&str>) -> PodStatus {
        let mut c = json!({"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 0, "state": state});
        if let Some(cpu) = cpu {
            c["resources"] = json!({"requests": {"cpu": cpu, "memory": "35Mi"}});
        }
        let w = json!({"name": "w", "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {}}});
        serde_json::from_value(json!({"containerStatuses": [c, w]})).unwrap_or_default()
    }

    fn cpu_of(s: &PodStatus) -> Option<String> {
        let c = &s.container_statuses.as_ref()?[0];
        Some(c.resources.as_ref()?.requests.as_ref()?["cpu"].0.clone())
    }

    #[test]
    fn running_containers_report_the_spec_once_applied_and_the_old_values_while_resizing() {
        let old = status(json!({"running": {}}), Some("20m"));
        let mut done = status(json!({"running": {}}), None);
        apply(&pod("25m"), false, &old, &mut done);
        assert_eq!(cpu_of(&done).as_deref(), Some("25m"));
        let mut resizing = status(json!({"running": {}}), None);
        apply(&pod("25m"), true, &old, &mut resizing);
        assert_eq!(cpu_of(&resizing).as_deref(), Some("20m"), "still the old values");
        let allocated = resizing
            .container_statuses
            .as_ref()
            .map(|s| s[0].allocated_resources.clone());
        assert_eq!(allocated.flatten().map(|a| a["cpu"].0.clone()).as_deref(), Some("25m"));
    }

    #[test]
    fn waiting_containers_and_those_without_resources_report_none() {
        let mut s = status(json!({"waiting": {}}), None);
        apply(&pod("25m"), false, &PodStatus::default(), &mut s);
        let statuses = s.container_statuses.unwrap_or_default();
        assert!(statuses[0].resources.is_none());
        assert!(statuses[1].resources.is_none() && statuses[1].allocated_resources.is_none());
    }
}
