//! The delegated checks: bearer tokens through a TokenReview and requests
//! through SubjectAccessReviews, both asked of the API server with the
//! kubelet's own credentials and cached as upstream does (tokens 2 min,
//! allowed decisions 5 min, denied ones 30 s; errors are not cached).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use super::attributes::{Attributes, UserInfo};

/// A review the API server did not answer.
#[derive(Debug, thiserror::Error)]
#[error("{review}: {reason}")]
pub struct ReviewError {
    /// `TokenReview` or `SubjectAccessReview`.
    pub review: &'static str,
    /// Why.
    pub reason: String,
}

/// Asks the API server (or a test double) for reviews.
#[async_trait::async_trait]
pub trait ReviewApi: Send + Sync + 'static {
    /// The user `token` belongs to, `Ok(None)` when it is not valid.
    async fn token_review(&self, token: &str) -> Result<Option<UserInfo>, ReviewError>;
    /// Whether `user` may do `attrs`.
    async fn subject_access_review(&self, user: &UserInfo, attrs: &Attributes) -> Result<bool, ReviewError>;
}

/// Every review goes out with this deadline (upstream's webhook default is 30 s).
const REVIEW_TIMEOUT: Duration = Duration::from_secs(30);

#[async_trait::async_trait]
impl ReviewApi for kube::Client {
    async fn token_review(&self, token: &str) -> Result<Option<UserInfo>, ReviewError> {
        let fail = |reason: String| ReviewError {
            review: "TokenReview",
            reason,
        };
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(self.clone());
        let answer = tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
            .await
            .map_err(|_| fail("timed out".into()))?
            .map_err(|e| fail(e.to_string()))?;
        let status = answer.status.unwrap_or_default();
        if let Some(err) = status.error.filter(|e| !e.is_empty()) {
            return Err(fail(err));
        }
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        let user = status.user.unwrap_or_default();
        Ok(Some(UserInfo {
            name: user.username.unwrap_or_default(),
            uid: user.uid.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default().into_iter().collect(),
        }))
    }

    async fn subject_access_review(&self, user: &UserInfo, attrs: &Attributes) -> Result<bool, ReviewError> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.clone().into_iter().collect()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(attrs.verb.clone()),
                    group: Some(String::new()),
                    version: Some("v1".into()),
                    resource: Some(attrs.resource.to_string()),
                    subresource: Some(attrs.subresource.to_string()),
                    name: Some(attrs.name.clone()),
                    namespace: Some(String::new()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let fail = |reason: String| ReviewError {
            review: "SubjectAccessReview",
            reason,
        };
        let api: Api<SubjectAccessReview> = Api::all(self.clone());
        let answer = tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
            .await
            .map_err(|_| fail("timed out".into()))?
            .map_err(|e| fail(e.to_string()))?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

/// Values kept until a deadline (tokio time, so tests can pause it).
#[derive(Debug)]
struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

/// Entries above this are pruned of expired ones before inserting.
const CACHE_PRUNE_AT: usize = 4096;

impl<K: std::hash::Hash + Eq + Clone, V: Clone> TtlCache<K, V> {
    fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        let map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key)
            .filter(|(until, _)| *until > Instant::now())
            .map(|(_, v)| v.clone())
    }

    fn put(&self, key: K, value: V, ttl: Duration) {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= CACHE_PRUNE_AT {
            let now = Instant::now();
            map.retain(|_, (until, _)| *until > now);
        }
        map.insert(key, (Instant::now() + ttl, value));
    }
}

/// Cache lifetimes (upstream field names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebhookTtls {
    /// `authentication.webhook.cacheTTL` (2 min).
    pub cache_ttl: Duration,
    /// `authorization.webhook.cacheAuthorizedTTL` (5 min).
    pub cache_authorized_ttl: Duration,
    /// `authorization.webhook.cacheUnauthorizedTTL` (30 s).
    pub cache_unauthorized_ttl: Duration,
}

impl Default for WebhookTtls {
    fn default() -> Self {
        Self {
            cache_ttl: Duration::from_secs(120),
            cache_authorized_ttl: Duration::from_secs(300),
            cache_unauthorized_ttl: Duration::from_secs(30),
        }
    }
}

type SarKey = (String, String, Vec<String>, Attributes);

/// A [`ReviewApi`] with upstream's caches in front.
pub struct CachedReviews {
    api: Arc<dyn ReviewApi>,
    ttls: WebhookTtls,
    tokens: TtlCache<String, Option<UserInfo>>,
    decisions: TtlCache<SarKey, bool>,
}

impl std::fmt::Debug for CachedReviews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedReviews").field("ttls", &self.ttls).finish()
    }
}

impl CachedReviews {
    /// Caches in front of `api`.
    pub fn new(api: Arc<dyn ReviewApi>, ttls: WebhookTtls) -> Self {
        Self {
            api,
            ttls,
            tokens: TtlCache::new(),
            decisions: TtlCache::new(),
        }
    }

    /// [`ReviewApi::token_review`], cached for `cache_ttl` whatever the answer.
    pub async fn token(&self, token: &str) -> Result<Option<UserInfo>, ReviewError> {
        if let Some(hit) = self.tokens.get(&token.to_string()) {
            return Ok(hit);
        }
        let answer = self.api.token_review(token).await?;
        self.tokens.put(token.to_string(), answer.clone(), self.ttls.cache_ttl);
        Ok(answer)
    }

    /// [`ReviewApi::subject_access_review`], allowed answers cached for
    /// `cache_authorized_ttl`, denied ones for `cache_unauthorized_ttl`.
    pub async fn allowed(&self, user: &UserInfo, attrs: &Attributes) -> Result<bool, ReviewError> {
        let key = (user.name.clone(), user.uid.clone(), user.groups.clone(), attrs.clone());
        if let Some(hit) = self.decisions.get(&key) {
            return Ok(hit);
        }
        let allowed = self.api.subject_access_review(user, attrs).await?;
        let ttl = if allowed {
            self.ttls.cache_authorized_ttl
        } else {
            self.ttls.cache_unauthorized_ttl
        };
        self.decisions.put(key, allowed, ttl);
        Ok(allowed)
    }
}
