//! [`StatusCache`]: the status manager's statuses, readable by anyone (the
//! HTTP server's `/pods`) without a message round trip.

use std::collections::HashMap;
use std::sync::Arc;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::PodStatus;

use crate::messages::PodUid;

/// One pod's status as the status manager holds it.
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
#[derive(Clone, Debug, Default)]
pub struct StatusCache {
    map: Arc<DashMap<PodUid, VersionedStatus>>,
}

impl StatusCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The status of `uid`, if known.
    pub fn get(&self, uid: &PodUid) -> Option<VersionedStatus> {
        self.map.get(uid).map(|e| e.value().clone())
    }

    /// Every known status, at one moment per entry (not a global snapshot).
    pub fn snapshot(&self) -> HashMap<PodUid, VersionedStatus> {
        self.map.iter().map(|e| (e.key().clone(), e.value().clone())).collect()
    }

    /// How many pods have a status.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No pod has a status.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn insert(&self, uid: PodUid, status: VersionedStatus) {
        self.map.insert(uid, status);
    }

    pub(crate) fn remove(&self, uid: &PodUid) -> Option<VersionedStatus> {
        self.map.remove(uid).map(|(_, v)| v)
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
}
