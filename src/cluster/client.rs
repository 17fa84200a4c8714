//! The API clients, built from a kubeconfig file as upstream builds them:
//! - the **bulk** client, rate limited (QPS 50, burst 100), every read
//!   bounded by [`BULK_READ_TIMEOUT`] (longer than a watch's server-side
//!   timeout of 290 s, so watches are not cut, but a half-open connection is
//!   found);
//! - the **heartbeat** client for the Lease and the node status: no rate
//!   limit (bulk traffic never delays a heartbeat) and every call bounded by
//!   a short timeout (upstream: min(nodeStatusUpdateFrequency, lease
//!   duration)), so a half-open connection fails the call within that time
//!   and the next heartbeat dials afresh instead of stalling forever (node
//!   NotReady → evictions).

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Client;
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::client_metrics::RequestMetricsLayer;
use super::rate_limit::{Qps, RateLimitLayer};

/// The API client could not be built.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use actlet::cluster::{ClientError, Qps, client_from_kubeconfig};
/// let err = client_from_kubeconfig("/nonexistent/kubeconfig".as_ref(), Qps::default()).await.err().unwrap();
/// assert!(matches!(err, ClientError::Read { .. }));
/// assert!(err.to_string().starts_with("cannot read kubeconfig /nonexistent/kubeconfig"));
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file is unreadable or not a kubeconfig.
    #[error("cannot read kubeconfig {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig names no usable cluster or credentials.
    #[error("kubeconfig {path} is unusable: {source}")]
    Config {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The HTTP stack could not be built (TLS settings, proxy).
    #[error("cannot build an API client from {path}: {source}")]
    Build {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// Builds a client from `kubeconfig` (its current context), limited to `qps`.
/// Must be called inside a tokio runtime. Nothing is sent yet.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use actlet::cluster::{Qps, client_from_kubeconfig};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("kubeconfig");
/// std::fs::write(&path, r#"
/// apiVersion: v1
/// kind: Config
/// clusters: [{name: c, cluster: {server: "https://10.0.0.10:6443", insecure-skip-tls-verify: true}}]
/// users: [{name: node, user: {token: "secret"}}]
/// contexts: [{name: node@c, context: {cluster: c, user: node, namespace: kube-system}}]
/// current-context: node@c
/// "#).unwrap();
/// let client = client_from_kubeconfig(&path, Qps { qps: 5, burst: 10 }).await.unwrap();
/// assert_eq!(client.default_namespace(), "kube-system"); // nothing was sent yet
/// # });
/// ```
pub async fn client_from_kubeconfig(kubeconfig: &Path, qps: Qps) -> Result<Client, ClientError> {
    let config = load_kubeconfig(kubeconfig).await?;
    client_from_config(config, qps).map_err(|source| ClientError::Build {
        path: kubeconfig.to_path_buf(),
        source,
    })
}

/// Builds the heartbeat client from `kubeconfig`: no rate limit, every call
/// (connect, write, read) bounded by `timeout`.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::time::Duration;
/// use actlet::cluster::heartbeat_client_from_kubeconfig;
/// let err = heartbeat_client_from_kubeconfig("/nonexistent".as_ref(), Duration::from_secs(10)).await.err().unwrap();
/// assert!(err.to_string().contains("/nonexistent"));
/// # });
/// ```
pub async fn heartbeat_client_from_kubeconfig(kubeconfig: &Path, timeout: Duration) -> Result<Client, ClientError> {
    let config = load_kubeconfig(kubeconfig).await?;
    heartbeat_client_from_config(config, timeout).map_err(|source| ClientError::Build {
        path: kubeconfig.to_path_buf(),
        source,
    })
}

/// The heartbeat client from a kube [`Config`](kube::Config) (see the module doc).
///
/// ```
/// use std::time::Duration;
/// use actlet::cluster::heartbeat_client_from_config;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let config = kube::Config::new("https://10.0.0.1:6443".parse().unwrap());
/// let client = heartbeat_client_from_config(config, Duration::from_secs(10)).unwrap(); // nothing sent yet
/// # let _ = client;
/// # });
/// ```
pub fn heartbeat_client_from_config(mut config: kube::Config, timeout: Duration) -> Result<Client, kube::Error> {
    config.connect_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    // Count from when the request is sent, not from when the pooled
    // connection went idle.
    config.reset_reader_on_write = true;
    with_user_agent(&mut config);
    let metrics = RequestMetricsLayer::new(&config.cluster_url);
    Ok(ClientBuilder::try_from(config)?.with_layer(&metrics).build())
}

/// Upper bound for one read of the bulk client: above the 290 s a watch is
/// held open by the API server, so only a dead connection trips it.
pub const BULK_READ_TIMEOUT: Duration = Duration::from_secs(300);

fn with_user_agent(config: &mut kube::Config) {
    // The kubelet's user agent, so audit logs and `kubectl get --show-managed-fields` name it.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("actlet/v", env!("CARGO_PKG_VERSION"))),
    ));
}

async fn load_kubeconfig(kubeconfig: &Path) -> Result<kube::Config, ClientError> {
    let path = kubeconfig.to_path_buf();
    let kc = Kubeconfig::read_from(kubeconfig).map_err(|source| ClientError::Read {
        path: path.clone(),
        source,
    })?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|source| ClientError::Config { path, source })?;
    Ok(config)
}

/// Builds a rate-limited client from a kube [`Config`](kube::Config).
///
/// ```
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// use actlet::cluster::{Qps, client_from_config};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// // a one-shot "API server" that answers `ok` and shows what it received
/// let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
/// let url = format!("http://{}", server.local_addr().unwrap());
/// let received = tokio::spawn(async move {
///     let (mut conn, _) = server.accept().await.unwrap();
///     let mut buf = vec![0; 4096];
///     let n = conn.read(&mut buf).await.unwrap();
///     conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await.unwrap();
///     String::from_utf8_lossy(&buf[..n]).to_lowercase()
/// });
/// let client = client_from_config(kube::Config::new(url.parse().unwrap()), Qps::default()).unwrap();
/// let body = client.request_text(http::Request::get("/healthz").body(Vec::new()).unwrap()).await.unwrap();
/// assert_eq!(body, "ok");
/// assert!(received.await.unwrap().contains("user-agent: actlet/v"));
/// # });
/// ```
pub fn client_from_config(mut config: kube::Config, qps: Qps) -> Result<Client, kube::Error> {
    with_user_agent(&mut config);
    if config.read_timeout.is_none() {
        config.read_timeout = Some(BULK_READ_TIMEOUT);
        config.reset_reader_on_write = true;
    }
    let metrics = RequestMetricsLayer::new(&config.cluster_url);
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&metrics)
        .with_layer(&RateLimitLayer::new(qps))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_kubeconfig_names_the_file() {
        let err = client_from_kubeconfig(Path::new("/nonexistent/kubeconfig"), Qps::default())
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
    }

    #[tokio::test]
    async fn a_kubeconfig_without_clusters_is_refused() {
        let dir = std::env::temp_dir().join(format!("actlet-kc-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("kubeconfig");
        let _ = std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
        );
        let err = client_from_kubeconfig(&path, Qps::default()).await.err();
        assert!(matches!(err, Some(ClientError::Config { .. })), "{err:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
