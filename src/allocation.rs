//! In-place resize admission (upstream `pkg/kubelet/allocation`): what the
//! node has allocated to each pod, and whether a resize asked through the
//! `resize` subresource may be allocated now.
//!
//! - A resize that cannot fit the node at all is `Infeasible`
//!   ("Node didn't have enough capacity: …"); one that does not fit beside
//!   the other pods now is `Deferred` (admission's message). Either way the
//!   pod keeps running with its allocated resources, its status says
//!   `PodResizePending` with that reason and message, and a Warning
//!   `ResizeInfeasible`/`ResizeDeferred` event is recorded; deferred (and
//!   infeasible) resizes are retried on housekeeping and when pods go.
//! - [`Allocations`] holds the pods whose resize is pending, with the
//!   allocated copy; pod workers run such a pod with its allocated
//!   resources ([`with_allocation`]). It lives outside the actors (the sync
//!   loop and the pod workers share it), so a restart of either keeps it.
//!
//! Pending resizes are checkpointed to `<root-dir>/allocated_pods_state`
//! (upstream's file name; JSON) on every change and read back at start, so a
//! pod whose resize was never allocated is admitted again after actlet
//! restarts with what it was allocated, not with what its spec asks (which
//! might not fit, and would reject a running pod).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::admission::{NodeAllocatable, Usage, admit_with, pod_request};
use crate::messages::PodUid;

/// Upstream `PodReasonInfeasible`.
pub const INFEASIBLE: &str = "Infeasible";
/// Upstream `PodReasonDeferred`.
pub const DEFERRED: &str = "Deferred";

/// Upstream's checkpoint file name, under the root directory.
pub const CHECKPOINT: &str = "allocated_pods_state";

/// A resize the node has not allocated.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingResize {
    /// The pod as allocated (its resources are what it runs with).
    pub allocated: Arc<Pod>,
    /// `Infeasible` or `Deferred`.
    pub reason: String,
    /// Why.
    pub message: String,
}

/// Pods with a pending resize, shared by the sync loop (writes) and the pod
/// workers (read). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Allocations {
    map: Arc<Mutex<HashMap<PodUid, PendingResize>>>,
    /// Where the map is checkpointed (`None`: memory only), and the lock
    /// that orders the writes.
    checkpoint: Option<(Arc<PathBuf>, Arc<Mutex<()>>)>,
}

impl Allocations {
    /// Allocations checkpointed to `path`, starting from what it holds (an
    /// unreadable or corrupt file is logged and set aside: nothing pending).
    pub fn load(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let map = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<HashMap<PodUid, PendingResize>>(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "corrupt allocation checkpoint; starting without pending resizes");
                HashMap::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot read the allocation checkpoint");
                HashMap::new()
            }
        };
        if !map.is_empty() {
            tracing::info!(pods = map.len(), "pending resizes restored from the checkpoint");
        }
        Self {
            map: Arc::new(Mutex::new(map)),
            checkpoint: Some((Arc::new(path), Arc::default())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PodUid, PendingResize>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the current map (off the caller's thread when in a runtime;
    /// each write takes the map as it is then, so the last one wins).
    fn save(&self) {
        let Some((path, order)) = self.checkpoint.clone() else {
            return;
        };
        let map = self.map.clone();
        let write = move || {
            let _ordered = order.lock().unwrap_or_else(|e| e.into_inner());
            let json = {
                let m = map.lock().unwrap_or_else(|e| e.into_inner());
                serde_json::to_vec(&*m)
            };
            if let Err(e) = json
                .map_err(std::io::Error::other)
                .and_then(|j| write_atomically(&path, &j))
            {
                tracing::warn!(path = %path.display(), error = %e, "cannot write the allocation checkpoint");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(write)),
            Err(_) => write(),
        }
    }

    /// The pending resize of `uid`.
    pub fn pending(&self, uid: &PodUid) -> Option<PendingResize> {
        self.lock().get(uid).cloned()
    }

    /// Pods with a pending resize.
    pub fn pending_uids(&self) -> Vec<PodUid> {
        self.lock().keys().cloned().collect()
    }

    /// Records a pending resize; whether its reason or message changed.
    pub fn set(&self, uid: PodUid, pending: PendingResize) -> bool {
        let mut map = self.lock();
        let changed = map
            .get(&uid)
            .is_none_or(|p| p.reason != pending.reason || p.message != pending.message);
        map.insert(uid, pending);
        drop(map);
        if changed {
            self.save();
        }
        changed
    }

    /// Forgets `uid`'s pending resize (allocated, or the pod is gone);
    /// whether there was one.
    pub fn clear(&self, uid: &PodUid) -> bool {
        let had = self.lock().remove(uid).is_some();
        if had {
            self.save();
        }
        had
    }

    /// `pod` as a pod worker runs it: with the allocated resources while a
    /// resize is pending.
    pub fn apply(&self, pod: &Arc<Pod>) -> Arc<Pod> {
        let uid = PodUid::new(pod.metadata.uid.clone().unwrap_or_default());
        match self.pending(&uid) {
            Some(p) => with_allocation(pod, &p.allocated),
            None => pod.clone(),
        }
    }
}

/// `bytes` to `path` through a temporary file and a rename.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
}

/// Whether any container of `a` and `b` (by name) asks for other resources.
pub fn resources_differ(a: &Pod, b: &Pod) -> bool {
    let of = |p: &Pod| -> HashMap<String, _> { containers(p).map(|c| (c.name.clone(), c.resources.clone())).collect() };
    of(a) != of(b)
        || a.spec.as_ref().and_then(|s| s.resources.as_ref()) != b.spec.as_ref().and_then(|s| s.resources.as_ref())
}

/// Upstream `updatePodFromAllocation`: `pod` with each container's resources
/// (and the pod-level ones) as `allocated` has them; `pod` itself when they
/// already match.
pub fn with_allocation(pod: &Arc<Pod>, allocated: &Pod) -> Arc<Pod> {
    if !resources_differ(pod, allocated) {
        return pod.clone();
    }
    let alloc: HashMap<&str, _> = containers(allocated).map(|c| (c.name.as_str(), &c.resources)).collect();
    let mut out = (**pod).clone();
    if let Some(spec) = out.spec.as_mut() {
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            if let Some(r) = alloc.get(c.name.as_str()) {
                c.resources = (*r).clone();
            }
        }
        spec.resources = allocated.spec.as_ref().and_then(|s| s.resources.clone());
    }
    Arc::new(out)
}

/// Whether `pod`, resized, may be allocated beside the other pods' `usage`
/// (which must not count `pod`): `Err((reason, message))` with upstream's
/// `Infeasible` (more than the node's allocatable cpu or memory; memory is
/// named first) or `Deferred` (admission's message).
pub fn resize_verdict(pod: &Pod, others: &Usage, node: &NodeAllocatable) -> Result<(), (String, String)> {
    let (cpu, memory) = (pod_request(pod, "cpu"), pod_request(pod, "memory"));
    if memory > node.memory_bytes {
        return Err((
            INFEASIBLE.into(),
            format!(
                "Node didn't have enough capacity: memory, requested: {memory}, capacity: {}",
                node.memory_bytes
            ),
        ));
    }
    if cpu > node.cpu_milli {
        return Err((
            INFEASIBLE.into(),
            format!(
                "Node didn't have enough capacity: cpu, requested: {cpu}, capacity: {}",
                node.cpu_milli
            ),
        ));
    }
    admit_with(pod, others, node).map_err(|r| (DEFERRED.into(), r.event_message().to_string()))
}

/// Upstream's resize event messages: `<prefix>: ` and the desired resources,
/// the generation (and the error) as JSON, e.g. `Pod resize Deferred: {…}`.
pub fn resize_event_message(prefix: &str, pod: &Pod, error: Option<&str>) -> String {
    let containers: Vec<serde_json::Value> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| serde_json::json!({"name": c.name, "resources": c.resources}))
        .collect();
    let mut summary = serde_json::json!({
        "containers": containers,
        "generation": pod.metadata.generation.unwrap_or_default(),
    });
    if let Some(e) = error {
        summary["error"] = serde_json::Value::String(e.to_string());
    }
    format!("{prefix}: {summary}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, cpu: &str, memory: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": uid, "uid": uid, "generation": 2},
                "spec": {"containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}},
                    {"name": "d"}
                ]}
            }))
            .unwrap(),
        )
    }

    fn node() -> NodeAllocatable {
        NodeAllocatable {
            node_name: "n".into(),
            labels: Default::default(),
            taints: vec![],
            cpu_milli: 2000,
            memory_bytes: 4 << 30,
            pods: 110,
            other: Default::default(),
        }
    }

    #[test]
    fn more_than_the_node_is_infeasible_memory_first() {
        let n = node();
        let none = Usage::default();
        let (reason, message) = resize_verdict(&pod("a", "3", "8Gi"), &none, &n).unwrap_err();
        assert_eq!(reason, INFEASIBLE);
        assert_eq!(
            message,
            "Node didn't have enough capacity: memory, requested: 8589934592, capacity: 4294967296"
        );
        let (_, message) = resize_verdict(&pod("a", "3", "1Gi"), &none, &n).unwrap_err();
        assert_eq!(
            message,
            "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"
        );
        assert_eq!(
            resize_verdict(&pod("a", "2", "4Gi"), &none, &n),
            Ok(()),
            "exactly the node fits"
        );
    }

    #[test]
    fn what_does_not_fit_beside_the_others_is_deferred() {
        let n = node();
        let others = Usage::of([pod("b", "1500m", "1Gi").as_ref()]);
        let (reason, message) = resize_verdict(&pod("a", "600m", "1Gi"), &others, &n).unwrap_err();
        assert_eq!(reason, DEFERRED);
        assert_eq!(
            message,
            "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"
        );
        assert_eq!(resize_verdict(&pod("a", "500m", "1Gi"), &others, &n), Ok(()));
    }

    #[test]
    fn a_pending_resize_runs_the_pod_with_its_allocation() {
        let (allocated, desired) = (pod("a", "100m", "64Mi"), pod("a", "3", "64Mi"));
        assert!(resources_differ(&allocated, &desired));
        assert!(!resources_differ(&allocated, &pod("a", "100m", "64Mi")));
        let a = Allocations::default();
        assert!(Arc::ptr_eq(&a.apply(&desired), &desired), "nothing pending: as desired");
        let pending = PendingResize {
            allocated: allocated.clone(),
            reason: INFEASIBLE.into(),
            message: "m".into(),
        };
        assert!(a.set(PodUid::new("a"), pending.clone()));
        assert!(!a.set(PodUid::new("a"), pending), "same verdict: no change to report");
        let run = a.apply(&desired);
        assert!(!resources_differ(&run, &allocated), "the allocated resources");
        assert_eq!(run.metadata.generation, Some(2), "everything else as desired");
        assert_eq!(a.pending_uids(), vec![PodUid::new("a")]);
        assert!(a.clear(&PodUid::new("a")));
        assert!(Arc::ptr_eq(&a.apply(&desired), &desired));
    }

    #[test]
    fn pending_resizes_survive_a_restart_through_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CHECKPOINT);
        let a = Allocations::load(&path);
        assert!(a.pending_uids().is_empty(), "no file: nothing pending");
        let pending = PendingResize {
            allocated: pod("a", "100m", "64Mi"),
            reason: DEFERRED.into(),
            message: "m".into(),
        };
        a.set(PodUid::new("a"), pending.clone());
        a.set(
            PodUid::new("b"),
            PendingResize {
                allocated: pod("b", "1", "1Gi"),
                ..pending.clone()
            },
        );
        a.clear(&PodUid::new("b"));
        let again = Allocations::load(&path);
        assert_eq!(again.pending_uids(), vec![PodUid::new("a")]);
        assert_eq!(again.pending(&PodUid::new("a")), Some(pending));
        std::fs::write(&path, b"{not json").unwrap();
        assert!(
            Allocations::load(&path).pending_uids().is_empty(),
            "a corrupt file is not fatal"
        );
    }

    #[test]
    fn event_messages_carry_the_desired_resources_and_generation() {
        let m = resize_event_message("Pod resize Deferred", &pod("a", "1", "1Gi"), None);
        assert!(
            m.starts_with("Pod resize Deferred: {\"containers\":[{\"name\":\"c\""),
            "{m}"
        );
        assert!(m.contains("\"generation\":2"), "{m}");
        let e = resize_event_message("Pod resize error", &pod("a", "1", "1Gi"), Some("boom"));
        assert!(
            e.ends_with("\"error\":\"boom\"}") || e.contains("\"error\":\"boom\""),
            "{e}"
        );
    }
}
