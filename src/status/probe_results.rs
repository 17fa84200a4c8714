//! `ready` and `started` of container statuses from the probe results
//! (upstream prober manager `UpdatePodStatus` / `isContainerStarted`).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodStatus};

use super::pod_predicates::{init_containers, is_restartable_init_container, running, spec, terminated};

/// The latest probe results, keyed by container id.
#[derive(Clone, Copy, Debug)]
pub struct ProbeResults<'a> {
    /// Readiness results (`true` = success).
    pub readiness: &'a HashMap<String, bool>,
    /// Startup probe results (`true` = success).
    pub started: &'a HashMap<String, bool>,
}

impl ProbeResults<'_> {
    /// Looks `status`'s container up in `map`, by the full id
    /// (`containerd://abc`) or by the bare runtime id (`abc`).
    fn lookup(map: &HashMap<String, bool>, status: &ContainerStatus) -> Option<bool> {
        let id = status.container_id.as_deref().filter(|id| !id.is_empty())?;
        let bare = id.split_once("://").map_or(id, |(_, bare)| bare);
        map.get(id).or_else(|| map.get(bare)).copied()
    }

    /// Running, and its startup probe (if any) succeeded.
    fn is_started(&self, container: Option<&Container>, status: &ContainerStatus) -> bool {
        if running(status).is_none() {
            return false;
        }
        if let Some(result) = Self::lookup(self.started, status) {
            return result;
        }
        container.is_none_or(|c| c.startup_probe.is_none())
    }

    /// Running, and its readiness probe succeeded or it has none.
    fn is_ready(&self, container: Option<&Container>, status: &ContainerStatus) -> bool {
        if running(status).is_none() {
            return false;
        }
        Self::lookup(self.readiness, status) == Some(true) || container.is_none_or(|c| c.readiness_probe.is_none())
    }

    /// Sets `started` and `ready` of every container and init container status.
    /// A regular init container is ready once it exited 0; a container not
    /// started keeps the `ready` it had.
    pub fn apply(&self, pod: &Pod, status: &mut PodStatus) {
        let spec = spec(pod);
        for s in status.container_statuses.iter_mut().flatten() {
            let container = spec.containers.iter().find(|c| c.name == s.name);
            let started = self.is_started(container, s);
            s.started = Some(started);
            if started {
                s.ready = self.is_ready(container, s);
            }
        }
        for s in status.init_container_statuses.iter_mut().flatten() {
            let container = init_containers(spec).iter().find(|c| c.name == s.name);
            let started = self.is_started(container, s);
            s.started = Some(started);
            if !container.is_some_and(is_restartable_init_container) {
                s.ready = terminated(s).is_some_and(|t| t.exit_code == 0);
            } else if started {
                s.ready = self.is_ready(container, s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, PodSpec, Probe};

    use super::*;

    fn container(name: &str, readiness: bool, startup: bool) -> Container {
        Container {
            name: name.into(),
            readiness_probe: readiness.then(Probe::default),
            startup_probe: startup.then(Probe::default),
            ..Default::default()
        }
    }

    fn running_status(name: &str, id: &str) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            container_id: Some(format!("containerd://{id}")),
            state: Some(ContainerState {
                running: Some(Default::default()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn apply(
        pod: &Pod,
        statuses: Vec<ContainerStatus>,
        ready: &[(&str, bool)],
        started: &[(&str, bool)],
    ) -> Vec<(bool, bool)> {
        let readiness: HashMap<String, bool> = ready.iter().map(|(k, v)| ((*k).into(), *v)).collect();
        let started: HashMap<String, bool> = started.iter().map(|(k, v)| ((*k).into(), *v)).collect();
        let mut status = PodStatus {
            container_statuses: Some(statuses),
            ..Default::default()
        };
        ProbeResults {
            readiness: &readiness,
            started: &started,
        }
        .apply(pod, &mut status);
        status
            .container_statuses
            .unwrap()
            .iter()
            .map(|s| (s.started.unwrap(), s.ready))
            .collect()
    }

    fn pod(containers: Vec<Container>, init: Vec<Container>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers,
                init_containers: Some(init),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn no_probes_running_is_started_and_ready() {
        let p = pod(vec![container("a", false, false)], vec![]);
        assert_eq!(apply(&p, vec![running_status("a", "1")], &[], &[]), vec![(true, true)]);
        let waiting = ContainerStatus {
            name: "a".into(),
            ..Default::default()
        };
        assert_eq!(apply(&p, vec![waiting], &[], &[]), vec![(false, false)]);
    }

    #[test]
    fn readiness_probe_gates_ready() {
        let p = pod(vec![container("a", true, false)], vec![]);
        assert_eq!(apply(&p, vec![running_status("a", "1")], &[], &[]), vec![(true, false)]);
        assert_eq!(
            apply(&p, vec![running_status("a", "1")], &[("1", false)], &[]),
            vec![(true, false)]
        );
        assert_eq!(
            apply(&p, vec![running_status("a", "1")], &[("1", true)], &[]),
            vec![(true, true)]
        );
        assert_eq!(
            apply(&p, vec![running_status("a", "1")], &[("containerd://1", true)], &[]),
            vec![(true, true)]
        );
    }

    #[test]
    fn startup_probe_gates_started_and_ready() {
        let p = pod(vec![container("a", false, true)], vec![]);
        assert_eq!(
            apply(&p, vec![running_status("a", "1")], &[], &[]),
            vec![(false, false)]
        );
        assert_eq!(
            apply(&p, vec![running_status("a", "1")], &[], &[("1", false)]),
            vec![(false, false)]
        );
        assert_eq!(
            apply(&p, vec![running_status("a", "1")], &[], &[("1", true)]),
            vec![(true, true)]
        );
    }

    #[test]
    fn init_containers_ready_when_exited_zero_sidecars_like_containers() {
        let side = Container {
            restart_policy: Some("Always".into()),
            ..container("side", true, false)
        };
        let p = pod(vec![], vec![container("init", false, false), side]);
        let exited = |code| ContainerStatus {
            name: "init".into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: code,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let readiness = HashMap::from([("2".to_string(), true)]);
        let none = HashMap::new();
        for (code, ready) in [(0, true), (1, false)] {
            let mut status = PodStatus {
                init_container_statuses: Some(vec![exited(code), running_status("side", "2")]),
                ..Default::default()
            };
            ProbeResults {
                readiness: &readiness,
                started: &none,
            }
            .apply(&p, &mut status);
            let got: Vec<_> = status
                .init_container_statuses
                .unwrap()
                .iter()
                .map(|s| (s.started.unwrap(), s.ready))
                .collect();
            assert_eq!(got, vec![(false, ready), (true, true)], "exit {code}");
        }
    }
}
