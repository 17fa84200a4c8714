//! [`PodStorage`]: the merge of every source's pods (upstream `podStorage`,
//! `merge` and `checkAndUpdatePod` in `pkg/kubelet/config/config.go`).
//!
//! Each snapshot replaces its source's set (upstream `SET`). For each pod of
//! the snapshot, by UID:
//! - not stored before → **ADD**, stamped `kubernetes.io/config.seen = now`
//!   unless the source stamped it when it read the pod (the file, HTTP and
//!   API sources do: then the stored pod is the source's own allocation,
//!   one copy of each pod from the source to the pod workers, #16);
//! - stored, and spec, labels, annotations (but the kubelet's own
//!   `config.source`, `config.mirror`, `config.seen`), deletionTimestamp,
//!   deletionGracePeriodSeconds or ownerReferences differ → **DELETE** if the
//!   new version has a deletionTimestamp, else **UPDATE**. The new version is
//!   stored, keeping the stored `config.*` annotations (so `config.seen`
//!   stays the first-seen time, as upstream); a new version whose local
//!   annotations already equal the stored ones is stored as it came;
//! - stored, only the status differs → **RECONCILE** (stored status replaced,
//!   or the new version stored as it came when its local annotations equal
//!   the stored ones);
//! - otherwise nothing, and the stored version stays.
//!
//! Stored pods missing from the snapshot → **REMOVE**. Every pod gets
//! `kubernetes.io/config.source`. A second pod with an already-seen full name
//! (`namespace/name`) or UID in one snapshot is dropped and reported in
//! [`MergeResult::duplicates`] (upstream `filterInvalidPods`).
//!
//! Deviation from upstream (which patches the stored object field by field):
//! on UPDATE/DELETE the whole new version is stored, so metadata such as
//! `resourceVersion` is current; ownerReferences count as a change.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use crate::config::annotations;
use crate::config::last_good::full_name;
use crate::messages::pod_update::{PodOperation, PodSource, PodUpdate};

/// The changes one snapshot made, by kind; pods are the versions to act on
/// (for removes, the last stored versions).
#[derive(Clone, Debug, Default)]
pub struct MergeResult {
    /// Pods gone from the source.
    pub removes: Vec<Arc<Pod>>,
    /// Pods not seen before.
    pub adds: Vec<Arc<Pod>>,
    /// Pods whose spec or metadata changed.
    pub updates: Vec<Arc<Pod>>,
    /// Pods with a changed deletionTimestamp or grace period (graceful delete).
    pub deletes: Vec<Arc<Pod>>,
    /// Pods whose status alone changed.
    pub reconciles: Vec<Arc<Pod>>,
    /// Pods dropped because their name or UID was already in the snapshot.
    pub duplicates: Vec<Arc<Pod>>,
}

impl MergeResult {
    /// No change at all (duplicates aside).
    pub fn is_empty(&self) -> bool {
        self.removes.is_empty()
            && self.adds.is_empty()
            && self.updates.is_empty()
            && self.deletes.is_empty()
            && self.reconciles.is_empty()
    }

    /// The non-empty batches in upstream's order: REMOVE, ADD, UPDATE, DELETE, RECONCILE.
    pub fn into_updates(self, source: &PodSource) -> Vec<PodUpdate> {
        [
            (PodOperation::Remove, self.removes),
            (PodOperation::Add, self.adds),
            (PodOperation::Update, self.updates),
            (PodOperation::Delete, self.deletes),
            (PodOperation::Reconcile, self.reconciles),
        ]
        .into_iter()
        .filter(|(_, pods)| !pods.is_empty())
        .map(|(op, pods)| PodUpdate {
            op,
            source: source.clone(),
            pods,
        })
        .collect()
    }
}

/// Every source's pods by UID, and which sources have reported.
#[derive(Debug, Default)]
pub struct PodStorage {
    pods: HashMap<PodSource, BTreeMap<String, Stored>>,
    seen: BTreeSet<PodSource>,
}

/// One stored pod, and the pod its source last sent for it.
#[derive(Debug)]
struct Stored {
    /// As the source sent it: when the next snapshot holds this very
    /// allocation (a file source's unchanged manifest) nothing is compared.
    from_source: Arc<Pod>,
    /// As merged (the local annotations set).
    pod: Arc<Pod>,
}

impl PodStorage {
    /// Empty; no source seen.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces `source`'s pods with `pods` and returns the changes (see the
    /// module doc). `now` stamps `kubernetes.io/config.seen` on additions.
    pub fn apply_snapshot(&mut self, source: &PodSource, pods: Vec<Arc<Pod>>, now: Timestamp) -> MergeResult {
        self.seen.insert(source.clone());
        let mut old = self.pods.remove(source).unwrap_or_default();
        let mut new = BTreeMap::new();
        let mut names = HashSet::new();
        let mut result = MergeResult::default();
        for from_source in pods {
            let uid = from_source.metadata.uid.clone().unwrap_or_default();
            if new.contains_key(&uid) || !names.insert(full_name(&from_source)) {
                result.duplicates.push(from_source);
                continue;
            }
            if let Some(kept) = old.remove(&uid) {
                if Arc::ptr_eq(&kept.from_source, &from_source) {
                    new.insert(uid, kept);
                    continue;
                }
                old.insert(uid.clone(), kept);
            }
            let mut pod = Arc::clone(&from_source);
            set_annotation(&mut pod, annotations::CONFIG_SOURCE, source.as_str());
            let stored = match old.remove(&uid).map(|s| s.pod) {
                None => {
                    if annotation(&pod, annotations::CONFIG_SEEN).is_none() {
                        set_annotation(&mut pod, annotations::CONFIG_SEEN, &seen_timestamp(now));
                    }
                    result.adds.push(Arc::clone(&pod));
                    pod
                }
                Some(existing) => match check_and_update(&existing, &pod) {
                    Change::None => existing,
                    Change::Reconcile(pod) => {
                        result.reconciles.push(Arc::clone(&pod));
                        pod
                    }
                    Change::Update(pod) => {
                        result.updates.push(Arc::clone(&pod));
                        pod
                    }
                    Change::Delete(pod) => {
                        result.deletes.push(Arc::clone(&pod));
                        pod
                    }
                },
            };
            new.insert(
                uid,
                Stored {
                    from_source,
                    pod: stored,
                },
            );
        }
        result.removes = old.into_values().map(|s| s.pod).collect();
        self.pods.insert(source.clone(), new);
        result
    }

    /// Sources that have delivered at least one snapshot.
    pub fn seen_sources(&self) -> &BTreeSet<PodSource> {
        &self.seen
    }

    /// Whether every source in `expected` has delivered a snapshot (upstream
    /// `seenSources`); true for none.
    pub fn all_ready<'a>(&self, expected: impl IntoIterator<Item = &'a PodSource>) -> bool {
        expected.into_iter().all(|source| self.seen.contains(source))
    }

    /// The stored pods of `source`, by UID.
    pub fn pods(&self, source: &PodSource) -> impl Iterator<Item = &Arc<Pod>> {
        self.pods
            .get(source)
            .into_iter()
            .flat_map(BTreeMap::values)
            .map(|s| &s.pod)
    }
}

/// Go's `time.RFC3339Nano` in UTC (trailing fractional zeros trimmed), as
/// upstream `kubetypes.NewTimestamp().GetString()` writes `config.seen`.
pub fn seen_timestamp(now: Timestamp) -> String {
    now.to_string()
}

enum Change {
    None,
    Reconcile(Arc<Pod>),
    Update(Arc<Pod>),
    Delete(Arc<Pod>),
}

/// Upstream `checkAndUpdatePod`.
fn check_and_update(existing: &Arc<Pod>, candidate: &Arc<Pod>) -> Change {
    // The source kept the local annotations (the API source carries
    // `config.seen` over): the candidate can be stored as it is.
    let same_local = annotations::LOCAL
        .iter()
        .all(|key| annotation(existing, key) == annotation(candidate, key));
    if !differ_semantically(existing, candidate) {
        if existing.status == candidate.status {
            return Change::None;
        }
        if same_local {
            return Change::Reconcile(Arc::clone(candidate));
        }
        let mut reconciled = Pod::clone(existing);
        reconciled.status = candidate.status.clone();
        return Change::Reconcile(Arc::new(reconciled));
    }
    if same_local {
        return if candidate.metadata.deletion_timestamp.is_some() {
            Change::Delete(Arc::clone(candidate))
        } else {
            Change::Update(Arc::clone(candidate))
        };
    }
    let mut updated = Pod::clone(candidate);
    let merged = updated.metadata.annotations.get_or_insert_with(Default::default);
    for key in annotations::LOCAL {
        match existing.metadata.annotations.as_ref().and_then(|a| a.get(key)) {
            Some(value) => merged.insert(key.to_owned(), value.clone()),
            None => merged.remove(key),
        };
    }
    if updated.metadata.deletion_timestamp.is_some() {
        Change::Delete(Arc::new(updated))
    } else {
        Change::Update(Arc::new(updated))
    }
}

/// Upstream `podsDifferSemantically`, plus ownerReferences. Unset and empty
/// maps/lists are equal.
fn differ_semantically(a: &Pod, b: &Pod) -> bool {
    let empty = BTreeMap::new();
    let (meta_a, meta_b) = (&a.metadata, &b.metadata);
    a.spec != b.spec
        || meta_a.labels.as_ref().unwrap_or(&empty) != meta_b.labels.as_ref().unwrap_or(&empty)
        || meta_a.deletion_timestamp != meta_b.deletion_timestamp
        || meta_a.deletion_grace_period_seconds != meta_b.deletion_grace_period_seconds
        || meta_a.owner_references.as_deref().unwrap_or_default()
            != meta_b.owner_references.as_deref().unwrap_or_default()
        || !annotations_equal(meta_a.annotations.as_ref(), meta_b.annotations.as_ref())
}

/// Upstream `isAnnotationMapEqual`: equal but for the local annotations.
fn annotations_equal(a: Option<&BTreeMap<String, String>>, b: Option<&BTreeMap<String, String>>) -> bool {
    fn significant(map: Option<&BTreeMap<String, String>>) -> impl Iterator<Item = (&String, &String)> {
        map.into_iter().flatten().filter(|(key, _)| !annotations::is_local(key))
    }
    significant(a).eq(significant(b))
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

/// Sets an annotation, cloning the pod only if the value changes.
fn set_annotation(pod: &mut Arc<Pod>, key: &str, value: &str) {
    if annotation(pod, key) != Some(value) {
        let annotations = Arc::make_mut(pod)
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(key.to_owned(), value.to_owned());
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
