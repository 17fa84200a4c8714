//! TLS bootstrap (`--bootstrap-kubeconfig`) against a real kube-apiserver
//! (`KUBEBUILDER_ASSETS`, tests/support/envtest.rs; SKIPPED loudly when unset):
//! the kubelet creates its `kubernetes.io/kube-apiserver-client-kubelet` CSR
//! with bootstrap credentials (`system:bootstrappers`, bound to
//! `system:node-bootstrapper` as kubeadm does), the test approves it and,
//! playing the signer, writes `status.certificate` as admin; the written
//! kubeconfig then authenticates as `system:node:<node>`. A denied CSR and a
//! CSR nobody approves (deadline) fail with an error naming the CSR.

#[path = "support/envtest.rs"]
mod envtest;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use actlet::certificate::CertError;
use actlet::certificate::bootstrap::{Bootstrap, kubeconfig_valid, load_client_cert};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};

fn run<F: std::future::Future<Output = ()>>(f: impl FnOnce() -> F) {
    actix_rt::System::new().block_on(f());
}

/// Bootstrap credentials as kubeadm sets them up: a `system:bootstrappers`
/// user allowed to create CSRs (ClusterRole `system:node-bootstrapper`).
async fn bootstrap_kubeconfig(env: &envtest::EnvTest) -> std::path::PathBuf {
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kubelet-bootstrap"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers"}]
    });
    let binding = serde_json::from_value(binding).unwrap_or_else(|e| panic!("{e}"));
    let api: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(env.admin_client().await);
    let _ = api.create(&PostParams::default(), &binding).await;
    env.user_kubeconfig(
        "bootstrap.kubeconfig",
        "system:bootstrap:abcdef",
        &["system:bootstrappers"],
    )
}

/// The first CSR of `signer` requested for `node`, polled as admin.
async fn wait_for_csr(env: &envtest::EnvTest, node: &str) -> CertificateSigningRequest {
    let csrs: Api<CertificateSigningRequest> = Api::all(env.admin_client().await);
    for _ in 0..200 {
        let list = csrs
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let found = list.items.into_iter().find(|c| {
            let req = String::from_utf8_lossy(&c.spec.request.0).into_owned();
            let (_, pem) = x509_parser::pem::parse_x509_pem(req.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            let (_, csr) =
                    <x509_parser::certification_request::X509CertificationRequest as x509_parser::prelude::FromDer<
                        _,
                    >>::from_der(&pem.contents)
                    .unwrap_or_else(|e| panic!("{e}"));
            csr.certification_request_info
                .subject
                .iter_common_name()
                .any(|cn| cn.as_str().ok() == Some(&format!("system:node:{node}")))
                && c.status.as_ref().and_then(|s| s.conditions.as_ref()).is_none()
        });
        if let Some(c) = found {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no CSR for {node} within 20 s");
}

fn paths(env: &envtest::EnvTest, node: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    (
        env.dir().join(format!("{node}/kubelet.conf")),
        env.dir().join(format!("{node}/pki")),
    )
}

#[test]
fn bootstrap_obtains_a_client_certificate_that_authenticates_as_the_node() {
    run(|| async {
        let Some(env) = envtest::EnvTest::start().await else {
            return;
        };
        let boot = bootstrap_kubeconfig(&env).await;
        let (kubeconfig, cert_dir) = paths(&env, "boot-a");
        let kubelet = load_client_cert(&kubeconfig, &boot, &cert_dir, "boot-a", Duration::from_secs(60));
        let signer = async {
            let csr = wait_for_csr(&env, "boot-a").await;
            assert_eq!(csr.spec.signer_name, "kubernetes.io/kube-apiserver-client-kubelet");
            assert_eq!(
                csr.spec.usages.clone().unwrap_or_default(),
                ["digital signature", "client auth"]
            );
            assert_eq!(
                csr.spec.username.as_deref(),
                Some("system:bootstrap:abcdef"),
                "created with the bootstrap credentials"
            );
            let name = csr.metadata.name.clone().unwrap_or_default();
            env.approve_and_sign_csr(&name).await.unwrap_or_else(|e| panic!("{e}"));
            name
        };
        let (outcome, name) = tokio::join!(kubelet, signer);
        assert_eq!(
            outcome.unwrap_or_else(|e| panic!("{e}")),
            Bootstrap::Issued { csr: name }
        );

        // <cert-dir>/kubelet-client-current.pem → a timestamped 0600 file with cert and key
        let current = cert_dir.join("kubelet-client-current.pem");
        let target = std::fs::read_link(&current).unwrap_or_else(|e| panic!("{e}"));
        assert!(target.to_string_lossy().starts_with("kubelet-client-20"), "{target:?}");
        let mode = std::fs::metadata(&current)
            .unwrap_or_else(|e| panic!("{e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&current).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.contains("BEGIN CERTIFICATE") && text.contains("PRIVATE KEY"));
        assert!(kubeconfig_valid(&kubeconfig, chrono::Utc::now().timestamp()));

        // the written kubeconfig authenticates as system:node:boot-a (NodeRestriction lets it create its Node only)
        let client = env.client_from(&kubeconfig).await;
        let nodes: Api<Node> = Api::all(client);
        let own = serde_json::from_value(serde_json::json!({"metadata": {"name": "boot-a"}}))
            .unwrap_or_else(|e| panic!("{e}"));
        nodes
            .create(&PostParams::default(), &own)
            .await
            .unwrap_or_else(|e| panic!("node creates itself: {e}"));
        let other = serde_json::from_value(serde_json::json!({"metadata": {"name": "boot-b"}}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            nodes.create(&PostParams::default(), &other).await.is_err(),
            "not another node"
        );

        // a second start: the kubeconfig is valid, nothing is requested
        let again = load_client_cert(&kubeconfig, &boot, &cert_dir, "boot-a", Duration::from_secs(1)).await;
        assert_eq!(again.unwrap_or_else(|e| panic!("{e}")), Bootstrap::Valid);
    });
}

#[test]
fn denied_and_never_approved_csrs_fail_naming_the_csr() {
    run(|| async {
        let Some(env) = envtest::EnvTest::start().await else {
            return;
        };
        let boot = bootstrap_kubeconfig(&env).await;
        let (kubeconfig, cert_dir) = paths(&env, "denied");
        let kubelet = load_client_cert(&kubeconfig, &boot, &cert_dir, "denied", Duration::from_secs(60));
        let denier = async {
            let csr = wait_for_csr(&env, "denied").await;
            let name = csr.metadata.name.clone().unwrap_or_default();
            let csrs: Api<CertificateSigningRequest> = Api::all(env.admin_client().await);
            let deny = serde_json::json!({"status": {"conditions": [{
                "type": "Denied", "status": "True", "reason": "NotOnTheList", "message": "unknown machine"
            }]}});
            csrs.patch_subresource("approval", &name, &PatchParams::default(), &Patch::Merge(&deny))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            name
        };
        let (outcome, name) = tokio::join!(kubelet, denier);
        match outcome {
            Err(e @ CertError::Refused { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&name) && msg.contains("Denied") && msg.contains("NotOnTheList"),
                    "{msg}"
                );
            }
            other => panic!("expected a denied CSR, got {other:?}"),
        }
        assert!(!Path::new(&kubeconfig).exists(), "no kubeconfig after a denial");

        // nobody approves: the deadline ends the wait with the CSR's name
        let (kubeconfig, cert_dir) = paths(&env, "ignored");
        let outcome = load_client_cert(&kubeconfig, &boot, &cert_dir, "ignored", Duration::from_secs(3)).await;
        match outcome {
            Err(e @ CertError::Timeout { .. }) => assert!(e.to_string().contains("node-csr-"), "{e}"),
            other => panic!("expected a deadline, got {other:?}"),
        }
        assert!(!cert_dir.join("kubelet-client-current.pem").exists());
    });
}
