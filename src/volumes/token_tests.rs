use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::authentication::v1::TokenRequestStatus;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use super::*;

/// Issues `token-<n>` and records the requests; fails while `fail` is set.
#[derive(Default)]
struct Issuer {
    issued: AtomicUsize,
    requests: Mutex<Vec<(String, String, TokenRequest)>>,
    fail: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl ObjectSource for Issuer {
    async fn config_map(&self, _: &str, _: &str) -> Result<ConfigMap, ObjectError> {
        Err(ObjectError::Other("unused".into()))
    }
    async fn secret(&self, _: &str, _: &str) -> Result<Secret, ObjectError> {
        Err(ObjectError::Other("unused".into()))
    }
    async fn token(&self, ns: &str, sa: &str, req: TokenRequest) -> Result<TokenRequest, ObjectError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(ObjectError::Other("API server down".into()));
        }
        self.requests
            .lock()
            .unwrap()
            .push((ns.to_string(), sa.to_string(), req.clone()));
        let n = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(TokenRequest {
            status: Some(TokenRequestStatus {
                token: Some(format!("token-{n}")),
                expiration_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                )),
            }),
            ..req
        })
    }
    fn has_client(&self) -> bool {
        true
    }
}

fn pod() -> Pod {
    serde_yaml_ng::from_str(
        "metadata: {name: web, namespace: prod, uid: u1}\nspec: {serviceAccountName: builder, containers: [{name: c}]}",
    )
    .unwrap()
}

fn projection(secs: i64) -> ServiceAccountTokenProjection {
    ServiceAccountTokenProjection {
        path: "token".into(),
        expiration_seconds: Some(secs),
        audience: Some("vault".into()),
    }
}

#[test]
fn refresh_at_80_percent_or_after_a_day() {
    let issued = Instant::now();
    let hour = Duration::from_secs(3600);
    assert!(!requires_refresh(issued, issued, hour, Duration::ZERO));
    assert!(!requires_refresh(
        issued + Duration::from_secs(2880),
        issued,
        hour,
        Duration::ZERO
    ));
    assert!(requires_refresh(
        issued + Duration::from_secs(2881),
        issued,
        hour,
        Duration::ZERO
    ));
    // A jitter makes it earlier, never later.
    assert!(requires_refresh(
        issued + Duration::from_secs(2875),
        issued,
        hour,
        Duration::from_secs(10)
    ));
    // A week-long token is renewed after 24 h, not at 80% of a week.
    let week = Duration::from_secs(7 * 24 * 3600);
    assert!(!requires_refresh(
        issued + Duration::from_secs(86_399),
        issued,
        week,
        Duration::ZERO
    ));
    assert!(requires_refresh(
        issued + Duration::from_secs(86_401),
        issued,
        week,
        Duration::ZERO
    ));
}

#[tokio::test(start_paused = true)]
async fn tokens_are_bound_to_the_pod_cached_and_renewed_on_time() {
    let issuer = Issuer::default();
    let tokens = TokenManager::default();
    let (p, tp) = (pod(), projection(3600));
    assert_eq!(tokens.get(&issuer, &p, &tp).await.unwrap(), "token-1");
    {
        let reqs = issuer.requests.lock().unwrap();
        let (ns, sa, req) = &reqs[0];
        assert_eq!((ns.as_str(), sa.as_str()), ("prod", "builder"));
        let spec = req.spec.as_ref().unwrap();
        assert_eq!(spec.audiences.as_deref(), Some(&["vault".to_string()][..]));
        let bound = spec.bound_object_ref.clone().unwrap();
        assert_eq!(bound.name.as_deref(), Some("web"));
        assert_eq!(bound.uid.as_deref(), Some("u1"));
    }
    tokio::time::advance(Duration::from_secs(2800)).await;
    assert_eq!(
        tokens.get(&issuer, &p, &tp).await.unwrap(),
        "token-1",
        "cached until 80%"
    );
    tokio::time::advance(Duration::from_secs(81)).await; // 2881 s: past 80% (jitter only makes it earlier)
    assert_eq!(tokens.get(&issuer, &p, &tp).await.unwrap(), "token-2");

    // A failed renewal serves the old token until it expires.
    issuer.fail.store(true, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(2900)).await;
    assert_eq!(tokens.get(&issuer, &p, &tp).await.unwrap(), "token-2");
    tokio::time::advance(Duration::from_secs(800)).await;
    assert!(tokens.get(&issuer, &p, &tp).await.is_err(), "expired and not renewable");

    tokens.forget_pod("u1");
    assert!(tokens.is_empty());
}
