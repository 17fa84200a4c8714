//! Authentication and authorization of the kubelet API (10250), as upstream
//! (`pkg/kubelet/server` + `k8s.io/apiserver` delegating authn/authz):
//!
//! 1. **Authenticate**: a client certificate verified against
//!    `clientCAFile` (user = CN, groups = O), else a bearer token checked by a
//!    TokenReview (when `authentication.webhook.enabled`). A certificate or
//!    token that fails is a 401 even when anonymous access is on; a request
//!    with neither is `system:anonymous` (group `system:unauthenticated`) when
//!    `authentication.anonymous.enabled`, else a 401. Authenticated users get
//!    the group `system:authenticated`.
//! 2. **Authorize** ([`attributes`]): `AlwaysAllow`, or `Webhook` — a
//!    SubjectAccessReview per candidate subresource; the first allowed one
//!    lets the request through, none → 403 `Forbidden (user=…, verb=…,
//!    resource=nodes, subresource(s)=[…])`; a review that fails → 500.

pub mod attributes;
pub mod webhook;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;

pub use attributes::{Attributes, UserInfo, request_attributes};
pub use webhook::{CachedReviews, ReviewApi, ReviewError, WebhookTtls};

/// `authentication.x509`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KubeletX509Authentication {
    /// `clientCAFile` (`--client-ca-file`): verify client certificates against it.
    pub client_ca_file: Option<PathBuf>,
}

/// `authentication.webhook`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletWebhookAuthentication {
    /// `enabled` (`--authentication-token-webhook`): bearer tokens via TokenReview.
    pub enabled: bool,
    /// `cacheTTL` (`--authentication-token-webhook-cache-ttl`, 2 min).
    pub cache_ttl: Duration,
}

impl Default for KubeletWebhookAuthentication {
    fn default() -> Self {
        Self {
            enabled: false,
            cache_ttl: WebhookTtls::default().cache_ttl,
        }
    }
}

/// `authentication.anonymous`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletAnonymousAuthentication {
    /// `enabled` (`--anonymous-auth`; true for flags, false in a v1beta1 config file).
    pub enabled: bool,
}

impl Default for KubeletAnonymousAuthentication {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// `authentication` of the KubeletConfiguration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KubeletAuthentication {
    /// Client certificates.
    pub x509: KubeletX509Authentication,
    /// Bearer tokens.
    pub webhook: KubeletWebhookAuthentication,
    /// Requests with neither.
    pub anonymous: KubeletAnonymousAuthentication,
}

/// `authorization.mode` (`--authorization-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KubeletAuthorizationMode {
    /// Everything authenticated is allowed (the flags' default).
    #[default]
    AlwaysAllow,
    /// SubjectAccessReviews (the v1beta1 config file's default).
    Webhook,
}

impl std::str::FromStr for KubeletAuthorizationMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "AlwaysAllow" => Ok(Self::AlwaysAllow),
            "Webhook" => Ok(Self::Webhook),
            other => Err(format!("unknown authorization mode {other:?} (AlwaysAllow or Webhook)")),
        }
    }
}

/// `authorization.webhook`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletWebhookAuthorization {
    /// `cacheAuthorizedTTL` (5 min).
    pub cache_authorized_ttl: Duration,
    /// `cacheUnauthorizedTTL` (30 s).
    pub cache_unauthorized_ttl: Duration,
}

impl Default for KubeletWebhookAuthorization {
    fn default() -> Self {
        let d = WebhookTtls::default();
        Self {
            cache_authorized_ttl: d.cache_authorized_ttl,
            cache_unauthorized_ttl: d.cache_unauthorized_ttl,
        }
    }
}

/// `authorization` of the KubeletConfiguration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KubeletAuthorization {
    /// The mode.
    pub mode: KubeletAuthorizationMode,
    /// Webhook caching.
    pub webhook: KubeletWebhookAuthorization,
}

/// The client's certificate chain, as presented in the TLS handshake.
#[derive(Clone, Debug, Default)]
pub struct PeerCerts(pub Vec<CertificateDer<'static>>);

/// The authentication/authorization setup cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Webhook authn/authz needs an API server (`--kubeconfig`).
    #[error("{0} needs an API server client (--kubeconfig)")]
    NoClient(&'static str),
    /// The client CA file is unusable.
    #[error(transparent)]
    Tls(#[from] super::tls::TlsError),
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// 401 `Unauthorized`.
    Unauthorized,
    /// 403 with upstream's message.
    Forbidden(String),
    /// 500 `Authorization error (…)`.
    Error(String),
}

/// The user anonymous requests run as.
pub fn anonymous_user() -> UserInfo {
    UserInfo {
        name: "system:anonymous".into(),
        groups: vec!["system:unauthenticated".into()],
        ..Default::default()
    }
}

/// Authenticator and authorizer of one server.
pub struct Auth {
    node_name: String,
    x509: Option<Arc<dyn ClientCertVerifier>>,
    token_webhook: bool,
    anonymous: bool,
    mode: KubeletAuthorizationMode,
    reviews: Option<Arc<CachedReviews>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("node_name", &self.node_name)
            .field("x509", &self.x509.is_some())
            .field("token_webhook", &self.token_webhook)
            .field("anonymous", &self.anonymous)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Auth {
    /// The checks `authn`/`authz` ask for; `reviews` answers TokenReviews and
    /// SubjectAccessReviews (the API server client in cluster mode).
    pub fn new(
        node_name: &str,
        authn: &KubeletAuthentication,
        authz: &KubeletAuthorization,
        reviews: Option<Arc<dyn ReviewApi>>,
    ) -> Result<Self, AuthError> {
        let x509 = match &authn.x509.client_ca_file {
            Some(path) => Some(super::tls::client_chain_verifier(super::tls::client_roots(path)?)?),
            None => None,
        };
        let needs_reviews = authn.webhook.enabled || authz.mode == KubeletAuthorizationMode::Webhook;
        let reviews = match (needs_reviews, reviews) {
            (false, _) => None,
            (true, Some(api)) => Some(Arc::new(CachedReviews::new(
                api,
                WebhookTtls {
                    cache_ttl: authn.webhook.cache_ttl,
                    cache_authorized_ttl: authz.webhook.cache_authorized_ttl,
                    cache_unauthorized_ttl: authz.webhook.cache_unauthorized_ttl,
                },
            ))),
            (true, None) if authn.webhook.enabled => return Err(AuthError::NoClient("token webhook authentication")),
            (true, None) => return Err(AuthError::NoClient("webhook authorization")),
        };
        Ok(Self {
            node_name: node_name.to_string(),
            x509,
            token_webhook: authn.webhook.enabled,
            anonymous: authn.anonymous.enabled,
            mode: authz.mode,
            reviews,
        })
    }

    /// The x509 authenticator: `Ok(None)` without a certificate (or CA),
    /// `Err` for one that does not verify.
    fn x509_user(&self, certs: Option<&PeerCerts>) -> Result<Option<UserInfo>, String> {
        let (Some(verifier), Some(PeerCerts(chain))) = (&self.x509, certs) else {
            return Ok(None);
        };
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Ok(None);
        };
        verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(|e| format!("verifying certificate failed: {e}"))?;
        let (_, cert) = x509_parser::parse_x509_certificate(leaf).map_err(|e| format!("bad certificate: {e}"))?;
        let subject = cert.subject();
        let name = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default();
        if name.is_empty() {
            return Ok(None);
        }
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect();
        Ok(Some(UserInfo {
            name: name.to_string(),
            groups,
            ..Default::default()
        }))
    }

    /// The bearer token authenticator: `Ok(None)` without a token.
    async fn token_user(&self, authorization: Option<&str>) -> Result<Option<UserInfo>, String> {
        let (true, Some(reviews), Some(header)) = (self.token_webhook, &self.reviews, authorization) else {
            return Ok(None);
        };
        let mut parts = header.trim().splitn(3, ' ');
        let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
            return Ok(None);
        };
        if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
            return Ok(None);
        }
        match reviews.token(token).await {
            Ok(Some(user)) => Ok(Some(user)),
            Ok(None) => Err("invalid bearer token".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Who sent the request: `Ok(None)` → 401, `Err` → 401 (logged).
    pub async fn authenticate(
        &self,
        certs: Option<&PeerCerts>,
        authorization: Option<&str>,
    ) -> Result<Option<UserInfo>, String> {
        let mut errors = vec![];
        let found = match self.x509_user(certs) {
            Ok(Some(user)) => Some(user),
            Ok(None) => None,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let found = match found {
            Some(user) => Some(user),
            None => match self.token_user(authorization).await {
                Ok(user) => user,
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
        };
        if let Some(mut user) = found {
            if !user
                .groups
                .iter()
                .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
            {
                user.groups.push("system:authenticated".into());
            }
            return Ok(Some(user));
        }
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        Ok(self.anonymous.then(anonymous_user))
    }

    /// Whether `user` may `method path`.
    pub async fn authorize(&self, user: &UserInfo, method: &str, path: &str) -> Result<(), Denial> {
        let attrs = request_attributes(&self.node_name, method, path);
        let reviews = match (self.mode, &self.reviews) {
            (KubeletAuthorizationMode::AlwaysAllow, _) => return Ok(()),
            (KubeletAuthorizationMode::Webhook, Some(r)) => r,
            (KubeletAuthorizationMode::Webhook, None) => {
                return Err(Denial::Error(format!(
                    "Authorization error (user={}, verb={}, resource=nodes, subresource={})",
                    user.name, attrs[0].verb, attrs[0].subresource
                )));
            }
        };
        for attr in &attrs {
            match reviews.allowed(user, attr).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, user = %user.name, verb = %attr.verb, subresource = attr.subresource, "Authorization error");
                    return Err(Denial::Error(format!(
                        "Authorization error (user={}, verb={}, resource={}, subresource={})",
                        user.name, attr.verb, attr.resource, attr.subresource
                    )));
                }
            }
        }
        let subresources: Vec<&str> = attrs.iter().map(|a| a.subresource).collect();
        tracing::debug!(user = %user.name, verb = %attrs[0].verb, ?subresources, "Forbidden");
        Err(Denial::Forbidden(format!(
            "Forbidden (user={}, verb={}, resource={}, subresource(s)=[{}])\n",
            user.name,
            attrs[0].verb,
            attrs[0].resource,
            subresources.join(" ")
        )))
    }

    /// Authenticate, then authorize.
    pub async fn check(
        &self,
        certs: Option<&PeerCerts>,
        authorization: Option<&str>,
        method: &str,
        path: &str,
    ) -> Result<UserInfo, Denial> {
        let user = match self.authenticate(certs, authorization).await {
            Ok(Some(user)) => user,
            Ok(None) => return Err(Denial::Unauthorized),
            Err(e) => {
                tracing::info!(error = %e, path, "Unable to authenticate the request due to an error");
                return Err(Denial::Unauthorized);
            }
        };
        self.authorize(&user, method, path).await?;
        Ok(user)
    }
}

#[cfg(test)]
mod tests;
