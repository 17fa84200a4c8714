//! Service account tokens for projected volumes (upstream
//! `pkg/kubelet/token`): a TokenRequest bound to the pod
//! (`boundObjectRef` kind Pod with its name and UID), with the projection's
//! audience and `expirationSeconds` (default 3600), cached per (service
//! account, audience, lifetime, pod) and renewed when
//! [`requires_refresh`] says so: past 80% of its lifetime or older than
//! 24 h (each minus a jitter of up to 10 s). A failed renewal keeps serving
//! the cached token until it expires.
//!
//! The cache lives outside the volume manager actor (a shared handle), so a
//! restarted manager does not request every token again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ServiceAccountTokenProjection};
use tokio::time::Instant;

use super::objects::{ObjectError, ObjectSource};

/// Upstream's `maxTTL`: a token older than this is renewed whatever its lifetime.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// Upstream's `maxJitter`.
pub const MAX_JITTER: Duration = Duration::from_secs(10);
/// `expirationSeconds` when the projection leaves it unset (API defaulting).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// Upstream `requiresRefresh`: `now` past `issued + 24h − jitter`, or past
/// `expires − 20% of the lifetime − jitter`.
///
/// ```
/// use std::time::Duration;
/// use actlet::volumes::token::requires_refresh;
/// let issued = tokio::time::Instant::now();
/// let life = Duration::from_secs(3600);
/// let at = |secs| issued + Duration::from_secs(secs);
/// assert!(!requires_refresh(at(2879), issued, life, Duration::ZERO));
/// assert!(requires_refresh(at(2881), issued, life, Duration::ZERO)); // 80% of 3600 s = 2880 s
/// ```
pub fn requires_refresh(now: Instant, issued: Instant, lifetime: Duration, jitter: Duration) -> bool {
    let expires = issued + lifetime;
    if now > (issued + MAX_TTL).checked_sub(jitter).unwrap_or(issued) {
        return true;
    }
    let refresh_at = expires
        .checked_sub(lifetime / 5)
        .and_then(|t| t.checked_sub(jitter))
        .unwrap_or(issued);
    now > refresh_at
}

/// What a token is cached under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct TokenKey {
    namespace: String,
    service_account: String,
    audience: String,
    expiration_seconds: i64,
    pod_uid: String,
}

#[derive(Clone, Debug)]
struct Cached {
    token: String,
    issued: Instant,
    lifetime: Duration,
}

/// The shared token cache.
#[derive(Clone, Debug, Default)]
pub struct TokenManager {
    cache: Arc<Mutex<HashMap<TokenKey, Cached>>>,
}

/// The TokenRequest upstream's projected volume sends for `pod`.
///
/// ```
/// use k8s_openapi::api::core::v1::ServiceAccountTokenProjection;
/// let pod = actlet::testing::PodBuilder::new("web").uid("u1").build();
/// let tp = ServiceAccountTokenProjection { path: "token".into(), expiration_seconds: Some(3607), ..Default::default() };
/// let tr = actlet::volumes::token::token_request(&pod, &tp);
/// let spec = tr.spec.unwrap();
/// let bound = spec.bound_object_ref.unwrap();
/// assert_eq!((bound.kind.as_deref(), bound.uid.as_deref()), (Some("Pod"), Some("u1")));
/// assert_eq!(spec.expiration_seconds, Some(3607));
/// assert_eq!(spec.audiences, None); // the API server's own audience
/// ```
pub fn token_request(pod: &Pod, tp: &ServiceAccountTokenProjection) -> TokenRequest {
    let audiences: Vec<String> = tp.audience.iter().filter(|a| !a.is_empty()).cloned().collect();
    TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: (!audiences.is_empty()).then_some(audiences),
            expiration_seconds: Some(tp.expiration_seconds.unwrap_or(DEFAULT_EXPIRATION_SECONDS)),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            }),
        }),
        ..Default::default()
    }
}

impl TokenManager {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TokenKey, Cached>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token for `pod`'s projection `tp`: cached, or requested from `source`.
    pub async fn get(
        &self,
        source: &dyn ObjectSource,
        pod: &Pod,
        tp: &ServiceAccountTokenProjection,
    ) -> Result<String, ObjectError> {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let sa = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into());
        let req = token_request(pod, tp);
        let key = TokenKey {
            namespace: namespace.clone(),
            service_account: sa.clone(),
            audience: tp.audience.clone().unwrap_or_default(),
            expiration_seconds: req
                .spec
                .as_ref()
                .and_then(|s| s.expiration_seconds)
                .unwrap_or(DEFAULT_EXPIRATION_SECONDS),
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
        };
        let now = Instant::now();
        let cached = self.lock().get(&key).cloned();
        let jitter = Duration::from_secs_f64(rand::random::<f64>() * MAX_JITTER.as_secs_f64());
        if let Some(c) = &cached
            && !requires_refresh(now, c.issued, c.lifetime, jitter)
        {
            return Ok(c.token.clone());
        }
        match source.token(&namespace, &sa, req).await {
            Ok(tr) => {
                let seconds = tr
                    .spec
                    .as_ref()
                    .and_then(|s| s.expiration_seconds)
                    .unwrap_or(key.expiration_seconds)
                    .max(1);
                let token = tr.status.and_then(|s| s.token).unwrap_or_default();
                tracing::debug!(namespace = %namespace, service_account = %sa, seconds, "service account token issued");
                self.lock().insert(
                    key,
                    Cached {
                        token: token.clone(),
                        issued: now,
                        lifetime: Duration::from_secs(seconds as u64),
                    },
                );
                Ok(token)
            }
            Err(e) => match cached {
                Some(c) if now < c.issued + c.lifetime => {
                    tracing::warn!(error = %e, "could not renew service account token; serving the cached one");
                    Ok(c.token)
                }
                _ => Err(e),
            },
        }
    }

    /// Drops the tokens bound to the pod `uid` (the pod is gone).
    pub fn forget_pod(&self, uid: &str) {
        self.lock().retain(|k, _| k.pod_uid != uid);
    }

    /// Tokens cached now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no token is cached.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
