//! Where ConfigMaps, Secrets and service account tokens come from:
//! [`ObjectSource`], with [`Standalone`] (no API server: every request
//! fails with upstream's "no kubeClient defined") and [`ApiObjects`]
//! (cluster mode: the watch-based ConfigMap and Secret managers of
//! [`watch_cache`](super::watch_cache) and TokenRequest).

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use kube::Api;
use kube::api::PostParams;

use super::watch_cache::WatchCache;

/// How long a TokenRequest may take.
pub const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// An object could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The object does not exist (upstream's manager: `configmap "x" not found`).
    #[error("{kind} {name:?} not found")]
    NotFound {
        /// `configmap` or `secret`.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// The API server refused (403: the Node authorizer found no pod of
    /// this node referencing the object); the API server's message.
    #[error("{0}")]
    Forbidden(String),
    /// No API server (standalone mode).
    #[error("couldn't get {kind} {namespace}/{name}, no kubeClient defined")]
    NoClient {
        /// `configMap`, `secret` or `serviceaccount token`.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// Anything else (API server unreachable, timeout…).
    #[error("{0}")]
    Other(String),
}

impl ObjectError {
    /// Maps an API error for `kind`/`name`.
    pub fn from_kube(kind: &'static str, name: &str, e: &kube::Error) -> Self {
        match e {
            kube::Error::Api(s) if s.code == 404 => ObjectError::NotFound {
                kind,
                name: name.to_string(),
            },
            kube::Error::Api(s) if s.code == 403 => ObjectError::Forbidden(s.message.clone()),
            other => ObjectError::Other(format!("failed to get {kind} {name:?}: {other}")),
        }
    }
}

/// (namespace, name).
pub type ObjectKey = (String, String);

/// The API objects volumes and env read.
#[async_trait::async_trait]
pub trait ObjectSource: Send + Sync + 'static {
    /// A ConfigMap.
    async fn config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError>;
    /// A Secret.
    async fn secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError>;
    /// `POST serviceaccounts/<name>/token`.
    async fn token(
        &self,
        namespace: &str,
        service_account: &str,
        req: TokenRequest,
    ) -> Result<TokenRequest, ObjectError>;
    /// Keeps only the watches of these objects (the ones pods of this node
    /// reference); the default keeps nothing.
    fn retain(&self, _config_maps: &BTreeSet<ObjectKey>, _secrets: &BTreeSet<ObjectKey>) {}
    /// True when an API server is behind this source.
    fn has_client(&self) -> bool;
    /// Every Service of the cluster (for service env vars); none by default.
    async fn services(&self) -> Result<Vec<Service>, ObjectError> {
        Ok(Vec::new())
    }
}

/// No API server: every object is unavailable.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use actlet::volumes::objects::{ObjectSource, Standalone};
/// let err = Standalone.config_map("default", "app").await.unwrap_err();
/// assert_eq!(err.to_string(), "couldn't get configMap default/app, no kubeClient defined");
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Standalone;

#[async_trait::async_trait]
impl ObjectSource for Standalone {
    async fn config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        Err(ObjectError::NoClient {
            kind: "configMap",
            namespace: namespace.into(),
            name: name.into(),
        })
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError> {
        Err(ObjectError::NoClient {
            kind: "secret",
            namespace: namespace.into(),
            name: name.into(),
        })
    }

    async fn token(&self, namespace: &str, sa: &str, _req: TokenRequest) -> Result<TokenRequest, ObjectError> {
        Err(ObjectError::NoClient {
            kind: "serviceaccount token",
            namespace: namespace.into(),
            name: sa.into(),
        })
    }

    fn has_client(&self) -> bool {
        false
    }
}

/// Cluster mode: one watch per referenced ConfigMap and Secret, and
/// TokenRequests, through the kube client.
#[derive(Clone)]
pub struct ApiObjects {
    client: kube::Client,
    config_maps: WatchCache<ConfigMap>,
    secrets: WatchCache<Secret>,
    services: std::sync::Arc<tokio::sync::OnceCell<kube::runtime::reflector::Store<Service>>>,
}

impl std::fmt::Debug for ApiObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiObjects")
            .field("config_maps", &self.config_maps.len())
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl ApiObjects {
    /// Objects read through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self {
            config_maps: WatchCache::new(client.clone(), "configmap"),
            secrets: WatchCache::new(client.clone(), "secret"),
            services: Default::default(),
            client,
        }
    }

    /// How many objects are watched now (ConfigMaps, Secrets).
    pub fn watched(&self) -> (usize, usize) {
        (self.config_maps.len(), self.secrets.len())
    }
}

#[async_trait::async_trait]
impl ObjectSource for ApiObjects {
    async fn config_map(&self, namespace: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        self.config_maps.get(namespace, name).await.map(|o| (*o).clone())
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Secret, ObjectError> {
        self.secrets.get(namespace, name).await.map(|o| (*o).clone())
    }

    async fn token(&self, namespace: &str, sa: &str, req: TokenRequest) -> Result<TokenRequest, ObjectError> {
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
        let pp = PostParams::default();
        let call = api.create_token_request(sa, &pp, &req);
        match tokio::time::timeout(TOKEN_REQUEST_TIMEOUT, call).await {
            Ok(Ok(tr)) => Ok(tr),
            Ok(Err(kube::Error::Api(s))) if s.code == 403 => Err(ObjectError::Forbidden(s.message.clone())),
            Ok(Err(e)) => Err(ObjectError::Other(format!("failed to fetch token: {e}"))),
            Err(_) => Err(ObjectError::Other(format!(
                "failed to fetch token: timed out after {TOKEN_REQUEST_TIMEOUT:?}"
            ))),
        }
    }

    fn retain(&self, config_maps: &BTreeSet<ObjectKey>, secrets: &BTreeSet<ObjectKey>) {
        self.config_maps.retain(config_maps);
        self.secrets.retain(secrets);
    }

    fn has_client(&self) -> bool {
        true
    }

    /// One reflector over every Service (started on first use), as
    /// upstream's service informer; unusable until it has listed once.
    async fn services(&self) -> Result<Vec<Service>, ObjectError> {
        use futures::StreamExt;
        use kube::runtime::{reflector, watcher};
        let store = self
            .services
            .get_or_init(|| async {
                let (reader, writer) = reflector::store();
                let api: Api<Service> = Api::all(self.client.clone());
                let stream = crate::cluster::watch_backoff::backoff_watch(
                    reflector::reflector(writer, watcher::watcher(api, super::watch_cache::cache_list_config())),
                    Default::default(),
                );
                tokio::spawn(stream.for_each(|_| futures::future::ready(())));
                reader
            })
            .await;
        match tokio::time::timeout(super::watch_cache::FIRST_SYNC_TIMEOUT, store.wait_until_ready()).await {
            Ok(Ok(())) => Ok(store.state().iter().map(|s| (**s).clone()).collect()),
            _ => Err(ObjectError::Other(
                "services have not yet been read at least once, cannot construct envvars".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_like_upstreams_manager() {
        let e = ObjectError::NotFound {
            kind: "configmap",
            name: "app".into(),
        };
        assert_eq!(e.to_string(), "configmap \"app\" not found");
    }

    #[tokio::test]
    async fn standalone_refuses_everything_with_a_clear_message() {
        let s = Standalone;
        assert_eq!(
            s.secret("ns", "db").await.unwrap_err().to_string(),
            "couldn't get secret ns/db, no kubeClient defined"
        );
        let err = s.token("ns", "default", TokenRequest::default()).await.unwrap_err();
        assert!(err.to_string().contains("no kubeClient defined"), "{err}");
        assert!(!s.has_client());
    }
}
