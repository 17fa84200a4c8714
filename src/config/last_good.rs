//! One full read of a static source → a [`SourceSnapshot`], keeping the last
//! good pods of manifests that became invalid.
//!
//! # Guarantees
//! - A manifest (a file, or the HTTP body) is all or nothing: its pods are
//!   those of its last good read while it fails to read, parse or validate,
//!   and it is reported in `errors` meanwhile. The merge sees those pods
//!   unchanged, so nothing is removed or restarted because a manifest broke.
//! - A manifest that failed from its first read contributes no pods.
//! - A manifest that is gone (file deleted) is forgotten: its pods go away.
//! - Within one snapshot a pod full name (`namespace/name`) appears once:
//!   the first manifest in read order wins, later ones are reported as
//!   duplicates (upstream `filterInvalidPods`, here naming the manifest).
//!
//! The keeping lives in the source, keyed by origin, because only the source
//! knows which manifest a pod came from; PodConfig's merge stays upstream's
//! plain "set" semantics.
//!
//! It is state a restart must not lose (a restarted source that forgot the
//! last good pods of a broken manifest would remove them): the source actors
//! keep it in a [`SharedLastGood`] the tree assembly creates once per source
//! and hands to every instance (the rule in [`crate::actors`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Pod;

use crate::config::manifest;
use crate::messages::pod_update::{ManifestError, PodSource, SourceSnapshot};

/// What one read of one manifest gave.
#[derive(Clone, Debug)]
pub struct ManifestRead {
    /// File path or URL.
    pub origin: String,
    /// The defaulted, validated pods, or why the manifest was rejected
    /// (shared: an unchanged file's pods are the same allocation scan after
    /// scan, see [`ScanCache`](crate::config::file_scan::ScanCache)).
    pub result: manifest::Result<Vec<Arc<Pod>>>,
}

/// The last good pods of each manifest of one source.
#[derive(Debug, Default)]
pub struct LastGoodManifests {
    by_origin: HashMap<String, Vec<Arc<Pod>>>,
}

impl LastGoodManifests {
    /// Empty: no manifest read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the snapshot of a full read (manifests in read order) and
    /// remembers the good ones. Manifests missing from `reads` are forgotten.
    pub fn snapshot(&mut self, source: PodSource, reads: Vec<ManifestRead>) -> SourceSnapshot {
        let mut next = HashMap::with_capacity(reads.len());
        let mut pods = Vec::new();
        let mut errors = Vec::new();
        let mut first_origin: HashMap<(String, String), String> = HashMap::new();
        let mut seen_origins = HashSet::new();
        for ManifestRead { origin, result } in reads {
            if !seen_origins.insert(origin.clone()) {
                continue;
            }
            let manifest_pods = match result {
                Ok(read) => read,
                Err(error) => {
                    errors.push(ManifestError::from(&error));
                    match self.by_origin.remove(&origin) {
                        Some(kept) => kept,
                        None => continue,
                    }
                }
            };
            for pod in &manifest_pods {
                let key = full_name(pod);
                match first_origin.get(&key) {
                    Some(first) => errors.push(ManifestError {
                        origin: origin.clone(),
                        reason: format!(
                            "duplicate pod name \"{}/{}\" (already defined by {first}), ignoring",
                            key.0, key.1
                        ),
                    }),
                    None => {
                        first_origin.insert(key, origin.clone());
                        pods.push(Arc::clone(pod));
                    }
                }
            }
            next.insert(origin, manifest_pods);
        }
        self.by_origin = next;
        SourceSnapshot { source, pods, errors }
    }

    /// Forgets every manifest (e.g. the static pod path is gone).
    pub fn clear(&mut self) {
        self.by_origin.clear();
    }
}

/// [`LastGoodManifests`] behind a lock, shared by every instance of one
/// source actor so that a restarted instance keeps what the last one kept.
///
/// ```
/// use std::sync::Arc;
/// use actlet::config::last_good::{ManifestRead, SharedLastGood};
/// use actlet::config::manifest;
/// use actlet::messages::pod_update::PodSource;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web".into());
/// let good = ManifestRead { origin: "web.yaml".into(), result: Ok(vec![Arc::new(pod)]) };
/// let broken = || ManifestRead {
///     origin: "web.yaml".into(),
///     result: Err(manifest::Error::Parse { origin: "web.yaml".into(), reason: "boom".into() }),
/// };
/// let shared = SharedLastGood::default();
/// shared.snapshot(PodSource::File, vec![good]);
/// // What a restarted source instance, handed the same handle, sees:
/// let after_restart = shared.clone();
/// let snapshot = after_restart.snapshot(PodSource::File, vec![broken()]);
/// assert_eq!(snapshot.pods.len(), 1, "the last good pod is kept");
/// assert_eq!(snapshot.errors.len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct SharedLastGood(Arc<Mutex<LastGoodManifests>>);

impl SharedLastGood {
    fn lock(&self) -> MutexGuard<'_, LastGoodManifests> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`LastGoodManifests::snapshot`] on the shared state.
    pub fn snapshot(&self, source: PodSource, reads: Vec<ManifestRead>) -> SourceSnapshot {
        self.lock().snapshot(source, reads)
    }

    /// [`LastGoodManifests::clear`] on the shared state.
    pub fn clear(&self) {
        self.lock().clear();
    }
}

/// `(namespace, name)` of a pod.
pub fn full_name(pod: &Pod) -> (String, String) {
    let meta = &pod.metadata;
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, image: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        pod.metadata.namespace = Some("default".into());
        pod.metadata.uid = Some(format!("{name}-{image}"));
        pod
    }

    fn good(origin: &str, pods: Vec<Pod>) -> ManifestRead {
        ManifestRead {
            origin: origin.into(),
            result: Ok(pods.into_iter().map(Arc::new).collect()),
        }
    }

    fn bad(origin: &str) -> ManifestRead {
        let error = manifest::Error::Parse {
            origin: origin.into(),
            reason: "boom".into(),
        };
        ManifestRead {
            origin: origin.into(),
            result: Err(error),
        }
    }

    fn uids(snapshot: &SourceSnapshot) -> Vec<&str> {
        snapshot
            .pods
            .iter()
            .map(|p| p.metadata.uid.as_deref().unwrap())
            .collect()
    }

    fn error_origins(snapshot: &SourceSnapshot) -> Vec<&str> {
        snapshot.errors.iter().map(|e| e.origin.as_str()).collect()
    }

    #[test]
    fn good_reads_pass_through_in_order() {
        let mut last = LastGoodManifests::new();
        let snap = last.snapshot(
            PodSource::File,
            vec![good("a", vec![pod("a", "1")]), good("b", vec![pod("b", "1")])],
        );
        assert_eq!(snap.source, PodSource::File);
        assert_eq!(uids(&snap), ["a-1", "b-1"]);
        assert!(snap.errors.is_empty());
    }

    #[test]
    fn a_manifest_that_breaks_keeps_its_last_good_pods() {
        let mut last = LastGoodManifests::new();
        let first = last.snapshot(
            PodSource::File,
            vec![good("a", vec![pod("a", "1")]), good("b", vec![pod("b", "1")])],
        );
        let snap = last.snapshot(PodSource::File, vec![bad("a"), good("b", vec![pod("b", "2")])]);
        assert_eq!(uids(&snap), ["a-1", "b-2"]);
        assert!(
            Arc::ptr_eq(&snap.pods[0], &first.pods[0]),
            "the very same last good version"
        );
        assert_eq!(error_origins(&snap), ["a"]);
        assert_eq!(snap.errors[0].reason, "couldn't parse as pod: boom");
        // still broken: still kept; fixed: the new version
        assert_eq!(
            uids(&last.snapshot(PodSource::File, vec![bad("a"), good("b", vec![pod("b", "2")])])),
            ["a-1", "b-2"]
        );
        let fixed = last.snapshot(
            PodSource::File,
            vec![good("a", vec![pod("a", "3")]), good("b", vec![pod("b", "2")])],
        );
        assert_eq!(uids(&fixed), ["a-3", "b-2"]);
        assert!(fixed.errors.is_empty());
    }

    #[test]
    fn a_manifest_bad_from_the_start_contributes_nothing() {
        let mut last = LastGoodManifests::new();
        let snap = last.snapshot(PodSource::Http, vec![bad("u")]);
        assert!(snap.pods.is_empty());
        assert_eq!(error_origins(&snap), ["u"]);
    }

    #[test]
    fn a_deleted_manifest_is_forgotten() {
        let mut last = LastGoodManifests::new();
        last.snapshot(PodSource::File, vec![good("a", vec![pod("a", "1")])]);
        assert!(last.snapshot(PodSource::File, vec![]).pods.is_empty());
        // broken after being gone: nothing to keep
        assert!(last.snapshot(PodSource::File, vec![bad("a")]).pods.is_empty());
        last.snapshot(PodSource::File, vec![good("a", vec![pod("a", "1")])]);
        last.clear();
        assert!(last.snapshot(PodSource::File, vec![bad("a")]).pods.is_empty());
    }

    #[test]
    fn duplicate_names_keep_the_first_manifest() {
        let mut last = LastGoodManifests::new();
        let reads = vec![
            good("a", vec![pod("web", "1")]),
            good("b", vec![pod("web", "2"), pod("db", "1")]),
        ];
        let snap = last.snapshot(PodSource::File, reads);
        assert_eq!(uids(&snap), ["web-1", "db-1"]);
        assert_eq!(error_origins(&snap), ["b"]);
        assert_eq!(
            snap.errors[0].reason,
            "duplicate pod name \"default/web\" (already defined by a), ignoring"
        );
        // a kept (broken) manifest still wins over a later duplicate
        let snap = last.snapshot(PodSource::File, vec![bad("a"), good("b", vec![pod("web", "2")])]);
        assert_eq!(uids(&snap), ["web-1"]);
        assert_eq!(error_origins(&snap), ["a", "b"]);
    }

    #[test]
    fn duplicates_within_one_list_are_reported() {
        let mut last = LastGoodManifests::new();
        let snap = last.snapshot(PodSource::Http, vec![good("u", vec![pod("web", "1"), pod("web", "2")])]);
        assert_eq!(uids(&snap), ["web-1"]);
        assert_eq!(error_origins(&snap), ["u"]);
    }
}
