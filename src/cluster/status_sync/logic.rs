//! The status syncer's decisions, free of I/O (upstream `status.manager`'s
//! `syncPod`, `needsUpdate`, `needsReconcile`, `canBeDeleted` and
//! `statusutil.PatchPodStatus`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::jiff::Timestamp;

use crate::cluster::mirror_index::{MirrorPods, is_mirror_pod};
use crate::messages::PodUid;
use crate::pod_manager::DesiredPod;
use crate::status::VersionedStatus;
use crate::status::api_merge::merge_for_api;

pub use super::patch::{differs, status_patch};

/// Which API object a pod's status is written to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The pod itself (an API pod, or a pod only known by its cached status).
    Pod {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The UID the API object must have.
        uid: String,
    },
    /// The mirror pod of a static pod, `namespace/name` like the static pod.
    Mirror {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The mirror pod's UID as the watch last reported it.
        uid: String,
    },
    /// Nothing to write to (yet): a static pod without a mirror pod, or a pod
    /// known only by its UID. The write waits.
    Nowhere,
}

impl Target {
    /// The UID of the object written to (`None` when there is none).
    pub fn uid(&self) -> Option<&str> {
        match self {
            Target::Pod { uid, .. } | Target::Mirror { uid, .. } => Some(uid),
            Target::Nowhere => None,
        }
    }
}

/// Where the status of `uid` goes: its API pod, or the mirror pod of a static
/// pod (upstream `TranslatePodUID`). A pod the pod manager no longer has is
/// addressed by the name its status was cached under.
pub fn resolve_target(
    uid: &PodUid,
    desired: Option<&DesiredPod>,
    status: &VersionedStatus,
    mirrors: &MirrorPods,
) -> Target {
    match desired {
        Some(d) if d.source.is_static() => {
            let namespace = d.pod.metadata.namespace.clone().unwrap_or_default();
            let name = d.pod.metadata.name.clone().unwrap_or_default();
            match mirrors.get(&format!("{namespace}/{name}")) {
                Some(m) => Target::Mirror {
                    namespace,
                    name,
                    uid: m.metadata.uid.clone().unwrap_or_default(),
                },
                None => Target::Nowhere,
            }
        }
        Some(d) => Target::Pod {
            namespace: d.pod.metadata.namespace.clone().unwrap_or_default(),
            name: d.pod.metadata.name.clone().unwrap_or_default(),
            uid: uid.as_str().to_string(),
        },
        None if status.pod_name.is_empty() => Target::Nowhere,
        None => Target::Pod {
            namespace: status.pod_namespace.clone(),
            name: status.pod_name.clone(),
            uid: uid.as_str().to_string(),
        },
    }
}

/// Whether the API object fetched for `target` is the one to write: the same
/// UID for a pod (otherwise the pod was deleted and recreated: ours is gone),
/// any mirror pod for a static pod (the mirror may have been recreated).
pub fn accepts(target: &Target, fetched: &Pod) -> bool {
    match target {
        Target::Pod { uid, .. } => fetched.metadata.uid.as_deref() == Some(uid.as_str()),
        Target::Mirror { .. } => is_mirror_pod(fetched),
        Target::Nowhere => false,
    }
}

/// The status to send: ours merged onto the API's (upstream `mergePodStatus`).
pub fn status_to_send(api: &Pod, ours: &PodStatus, could_run: bool, now: Timestamp) -> PodStatus {
    merge_for_api(&api.status.clone().unwrap_or_default(), ours.clone(), could_run, now)
}

/// Whether the API pod can be finalised (upstream `canBeDeleted`): it is being
/// deleted, it is not a mirror pod, nothing of it may still run, and the
/// status written last is the current one.
pub fn can_be_deleted(api: &Pod, could_run: bool, latest_written: bool) -> bool {
    api.metadata.deletion_timestamp.is_some() && !is_mirror_pod(api) && !could_run && latest_written
}

/// Per-pod retry delay after `failures` consecutive failed writes:
/// `initial` doubled each time, at most `max`.
pub fn backoff(failures: u32, initial: Duration, max: Duration) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    initial.saturating_mul(factor).min(max)
}

/// The last write made for a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The status version written.
    pub version: u64,
    /// The UID of the object it was written to.
    pub target_uid: String,
}

/// Whether a periodic resync must write `uid` again (upstream `needsUpdate` +
/// `needsReconcile`): never written, an older version written, written to
/// another object (a recreated mirror), or the API's copy we know of differs.
pub fn needs_sync(
    written: Option<&Written>,
    current: &VersionedStatus,
    target: &Target,
    known_api_status: Option<&PodStatus>,
    could_run: bool,
    now: Timestamp,
) -> bool {
    let Some(w) = written else {
        return true;
    };
    if w.version < current.version {
        return true;
    }
    if let Some(t) = target.uid().filter(|t| *t != w.target_uid) {
        tracing::trace!(target_uid = t, "status target changed");
        return true;
    }
    match known_api_status {
        Some(api) => {
            let merged = merge_for_api(api, PodStatus::clone(&current.status), could_run, now);
            differs(Some(api), &merged)
        }
        None => false,
    }
}

#[cfg(test)]
#[path = "logic_tests.rs"]
mod tests;
