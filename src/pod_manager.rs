//! [`PodManager`]: the desired pods (upstream `pod.Manager`), shared read-mostly.
//!
//! The sync loop is the only writer; pod workers (when they restart and must
//! resume), housekeeping and the HTTP servers read it concurrently without
//! going through a mailbox.

use std::sync::Arc;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::Pod;

use crate::messages::PodUid;
use crate::messages::pod_update::PodSource;

/// A desired pod and the source it came from.
///
/// ```
/// use std::sync::Arc;
/// use actlet::messages::pod_update::PodSource;
/// use actlet::pod_manager::PodManager;
/// let pods = PodManager::new();
/// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::File);
/// let desired = pods.get(&"u1".into()).unwrap();
/// assert_eq!((desired.pod.metadata.name.as_deref(), desired.source), (Some("web"), PodSource::File));
/// ```
#[derive(Clone, Debug)]
pub struct DesiredPod {
    /// The pod as the source gave it (defaulted for static pods).
    pub pod: Arc<Pod>,
    /// Its source.
    pub source: PodSource,
}

/// The pods this node should run, by UID. Cheap to clone; clones share state.
///
/// ```
/// use std::sync::Arc;
/// use actlet::messages::pod_update::PodSource;
/// use actlet::pod_manager::PodManager;
/// let writer = PodManager::new();
/// let reader = writer.clone(); // shares the map
/// writer.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::Api);
/// assert!(reader.contains(&"u1".into()));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PodManager {
    pods: Arc<DashMap<PodUid, DesiredPod>>,
    /// Bumped on every change (readers that scan all pods skip unchanged sets).
    generation: Arc<std::sync::atomic::AtomicU64>,
}

/// The UID of a pod (empty when unset).
///
/// ```
/// let pod = actlet::testing::PodBuilder::new("web").uid("u1").build();
/// assert_eq!(actlet::pod_manager::pod_uid(&pod).as_str(), "u1");
/// ```
pub fn pod_uid(pod: &Pod) -> PodUid {
    PodUid::new(pod.metadata.uid.as_deref().unwrap_or_default())
}

/// `name_namespace(uid)` as upstream's `format.Pod` prints it.
///
/// ```
/// let pod = actlet::testing::PodBuilder::new("web").uid("u1").build();
/// assert_eq!(actlet::pod_manager::format_pod(&pod), "web_default(u1)");
/// ```
pub fn format_pod(pod: &Pod) -> String {
    format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.uid.as_deref().unwrap_or_default()
    )
}

impl PodManager {
    /// An empty manager.
    ///
    /// ```
    /// let pods = actlet::pod_manager::PodManager::new();
    /// assert!(pods.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a pod.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// # use actlet::testing::PodBuilder;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// pods.upsert(Arc::new(PodBuilder::new("web").uid("u1").build()), PodSource::File);
    /// pods.upsert(Arc::new(PodBuilder::new("web2").uid("u1").build()), PodSource::File); // same UID: replaced
    /// assert_eq!(pods.len(), 1);
    /// assert_eq!(pods.get(&"u1".into()).unwrap().pod.metadata.name.as_deref(), Some("web2"));
    /// ```
    pub fn upsert(&self, pod: Arc<Pod>, source: PodSource) {
        self.pods.insert(pod_uid(&pod), DesiredPod { pod, source });
        self.generation.fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// A number that changes whenever a pod is added, replaced or removed.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// let g = pods.generation();
    /// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::File);
    /// assert_ne!(pods.generation(), g);
    /// ```
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Removes a pod; returns what was there.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::File);
    /// assert!(pods.remove(&"u1".into()).is_some());
    /// assert!(pods.remove(&"u1".into()).is_none());
    /// ```
    pub fn remove(&self, uid: &PodUid) -> Option<DesiredPod> {
        let removed = self.pods.remove(uid).map(|(_, d)| d);
        if removed.is_some() {
            self.generation.fetch_add(1, std::sync::atomic::Ordering::Release);
        }
        removed
    }

    /// The pod with `uid`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::Http);
    /// assert_eq!(pods.get(&"u1".into()).map(|d| d.source), Some(PodSource::Http));
    /// assert!(pods.get(&"other".into()).is_none());
    /// ```
    pub fn get(&self, uid: &PodUid) -> Option<DesiredPod> {
        self.pods.get(uid).map(|d| d.clone())
    }

    /// Whether `uid` is desired.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::File);
    /// assert!(pods.contains(&"u1".into()) && !pods.contains(&"u2".into()));
    /// ```
    pub fn contains(&self, uid: &PodUid) -> bool {
        self.pods.contains_key(uid)
    }

    /// Every desired pod (a snapshot; order unspecified).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// for (uid, name) in [("u1", "a"), ("u2", "b")] {
    ///     pods.upsert(Arc::new(actlet::testing::PodBuilder::new(name).uid(uid).build()), PodSource::File);
    /// }
    /// let mut names: Vec<_> = pods.pods().iter().filter_map(|d| d.pod.metadata.name.clone()).collect();
    /// names.sort();
    /// assert_eq!(names, ["a", "b"]);
    /// ```
    pub fn pods(&self) -> Vec<DesiredPod> {
        self.pods.iter().map(|e| e.value().clone()).collect()
    }

    /// The desired pods `keep` accepts (a snapshot; order unspecified): a
    /// pass over some of them without copying the rest.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// for (uid, name) in [("u1", "a"), ("u2", "b")] {
    ///     pods.upsert(Arc::new(actlet::testing::PodBuilder::new(name).uid(uid).build()), PodSource::File);
    /// }
    /// let b = pods.pods_where(|p| p.metadata.name.as_deref() == Some("b"));
    /// assert_eq!(b.len(), 1);
    /// ```
    pub fn pods_where(&self, mut keep: impl FnMut(&Pod) -> bool) -> Vec<Arc<Pod>> {
        self.pods
            .iter()
            .filter(|e| keep(&e.value().pod))
            .map(|e| Arc::clone(&e.value().pod))
            .collect()
    }

    /// UIDs of every desired pod.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::File);
    /// assert_eq!(pods.uids(), ["u1".into()]);
    /// ```
    pub fn uids(&self) -> Vec<PodUid> {
        self.pods.iter().map(|e| e.key().clone()).collect()
    }

    /// Number of desired pods.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::messages::pod_update::PodSource;
    /// let pods = actlet::pod_manager::PodManager::new();
    /// pods.upsert(Arc::new(actlet::testing::PodBuilder::new("web").uid("u1").build()), PodSource::File);
    /// assert_eq!(pods.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// True when no pod is desired.
    ///
    /// ```
    /// let pods = actlet::pod_manager::PodManager::new();
    /// assert!(pods.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, name: &str) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        Arc::new(p)
    }

    #[test]
    fn upsert_get_remove() {
        let m = PodManager::new();
        m.upsert(pod("u1", "a"), PodSource::File);
        m.upsert(pod("u1", "a2"), PodSource::File);
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(&"u1".into()).unwrap().pod.metadata.name.as_deref(), Some("a2"));
        assert!(m.remove(&"u1".into()).is_some());
        assert!(m.is_empty());
    }

    #[test]
    fn format_pod_matches_upstream() {
        assert_eq!(format_pod(&pod("u1", "web")), "web_default(u1)");
    }
}
