//! [`MirrorPods`]: the mirror pods the API server holds for this node, by
//! `namespace/name` (upstream `podManager`'s mirror maps). Written by the API
//! source, read by the mirror-pod manager and the status syncer. Mirror pods
//! are never run: the static pod they mirror is.

use std::sync::Arc;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::Pod;

use crate::config::annotations::CONFIG_MIRROR;

/// Whether `pod` is a mirror pod (has `kubernetes.io/config.mirror`).
pub fn is_mirror_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CONFIG_MIRROR))
}

/// `namespace/name` of a pod.
pub fn full_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Mirror pods by full name. Cheap to clone; clones share state.
#[derive(Clone, Debug, Default)]
pub struct MirrorPods {
    pods: Arc<DashMap<String, Arc<Pod>>>,
}

impl MirrorPods {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the whole index (after a list).
    pub fn replace_all(&self, pods: impl IntoIterator<Item = Arc<Pod>>) {
        let fresh: std::collections::HashMap<String, Arc<Pod>> = pods.into_iter().map(|p| (full_name(&p), p)).collect();
        self.pods.retain(|k, _| fresh.contains_key(k));
        for (k, v) in fresh {
            self.pods.insert(k, v);
        }
    }

    /// Adds or replaces one mirror pod.
    pub fn upsert(&self, pod: Arc<Pod>) {
        self.pods.insert(full_name(&pod), pod);
    }

    /// Forgets the mirror pod `full_name` if it still has `uid`.
    pub fn remove(&self, full_name: &str, uid: Option<&str>) {
        self.pods
            .remove_if(full_name, |_, p| uid.is_none() || p.metadata.uid.as_deref() == uid);
    }

    /// The mirror pod named `full_name` (`namespace/name`).
    pub fn get(&self, full_name: &str) -> Option<Arc<Pod>> {
        self.pods.get(full_name).map(|p| p.clone())
    }

    /// Every mirror pod.
    pub fn all(&self) -> Vec<Arc<Pod>> {
        self.pods.iter().map(|e| e.value().clone()).collect()
    }
}
