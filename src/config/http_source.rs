//! [`HttpSource`]: the `staticPodURL` source (upstream `sourceURL`).
//!
//! # Expected flow
//! 1. On start and every [`HttpSourceConfig::check_frequency`] (20 s) the
//!    actor GETs the URL with the configured headers (at most one request in
//!    flight; a tick during one is skipped). Requests time out after
//!    [`HttpSourceConfig::timeout`] (10 s, upstream's client timeout).
//! 2. A 2xx body (Pod or PodList, JSON or YAML, ≤ 10 MiB) is loaded on the
//!    blocking pool and sent as one [`SourceSnapshot`]; an empty body is an
//!    empty snapshot (upstream: the source has no pods, and is seen).
//!
//! # Guarantees
//! - A network error or a non-2xx status sends nothing: the last snapshot
//!   stands, and the source is not marked seen before its first success.
//!   Failures are logged (`warn!`) the first 3 times and every 10th after,
//!   like upstream.
//! - A body that does not parse or validate is one broken manifest (origin
//!   = the URL): the last good pods are sent again with the error
//!   ([`LastGoodManifests`]); a PodList is all or nothing. The last good
//!   pods survive a restart of the actor when the tree hands every instance
//!   the same [`SharedLastGood`] ([`HttpSource::with_last_good`]).
//!
//! # Caveats
//! Plain HTTP only: this build of reqwest has no TLS, so an `https` URL is
//! rejected by [`HttpSource::new`].

use std::sync::Arc;
use std::time::Duration;

use crate::actors::supervisor::SupervisedRecipient;
use actix::{Actor, ActorFutureExt, AsyncContext, Context, WrapFuture};
use k8s_openapi::api::core::v1::Pod;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::error_log::ManifestErrorLog;
#[cfg(doc)]
use crate::config::last_good::LastGoodManifests;
use crate::config::last_good::{ManifestRead, SharedLastGood};
use crate::config::manifest::{self, MAX_MANIFEST_BYTES};
use crate::config::static_pod::{ManifestOrigin, load_static_pods};
use crate::messages::pod_update::{PodSource, SourceSnapshot};

/// Settings of an [`HttpSource`].
#[derive(Clone, Debug)]
pub struct HttpSourceConfig {
    /// `staticPodURL` (`http://` only).
    pub url: String,
    /// `staticPodURLHeader` entries as `Key:Value` strings (a key may repeat).
    pub headers: Vec<String>,
    /// This node's name (static pod names get `-<nodeName>`).
    pub node_name: String,
    /// `httpCheckFrequency`.
    pub check_frequency: Duration,
    /// Timeout of one request.
    pub timeout: Duration,
}

impl HttpSourceConfig {
    /// Upstream's default `httpCheckFrequency`.
    pub const DEFAULT_CHECK_FREQUENCY: Duration = Duration::from_secs(20);
    /// Upstream's HTTP client timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// Defaults: no headers, 20 s period, 10 s timeout.
    pub fn new(url: impl Into<String>, node_name: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: vec![],
            node_name: node_name.into(),
            check_frequency: Self::DEFAULT_CHECK_FREQUENCY,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// Why an [`HttpSource`] cannot be built. A configuration error: not retryable.
#[derive(Debug, thiserror::Error)]
pub enum HttpSourceError {
    /// The URL does not parse or is not `http://`.
    #[error("invalid staticPodURL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// A header is not `Key:Value` with a valid name and value.
    #[error("invalid staticPodURLHeader {header:?}: {reason}")]
    InvalidHeader {
        /// The header string given.
        header: String,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Parses `Key:Value` header strings (value trimmed) into a header map.
pub fn parse_headers(headers: &[String]) -> Result<HeaderMap, HttpSourceError> {
    let mut map = HeaderMap::new();
    for header in headers {
        let invalid = |reason: String| HttpSourceError::InvalidHeader {
            header: header.clone(),
            reason,
        };
        let (key, value) = header
            .split_once(':')
            .ok_or_else(|| invalid("expected Key:Value".into()))?;
        let name = HeaderName::from_bytes(key.trim().as_bytes()).map_err(|e| invalid(e.to_string()))?;
        let value = HeaderValue::from_str(value.trim()).map_err(|e| invalid(e.to_string()))?;
        map.append(name, value);
    }
    Ok(map)
}

/// One fetch: a transport/status failure, an empty body (`None`), or the
/// loaded manifest.
type Fetched = Result<Option<manifest::Result<Vec<Pod>>>, String>;

/// The HTTP source actor; see the module doc.
pub struct HttpSource {
    url: String,
    node_name: String,
    check_frequency: Duration,
    client: reqwest::Client,
    headers: HeaderMap,
    out: SupervisedRecipient<SourceSnapshot>,
    /// Owned: outlives the instance when given by [`Self::with_last_good`].
    last_good: SharedLastGood,
    error_log: ManifestErrorLog,
    fetching: bool,
    failures: u32,
}

impl HttpSource {
    /// Checks the URL and headers and builds the client; sends snapshots to `out`.
    pub fn new(
        config: HttpSourceConfig,
        out: impl Into<SupervisedRecipient<SourceSnapshot>>,
    ) -> Result<Self, HttpSourceError> {
        let out = out.into();
        let invalid_url = |reason: String| HttpSourceError::InvalidUrl {
            url: config.url.clone(),
            reason,
        };
        let url = reqwest::Url::parse(&config.url).map_err(|e| invalid_url(e.to_string()))?;
        if url.scheme() != "http" {
            return Err(invalid_url(format!(
                "scheme {:?} not supported (plain http only, no TLS)",
                url.scheme()
            )));
        }
        let headers = parse_headers(&config.headers)?;
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(HttpSourceError::Client)?;
        Ok(Self {
            url: config.url,
            node_name: config.node_name,
            check_frequency: config.check_frequency,
            client,
            headers,
            out,
            last_good: SharedLastGood::default(),
            error_log: ManifestErrorLog::new(),
            fetching: false,
            failures: 0,
        })
    }

    /// Keeps the last good pods of a broken body in `last_good`, shared with
    /// the instances before and after this one (a restart must not remove
    /// the pods of a body that broke).
    pub fn with_last_good(mut self, last_good: SharedLastGood) -> Self {
        self.last_good = last_good;
        self
    }

    fn fetch(&mut self, ctx: &mut Context<Self>) {
        if std::mem::replace(&mut self.fetching, true) {
            return;
        }
        let request = self.client.get(&self.url).headers(self.headers.clone());
        let (url, node_name) = (self.url.clone(), self.node_name.clone());
        let work = async move {
            let body = read_body(request).await?;
            if body.is_empty() {
                return Ok(None);
            }
            let load = move || load_body(body, &url, &node_name);
            tokio::task::spawn_blocking(load)
                .await
                .map(Some)
                .map_err(|e| e.to_string())
        };
        ctx.spawn(work.into_actor(self).map(|fetched, act, _| {
            act.fetching = false;
            act.apply(fetched);
        }));
    }

    fn apply(&mut self, fetched: Fetched) {
        let reads = match fetched {
            Err(reason) => {
                self.failures += 1;
                if self.failures <= 3 || self.failures % 10 == 0 {
                    tracing::warn!(url = %self.url, reason, failures = self.failures, "failed to read static pods from URL; keeping the last good pods");
                }
                return;
            }
            Ok(None) => {
                tracing::info!(url = %self.url, "zero-length data received from URL: no http pods");
                vec![]
            }
            Ok(Some(result)) => vec![ManifestRead {
                origin: self.url.clone(),
                result: result.map(|pods| pods.into_iter().map(Arc::new).collect()),
            }],
        };
        if std::mem::take(&mut self.failures) > 0 {
            tracing::info!(url = %self.url, "successfully read URL again");
        }
        let snapshot = self.last_good.snapshot(PodSource::Http, reads);
        self.error_log.update(&PodSource::Http, &snapshot.errors);
        if let Err(e) = self.out.do_send(snapshot) {
            tracing::warn!(error = %e, "cannot deliver http source snapshot; the next poll retries");
        }
    }
}

/// Loads a non-empty `staticPodURL` body: UTF-8, then [`load_static_pods`]
/// (the fuzz target `http_source_body` drives this).
///
/// ```
/// use actlet::config::http_source::load_body;
/// let body = b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}";
/// let pods = load_body(body.to_vec(), "http://config/pods", "node-1").unwrap();
/// assert_eq!(pods[0].metadata.name.as_deref(), Some("web-node-1"));
/// assert!(load_body(vec![0xff], "http://config/pods", "node-1").is_err());
/// ```
pub fn load_body(body: Vec<u8>, url: &str, node_name: &str) -> manifest::Result<Vec<Pod>> {
    match String::from_utf8(body) {
        Ok(text) => load_static_pods(&text, ManifestOrigin::Url(url), node_name),
        Err(e) => Err(manifest::Error::Read {
            origin: url.to_owned(),
            reason: e.to_string(),
        }),
    }
}

/// Sends the request; the body of a 2xx response, at most [`MAX_MANIFEST_BYTES`].
async fn read_body(request: reqwest::RequestBuilder) -> Result<Vec<u8>, String> {
    let mut response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP status {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_MANIFEST_BYTES {
            return Err(format!("body larger than {MAX_MANIFEST_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl Actor for HttpSource {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.fetch(ctx);
        ctx.run_interval(self.check_frequency, |act, ctx| act.fetch(ctx));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_headers() {
        let map = parse_headers(&["Authorization: Bearer x".into(), "X-A:1".into(), "x-a:2".into()]).unwrap();
        assert_eq!(map["authorization"], "Bearer x");
        assert_eq!(map.get_all("x-a").iter().collect::<Vec<_>>(), ["1", "2"]);
        for bad in ["no-colon", "bad name:1", ":empty", "X:bad\nvalue"] {
            let err = parse_headers(&[bad.into()]).unwrap_err();
            assert!(
                matches!(err, HttpSourceError::InvalidHeader { ref header, .. } if header == bad),
                "{bad}: {err}"
            );
        }
    }

    struct Sink;

    impl Actor for Sink {
        type Context = Context<Self>;
    }

    impl actix::Handler<SourceSnapshot> for Sink {
        type Result = ();

        fn handle(&mut self, _: SourceSnapshot, _: &mut Self::Context) {}
    }

    #[actix_rt::test]
    async fn rejects_bad_urls() {
        let out = Sink.start().recipient();
        for url in ["not a url", "https://example.com/pods", "ftp://x/"] {
            let err = HttpSource::new(HttpSourceConfig::new(url, "n"), out.clone())
                .err()
                .unwrap();
            assert!(matches!(err, HttpSourceError::InvalidUrl { .. }), "{url}: {err}");
        }
        let mut config = HttpSourceConfig::new("http://127.0.0.1:1/pods", "n");
        config.headers = vec!["nope".into()];
        assert!(matches!(
            HttpSource::new(config, out).err().unwrap(),
            HttpSourceError::InvalidHeader { .. }
        ));
    }
}
