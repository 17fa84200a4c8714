//! The status syncer's API calls: one pod's status write (GET, merge, PATCH
//! `pods/<name>/status` with the UID check) and the final DELETE.

use std::sync::Arc;

use crate::cluster::api_util::delete_pod_now;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use super::logic::{Target, accepts, differs, status_patch, status_to_send};

/// A status write or final delete failed; retried later.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Reading the pod failed.
    #[error("GET pod {namespace}/{name}: {source}")]
    Get {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Patching its status failed.
    #[error("PATCH pods/{name}/status in {namespace} (uid {uid}): {source}")]
    Patch {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The UID the patch checked.
        uid: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The final delete failed.
    #[error("DELETE pod {namespace}/{name} (uid {uid}, grace 0): {source}")]
    Delete {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The UID precondition.
        uid: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

pub use crate::cluster::api_util::api_code;

/// What a status write found.
#[derive(Debug)]
pub enum WriteOutcome {
    /// The status is on the API object (patched, or already there): the
    /// object as it is now.
    Written(Box<Pod>),
    /// The object is gone (404) or is another pod with the same name.
    Gone,
}

/// Writes `ours` to `target`: GET the object, merge, PATCH only when the
/// result differs from what the API holds.
pub async fn write_status(
    client: Client,
    target: Target,
    ours: Arc<PodStatus>,
    could_run: bool,
    now: Timestamp,
) -> Result<WriteOutcome, SyncError> {
    let (namespace, name) = match &target {
        Target::Pod { namespace, name, .. } | Target::Mirror { namespace, name, .. } => {
            (namespace.clone(), name.clone())
        }
        Target::Nowhere => return Ok(WriteOutcome::Gone),
    };
    let api: Api<Pod> = Api::namespaced(client, &namespace);
    let pod = match api.get(&name).await {
        Ok(p) => p,
        Err(e) if api_code(&e) == Some(404) => return Ok(WriteOutcome::Gone),
        Err(source) => {
            return Err(SyncError::Get {
                namespace,
                name,
                source,
            });
        }
    };
    if !accepts(&target, &pod) {
        tracing::debug!(pod = %format!("{namespace}/{name}"), "pod was deleted and recreated: its status is not ours");
        return Ok(WriteOutcome::Gone);
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let new = status_to_send(&pod, &ours, could_run, now);
    if !differs(pod.status.as_ref(), &new) {
        tracing::trace!(pod = %format!("{namespace}/{name}"), "status unchanged on the API");
        return Ok(WriteOutcome::Written(Box::new(pod)));
    }
    let patch = Patch::Strategic(status_patch(&uid, pod.status.as_ref(), &new));
    match api.patch_status(&name, &PatchParams::default(), &patch).await {
        Ok(p) => {
            tracing::debug!(pod = %format!("{namespace}/{name}"), %uid, phase = ?new.phase, "pod status patched");
            Ok(WriteOutcome::Written(Box::new(p)))
        }
        Err(e) if api_code(&e) == Some(404) => Ok(WriteOutcome::Gone),
        Err(source) => Err(SyncError::Patch {
            namespace,
            name,
            uid,
            source,
        }),
    }
}

/// Finishes the deletion of `namespace/name` (fixture 41): grace 0 and the UID
/// as precondition. A pod already gone or recreated (404, 409) counts as done.
pub async fn delete_pod(client: Client, namespace: String, name: String, uid: String) -> Result<(), SyncError> {
    let api: Api<Pod> = Api::namespaced(client, &namespace);
    match delete_pod_now(&api, &name, &uid).await {
        Ok(_) => Ok(()),
        Err(source) => Err(SyncError::Delete {
            namespace,
            name,
            uid,
            source,
        }),
    }
}
