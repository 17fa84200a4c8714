//! [`ProbeStore`]: the probe results and the probe workers' progress
//! (upstream `results.Manager` ×3 plus the workers' counters), in one shared
//! handle created by the tree assembly.
//!
//! It outlives every probe actor: a probe worker or the prober manager that
//! is restarted after a panic finds the results, the container it was
//! probing and its threshold counters here, so a Ready container stays Ready
//! unless the container itself changed (new container id).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use super::metrics::ProbeMetrics;
use crate::kuberuntime::ProbeView;
use crate::messages::PodUid;
use crate::messages::probe::{ProbeKind, ProbeOutcome};

/// A container id without its `runtime://` prefix.
///
/// ```
/// use actlet::prober::store::bare_id;
/// assert_eq!(bare_id("containerd://abc"), "abc");
/// assert_eq!(bare_id("abc"), "abc");
/// ```
pub fn bare_id(id: &str) -> &str {
    id.split_once("://").map_or(id, |(_, bare)| bare)
}

/// What a probe worker remembers between probes (upstream `worker` fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerProgress {
    /// The container instance probed (bare id).
    pub container_id: Option<String>,
    /// The last raw probe result.
    pub last_result: Option<ProbeOutcome>,
    /// How many times in a row `last_result` came back.
    pub result_run: u32,
    /// Probing paused until a new container instance appears.
    pub on_hold: bool,
}

#[derive(Default, Debug)]
struct PodEntry {
    results: HashMap<(ProbeKind, String), ProbeOutcome>,
    progress: HashMap<(String, ProbeKind), WorkerProgress>,
}

/// The shared probe state; cheap to clone. See the [module docs](self).
///
/// ```
/// use actlet::messages::PodUid;
/// use actlet::messages::probe::{ProbeKind, ProbeOutcome};
/// use actlet::prober::store::ProbeStore;
/// let store = ProbeStore::default();
/// let uid = PodUid::new("u1");
/// assert!(store.set(&uid, ProbeKind::Readiness, "c1", ProbeOutcome::Success), "a change");
/// assert!(!store.set(&uid, ProbeKind::Readiness, "c1", ProbeOutcome::Success), "no change");
/// assert_eq!(store.readiness(&uid).get("c1"), Some(&true));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ProbeStore(Arc<Mutex<HashMap<PodUid, PodEntry>>>, Arc<AtomicBool>, ProbeMetrics);

impl ProbeStore {
    fn lock(&self) -> MutexGuard<'_, HashMap<PodUid, PodEntry>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The probe metrics (`prober_probe_total`, `prober_probe_duration_seconds`).
    pub fn metrics(&self) -> &ProbeMetrics {
        &self.2
    }

    /// Test kit: the prober manager panics at its next reconcile (a crash
    /// test of the probe actors' restart safety).
    #[cfg(feature = "testing")]
    pub fn inject_manager_panic(&self) {
        self.1.store(true, Ordering::SeqCst);
    }

    /// Whether a panic was injected (and clears it).
    pub(crate) fn take_injected_panic(&self) -> bool {
        self.1.swap(false, Ordering::SeqCst)
    }

    /// Sets the result of `kind` for container `id`; true when it changed
    /// (upstream sends an update only then).
    pub fn set(&self, uid: &PodUid, kind: ProbeKind, id: &str, outcome: ProbeOutcome) -> bool {
        let mut pods = self.lock();
        let entry = pods.entry(uid.clone()).or_default();
        entry.results.insert((kind, bare_id(id).to_string()), outcome) != Some(outcome)
    }

    /// The result of `kind` for container `id`, if any.
    pub fn get(&self, uid: &PodUid, kind: ProbeKind, id: &str) -> Option<ProbeOutcome> {
        let pods = self.lock();
        pods.get(uid)?.results.get(&(kind, bare_id(id).to_string())).copied()
    }

    /// Forgets the result of `kind` for container `id`.
    pub fn remove(&self, uid: &PodUid, kind: ProbeKind, id: &str) {
        if let Some(entry) = self.lock().get_mut(uid) {
            entry.results.remove(&(kind, bare_id(id).to_string()));
        }
    }

    /// The saved progress of the worker for (`container`, `kind`).
    pub fn progress(&self, uid: &PodUid, container: &str, kind: ProbeKind) -> WorkerProgress {
        let pods = self.lock();
        pods.get(uid)
            .and_then(|e| e.progress.get(&(container.to_string(), kind)))
            .cloned()
            .unwrap_or_default()
    }

    /// Saves the worker's progress.
    pub fn save_progress(&self, uid: &PodUid, container: &str, kind: ProbeKind, progress: WorkerProgress) {
        let mut pods = self.lock();
        let entry = pods.entry(uid.clone()).or_default();
        entry.progress.insert((container.to_string(), kind), progress);
    }

    /// Forgets a worker for good (it stopped): its progress and the result
    /// of the container it probed (upstream worker cleanup).
    pub fn remove_worker(&self, uid: &PodUid, container: &str, kind: ProbeKind) {
        self.2
            .forget(uid.as_str(), container, crate::prober::worker::kind_name(kind));
        let mut pods = self.lock();
        let Some(entry) = pods.get_mut(uid) else {
            return;
        };
        if let Some(p) = entry.progress.remove(&(container.to_string(), kind))
            && let Some(id) = p.container_id
        {
            entry.results.remove(&(kind, id));
        }
        if entry.progress.is_empty() && entry.results.is_empty() {
            pods.remove(uid);
        }
    }

    /// The pods the store knows anything about.
    pub fn pods(&self) -> Vec<PodUid> {
        self.lock().keys().cloned().collect()
    }

    /// Forgets everything about a pod.
    pub fn remove_pod(&self, uid: &PodUid) {
        self.lock().remove(uid);
    }

    fn map(&self, uid: &PodUid, kind: ProbeKind) -> HashMap<String, bool> {
        let pods = self.lock();
        let Some(entry) = pods.get(uid) else {
            return HashMap::new();
        };
        entry
            .results
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .map(|((_, id), o)| (id.clone(), *o == ProbeOutcome::Success))
            .collect()
    }

    /// Readiness results of the pod by bare container id (`true` = success),
    /// as the status generation reads them.
    pub fn readiness(&self, uid: &PodUid) -> HashMap<String, bool> {
        self.map(uid, ProbeKind::Readiness)
    }

    /// Startup results of the pod by bare container id (`true` = started).
    pub fn started(&self, uid: &PodUid) -> HashMap<String, bool> {
        self.map(uid, ProbeKind::Startup)
    }

    /// The containers of the pod whose liveness or startup probe failed (and
    /// whose startup probe passed), for `computePodActions`.
    pub fn probe_view(&self, uid: &PodUid) -> ProbeView {
        let pods = self.lock();
        let Some(entry) = pods.get(uid) else {
            return ProbeView::new();
        };
        entry
            .results
            .iter()
            .fold(ProbeView::new(), |view, ((kind, id), outcome)| match (kind, outcome) {
                (ProbeKind::Liveness, ProbeOutcome::Failure) => view.with_liveness_failure(id.clone()),
                (ProbeKind::Startup, ProbeOutcome::Failure) => view.with_startup_failure(id.clone()),
                (ProbeKind::Startup, ProbeOutcome::Success) => view.with_startup_success(id.clone()),
                _ => view,
            })
    }

    /// After a kubelet restart (an empty store), takes `ready` and `started`
    /// of running containers from the pod's previous API status, for the
    /// same container instance only: a container that was Ready stays Ready
    /// until its probe says otherwise. Results already known win. Only the
    /// probes `pod` has are seeded: a container without a readiness (or
    /// startup) probe is ready (started) by its state alone, and a pod
    /// without probes gets no entry.
    pub fn seed_from(&self, uid: &PodUid, pod: &Pod, previous: &PodStatus) {
        let spec = pod.spec.as_ref();
        let containers = spec
            .map(|s| s.containers.as_slice())
            .unwrap_or_default()
            .iter()
            .chain(spec.and_then(|s| s.init_containers.as_deref()).unwrap_or_default());
        let probed: Vec<(&str, bool, bool)> = containers
            .filter(|c| c.readiness_probe.is_some() || c.startup_probe.is_some())
            .map(|c| (c.name.as_str(), c.readiness_probe.is_some(), c.startup_probe.is_some()))
            .collect();
        if probed.is_empty() {
            return;
        }
        let statuses = previous
            .container_statuses
            .iter()
            .flatten()
            .chain(previous.init_container_statuses.iter().flatten());
        let mut pods = self.lock();
        for s in statuses {
            let Some(&(_, readiness, startup)) = probed.iter().find(|(name, _, _)| *name == s.name) else {
                continue;
            };
            let running = s.state.as_ref().is_some_and(|st| st.running.is_some());
            let Some(id) = s.container_id.as_deref().filter(|id| running && !id.is_empty()) else {
                continue;
            };
            let id = bare_id(id).to_string();
            let seeds = [
                (ProbeKind::Readiness, readiness && s.ready),
                (ProbeKind::Startup, startup && s.started == Some(true)),
            ];
            for (kind, yes) in seeds {
                if !yes {
                    continue;
                }
                let entry = pods.entry(uid.clone()).or_default();
                if !entry.progress.contains_key(&(s.name.clone(), kind)) {
                    entry.results.entry((kind, id.clone())).or_insert(ProbeOutcome::Success);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateRunning, ContainerStatus};

    use super::*;

    fn uid() -> PodUid {
        PodUid::new("u1")
    }

    #[test]
    fn results_are_keyed_by_bare_id_and_kind() {
        let s = ProbeStore::default();
        s.set(&uid(), ProbeKind::Liveness, "containerd://c1", ProbeOutcome::Failure);
        assert_eq!(s.get(&uid(), ProbeKind::Liveness, "c1"), Some(ProbeOutcome::Failure));
        assert_eq!(s.get(&uid(), ProbeKind::Readiness, "c1"), None);
        assert!(s.probe_view(&uid()).liveness_failed("c1"));
        assert!(!s.probe_view(&uid()).startup_failed("c1"));
        s.set(&uid(), ProbeKind::Startup, "c2", ProbeOutcome::Failure);
        assert!(s.probe_view(&uid()).startup_failed("c2"));
        s.remove(&uid(), ProbeKind::Liveness, "c1");
        assert!(!s.probe_view(&uid()).liveness_failed("c1"));
    }

    #[test]
    fn removing_a_worker_drops_its_progress_and_its_container_result() {
        let s = ProbeStore::default();
        let progress = WorkerProgress {
            container_id: Some("c1".into()),
            ..Default::default()
        };
        s.save_progress(&uid(), "app", ProbeKind::Readiness, progress.clone());
        s.set(&uid(), ProbeKind::Readiness, "c1", ProbeOutcome::Success);
        s.set(&uid(), ProbeKind::Liveness, "c1", ProbeOutcome::Success);
        assert_eq!(s.progress(&uid(), "app", ProbeKind::Readiness), progress);
        s.remove_worker(&uid(), "app", ProbeKind::Readiness);
        assert_eq!(
            s.progress(&uid(), "app", ProbeKind::Readiness),
            WorkerProgress::default()
        );
        assert!(s.readiness(&uid()).is_empty());
        assert_eq!(s.get(&uid(), ProbeKind::Liveness, "c1"), Some(ProbeOutcome::Success));
        s.remove_pod(&uid());
        assert_eq!(s.get(&uid(), ProbeKind::Liveness, "c1"), None);
    }

    #[test]
    fn seeds_only_running_ready_containers_without_a_known_worker() {
        let running = |name: &str, id: &str, ready: bool| ContainerStatus {
            name: name.into(),
            container_id: Some(format!("containerd://{id}")),
            ready,
            started: Some(true),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let previous = PodStatus {
            container_statuses: Some(vec![
                running("a", "1", true),
                running("b", "2", false),
                running("plain", "3", true),
            ]),
            ..Default::default()
        };
        let pod: Pod = serde_yaml_ng::from_str(
            "spec:\n  containers:\n  - {name: a, readinessProbe: {exec: {command: [true]}}, startupProbe: {exec: {command: [true]}}}\n  - {name: b, readinessProbe: {exec: {command: [true]}}}\n  - {name: plain}",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let s = ProbeStore::default();
        s.set(&uid(), ProbeKind::Readiness, "2", ProbeOutcome::Failure);
        s.seed_from(&uid(), &pod, &previous);
        assert_eq!(
            s.readiness(&uid()),
            HashMap::from([("1".into(), true), ("2".into(), false)]),
            "no seed for the container without a readiness probe"
        );
        assert_eq!(s.started(&uid()), HashMap::from([("1".into(), true)]));
        // a worker that already knows its container decides alone
        let s = ProbeStore::default();
        s.save_progress(&uid(), "a", ProbeKind::Readiness, WorkerProgress::default());
        s.seed_from(&uid(), &pod, &previous);
        assert_eq!(s.readiness(&uid()).get("1"), None);
    }

    #[test]
    fn a_pod_without_probes_gets_no_entry() {
        let previous = PodStatus {
            container_statuses: Some(vec![ContainerStatus {
                name: "plain".into(),
                container_id: Some("containerd://3".into()),
                ready: true,
                started: Some(true),
                state: Some(ContainerState {
                    running: Some(ContainerStateRunning::default()),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let pod: Pod = serde_yaml_ng::from_str("spec: {containers: [{name: plain}]}").unwrap_or_else(|e| panic!("{e}"));
        let s = ProbeStore::default();
        s.seed_from(&uid(), &pod, &previous);
        assert!(s.pods().is_empty(), "{:?}", s.pods());
    }
}
