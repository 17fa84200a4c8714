//! [`PodSource`]: the contract for a caller's own pod source, and the
//! supervised actor that runs one.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use md5::{Digest, Md5};

use crate::actors::supervisor::SupervisedRecipient;
use crate::config::annotations::{CONFIG_HASH, CONFIG_SOURCE};
use crate::config::pod_defaults::apply_api_defaults;
use crate::messages::pod_update::{ManifestError, PodSource as SourceName, SourceSnapshot};

/// A source failed to produce its pods this time.
///
/// ```
/// use actlet::SourceError;
/// let err = SourceError(format!("GET {}: connection refused", "http://config/pods"));
/// assert_eq!(err.to_string(), "GET http://config/pods: connection refused");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// A caller-written pod source.
///
/// # Contract
/// - [`next`](PodSource::next) waits until the source has something new and
///   returns the **complete** set of pods it wants on this node (a snapshot,
///   like a manifest directory: a pod missing from a snapshot is removed).
/// - Ordering: snapshots are applied in the order returned.
/// - Idempotence: returning the same pods again changes nothing.
/// - Errors: `Err` keeps the previous snapshot in force; `next` is called
///   again after a 1 s pause (and the error is reported as a manifest error).
/// - Pods without `metadata.uid` get a stable one (a hash of the pod, the node
///   and the source name), the `default` namespace, the source annotations and
///   the API server's defaults, so they behave like static pods (names are
///   kept as given).
/// - Timeouts: a `next` that never returns only stalls this source; panics
///   are contained: the supervisor rebuilds the source from its factory.
///
/// ```
/// use actlet::{PodSource, SourceError};
/// use actlet::testing::PodBuilder;
/// use k8s_openapi::api::core::v1::Pod;
///
/// /// Pods from a channel: every message is a complete snapshot.
/// struct FromChannel(tokio::sync::mpsc::Receiver<Vec<Pod>>);
///
/// #[async_trait::async_trait]
/// impl PodSource for FromChannel {
///     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
///         self.0.recv().await.ok_or_else(|| SourceError("the sender is gone".into()))
///     }
/// }
///
/// # actlet::testing::run_paused(async {
/// let (tx, rx) = tokio::sync::mpsc::channel(1);
/// let mut source = FromChannel(rx);
/// tx.send(vec![PodBuilder::new("web").build()]).await.unwrap();
/// assert_eq!(source.next().await.unwrap().len(), 1);
/// drop(tx);
/// assert!(source.next().await.is_err());
/// # });
/// ```
#[async_trait::async_trait]
pub trait PodSource: Send + 'static {
    /// The next complete snapshot of pods.
    async fn next(&mut self) -> Result<Vec<Pod>, SourceError>;
}

/// Makes `pod` ready to run like a static pod of source `source` on `node`.
///
/// ```
/// use actlet::embed::default_source_pod;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let pod: Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web"},
///     "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
/// })).unwrap();
/// let pod = default_source_pod(pod, "mine", "node-a");
/// assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
/// assert!(pod.metadata.uid.is_some()); // stable: the same pod gets the same UID
/// let annotations = pod.metadata.annotations.unwrap_or_default();
/// assert_eq!(annotations["kubernetes.io/config.source"], "mine");
/// assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("node-a"));
/// ```
pub fn default_source_pod(mut pod: Pod, source: &str, node: &str) -> Pod {
    apply_api_defaults(&mut pod);
    if pod.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        pod.metadata.namespace = Some("default".into());
    }
    if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
        let mut h = Md5::new();
        h.update(serde_json::to_vec(&pod).unwrap_or_default());
        h.update(format!("host:{node}{source}:"));
        pod.metadata.uid = Some(format!("{:x}", h.finalize()));
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let ann = pod.metadata.annotations.get_or_insert_with(Default::default);
    ann.entry(CONFIG_SOURCE.to_string())
        .or_insert_with(|| source.to_string());
    ann.entry(CONFIG_HASH.to_string()).or_insert(uid);
    if let Some(spec) = pod.spec.as_mut()
        && spec.node_name.as_deref().is_none_or(str::is_empty)
    {
        spec.node_name = Some(node.to_string());
    }
    pod
}

/// Runs a [`PodSource`] as a supervised child: every snapshot goes to PodConfig.
///
/// ```
/// use actix::Actor;
/// use actlet::actors::supervisor::SupervisedRecipient;
/// use actlet::embed::{PodSource, SourceError, SourceRunner};
/// use actlet::messages::pod_update::PodSource as SourceName;
/// use actlet::testing::PodBuilder;
/// # use k8s_openapi::api::core::v1::Pod;
///
/// struct Once(bool);
///
/// #[async_trait::async_trait]
/// impl PodSource for Once {
///     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
///         if std::mem::replace(&mut self.0, true) {
///             std::future::pending::<()>().await;
///         }
///         Ok(vec![PodBuilder::new("web").build()])
///     }
/// }
///
/// actlet::testing::run_paused(async {
///     let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
///     let out = SupervisedRecipient::from_fn(move |s| { let _ = tx.send(s); });
///     SourceRunner::new("mine".into(), "node-a".into(), Once(false), out).start();
///     let snapshot = rx.recv().await.unwrap();
///     assert_eq!(snapshot.source, SourceName::Custom("mine".into()));
///     assert_eq!(snapshot.pods[0].metadata.name.as_deref(), Some("web"));
/// });
/// ```
pub struct SourceRunner<S: PodSource> {
    name: String,
    node: String,
    source: Option<Box<S>>,
    out: SupervisedRecipient<SourceSnapshot>,
}

impl<S: PodSource> SourceRunner<S> {
    /// Runs `source` (named `name`) for `node`, sending to `out`.
    ///
    /// ```
    /// # use actix::Actor;
    /// # use actlet::embed::{PodSource, SourceError, SourceRunner};
    /// # use k8s_openapi::api::core::v1::Pod;
    /// /// A source whose `next` fails every time.
    /// struct Broken;
    ///
    /// #[async_trait::async_trait]
    /// impl PodSource for Broken {
    ///     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
    ///         Err(SourceError("manifest server is down".into()))
    ///     }
    /// }
    ///
    /// # actlet::testing::run_paused(async {
    /// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    /// let out = actlet::actors::supervisor::SupervisedRecipient::from_fn(move |s| { let _ = tx.send(s); });
    /// SourceRunner::new("mine".into(), "node-a".into(), Broken, out).start();
    /// // an error keeps the previous pods (none yet) and is reported as a manifest error
    /// let snapshot = rx.recv().await.unwrap();
    /// assert!(snapshot.pods.is_empty());
    /// assert_eq!(snapshot.errors[0].reason, "manifest server is down");
    /// # });
    /// ```
    pub fn new(name: String, node: String, source: S, out: SupervisedRecipient<SourceSnapshot>) -> Self {
        Self {
            name,
            node,
            source: Some(Box::new(source)),
            out,
        }
    }
}

impl<S: PodSource> Actor for SourceRunner<S> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(mut source) = self.source.take() else { return };
        let (name, node, out) = (self.name.clone(), self.node.clone(), self.out.clone());
        let run = async move {
            let mut last: Vec<Arc<Pod>> = vec![];
            loop {
                let (pods, errors) = match source.next().await {
                    Ok(pods) => {
                        last = pods
                            .into_iter()
                            .map(|p| Arc::new(default_source_pod(p, &name, &node)))
                            .collect();
                        (last.clone(), vec![])
                    }
                    Err(e) => {
                        tracing::warn!(source = %name, error = %e, "pod source failed; keeping its previous pods");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        (
                            last.clone(),
                            vec![ManifestError {
                                origin: name.clone(),
                                reason: e.0,
                            }],
                        )
                    }
                };
                let snapshot = SourceSnapshot {
                    source: SourceName::Custom(name.clone()),
                    pods,
                    errors,
                };
                if let Err(e) = out.send(snapshot).await {
                    tracing::error!(source = %name, error = %e, "pod config unreachable; stopping source");
                    return;
                }
            }
        };
        ctx.spawn(run.into_actor(self).map(|(), _, ctx| ctx.stop()));
    }
}
