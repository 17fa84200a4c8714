//! One pass of the volume reconciler (upstream's desired state of the world
//! populator + reconciler in one):
//!
//! 1. the first pass after a start records the volumes found on disk
//!    (reconstruction: found again, not set up again);
//! 2. every volume of every pod in the pod manager that has volumes and is
//!    not being deleted is set up, unless it is already (API data volumes —
//!    configMap, secret, downwardAPI, projected — are rewritten every sync
//!    period, so updates reach them); a failure is a `FailedMount` event and
//!    is retried with backoff (or at once when a pod worker waits);
//! 3. the ConfigMap/Secret watches are narrowed to what those pods reference;
//! 4. pods no longer wanted (removed, deleted, or terminated for good by
//!    their worker: evicted, completed) whose containers and sandboxes are
//!    all stopped have their volumes unmounted and their pod directory
//!    removed — pods unknown after a restart only once every
//!    source has delivered its pods and the PLEG has listed the runtime.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;

use super::objects::ObjectKey;
use super::plugin::Plugin;
use super::refs::pod_references;
use super::setup::{SetupDeps, reconstruct, set_up, tear_down_pod};
use super::store::VolumeStore;
use crate::events::EventRecorder;
use crate::messages::event::EventType;
use crate::pleg::PodCache;
use crate::pod_manager::{PodManager, format_pod};

/// Pods set up concurrently.
const PARALLEL_PODS: usize = 4;

/// What the reconciler reads and writes (all shared, none owned by the actor).
#[derive(Clone, Debug)]
pub struct ReconcileDeps {
    /// How volumes are set up.
    pub setup: SetupDeps,
    /// The actual state.
    pub store: VolumeStore,
    /// The desired pods.
    pub pods: PodManager,
    /// What runs (a pod's volumes stay while anything of it runs).
    pub cache: PodCache,
    /// Where `FailedMount` goes.
    pub events: EventRecorder,
    /// API data volumes are rewritten this often.
    pub resync: Duration,
    /// Worker states: pods terminated for good lose their volumes.
    pub terminated: Option<crate::pod_workers::PodSyncStatuses>,
    /// The pod generation whose references were last handed to the object
    /// managers (`u64::MAX`: never).
    pub refs_generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The pods with volumes not being deleted, as of a pod generation
    /// ([`WithVolumes`]).
    pub with_volumes: WithVolumes,
}

/// The pods of the pod manager that declare volumes and are not being
/// deleted, kept with the pod generation they were picked at: a pass picks
/// them again only when the pods changed (at 10k pods without volumes the
/// walk over every pod each second was a quarter of an idle node's CPU).
#[derive(Clone, Debug, Default)]
pub struct WithVolumes(Arc<std::sync::Mutex<Option<Picked>>>);

/// A pod generation and the pods picked at it.
type Picked = (u64, Vec<Arc<Pod>>);

impl WithVolumes {
    /// The pods of `pods` with volumes and no deletion timestamp.
    pub fn of(&self, pods: &PodManager) -> Vec<Arc<Pod>> {
        let generation = pods.generation();
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match kept.as_ref() {
            Some((seen, list)) if *seen == generation => list.clone(),
            _ => {
                let list = pods.pods_where(|p| has_volumes(p) && p.metadata.deletion_timestamp.is_none());
                *kept = Some((generation, list.clone()));
                list
            }
        }
    }
}

/// Whether `pod` declares any volume.
fn has_volumes(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .is_some_and(|s| s.volumes.as_ref().is_some_and(|v| !v.is_empty()))
}

/// Sets up whatever of `pod`'s volumes is due.
async fn sync_pod_volumes(deps: &ReconcileDeps, pod: Arc<Pod>) {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let retry_now = deps.store.take_retry(&uid);
    let state = deps.store.pod(&uid).unwrap_or_default();
    let now = Instant::now();
    for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let name = &volume.name;
        let mounted = state.mounted.contains_key(name);
        let fresh = state
            .synced
            .get(name)
            .is_some_and(|t| now.saturating_duration_since(*t) < deps.resync);
        if mounted && (!Plugin::of(volume).is_api_data() || fresh) {
            continue;
        }
        if let Some(f) = state.failures.get(name)
            && f.retry_at > now
            && !retry_now
        {
            continue;
        }
        match set_up(&deps.setup, &pod, volume).await {
            Ok(v) => deps.store.mounted(&uid, name, v),
            Err(e) => {
                tracing::warn!(pod = %format_pod(&pod), volume = %name, error = %e, "MountVolume.SetUp failed");
                deps.events.pod_event(
                    &pod,
                    None,
                    EventType::Warning,
                    "FailedMount",
                    format!("MountVolume.SetUp failed for volume {name:?} : {e}"),
                );
                deps.store.failed(&uid, name, e);
            }
        }
    }
}

/// One pass (see the module docs).
pub async fn reconcile_once(deps: &ReconcileDeps) {
    if !deps.store.reconstructed() {
        let found = reconstruct(&deps.setup.root_dir).await;
        if !found.is_empty() {
            tracing::info!(entries = found.len(), "reconstructed volumes from disk");
        }
        deps.store.reconstruct(found);
    }

    let terminated = |p: &Pod| {
        deps.terminated.as_ref().is_some_and(|s| {
            s.state(&crate::pod_manager::pod_uid(p)) == Some(crate::messages::pod_work::WorkerState::Terminated)
        })
    };
    // Only pods with volumes have anything to set up or tear down (a pod's
    // volumes never change); at 10k pods without volumes the pass was a
    // tenth of an idle node's CPU when it looked at every pod every second.
    let mut desired = deps.with_volumes.of(&deps.pods);
    desired.retain(|p| !terminated(p));
    futures::stream::iter(desired.iter().cloned())
        .for_each_concurrent(PARALLEL_PODS, |pod| sync_pod_volumes(deps, pod))
        .await;

    // The objects the pods reference change only with the pods.
    let generation = deps.pods.generation();
    if deps
        .refs_generation
        .swap(generation, std::sync::atomic::Ordering::AcqRel)
        != generation
    {
        let (mut cms, mut secrets) = (BTreeSet::<ObjectKey>::new(), BTreeSet::<ObjectKey>::new());
        for p in &deps.pods.pods() {
            let r = pod_references(&p.pod);
            cms.extend(r.config_maps);
            secrets.extend(r.secrets);
        }
        deps.setup.objects.retain(&cms, &secrets);
    }

    let wanted: BTreeSet<String> = desired.iter().filter_map(|p| p.metadata.uid.clone()).collect();
    for uid in deps.store.uids() {
        if wanted.contains(&uid) {
            continue;
        }
        let known = deps.pods.contains(&uid.as_str().into());
        if (!known && !deps.store.sources_ready()) || deps.cache.could_have_running_containers(&uid.as_str().into()) {
            continue;
        }
        match tear_down_pod(&deps.setup.root_dir, &uid).await {
            Ok(()) => {
                tracing::info!(pod_uid = %uid, "volumes of pod torn down");
                deps.store.remove(&uid);
                deps.setup.tokens.forget_pod(&uid);
            }
            Err(e) => tracing::warn!(pod_uid = %uid, error = %e, "tearing down pod volumes failed; retrying"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::pod_update::PodSource;

    fn pod(uid: &str, volume: bool) -> Arc<Pod> {
        let yaml = if volume {
            format!(
                "metadata: {{name: {uid}, uid: {uid}}}\nspec:\n  containers: [{{name: c, image: x}}]\n  volumes: [{{name: v, emptyDir: {{}}}}]\n"
            )
        } else {
            format!("metadata: {{name: {uid}, uid: {uid}}}\nspec:\n  containers: [{{name: c, image: x}}]\n")
        };
        Arc::new(serde_yaml_ng::from_str(&yaml).unwrap())
    }

    fn names(pods: &[Arc<Pod>]) -> Vec<String> {
        let mut v: Vec<String> = pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
        v.sort();
        v
    }

    #[test]
    fn pods_with_volumes_are_picked_again_only_when_the_pods_changed() {
        let pods = PodManager::new();
        pods.upsert(pod("a", true), PodSource::File);
        pods.upsert(pod("b", false), PodSource::File);
        let with = WithVolumes::default();
        let first = with.of(&pods);
        assert_eq!(names(&first), ["a"]);
        assert!(
            Arc::ptr_eq(&with.of(&pods)[0], &first[0]),
            "unchanged pods: the kept list"
        );
        pods.upsert(pod("c", true), PodSource::File);
        assert_eq!(names(&with.of(&pods)), ["a", "c"], "an added pod");
        let mut deleting = Pod::clone(&pod("a", true));
        deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        pods.upsert(Arc::new(deleting), PodSource::File);
        assert_eq!(names(&with.of(&pods)), ["c"], "a pod being deleted");
        pods.remove(&"c".into());
        assert!(with.of(&pods).is_empty(), "a removed pod");
    }
}
