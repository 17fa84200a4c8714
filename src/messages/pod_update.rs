//! Pod sources → PodConfig → SyncLoop.
//!
//! Sources (file, HTTP, API server, or an embedder's own) report what they
//! hold; the PodConfig actor merges them and emits the upstream change kinds.

use std::sync::Arc;

use actix::Message;
use k8s_openapi::api::core::v1::Pod;

/// Where a pod came from; the value of the `kubernetes.io/config.source` annotation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodSource {
    /// `staticPodPath`: manifests in a directory (`"file"`).
    File,
    /// `staticPodURL` (`"http"`).
    Http,
    /// The API server (`"api"`).
    Api,
    /// An embedder's own source, by name.
    Custom(String),
}

impl PodSource {
    /// The upstream annotation value (`file`, `http`, `api`, or the custom name).
    pub fn as_str(&self) -> &str {
        match self {
            Self::File => "file",
            Self::Http => "http",
            Self::Api => "api",
            Self::Custom(name) => name,
        }
    }

    /// Static pods (file, HTTP) are defaulted by the kubelet and mirrored to the API.
    pub fn is_static(&self) -> bool {
        matches!(self, Self::File | Self::Http)
    }
}

/// A manifest a source could not turn into a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// The file or URL.
    pub origin: String,
    /// Why it was rejected (parse or validation error).
    pub reason: String,
}

/// Source → PodConfig: the complete set of pods a source holds now (upstream
/// `SET`). Sent on every re-read; PodConfig diffs it against the previous set.
///
/// Guarantee to the source: a pod whose manifest became invalid is *not*
/// removed because of `errors`: a source lists such pods under
/// `kept_on_error` (by origin) and PodConfig keeps their last good version.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct SourceSnapshot {
    /// Which source.
    pub source: PodSource,
    /// Every valid pod, already defaulted for static sources.
    pub pods: Vec<Arc<Pod>>,
    /// Manifests that failed to parse or validate.
    pub errors: Vec<ManifestError>,
}

/// The kind of a merged change, with upstream's rules (kubelet-semantics §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodOperation {
    /// A pod not seen before.
    Add,
    /// Spec, labels, annotations, deletionTimestamp or grace period changed.
    Update,
    /// Only the status differs.
    Reconcile,
    /// A graceful delete was seen (deletionTimestamp set); handled like Update.
    Delete,
    /// The pod is gone from its source.
    Remove,
}

/// PodConfig → SyncLoop: one batch of pods with the same change kind.
///
/// Guarantees: per source, batches are sent in the order changes were seen;
/// a pod is never `Add`ed twice without a `Remove` in between.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct PodUpdate {
    /// The change kind.
    pub op: PodOperation,
    /// The source the pods belong to.
    pub source: PodSource,
    /// The pods (new versions; for `Remove`, the last known versions).
    pub pods: Vec<Arc<Pod>>,
}

/// PodConfig → SyncLoop: every source has delivered its first full snapshot,
/// so housekeeping may now kill pods that no source wants.
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "()")]
pub struct SourcesReady;
