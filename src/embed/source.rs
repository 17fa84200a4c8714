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
#[async_trait::async_trait]
pub trait PodSource: Send + 'static {
    /// The next complete snapshot of pods.
    async fn next(&mut self) -> Result<Vec<Pod>, SourceError>;
}

/// Makes `pod` ready to run like a static pod of source `source` on `node`.
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
pub struct SourceRunner<S: PodSource> {
    name: String,
    node: String,
    source: Option<Box<S>>,
    out: SupervisedRecipient<SourceSnapshot>,
}

impl<S: PodSource> SourceRunner<S> {
    /// Runs `source` (named `name`) for `node`, sending to `out`.
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
