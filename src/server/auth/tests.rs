use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Tokens "good-<user>" are valid; SARs allowed for users in `allow` on the listed subresources.
#[derive(Default)]
struct Fake {
    allow: Mutex<Vec<(String, &'static str)>>,
    token_calls: AtomicUsize,
    sar_calls: AtomicUsize,
    fail_sar: bool,
}

#[async_trait::async_trait]
impl ReviewApi for Fake {
    async fn token_review(&self, token: &str) -> Result<Option<UserInfo>, ReviewError> {
        self.token_calls.fetch_add(1, Ordering::SeqCst);
        Ok(token.strip_prefix("good-").map(|u| UserInfo {
            name: u.into(),
            groups: vec!["team".into()],
            ..Default::default()
        }))
    }

    async fn subject_access_review(&self, user: &UserInfo, attrs: &Attributes) -> Result<bool, ReviewError> {
        self.sar_calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_sar {
            return Err(ReviewError {
                review: "SubjectAccessReview",
                reason: "connection refused".into(),
            });
        }
        let allow = self.allow.lock().unwrap();
        Ok(allow.iter().any(|(u, s)| *u == user.name && *s == attrs.subresource))
    }
}

fn auth(fake: Arc<Fake>, webhook_authn: bool, anonymous: bool, mode: KubeletAuthorizationMode) -> Auth {
    let authn = KubeletAuthentication {
        webhook: KubeletWebhookAuthentication {
            enabled: webhook_authn,
            ..Default::default()
        },
        anonymous: KubeletAnonymousAuthentication { enabled: anonymous },
        ..Default::default()
    };
    let authz = KubeletAuthorization {
        mode,
        ..Default::default()
    };
    Auth::new("node-a", &authn, &authz, Some(fake)).unwrap()
}

#[tokio::test(start_paused = true)]
async fn token_reviews_are_cached_for_the_ttl_both_ways() {
    let fake = Arc::new(Fake::default());
    let a = auth(fake.clone(), true, false, KubeletAuthorizationMode::AlwaysAllow);
    let user = a.authenticate(None, Some("Bearer good-alice")).await.unwrap().unwrap();
    assert_eq!(user.name, "alice");
    assert_eq!(user.groups, vec!["team", "system:authenticated"]);
    assert!(a.authenticate(None, Some("Bearer bad")).await.is_err());
    a.authenticate(None, Some("bearer good-alice")).await.unwrap();
    assert!(a.authenticate(None, Some("Bearer bad")).await.is_err());
    assert_eq!(
        fake.token_calls.load(Ordering::SeqCst),
        2,
        "second answers come from the cache"
    );
    tokio::time::advance(Duration::from_secs(121)).await;
    a.authenticate(None, Some("Bearer good-alice")).await.unwrap();
    assert_eq!(fake.token_calls.load(Ordering::SeqCst), 3, "expired after 2 min");
}

#[tokio::test(start_paused = true)]
async fn malformed_or_missing_tokens_are_not_authentication_attempts() {
    let fake = Arc::new(Fake::default());
    let a = auth(fake.clone(), true, true, KubeletAuthorizationMode::AlwaysAllow);
    for header in [None, Some("Basic abc"), Some("Bearer"), Some("Bearer  ")] {
        let user = a.authenticate(None, header).await.unwrap().unwrap();
        assert_eq!(user, anonymous_user(), "{header:?}");
    }
    assert_eq!(fake.token_calls.load(Ordering::SeqCst), 0);
    // a bad token is a 401 even with anonymous access on
    assert!(a.authenticate(None, Some("Bearer nope")).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn fine_grained_subresource_falls_back_to_proxy() {
    let fake = Arc::new(Fake::default());
    let a = auth(fake.clone(), true, false, KubeletAuthorizationMode::Webhook);
    let bob = a.authenticate(None, Some("Bearer good-bob")).await.unwrap().unwrap();
    let e = a.authorize(&bob, "GET", "/pods").await.unwrap_err();
    assert_eq!(
        e,
        Denial::Forbidden("Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n".into())
    );
    fake.allow.lock().unwrap().push(("bob".into(), "proxy"));
    // the denial of "pods" is cached 30 s, "proxy" was denied too: wait them out
    tokio::time::advance(Duration::from_secs(31)).await;
    a.authorize(&bob, "GET", "/pods").await.unwrap();
    assert!(
        a.authorize(&bob, "GET", "/stats/summary").await.is_err(),
        "stats has no proxy fallback"
    );
    let calls = fake.sar_calls.load(Ordering::SeqCst);
    a.authorize(&bob, "GET", "/pods").await.unwrap();
    assert_eq!(fake.sar_calls.load(Ordering::SeqCst), calls, "decisions are cached");
}

#[tokio::test(start_paused = true)]
async fn failed_review_is_an_authorization_error() {
    let fake = Arc::new(Fake {
        fail_sar: true,
        ..Default::default()
    });
    let a = auth(fake, false, true, KubeletAuthorizationMode::Webhook);
    let e = a.check(None, None, "POST", "/exec/ns/p/c").await.unwrap_err();
    assert_eq!(
        e,
        Denial::Error(
            "Authorization error (user=system:anonymous, verb=create, resource=nodes, subresource=proxy)".into()
        )
    );
}

#[test]
fn webhook_modes_need_a_client() {
    let authz = KubeletAuthorization {
        mode: KubeletAuthorizationMode::Webhook,
        ..Default::default()
    };
    let e = Auth::new("n", &KubeletAuthentication::default(), &authz, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "webhook authorization needs an API server client (--kubeconfig)"
    );
    assert!(
        Auth::new(
            "n",
            &KubeletAuthentication::default(),
            &KubeletAuthorization::default(),
            None
        )
        .is_ok()
    );
    assert_eq!("Webhook".parse(), Ok(KubeletAuthorizationMode::Webhook));
    assert!("RBAC".parse::<KubeletAuthorizationMode>().is_err());
}
