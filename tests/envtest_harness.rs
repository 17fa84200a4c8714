//! The envtest harness itself (tests/support/envtest.rs) against the real kube-apiserver:
//! identities and what the Node authorizer / NodeRestriction make of them, the namespace
//! helper, extra flags, the PKI as a CSR signer, and the clean-up on drop.
//! SKIPPED (loudly) without `KUBEBUILDER_ASSETS`.

#[path = "support/envtest.rs"]
mod envtest;

use std::path::Path;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service, ServiceAccount};
use kube::Api;
use kube::api::PostParams;

fn run<F: std::future::Future<Output = ()>>(f: impl FnOnce() -> F) {
    actix_rt::System::new().block_on(f());
}

fn node(name: &str) -> Node {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap_or_else(|e| panic!("{e}"))
}

fn status(r: Result<impl Sized, kube::Error>) -> u16 {
    match r {
        Ok(_) => 200,
        Err(kube::Error::Api(e)) => e.code,
        Err(e) => panic!("not an API answer: {e}"),
    }
}

#[test]
fn identities_namespace_helper_flags_csr_signing_and_cleanup() {
    run(|| async {
        let Some(env) = envtest::EnvTest::builder()
            .arg("--service-node-port-range=20000-20100")
            .start()
            .await
        else {
            return;
        };
        let admin = env.admin_client().await;
        let pp = PostParams::default();

        // A node may register itself but no other node (NodeRestriction), and may not read
        // another node's Lease (Node authorizer): it really is system:node:n1.
        let n1 = env.node_client("n1").await;
        assert_eq!(status(Api::<Node>::all(n1.clone()).create(&pp, &node("n1")).await), 200);
        assert_eq!(status(Api::<Node>::all(n1.clone()).create(&pp, &node("n2")).await), 403);
        let other_lease = Api::<Lease>::namespaced(n1.clone(), "kube-node-lease").get("n2").await;
        assert_eq!(status(other_lease), 403);
        assert_eq!(status(Api::<Node>::all(admin.clone()).get("n1").await), 200);

        // The namespace helper does kube-controller-manager's part; pods are then admitted
        // (with the service-account token volume that needs both).
        env.prepare_namespace("ns1").await;
        let sa = Api::<ServiceAccount>::namespaced(admin.clone(), "ns1")
            .get("default")
            .await;
        assert_eq!(status(sa), 200);
        let cm = Api::<ConfigMap>::namespaced(admin.clone(), "ns1")
            .get("kube-root-ca.crt")
            .await
            .unwrap_or_else(|e| panic!("kube-root-ca.crt: {e}"));
        let ca = cm.data.unwrap_or_default().remove("ca.crt");
        assert_eq!(ca.as_deref(), Some(env.pki().ca_cert_pem().as_str()));
        env.prepare_namespace("ns1").await; // idempotent
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let created = Api::<Pod>::namespaced(admin.clone(), "ns1")
            .create(&pp, &pod)
            .await
            .unwrap_or_else(|e| panic!("create pod: {e}"));
        let volumes = created.spec.and_then(|s| s.volumes).unwrap_or_default();
        assert!(
            volumes.iter().any(|v| v.name.starts_with("kube-api-access-")),
            "{volumes:?}"
        );

        // Extra flags reach the API server: a NodePort outside the default 30000-32767.
        let svc: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 20050}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            status(Api::<Service>::namespaced(admin.clone(), "ns1").create(&pp, &svc).await),
            200
        );

        // The PKI signs a CSR as the CSR signer would; the certificate authenticates.
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "system:nodes");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "system:node:n3");
        let csr = params.serialize_request(&key).unwrap_or_else(|e| panic!("{e}"));
        let csr_pem = csr.pem().unwrap_or_else(|e| panic!("{e}"));
        let cert_pem = env.pki().sign_csr(&csr_pem).unwrap_or_else(|e| panic!("sign: {e}"));
        let pair = envtest::CertPair {
            cert_pem,
            key_pem: key.serialize_pem(),
        };
        let n3 = env
            .client_from(&env.write_kubeconfig("n3.kubeconfig", "n3", &pair))
            .await;
        assert_eq!(status(Api::<Node>::all(n3.clone()).create(&pp, &node("n3")).await), 200);
        assert_eq!(status(Api::<Node>::all(n3).create(&pp, &node("n4")).await), 403);

        // Drop stops both processes and removes the temp dir.
        let (etcd, apiserver) = env.pids();
        let dir = env.dir().to_path_buf();
        drop(env);
        for pid in [etcd, apiserver] {
            let pid = pid.unwrap_or_else(|| panic!("no pid"));
            assert!(!Path::new(&format!("/proc/{pid}")).exists(), "pid {pid} still there");
        }
        assert!(!dir.exists(), "{} not removed", dir.display());
    });
}

#[test]
fn a_panicking_test_still_stops_both_processes_and_removes_the_dir() {
    if std::env::var_os("KUBEBUILDER_ASSETS").is_none() {
        envtest_skipped();
        return;
    }
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(|| async move {
            let env = envtest::EnvTest::start().await.unwrap_or_else(|| panic!("started"));
            *record.lock().unwrap_or_else(|e| e.into_inner()) = Some((env.pids(), env.dir().to_path_buf()));
            panic!("the test fails while the API server runs");
        })
    }));
    assert!(outcome.is_err(), "the inner test panicked");
    let ((etcd, apiserver), dir) = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| panic!("never started"));
    for pid in [etcd, apiserver] {
        let pid = pid.unwrap_or_else(|| panic!("no pid"));
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "pid {pid} still there");
    }
    assert!(!dir.exists(), "{} not removed", dir.display());
}

/// The harness's own SKIPPED line, for a test that checks the variable itself.
fn envtest_skipped() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let rt = rt.unwrap_or_else(|e| panic!("{e}"));
    assert!(rt.block_on(envtest::EnvTest::start()).is_none());
}
