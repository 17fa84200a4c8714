//! Setting one volume up: the API reads of a volume overlap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use tokio::sync::Notify;

use super::{SetupDeps, set_up};
use crate::kuberuntime::env::EnvContext;
use crate::volumes::objects::{ObjectError, ObjectSource};
use crate::volumes::token::TokenManager;

/// An API whose TokenRequest answers only once the ConfigMap read has
/// begun: a set-up that waits for the token before reading the ConfigMap
/// never finishes.
#[derive(Default)]
struct TokenAfterConfigMap {
    config_map_asked: Notify,
}

#[async_trait::async_trait]
impl ObjectSource for TokenAfterConfigMap {
    async fn config_map(&self, _: &str, name: &str) -> Result<ConfigMap, ObjectError> {
        self.config_map_asked.notify_one();
        Ok(ConfigMap {
            data: Some(BTreeMap::from([("ca.crt".to_string(), format!("ca of {name}"))])),
            ..Default::default()
        })
    }
    async fn secret(&self, _: &str, name: &str) -> Result<Secret, ObjectError> {
        Err(ObjectError::NotFound {
            kind: "secret",
            name: name.into(),
        })
    }
    async fn token(&self, _: &str, _: &str, _: TokenRequest) -> Result<TokenRequest, ObjectError> {
        self.config_map_asked.notified().await;
        Ok(TokenRequest {
            status: Some(TokenRequestStatus {
                token: Some("tok".into()),
                expiration_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_hours(1),
                )),
            }),
            ..Default::default()
        })
    }
    fn has_client(&self) -> bool {
        true
    }
}

/// The projected volume the ServiceAccount admission adds to every API pod.
fn api_pod() -> Pod {
    serde_yaml_ng::from_str(
        r#"
metadata: {name: web, namespace: prod, uid: u1}
spec:
  containers: [{name: c}]
  volumes:
  - name: kube-api-access
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3607}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
"#,
    )
    .unwrap()
}

#[tokio::test]
async fn a_projected_volume_reads_its_token_and_config_map_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let deps = SetupDeps {
        root_dir: dir.path().to_path_buf(),
        objects: Arc::new(TokenAfterConfigMap::default()),
        tokens: TokenManager::default(),
        env: EnvContext::default(),
    };
    let pod = api_pod();
    let volume = &pod.spec.as_ref().unwrap().volumes.as_ref().unwrap()[0];
    let mounted = tokio::time::timeout(Duration::from_secs(10), set_up(&deps, &pod, volume))
        .await
        .expect("the token waited for a ConfigMap read that was never started")
        .expect("set-up failed");
    let read = |f: &str| std::fs::read_to_string(mounted.host_path.join(f)).unwrap();
    assert_eq!(read("token"), "tok");
    assert_eq!(read("ca.crt"), "ca of kube-root-ca.crt");
    assert_eq!(read("namespace"), "prod");
}
