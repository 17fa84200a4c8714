//! [`MirrorPods`]: the mirror pods the API server holds for this node, by
//! `namespace/name` (upstream `podManager`'s mirror maps). Written by the API
//! source, read by the mirror-pod manager and the status syncer. Mirror pods
//! are never run: the static pod they mirror is.

use std::sync::Arc;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::Pod;

use crate::config::annotations::CONFIG_MIRROR;

/// Whether `pod` is a mirror pod (has `kubernetes.io/config.mirror`).
///
/// ```
/// use actlet::cluster::is_mirror_pod;
/// use k8s_openapi::api::core::v1::Pod;
/// let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
///     "name": "web-node-a", "namespace": "default", "uid": "m1",
///     "annotations": {"kubernetes.io/config.mirror": "abc"}
/// }})).unwrap();
/// assert!(is_mirror_pod(&mirror));
/// assert!(!is_mirror_pod(&Pod::default()));
/// ```
pub fn is_mirror_pod(pod: &Pod) -> bool {
    pod.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CONFIG_MIRROR))
}

/// `namespace/name` of a pod.
///
/// ```
/// use actlet::cluster::mirror_index::full_name;
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web", "namespace": "prod"}
/// })).unwrap();
/// assert_eq!(full_name(&pod), "prod/web");
/// ```
pub fn full_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Mirror pods by full name. Cheap to clone; clones share state.
///
/// ```
/// use std::sync::Arc;
/// use actlet::cluster::MirrorPods;
/// # use k8s_openapi::api::core::v1::Pod;
/// # let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
/// #     "name": "web-node-a", "namespace": "default", "uid": "m1",
/// #     "annotations": {"kubernetes.io/config.mirror": "abc"}
/// # }})).unwrap();
/// let index = MirrorPods::new();
/// let reader = index.clone(); // shares the same pods
/// index.upsert(Arc::new(mirror));
/// assert_eq!(reader.get("default/web-node-a").unwrap().metadata.uid.as_deref(), Some("m1"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct MirrorPods {
    pods: Arc<DashMap<String, Arc<Pod>>>,
}

impl MirrorPods {
    /// An empty index.
    ///
    /// ```
    /// let index = actlet::cluster::MirrorPods::new();
    /// assert!(index.all().is_empty());
    /// assert!(index.get("default/web-node-a").is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the whole index (after a list).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use actlet::cluster::MirrorPods;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
    /// #     "name": "web-node-a", "namespace": "default", "uid": "m1",
    /// #     "annotations": {"kubernetes.io/config.mirror": "abc"}
    /// # }})).unwrap();
    /// let index = MirrorPods::new();
    /// index.replace_all([Arc::new(mirror)]); // a list: exactly these
    /// assert_eq!(index.all().len(), 1);
    /// index.replace_all([]); // a later list without it forgets it
    /// assert!(index.all().is_empty());
    /// ```
    pub fn replace_all(&self, pods: impl IntoIterator<Item = Arc<Pod>>) {
        let fresh: std::collections::HashMap<String, Arc<Pod>> = pods.into_iter().map(|p| (full_name(&p), p)).collect();
        self.pods.retain(|k, _| fresh.contains_key(k));
        for (k, v) in fresh {
            self.pods.insert(k, v);
        }
    }

    /// Adds or replaces one mirror pod.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use actlet::cluster::MirrorPods;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
    /// #     "name": "web-node-a", "namespace": "default", "uid": "m1",
    /// #     "annotations": {"kubernetes.io/config.mirror": "abc"}
    /// # }})).unwrap();
    /// let index = MirrorPods::new();
    /// index.upsert(Arc::new(mirror.clone()));
    /// let mut newer = mirror;
    /// newer.metadata.uid = Some("m2".into()); // recreated with a new UID
    /// index.upsert(Arc::new(newer));
    /// assert_eq!(index.get("default/web-node-a").unwrap().metadata.uid.as_deref(), Some("m2"));
    /// ```
    pub fn upsert(&self, pod: Arc<Pod>) {
        self.pods.insert(full_name(&pod), pod);
    }

    /// Forgets the mirror pod `full_name` if it still has `uid`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use actlet::cluster::MirrorPods;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
    /// #     "name": "web-node-a", "namespace": "default", "uid": "m1",
    /// #     "annotations": {"kubernetes.io/config.mirror": "abc"}
    /// # }})).unwrap();
    /// let index = MirrorPods::new();
    /// index.upsert(Arc::new(mirror));
    /// index.remove("default/web-node-a", Some("old-uid")); // a stale delete: kept
    /// assert!(index.get("default/web-node-a").is_some());
    /// index.remove("default/web-node-a", Some("m1"));
    /// assert!(index.get("default/web-node-a").is_none());
    /// ```
    pub fn remove(&self, full_name: &str, uid: Option<&str>) {
        self.pods
            .remove_if(full_name, |_, p| uid.is_none() || p.metadata.uid.as_deref() == uid);
    }

    /// The mirror pod named `full_name` (`namespace/name`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use actlet::cluster::MirrorPods;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
    /// #     "name": "web-node-a", "namespace": "default", "uid": "m1",
    /// #     "annotations": {"kubernetes.io/config.mirror": "abc"}
    /// # }})).unwrap();
    /// let index = MirrorPods::new();
    /// index.upsert(Arc::new(mirror));
    /// let pod = index.get("default/web-node-a").unwrap();
    /// assert_eq!(pod.metadata.name.as_deref(), Some("web-node-a"));
    /// assert!(index.get("default/other").is_none());
    /// ```
    pub fn get(&self, full_name: &str) -> Option<Arc<Pod>> {
        self.pods.get(full_name).map(|p| p.clone())
    }

    /// Every mirror pod.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use actlet::cluster::MirrorPods;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let mirror: Pod = serde_json::from_value(serde_json::json!({"metadata": {
    /// #     "name": "web-node-a", "namespace": "default", "uid": "m1",
    /// #     "annotations": {"kubernetes.io/config.mirror": "abc"}
    /// # }})).unwrap();
    /// let index = MirrorPods::new();
    /// index.upsert(Arc::new(mirror));
    /// let names: Vec<_> = index.all().iter().map(|p| actlet::cluster::mirror_index::full_name(p)).collect();
    /// assert_eq!(names, ["default/web-node-a"]);
    /// ```
    pub fn all(&self) -> Vec<Arc<Pod>> {
        self.pods.iter().map(|e| e.value().clone()).collect()
    }
}
