//! The mirror pod manager's decisions, free of I/O (upstream `syncPod`'s
//! mirror pod block, `deleteOrphanedMirrorPods` and `CreateMirrorPod`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::cluster::mirror_index::full_name;
use crate::config::annotations::{CONFIG_HASH, CONFIG_MIRROR};

/// The hash a static pod's mirror must carry: its `kubernetes.io/config.hash`
/// (upstream `getPodHash`), or its UID, which the hash is when generated.
pub fn static_pod_hash(pod: &Pod) -> String {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_HASH))
        .cloned()
        .or_else(|| pod.metadata.uid.clone())
        .unwrap_or_default()
}

/// The hash a mirror pod carries (`kubernetes.io/config.mirror`).
pub fn mirror_hash(mirror: &Pod) -> Option<&str> {
    mirror
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_MIRROR))
        .map(String::as_str)
}

/// One thing to do on the API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MirrorAction {
    /// Create the mirror of the static pod `full_name`.
    Create {
        /// `namespace/name`.
        full_name: String,
    },
    /// Delete the mirror pod `full_name` with `uid` (grace 0, UID precondition);
    /// with `recreate`, create a fresh one right after.
    Delete {
        /// `namespace/name`.
        full_name: String,
        /// The mirror pod's UID.
        uid: String,
        /// Create the mirror again after the delete (outdated or being deleted).
        recreate: bool,
    },
}

impl MirrorAction {
    /// The `namespace/name` the action is about.
    pub fn full_name(&self) -> &str {
        match self {
            MirrorAction::Create { full_name } | MirrorAction::Delete { full_name, .. } => full_name,
        }
    }
}

/// What to do so that every static pod (`full_name → hash`) has exactly one
/// up-to-date mirror pod: a missing mirror is created unless a creation is
/// `pending` (awaiting the watch); an outdated one (other hash) or one being
/// deleted is deleted and recreated; a mirror pod of no static pod (an
/// orphan) is deleted — unless a pod of its full name may still be running
/// (`terminating`: a static pod being killed), as upstream waits for
/// `IsPodForMirrorPodTerminatingByFullName`. Mirrors whose UID is in `deleted`
/// are already gone.
pub fn plan(
    statics: &BTreeMap<String, String>,
    mirrors: &[Arc<Pod>],
    pending: &HashSet<String>,
    deleted: &HashSet<String>,
    terminating: &HashSet<String>,
) -> Vec<MirrorAction> {
    let mut actions = Vec::new();
    let mut mirrored = HashSet::new();
    for m in mirrors {
        let uid = m.metadata.uid.clone().unwrap_or_default();
        if deleted.contains(&uid) {
            continue;
        }
        let name = full_name(m);
        match statics.get(&name) {
            None if terminating.contains(&name) => {}
            None => actions.push(MirrorAction::Delete {
                full_name: name,
                uid,
                recreate: false,
            }),
            Some(hash) if m.metadata.deletion_timestamp.is_some() || mirror_hash(m) != Some(hash.as_str()) => {
                mirrored.insert(name.clone());
                actions.push(MirrorAction::Delete {
                    full_name: name,
                    uid,
                    recreate: true,
                });
            }
            Some(_) => {
                mirrored.insert(name);
            }
        }
    }
    for name in statics.keys() {
        if !mirrored.contains(name) && !pending.contains(name) {
            actions.push(MirrorAction::Create {
                full_name: name.clone(),
            });
        }
    }
    actions
}

/// The mirror pod of `static_pod` (fixture 43): same name, namespace, labels
/// and spec, the static pod's annotations plus `kubernetes.io/config.mirror`,
/// bound to `node_name` and owned by the Node (`node_uid`); no UID, version or
/// status (the API server assigns them).
pub fn mirror_pod_of(static_pod: &Pod, node_name: &str, node_uid: &str) -> Pod {
    let mut annotations = static_pod.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(CONFIG_MIRROR.into(), static_pod_hash(static_pod));
    let mut spec = static_pod.spec.clone().unwrap_or_default();
    spec.node_name = Some(node_name.into());
    Pod {
        metadata: ObjectMeta {
            name: static_pod.metadata.name.clone(),
            namespace: static_pod.metadata.namespace.clone(),
            labels: static_pod.metadata.labels.clone(),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: node_name.into(),
                uid: node_uid.into(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

#[cfg(test)]
#[path = "logic_tests.rs"]
mod tests;
