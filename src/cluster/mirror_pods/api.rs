//! The mirror pod manager's API calls: the Node's UID, create, delete.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::PostParams;
use kube::{Api, Client};

use super::logic::{mirror_hash, mirror_pod_of, static_pod_hash};
use crate::cluster::api_util::{api_code, delete_pod_now};

/// A mirror pod operation failed; retried on the next pass.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The Node (owner of mirror pods) could not be read.
    #[error("GET node {node} (owner of mirror pods): {source}")]
    Node {
        /// The node.
        node: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The Node has no UID.
    #[error("node {node} has no UID")]
    NodeUid {
        /// The node.
        node: String,
    },
    /// Creating the mirror pod failed.
    #[error("POST mirror pod {full_name}: {source}")]
    Create {
        /// `namespace/name`.
        full_name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Deleting a mirror pod failed.
    #[error("DELETE mirror pod {full_name} (uid {uid}, grace 0): {source}")]
    Delete {
        /// `namespace/name`.
        full_name: String,
        /// The UID precondition.
        uid: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The API server did not answer in time (the call is abandoned; both
    /// actions can be repeated safely, so the next sync retries).
    #[error("mirror pod {full_name}: no answer from the API server within {after:?}")]
    Timeout {
        /// `namespace/name`.
        full_name: String,
        /// The deadline.
        after: std::time::Duration,
    },
}

impl MirrorError {
    /// Whether the Node is not registered (yet): mirror pods wait for it.
    pub fn node_missing(&self) -> bool {
        matches!(self, MirrorError::Node { source, .. } if api_code(source) == Some(404))
    }

    /// Whether the cached Node UID may be stale (the owner reference was refused).
    pub fn node_uid_refused(&self) -> bool {
        matches!(self, MirrorError::Create { source, .. } if api_code(source) == Some(403))
    }
}

/// The UID of Node `node`.
pub async fn node_uid(client: Client, node: String) -> Result<String, MirrorError> {
    let api: Api<Node> = Api::all(client);
    let n = api.get(&node).await.map_err(|source| MirrorError::Node {
        node: node.clone(),
        source,
    })?;
    n.metadata
        .uid
        .filter(|u| !u.is_empty())
        .ok_or(MirrorError::NodeUid { node })
}

/// What a create did.
#[derive(Debug)]
pub enum Created {
    /// The mirror pod was created with this UID.
    New(String),
    /// A mirror pod of that name and hash already exists (upstream treats
    /// AlreadyExists with the same hash as success).
    Exists,
}

/// Creates the mirror pod of `static_pod` (fixture 43).
pub async fn create_mirror(
    client: Client,
    static_pod: Arc<Pod>,
    node_name: String,
    node_uid: String,
) -> Result<Created, MirrorError> {
    let mirror = mirror_pod_of(&static_pod, &node_name, &node_uid);
    let namespace = mirror.metadata.namespace.clone().unwrap_or_default();
    let name = mirror.metadata.name.clone().unwrap_or_default();
    let full_name = format!("{namespace}/{name}");
    let api: Api<Pod> = Api::namespaced(client, &namespace);
    match api.create(&PostParams::default(), &mirror).await {
        Ok(p) => {
            let uid = p.metadata.uid.unwrap_or_default();
            tracing::info!(pod = %full_name, %uid, "mirror pod created");
            Ok(Created::New(uid))
        }
        Err(e) if api_code(&e) == Some(409) => {
            let same = match api.get(&name).await {
                Ok(existing) => mirror_hash(&existing) == Some(static_pod_hash(&static_pod).as_str()),
                Err(_) => false,
            };
            if same {
                Ok(Created::Exists)
            } else {
                Err(MirrorError::Create { full_name, source: e })
            }
        }
        Err(source) => Err(MirrorError::Create { full_name, source }),
    }
}

/// Deletes mirror pod `full_name` (`namespace/name`) with grace 0 if it still
/// has `uid`. Already gone (404) or replaced (409) counts as done.
pub async fn delete_mirror(client: Client, full_name: String, uid: String) -> Result<(), MirrorError> {
    let (namespace, name) = full_name.split_once('/').unwrap_or(("", full_name.as_str()));
    let api: Api<Pod> = Api::namespaced(client, namespace);
    match delete_pod_now(&api, name, &uid).await {
        Ok(deleted) => {
            if deleted {
                tracing::info!(pod = %full_name, %uid, "mirror pod deleted");
            }
            Ok(())
        }
        Err(source) => Err(MirrorError::Delete {
            full_name: full_name.clone(),
            uid,
            source,
        }),
    }
}
