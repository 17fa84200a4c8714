//! Pod sources → PodConfig → SyncLoop.
//!
//! Sources (file, HTTP, API server, or an embedder's own) report what they
//! hold; the PodConfig actor merges them and emits the upstream change kinds.

use std::sync::Arc;

use actix::Message;
use k8s_openapi::api::core::v1::Pod;

/// Where a pod came from; the value of the `kubernetes.io/config.source` annotation.
///
/// ```
/// use actlet::messages::pod_update::PodSource;
/// let sources = [PodSource::File, PodSource::Http, PodSource::Api, PodSource::Custom("mine".into())];
/// let names: Vec<&str> = sources.iter().map(PodSource::as_str).collect();
/// assert_eq!(names, ["file", "http", "api", "mine"]);
/// ```
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
    ///
    /// ```
    /// use actlet::messages::pod_update::PodSource;
    /// assert_eq!(PodSource::Custom("edge".into()).as_str(), "edge");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            Self::File => "file",
            Self::Http => "http",
            Self::Api => "api",
            Self::Custom(name) => name,
        }
    }

    /// Static pods (file, HTTP) are defaulted by the kubelet and mirrored to the API.
    ///
    /// ```
    /// use actlet::messages::pod_update::PodSource;
    /// assert!(PodSource::File.is_static() && PodSource::Http.is_static());
    /// assert!(!PodSource::Api.is_static());
    /// ```
    pub fn is_static(&self) -> bool {
        matches!(self, Self::File | Self::Http)
    }
}

/// A manifest a source could not turn into a pod.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::wait_until;
/// # use actlet::ActletBuilder;
/// # use actlet::cri::mock::MockRuntime;
///
/// actlet::testing::run_paused(async {
///     let tmp = tempfile::tempdir().unwrap();
///     std::fs::create_dir(tmp.path().join("manifests")).unwrap();
///     std::fs::write(tmp.path().join("manifests/bad.yaml"), "kind: Pod\nspec: [not, a, map]\n").unwrap();
///     let kubelet = ActletBuilder::new("node-a")
///         .runtime(MockRuntime::new())
///     #   .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
///         .static_pod_path(tmp.path().join("manifests"))
///         .start()
///         .unwrap();
///     wait_until(|| !kubelet.manifest_errors.get().is_empty(), Duration::from_secs(30)).await.unwrap();
///     let err = &kubelet.manifest_errors.get()[0];
///     assert!(err.origin.ends_with("bad.yaml"), "{err:?}");
/// });
/// ```
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
/// Guarantee to PodConfig: a pod whose manifest became invalid is *not*
/// dropped from `pods` because of `errors`: the source keeps sending its last
/// good version (see `config::last_good`) and lists the manifest in `errors`.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use actlet::messages::pod_update::{PodSource, SourceSnapshot};
/// use actlet::testing::{PodBuilder, TestNode, wait_until};
///
/// actlet::testing::run_paused(async {
///     let node = TestNode::start(); // its own source is called "test"
/// #   wait_until(|| node.kubelet().tree().get("root/pod-config").is_some(), Duration::from_secs(1)).await.unwrap();
///     let pod = PodBuilder::new("web").uid("u1").container("c", "busybox:1.36", ["sleep", "60"]).build();
///     let pod = actlet::embed::default_source_pod(pod, TestNode::SOURCE, TestNode::NODE_NAME); // as a source does
///     let source = PodSource::Custom(TestNode::SOURCE.into());
///     let snapshot = SourceSnapshot { source, pods: vec![Arc::new(pod)], errors: vec![] };
///     node.kubelet().pod_config.do_send(snapshot).unwrap();
///     wait_until(|| node.kubelet().pods.contains(&"u1".into()), Duration::from_secs(5)).await.unwrap();
/// });
/// ```
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
///
/// ```
/// use actlet::messages::pod_update::PodOperation;
/// // a graceful delete is handled like an update; a removal kills the pod
/// let kills = |op| matches!(op, PodOperation::Remove);
/// assert!(!kills(PodOperation::Delete) && kills(PodOperation::Remove));
/// ```
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
///
/// ```
/// use std::sync::Arc;
/// use actlet::messages::pod_update::{PodOperation, PodSource, PodUpdate};
/// let pod = actlet::testing::PodBuilder::new("web").build();
/// let update = PodUpdate { op: PodOperation::Add, source: PodSource::File, pods: vec![Arc::new(pod)] };
/// assert_eq!(update.pods[0].metadata.name.as_deref(), Some("web"));
/// ```
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
///
/// ```
/// use actlet::messages::pod_update::SourcesReady;
/// let ready = SourcesReady; // carries no data: its arrival is the news
/// assert_eq!(format!("{ready:?}"), "SourcesReady");
/// ```
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "()")]
pub struct SourcesReady;

/// Anyone → PodConfig: the manifest errors of every source's latest snapshot.
#[derive(Clone, Copy, Debug, actix::Message)]
#[rtype(result = "Vec<ManifestError>")]
pub struct GetManifestErrors;
