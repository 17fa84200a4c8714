//! The CRI reads of a relist (pure apart from the runtime calls): the
//! unfiltered lists, the view built from them, the status reads of the pods
//! that changed.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use tokio::time::Instant;

use super::cache::PodCache;
use super::events::{Observed, PlegState, Relist};
use crate::cri::v1;
use crate::cri::{CriResult, SharedRuntime};
use crate::kuberuntime::convert::get_pod_status;
use crate::kuberuntime::labels::{POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL};
use crate::messages::PodUid;

/// How many pods' statuses are read concurrently after one relist.
const INSPECT_CONCURRENCY: usize = 16;

/// Pod UID → (name, namespace), from the CRI labels.
pub(super) type Names = HashMap<PodUid, Arc<(String, String)>>;

/// One relist's result.
pub(super) struct Listed {
    pub(super) relist: Relist,
    pub(super) names: Names,
}

/// Reads each pod's status (concurrently, bounded).
pub(super) async fn read(
    runtime: &SharedRuntime,
    pods: Vec<(PodUid, String, String)>,
) -> Vec<(PodUid, CriResult<crate::kuberuntime::pod_status::RuntimePodStatus>)> {
    futures::stream::iter(pods)
        .map(|(uid, name, ns)| async move {
            let status = get_pod_status(runtime.as_ref(), &uid, &name, &ns).await;
            (uid, status)
        })
        .buffer_unordered(INSPECT_CONCURRENCY)
        .collect()
        .await
}

/// The runtime's sandboxes and containers, unfiltered.
pub(super) async fn list(runtime: &SharedRuntime) -> CriResult<(Vec<v1::PodSandbox>, Vec<v1::Container>)> {
    let sandboxes = runtime
        .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
        .await?
        .items;
    let containers = runtime
        .list_containers(v1::ListContainersRequest { filter: None })
        .await?
        .containers;
    Ok((sandboxes, containers))
}

/// One relist's view of the listed items. Ids are moved out of the
/// responses, and each pod's `PodUid` and names come from `prev` when the
/// last relist saw the pod: per item, one map lookup and no allocation.
pub(super) fn build(prev: &Names, sandboxes: Vec<v1::PodSandbox>, containers: Vec<v1::Container>) -> Listed {
    let mut relist = Relist::with_capacity(sandboxes.len() + containers.len());
    let mut names = Names::with_capacity(prev.len());
    let mut observe = |id: String, labels: &HashMap<String, String>, state: PlegState| {
        let Some(uid) = labels.get(POD_UID_LABEL).filter(|u| !u.is_empty()) else {
            return;
        };
        let pod = if let Some((k, _)) = names.get_key_value(uid.as_str()) {
            k.clone()
        } else if let Some((k, v)) = prev.get_key_value(uid.as_str()) {
            names.insert(k.clone(), v.clone());
            k.clone()
        } else {
            let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
            let pod = PodUid::new(uid.as_str());
            names.insert(pod.clone(), Arc::new((get(POD_NAME_LABEL), get(POD_NAMESPACE_LABEL))));
            pod
        };
        relist.insert(id, Observed { pod, state });
    };
    for s in sandboxes {
        let state = match v1::PodSandboxState::try_from(s.state) {
            Ok(v1::PodSandboxState::SandboxReady) => PlegState::Running,
            _ => PlegState::Exited,
        };
        observe(s.id, &s.labels, state);
    }
    for c in containers {
        let state = match v1::ContainerState::try_from(c.state) {
            Ok(v1::ContainerState::ContainerRunning) => PlegState::Running,
            Ok(v1::ContainerState::ContainerExited) => PlegState::Exited,
            _ => PlegState::Unknown,
        };
        observe(c.id, &c.labels, state);
    }
    Listed { relist, names }
}

/// Reads and caches the status of each pod; returns the pods that failed.
pub(super) async fn inspect(
    runtime: &SharedRuntime,
    cache: &PodCache,
    pods: Vec<(PodUid, String, String)>,
    started: Instant,
) -> Vec<PodUid> {
    futures::stream::iter(pods)
        .map(|(uid, name, ns)| async move {
            // Read after this relist started (a pod worker's read after its
            // step): what a read now would store is older, and not stored.
            if cache.read_after(&uid, started).is_some() {
                return None;
            }
            match get_pod_status(runtime.as_ref(), &uid, &name, &ns).await {
                Ok(s) => {
                    cache.set(uid, Some(Arc::new(s)), None, started);
                    None
                }
                Err(e) => {
                    tracing::warn!(pod_uid = %uid, error = %e, "PLEG: cannot read pod status; will retry");
                    cache.set(uid.clone(), None, Some(e.to_string()), started);
                    Some(uid)
                }
            }
        })
        .buffer_unordered(INSPECT_CONCURRENCY)
        .filter_map(|x| async move { x })
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pleg::events::compute_events;

    fn labels(uid: &str, name: &str) -> HashMap<String, String> {
        HashMap::from([
            (POD_UID_LABEL.to_string(), uid.to_string()),
            (POD_NAME_LABEL.to_string(), name.to_string()),
            (POD_NAMESPACE_LABEL.to_string(), "ns".to_string()),
        ])
    }

    fn sandbox(id: &str, uid: &str, ready: bool) -> v1::PodSandbox {
        let state = if ready {
            v1::PodSandboxState::SandboxReady
        } else {
            v1::PodSandboxState::SandboxNotready
        };
        v1::PodSandbox {
            id: id.into(),
            state: state as i32,
            labels: labels(uid, &format!("pod-{uid}")),
            ..Default::default()
        }
    }

    fn container(id: &str, uid: &str, state: v1::ContainerState) -> v1::Container {
        v1::Container {
            id: id.into(),
            state: state as i32,
            labels: labels(uid, &format!("pod-{uid}")),
            ..Default::default()
        }
    }

    #[test]
    fn build_maps_states_and_reuses_the_last_relists_names() {
        let first = build(
            &Names::new(),
            vec![
                sandbox("s1", "u1", true),
                sandbox("s2", "u2", false),
                sandbox("x", "", true),
            ],
            vec![
                container("c1", "u1", v1::ContainerState::ContainerRunning),
                container("c2", "u2", v1::ContainerState::ContainerExited),
                container("c3", "u2", v1::ContainerState::ContainerCreated),
            ],
        );
        let state = |l: &Listed, id: &str| l.relist.get(id).map(|o| (o.pod.to_string(), o.state));
        assert_eq!(state(&first, "s1"), Some(("u1".into(), PlegState::Running)));
        assert_eq!(state(&first, "s2"), Some(("u2".into(), PlegState::Exited)));
        assert_eq!(state(&first, "c1"), Some(("u1".into(), PlegState::Running)));
        assert_eq!(state(&first, "c2"), Some(("u2".into(), PlegState::Exited)));
        assert_eq!(state(&first, "c3"), Some(("u2".into(), PlegState::Unknown)));
        assert_eq!(state(&first, "x"), None, "items without a pod UID are not a pod's");
        assert_eq!(
            *first.names[&PodUid::from("u1")],
            ("pod-u1".to_string(), "ns".to_string())
        );

        // The next relist shares the names it already had; a gone pod's are dropped.
        let second = build(
            &first.names,
            vec![sandbox("s1", "u1", true), sandbox("s3", "u3", true)],
            vec![],
        );
        let u1 = PodUid::from("u1");
        assert!(Arc::ptr_eq(&first.names[&u1], &second.names[&u1]));
        assert!(!second.names.contains_key("u2"));
        assert_eq!(second.names["u3"].0, "pod-u3");
        let events = compute_events(&first.relist, &second.relist);
        assert!(events.iter().any(|e| e.id == "c1" && e.uid == u1));
        assert!(events.iter().any(|e| e.id == "s3" && e.uid == PodUid::from("u3")));
    }

    #[tokio::test(start_paused = true)]
    async fn inspect_skips_a_pod_read_after_the_relist_started() {
        let mock = crate::cri::mock::MockRuntime::new();
        let runtime: SharedRuntime = Arc::new(mock.clone());
        let cache = PodCache::new();
        let started = Instant::now();
        tokio::time::advance(std::time::Duration::from_millis(1)).await;
        let status = crate::kuberuntime::pod_status::RuntimePodStatus::empty("fresh".into(), "web", "ns");
        cache.set("fresh".into(), Some(Arc::new(status)), None, Instant::now());
        let pods = vec![
            ("fresh".into(), "web".to_string(), "ns".to_string()),
            ("stale".into(), "db".to_string(), "ns".to_string()),
        ];
        let failed = inspect(&runtime, &cache, pods, started).await;
        assert!(failed.is_empty());
        assert_eq!(mock.call_count("ListPodSandbox"), 1, "only the pod not read since");
        assert_eq!(cache.get(&"stale".into()).map(|e| e.modified), Some(started));
    }
}
