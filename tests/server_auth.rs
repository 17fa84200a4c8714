//! The kubelet API's authentication and authorization over real HTTPS,
//! one case per test, with upstream's answers: 401 `Unauthorized` when the
//! request cannot be authenticated (no credentials with anonymous off, a
//! client certificate from another CA or expired, a token the TokenReview
//! rejects or that cannot be reviewed), 403 `Forbidden (…)` when the
//! SubjectAccessReview denies, 500 when it cannot be asked.

#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::server::auth::{
    Attributes, KubeletAnonymousAuthentication, KubeletAuthentication, KubeletAuthorization, KubeletAuthorizationMode,
    KubeletWebhookAuthentication, KubeletX509Authentication, ReviewApi, ReviewError, UserInfo,
};
use actlet::server::secure::{ApiServerSettings, SecureServer};
use actlet::server::{ApiState, HealthState, ServerState};
use kubelet_api::{Ca, https};

/// TokenReview: "good-<user>" tokens belong to <user> (group "devs"),
/// "broken" cannot be reviewed, anything else is not authenticated.
/// SubjectAccessReview: allowed for (user, subresource) pairs in `allow`;
/// "sar-down" users make the review fail. Every SAR asked is recorded.
#[derive(Default)]
struct FakeApiServer {
    allow: Vec<(&'static str, &'static str)>,
    asked: Mutex<Vec<(UserInfo, Attributes)>>,
}

#[async_trait::async_trait]
impl ReviewApi for FakeApiServer {
    async fn token_review(&self, token: &str) -> Result<Option<UserInfo>, ReviewError> {
        if token == "broken" {
            return Err(ReviewError {
                review: "TokenReview",
                reason: "connection refused".into(),
            });
        }
        Ok(token.strip_prefix("good-").map(|u| UserInfo {
            name: u.into(),
            groups: vec!["devs".into()],
            ..Default::default()
        }))
    }

    async fn subject_access_review(&self, user: &UserInfo, attrs: &Attributes) -> Result<bool, ReviewError> {
        self.asked.lock().unwrap().push((user.clone(), attrs.clone()));
        if user.name == "sar-down" {
            return Err(ReviewError {
                review: "SubjectAccessReview",
                reason: "connection refused".into(),
            });
        }
        Ok(self
            .allow
            .iter()
            .any(|(u, s)| *u == user.name && *s == attrs.subresource))
    }
}

struct Server {
    addr: SocketAddr,
    ca: Ca,
    fake: Arc<FakeApiServer>,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

/// A kubelet API server on an empty node with the given auth settings.
fn server(anonymous: bool, token_webhook: bool, mode: KubeletAuthorizationMode, fake: FakeApiServer) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("client-ca");
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let state = ServerState {
        pods: Default::default(),
        statuses: Default::default(),
        health: HealthState {
            sync_loop: Default::default(),
            pleg: Default::default(),
            started: tokio::time::Instant::now(),
            sync_loop_threshold: Duration::from_secs(300),
        },
        manifest_errors: Default::default(),
    };
    let api = ApiState {
        node_name: "node-a".into(),
        runtime: Arc::new(actlet::cri::mock::MockRuntime::new()),
        cache: Default::default(),
        spec: serde_json::json!({"num_cores": 2}),
        tree: Default::default(),
        pod_logs_dir: dir.path().join("pods"),
        node_logs_dir: dir.path().join("log"),
        configz: serde_json::json!({"kubeletconfig": {}}),
        metrics: None,
        stats: None,
    };
    let settings = ApiServerSettings {
        tls: Default::default(),
        authentication: KubeletAuthentication {
            x509: KubeletX509Authentication {
                client_ca_file: Some(ca_file),
            },
            webhook: KubeletWebhookAuthentication {
                enabled: token_webhook,
                ..Default::default()
            },
            anonymous: KubeletAnonymousAuthentication { enabled: anonymous },
        },
        authorization: KubeletAuthorization {
            mode,
            ..Default::default()
        },
        root_dir: dir.path().to_path_buf(),
        node_ip: Some("127.0.0.1".into()),
        serving_cert: None,
    };
    let fake = Arc::new(fake);
    let built = SecureServer::build(&settings, state, api, Some(fake.clone())).unwrap();
    let (addr, stop) = actlet::server::secure::spawn("127.0.0.1:0".parse().unwrap(), built).unwrap();
    Server {
        addr,
        ca,
        fake,
        _stop: stop,
        _dir: dir,
    }
}

async fn get(s: &Server, client: &reqwest::Client, path: &str, token: Option<&str>) -> (u16, String) {
    let mut req = client.get(format!("https://{}{path}", s.addr));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn no_credentials_with_anonymous_off_is_401() {
    let s = server(false, true, KubeletAuthorizationMode::AlwaysAllow, Default::default());
    assert_eq!(get(&s, &https(None), "/pods", None).await, (401, "Unauthorized".into()));
}

#[tokio::test]
async fn certificate_from_another_ca_is_401_even_with_anonymous_on() {
    let s = server(true, false, KubeletAuthorizationMode::AlwaysAllow, Default::default());
    let other = Ca::new("other-ca").client("system:node:x", &["system:nodes"], 30);
    assert_eq!(get(&s, &https(Some(&other)), "/pods", None).await.0, 401);
    // the same request without a certificate is anonymous and allowed
    assert_eq!(get(&s, &https(None), "/pods", None).await.0, 200);
}

#[tokio::test]
async fn expired_certificate_is_401() {
    let s = server(false, false, KubeletAuthorizationMode::AlwaysAllow, Default::default());
    let expired = s.ca.client("kube-apiserver", &[], -1);
    assert_eq!(get(&s, &https(Some(&expired)), "/pods", None).await.0, 401);
    let valid = s.ca.client("kube-apiserver", &[], 30);
    let (code, body) = get(&s, &https(Some(&valid)), "/pods", None).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"kind\":\"PodList\""), "{body}");
}

#[tokio::test]
async fn bad_token_is_401_even_with_anonymous_on() {
    let s = server(true, true, KubeletAuthorizationMode::AlwaysAllow, Default::default());
    assert_eq!(
        get(&s, &https(None), "/pods", Some("stolen")).await,
        (401, "Unauthorized".into())
    );
    assert_eq!(get(&s, &https(None), "/pods", Some("good-alice")).await.0, 200);
}

#[tokio::test]
async fn token_review_that_fails_is_401() {
    let s = server(false, true, KubeletAuthorizationMode::AlwaysAllow, Default::default());
    assert_eq!(get(&s, &https(None), "/healthz", Some("broken")).await.0, 401);
}

#[tokio::test]
async fn tokens_are_ignored_without_the_token_webhook() {
    let s = server(false, false, KubeletAuthorizationMode::AlwaysAllow, Default::default());
    assert_eq!(get(&s, &https(None), "/pods", Some("good-alice")).await.0, 401);
}

#[tokio::test]
async fn sar_denied_is_403_with_upstreams_message() {
    let s = server(false, true, KubeletAuthorizationMode::Webhook, Default::default());
    let (code, body) = get(&s, &https(None), "/stats/summary", Some("good-alice")).await;
    assert_eq!(code, 403);
    assert_eq!(
        body,
        "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[stats])\n"
    );
    let (code, body) = get(&s, &https(None), "/containerLogs/ns/p/c", Some("good-alice")).await;
    assert_eq!(
        (code, body.as_str()),
        (
            403,
            "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])\n"
        )
    );
    for (path, sub) in [
        ("/logs/syslog", "log"),
        ("/metrics", "metrics"),
        ("/metrics/cadvisor", "metrics"),
    ] {
        let (code, body) = get(&s, &https(None), path, Some("good-alice")).await;
        assert_eq!(code, 403, "{path}");
        assert_eq!(
            body,
            format!("Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[{sub}])\n")
        );
    }
}

#[tokio::test]
async fn sar_allowing_proxy_lets_pods_through_and_sees_the_cert_identity() {
    let fake = FakeApiServer {
        allow: vec![("system:kube-apiserver", "proxy")],
        ..Default::default()
    };
    let s = server(false, false, KubeletAuthorizationMode::Webhook, fake);
    let cert = s.ca.client("system:kube-apiserver", &["system:masters"], 30);
    let (code, body) = get(&s, &https(Some(&cert)), "/pods", None).await;
    assert_eq!(code, 200, "{body}");
    let asked = s.fake.asked.lock().unwrap().clone();
    let subresources: Vec<_> = asked.iter().map(|(_, a)| a.subresource).collect();
    assert_eq!(subresources, ["pods", "proxy"], "fine-grained first, then proxy");
    let (user, attrs) = &asked[0];
    assert_eq!(user.name, "system:kube-apiserver");
    assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
    assert_eq!(
        (attrs.verb.as_str(), attrs.resource, attrs.name.as_str()),
        ("get", "nodes", "node-a")
    );
}

#[tokio::test]
async fn anonymous_requests_are_authorized_as_system_anonymous() {
    let s = server(true, false, KubeletAuthorizationMode::Webhook, Default::default());
    let (code, body) = get(&s, &https(None), "/healthz", None).await;
    assert_eq!(code, 403);
    assert!(body.starts_with("Forbidden (user=system:anonymous, verb=get"), "{body}");
    let asked = s.fake.asked.lock().unwrap().clone();
    assert_eq!(asked[0].0.groups, ["system:unauthenticated"]);
}

#[tokio::test]
async fn sar_that_fails_is_500() {
    let s = server(false, true, KubeletAuthorizationMode::Webhook, Default::default());
    let (code, body) = get(&s, &https(None), "/pods", Some("good-sar-down")).await;
    assert_eq!(code, 500);
    assert_eq!(
        body,
        "Authorization error (user=sar-down, verb=get, resource=nodes, subresource=pods)"
    );
}

#[tokio::test]
async fn post_maps_to_create() {
    let fake = FakeApiServer {
        allow: vec![("bob", "proxy")],
        ..Default::default()
    };
    let s = server(false, true, KubeletAuthorizationMode::Webhook, fake);
    let resp = https(None)
        .post(format!("https://{}/run/ns/missing/c?cmd=ls", s.addr))
        .bearer_auth("good-bob")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404, "authorized, then the pod is not found");
    let asked = s.fake.asked.lock().unwrap().clone();
    assert_eq!(asked[0].1.verb, "create");
}
