//! Client certificate rotation (`rotateCertificates`) against a real
//! kube-apiserver (`KUBEBUILDER_ASSETS`, tests/support/envtest.rs; SKIPPED
//! loudly when unset). TLS bootstrap issues a 12 s client certificate (the
//! test plays approver and signer); the kubelet's `client-cert-manager`
//! asks for a new one at 70–90 % of that, as `system:node:<node>` with the
//! current certificate. The manager is killed while it waits on that CSR:
//! the rebuilt one asks again. Once issued, the pair in the cert dir is
//! replaced and the bulk and heartbeat clients are swapped. Then the first
//! certificate expires and the API server is restarted (every connection
//! drops): the node keeps working — its Lease is renewed and a new pod is
//! run and reported — so new connections authenticate with the new
//! certificate (with the old one the API server would answer 401).

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::time::Duration;

use actlet::actors::supervisor::{ChildState, KillChild};
use actlet::certificate::bootstrap::load_client_cert;
use actlet::certificate::client_manager::RotationTarget;
use actlet::cluster::Qps;
use actlet::cri::mock::{Behaviour, MockRuntime};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, PostParams};

/// Polls `f` every 100 ms until it returns `Some`, or panics after `timeout`.
async fn wait<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Pending client CSRs of `node`, oldest first.
async fn pending_client_csrs(api: &Api<CertificateSigningRequest>, node: &str) -> Vec<CertificateSigningRequest> {
    let user = format!("system:node:{node}");
    let mut list: Vec<_> = api
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            c.spec.signer_name == "kubernetes.io/kube-apiserver-client-kubelet"
                && c.spec.username.as_deref() == Some(user.as_str())
                && c.status.as_ref().and_then(|s| s.conditions.as_ref()).is_none()
        })
        .collect();
    list.sort_by_key(|c| c.metadata.creation_timestamp.clone().map(|t| t.0));
    list
}

fn manager_restarts(node: &cluster::ClusterNode) -> Option<u64> {
    let info = node.kubelet.tree().get("root/client-cert-manager")?;
    (info.state == ChildState::Running).then_some(info.restarts)
}

fn leaf_not_after(pem: &str) -> i64 {
    actlet::certificate::store::leaf_validity(pem)
        .unwrap_or_else(|e| panic!("{e}"))
        .not_after
}

#[test]
fn the_client_certificate_is_rotated_and_new_connections_use_it() {
    cluster::run(|| async {
        let Some(env) = envtest::EnvTest::start().await else {
            return;
        };
        env.prepare_namespace("default").await;
        let node_name = cluster::NODE;
        let admin = env.admin_client().await;
        let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());

        // TLS bootstrap with a node-bootstrapper identity, a 12 s certificate.
        let binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kubelet-bootstrap"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers"}]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(admin.clone())
            .create(&PostParams::default(), &binding)
            .await
            .unwrap_or_else(|e| panic!("binding: {e}"));
        let boot = env.user_kubeconfig(
            "bootstrap.kubeconfig",
            "system:bootstrap:abcdef",
            &["system:bootstrappers"],
        );
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (kubeconfig, cert_dir) = (dir.path().join("kubelet.conf"), dir.path().join("pki"));
        let signer = async {
            let first = wait("the bootstrap CSR", Duration::from_secs(30), || async {
                csrs.list(&ListParams::default())
                    .await
                    .ok()?
                    .items
                    .into_iter()
                    .find(|c| c.spec.username.as_deref() == Some("system:bootstrap:abcdef"))
            })
            .await;
            let name = first.metadata.name.unwrap_or_default();
            env.approve_and_sign_csr_for(&name, Some(Duration::from_secs(12)))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let booted = load_client_cert(&kubeconfig, &boot, &cert_dir, node_name, Duration::from_secs(30));
        let (booted, first_cert) = tokio::join!(booted, signer);
        booted.unwrap_or_else(|e| panic!("bootstrap: {e}"));
        let first_expiry = leaf_not_after(&first_cert);

        // The clients as the actlet binary builds them, made rotatable.
        let target = RotationTarget {
            node_name: node_name.to_string(),
            cert_dir: cert_dir.clone(),
            kubeconfig: kubeconfig.clone(),
            qps: Qps::default(),
            heartbeat_timeout: Duration::from_secs(10),
        };
        let bulk = actlet::cluster::client_from_kubeconfig(&kubeconfig, Qps::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let heartbeat = actlet::cluster::heartbeat_client_from_kubeconfig(&kubeconfig, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (bulk, heartbeat, rotation) = target.wrap(bulk, heartbeat);
        let rotation = rotation.unwrap_or_else(|| panic!("the bootstrap kubeconfig reads the cert dir's pair"));
        let slots = (rotation.bulk.clone(), rotation.heartbeat.clone());
        let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
        let node_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let node = cluster::start_node_with(bulk, node_dir, mock, move |b| {
            b.heartbeat_client(heartbeat).client_rotation(rotation)
        });

        // The renewal CSR, sent as the node; the manager dies waiting on it.
        let renewal = wait("the renewal CSR", Duration::from_secs(30), || async {
            pending_client_csrs(&csrs, node_name).await.into_iter().next()
        })
        .await;
        let first_renewal = renewal.metadata.name.clone().unwrap_or_default();
        node.kubelet
            .root
            .addr()
            .send(KillChild("client-cert-manager".into()))
            .await
            .expect("root reachable")
            .unwrap_or_else(|e| panic!("kill client-cert-manager: {e}"));
        wait("the manager rebuilt", Duration::from_secs(30), || async {
            (manager_restarts(&node)? == 1).then_some(())
        })
        .await;
        let again = wait("a CSR from the rebuilt manager", Duration::from_secs(30), || async {
            pending_client_csrs(&csrs, node_name)
                .await
                .into_iter()
                .find(|c| c.metadata.name.as_deref() != Some(first_renewal.as_str()))
        })
        .await;
        let renewed = env
            .approve_and_sign_csr_for(
                again.metadata.name.as_deref().unwrap_or_default(),
                Some(Duration::from_secs(600)),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        wait("both clients swapped", Duration::from_secs(30), || async {
            (slots.0.swaps() == 1 && slots.1.swaps() == 1).then_some(())
        })
        .await;
        let current = std::fs::read_to_string(cert_dir.join("kubelet-client-current.pem")).unwrap_or_default();
        assert_eq!(
            leaf_not_after(&current),
            leaf_not_after(&renewed),
            "the cert dir holds the new pair"
        );

        // The first certificate expires; every connection drops.
        let now = chrono::Utc::now().timestamp();
        if now <= first_expiry {
            tokio::time::sleep(Duration::from_secs((first_expiry - now + 1) as u64)).await;
        }
        env.stop_apiserver();
        env.start_apiserver().await;
        let restarted = k8s_openapi::jiff::Timestamp::now();

        let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
        wait(
            "the Lease renewed after the restart",
            Duration::from_secs(40),
            || async {
                let renew = leases.get(node_name).await.ok()?.spec?.renew_time?.0;
                (renew > restarted).then_some(())
            },
        )
        .await;
        let pods: Api<Pod> = Api::namespaced(admin, "default");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "after-rotation"},
            "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "busybox:1.36"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        pods.create(&PostParams::default(), &pod)
            .await
            .unwrap_or_else(|e| panic!("create pod: {e}"));
        wait("the new pod Running in the API", Duration::from_secs(60), || async {
            let p = pods.get("after-rotation").await.ok()?;
            (p.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;
        node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
    });
}
