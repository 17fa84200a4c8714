//! [`StatusCache`]: the status manager's statuses, readable by anyone (the
//! HTTP server's `/pods`) without a message round trip.

use std::collections::HashMap;
use std::sync::Arc;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::PodStatus;

use crate::messages::PodUid;

/// One pod's status as the status manager holds it.
///
/// ```
/// # use std::time::Duration;
/// # use actlet::testing::{PodBuilder, TestNode, wait_until};
/// actlet::testing::run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
///     let v = node.kubelet().statuses.get(&"u1".into()).unwrap();
///     assert_eq!((v.pod_namespace.as_str(), v.pod_name.as_str()), ("default", "web"));
///     assert!(v.version >= 2); // Pending, then Running
/// });
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedStatus {
    /// The status (shared: readers clone a pointer).
    pub status: Arc<PodStatus>,
    /// Bumped on every change, starting at 1; the API syncer writes a pod
    /// when its version is newer than the last one written.
    pub version: u64,
    /// The pod's name (empty when only the UID is known).
    pub pod_name: String,
    /// The pod's namespace (empty when only the UID is known).
    pub pod_namespace: String,
}

/// A shared, read-mostly map of pod UID → [`VersionedStatus`]. Cloning shares
/// the map. Only the status manager writes to it.
///
/// ```
/// # use std::time::Duration;
/// # use actlet::testing::{PodBuilder, TestNode};
/// actlet::testing::run_paused(async {
///     let node = TestNode::start();
///     let statuses = node.kubelet().statuses.clone(); // read without asking the StatusManager
///     node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
///     assert_eq!(statuses.get(&"u1".into()).unwrap().status.phase.as_deref(), Some("Running"));
/// });
/// ```
#[derive(Clone, Debug, Default)]
pub struct StatusCache {
    map: Arc<DashMap<PodUid, VersionedStatus>>,
    /// Bumped on every change.
    generation: Arc<std::sync::atomic::AtomicU64>,
}

impl StatusCache {
    /// An empty cache.
    ///
    /// ```
    /// let cache = actlet::status::StatusCache::new();
    /// assert!(cache.is_empty() && cache.get(&"u1".into()).is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The status of `uid`, if known.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode};
    /// actlet::testing::run_paused(async {
    ///     let node = TestNode::start();
    ///     node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    ///     let s = node.kubelet().statuses.get(&"u1".into()).unwrap();
    ///     assert_eq!(s.status.container_statuses.as_ref().map(Vec::len), Some(1));
    /// });
    /// ```
    pub fn get(&self, uid: &PodUid) -> Option<VersionedStatus> {
        self.map.get(uid).map(|e| e.value().clone())
    }

    /// The status of `uid` alone, if known: one pointer copied, where
    /// [`get`](Self::get) also copies the pod's name and namespace (at 10k
    /// pods the readers that poll every pod — the prober manager, the
    /// benchmark — spent a tenth of the main arbiter on those copies).
    ///
    /// ```
    /// let cache = actlet::status::StatusCache::new();
    /// assert!(cache.status(&"u1".into()).is_none());
    /// ```
    pub fn status(&self, uid: &PodUid) -> Option<Arc<PodStatus>> {
        self.map.get(uid).map(|e| e.value().status.clone())
    }

    /// The version of the status of `uid`, if known (see [`VersionedStatus::version`]).
    ///
    /// ```
    /// let cache = actlet::status::StatusCache::new();
    /// assert_eq!(cache.version(&"u1".into()), None);
    /// ```
    pub fn version(&self, uid: &PodUid) -> Option<u64> {
        self.map.get(uid).map(|e| e.value().version)
    }

    /// Every known status, at one moment per entry (not a global snapshot).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode};
    /// actlet::testing::run_paused(async {
    ///     let node = TestNode::start();
    ///     node.set_pods(vec![PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    ///     let all = node.kubelet().statuses.snapshot();
    ///     assert_eq!(all.keys().map(|u| u.as_str()).collect::<Vec<_>>(), ["u1"]);
    /// });
    /// ```
    pub fn snapshot(&self) -> HashMap<PodUid, VersionedStatus> {
        self.map.iter().map(|e| (e.key().clone(), e.value().clone())).collect()
    }

    /// How many pods have a status.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode};
    /// actlet::testing::run_paused(async {
    ///     let node = TestNode::start();
    ///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    ///     assert_eq!(node.kubelet().statuses.len(), 1);
    /// });
    /// ```
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No pod has a status.
    ///
    /// ```
    /// actlet::testing::run_paused(async {
    ///     let node = actlet::testing::TestNode::start();
    ///     assert!(node.kubelet().statuses.is_empty()); // no pods yet
    /// });
    /// ```
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn insert(&self, uid: PodUid, status: VersionedStatus) {
        self.map.insert(uid, status);
        self.generation.fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    pub(crate) fn remove(&self, uid: &PodUid) -> Option<VersionedStatus> {
        let removed = self.map.remove(uid).map(|(_, v)| v);
        self.generation.fetch_add(1, std::sync::atomic::Ordering::Release);
        removed
    }

    /// A number that changes whenever a status is stored or removed.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_map() {
        let cache = StatusCache::new();
        let reader = cache.clone();
        assert!(reader.is_empty());
        let v = VersionedStatus {
            status: Arc::new(PodStatus {
                phase: Some("Running".into()),
                ..Default::default()
            }),
            version: 1,
            pod_name: "p".into(),
            pod_namespace: "ns".into(),
        };
        cache.insert("u1".into(), v.clone());
        assert_eq!(reader.get(&"u1".into()), Some(v.clone()));
        assert_eq!(reader.len(), 1);
        assert_eq!(reader.snapshot().get(&PodUid::from("u1")), Some(&v));
        assert_eq!(cache.remove(&"u1".into()), Some(v));
        assert!(reader.get(&"u1".into()).is_none());
    }

    #[test]
    fn status_and_version_read_the_stored_entry_without_copying_the_status() {
        let cache = StatusCache::new();
        let status = Arc::new(PodStatus {
            phase: Some("Pending".into()),
            ..Default::default()
        });
        let v = |status: &Arc<PodStatus>, version| VersionedStatus {
            status: status.clone(),
            version,
            pod_name: "p".into(),
            pod_namespace: "ns".into(),
        };
        cache.insert("u1".into(), v(&status, 3));
        let read = cache.status(&"u1".into()).expect("stored");
        assert!(Arc::ptr_eq(&read, &status));
        assert_eq!(cache.version(&"u1".into()), Some(3));
        let newer = Arc::new(PodStatus {
            phase: Some("Running".into()),
            ..Default::default()
        });
        cache.insert("u1".into(), v(&newer, 4));
        assert_eq!(
            cache.status(&"u1".into()).and_then(|s| s.phase.clone()).as_deref(),
            Some("Running")
        );
        assert_eq!(cache.version(&"u1".into()), Some(4));
        assert_eq!((cache.status(&"u2".into()), cache.version(&"u2".into())), (None, None));
    }
}
