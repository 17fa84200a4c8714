//! `serverTLSBootstrap` (`--rotate-server-certificates`) against a real
//! kube-apiserver (`KUBEBUILDER_ASSETS`, tests/support/envtest.rs; SKIPPED
//! loudly when unset): actlet asks for its 10250 certificate with a
//! `kubernetes.io/kubelet-serving` CSR under its node credentials; until the
//! CSR is issued no TLS handshake succeeds; the issued certificate (the test
//! plays approver and signer, with a 40 s lifetime) is served at once, and
//! before it expires actlet asks again and serves the renewed one — the
//! same process, never restarted. The runtime is `actlet mock-cri`.
//! The manager actor killed mid-flight (waiting on its CSR, then serving)
//! is rebuilt: the served certificate never drops, a pending request is
//! asked again, a valid stored pair is not.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use kube::api::ListParams;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// A child process killed (by PID) when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn log_tail(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().rev().take(30).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// The leaf certificate 127.0.0.1:`port` serves, verified against `ca_pem`
/// for the IP SAN 127.0.0.1; `Err` when no handshake succeeds.
async fn served_cert(port: u16, ca_pem: String) -> Result<Vec<u8>, String> {
    tokio::task::spawn_blocking(move || {
        let mut roots = rustls::RootCertStore::empty();
        let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| e.to_string())?;
        roots.add(ca).map_err(|e| e.to_string())?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
        let mut conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
        let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        sock.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(|e| e.to_string())?;
        }
        let _ = sock.flush();
        let leaf = conn
            .peer_certificates()
            .and_then(|c| c.first())
            .ok_or("no certificate")?;
        Ok(leaf.to_vec())
    })
    .await
    .map_err(|e| e.to_string())?
}

fn der_of(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
}

/// The kubelet-serving CSRs of `node`, by creation order.
async fn serving_csrs(api: &Api<CertificateSigningRequest>, node: &str) -> Vec<CertificateSigningRequest> {
    let mut list: Vec<_> = api
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            c.spec.signer_name == "kubernetes.io/kubelet-serving"
                && c.spec.username.as_deref() == Some(format!("system:node:{node}").as_str())
        })
        .collect();
    list.sort_by_key(|c| c.metadata.creation_timestamp.clone().map(|t| t.0));
    list
}

async fn wait<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    within: Duration,
    log: &Path,
    mut f: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; actlet log:\n{}",
            log_tail(log)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_certificate_is_issued_by_the_cluster_and_rotated_while_serving() {
    let Some(env) = envtest::EnvTest::start().await else {
        return;
    };
    let node = format!("serving-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let sock = format!("unix://{}", dir.path().join("mock.sock").display());
    let _mock = Proc(
        Command::new(env!("CARGO_BIN_EXE_actlet"))
            .args(["mock-cri", "--listen", &sock])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let port = free_port();
    let log = dir.path().join("actlet.log");
    let cert_dir = dir.path().join("pki");
    let mut actlet = Proc(
        Command::new(env!("CARGO_BIN_EXE_actlet"))
            .arg("--kubeconfig")
            .arg(env.node_kubeconfig(&node))
            // Eviction runs on the real node stats, but no test here may depend on
            // how full the host disk is (upstream defaults evict at 10-15% free, and
            // a CI machine full of build output once had under 1% of 252 GiB free).
            .arg("--eviction-hard=memory.available<100Mi,nodefs.available<64Mi,imagefs.available<64Mi")
            .args(["--hostname-override", &node, "--node-ip", "127.0.0.1"])
            .args(["--container-runtime-endpoint", &sock])
            .arg("--root-dir")
            .arg(dir.path().join("root"))
            .arg("--cert-dir")
            .arg(&cert_dir)
            .args(["--read-only-port", "0", "--healthz-port", "0", "--address", "127.0.0.1"])
            .args(["--port", &port.to_string(), "--rotate-server-certificates"])
            .env("RUST_LOG", "info,actlet=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let csrs: Api<CertificateSigningRequest> = Api::all(env.admin_client().await);
    let ca = std::fs::read_to_string(env.pki().ca_cert_path()).unwrap();

    // The request: signer, usages and the node's identity and addresses.
    let first = wait("the serving CSR", Duration::from_secs(60), &log, || async {
        serving_csrs(&csrs, &node).await.into_iter().next()
    })
    .await;
    let usages = first.spec.usages.clone().unwrap_or_default();
    assert_eq!(usages, ["digital signature", "server auth"]);
    let request = String::from_utf8(first.spec.request.0.clone()).unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(request.as_bytes()).unwrap();
    let (_, parsed) = <x509_parser::certification_request::X509CertificationRequest as x509_parser::prelude::FromDer<
        _,
    >>::from_der(&pem.contents)
    .unwrap();
    let subject = parsed.certification_request_info.subject.to_string();
    assert!(
        subject.contains(&format!("CN=system:node:{node}")) && subject.contains("O=system:nodes"),
        "{subject}"
    );

    // Nothing issued yet: no handshake succeeds.
    assert!(served_cert(port, ca.clone()).await.is_err(), "served before issuance");

    let name = first.metadata.name.clone().unwrap();
    let issued = env
        .approve_and_sign_csr_for(&name, Some(Duration::from_secs(40)))
        .await
        .unwrap();
    wait(
        "the issued certificate to be served",
        Duration::from_secs(30),
        &log,
        || {
            let ca = ca.clone();
            let want = der_of(&issued);
            async move { (served_cert(port, ca).await.ok()? == want).then_some(()) }
        },
    )
    .await;

    // Renewal at 70–90 % of the 40 s: a new CSR, issued, served by the same process.
    let second = wait("the renewal CSR", Duration::from_secs(60), &log, || async {
        serving_csrs(&csrs, &node)
            .await
            .into_iter()
            .find(|c| c.metadata.name.as_deref() != Some(name.as_str()))
    })
    .await;
    let renewed = env
        .approve_and_sign_csr(second.metadata.name.as_deref().unwrap())
        .await
        .unwrap();
    wait(
        "the renewed certificate to be served",
        Duration::from_secs(30),
        &log,
        || {
            let ca = ca.clone();
            let want = der_of(&renewed);
            async move { (served_cert(port, ca).await.ok()? == want).then_some(()) }
        },
    )
    .await;
    assert!(actlet.0.try_wait().unwrap().is_none(), "actlet was not restarted");
    let current = std::fs::read_to_string(cert_dir.join("kubelet-server-current.pem")).unwrap();
    assert_eq!(der_of(&current), der_of(&renewed), "the cert dir holds the served pair");
}

async fn kill_manager(node: &cluster::ClusterNode) {
    node.kubelet
        .root
        .addr()
        .send(actlet::actors::supervisor::KillChild("serving-cert-manager".into()))
        .await
        .expect("root reachable")
        .unwrap_or_else(|e| panic!("kill serving-cert-manager: {e}"));
}

fn manager_restarts(node: &cluster::ClusterNode) -> Option<u64> {
    let info = node.kubelet.tree().get("root/serving-cert-manager")?;
    (info.state == actlet::actors::supervisor::ChildState::Running).then_some(info.restarts)
}

#[test]
fn serving_cert_manager_restart_goes_unnoticed() {
    cluster::run(|| async {
        let Some(env) = envtest::EnvTest::start().await else {
            return;
        };
        let client = env.node_client(cluster::NODE).await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("no-log");
        let port = free_port();
        let node = cluster::start_node_with(client, dir, actlet::cri::mock::MockRuntime::new(), |b| {
            b.configure(move |c| {
                c.node_ip = Some("127.0.0.1".into());
                c.server_addr = Some(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
                c.server_tls_bootstrap = true;
                c.cert_dir = c.root_dir.join("pki");
            })
        });
        let csrs: Api<CertificateSigningRequest> = Api::all(env.admin_client().await);
        let ca = std::fs::read_to_string(env.pki().ca_cert_path()).unwrap();
        let first = wait("the serving CSR", Duration::from_secs(60), &log, || async {
            serving_csrs(&csrs, cluster::NODE).await.into_iter().next()
        })
        .await;
        let first_name = first.metadata.name.clone().unwrap();

        // Killed while waiting on its CSR: the new instance asks again.
        kill_manager(&node).await;
        wait("the manager rebuilt", Duration::from_secs(30), &log, || async {
            (manager_restarts(&node)? == 1).then_some(())
        })
        .await;
        let second = wait(
            "a new CSR from the new instance",
            Duration::from_secs(60),
            &log,
            || async {
                serving_csrs(&csrs, cluster::NODE)
                    .await
                    .into_iter()
                    .find(|c| c.metadata.name.as_deref() != Some(first_name.as_str()))
            },
        )
        .await;
        let issued = env
            .approve_and_sign_csr(second.metadata.name.as_deref().unwrap())
            .await
            .unwrap();
        let want = der_of(&issued);
        wait(
            "the issued certificate to be served",
            Duration::from_secs(30),
            &log,
            || {
                let (ca, want) = (ca.clone(), want.clone());
                async move { (served_cert(port, ca).await.ok()? == want).then_some(()) }
            },
        )
        .await;

        // Killed while serving: the certificate stays served, none is asked for.
        kill_manager(&node).await;
        assert_eq!(
            served_cert(port, ca.clone()).await.ok(),
            Some(want.clone()),
            "served through the restart"
        );
        wait("the manager rebuilt again", Duration::from_secs(30), &log, || async {
            (manager_restarts(&node)? == 2).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(
            serving_csrs(&csrs, cluster::NODE).await.len(),
            2,
            "no request for a valid pair"
        );
        assert_eq!(served_cert(port, ca).await.ok(), Some(want));
        let others: Vec<_> = node
            .kubelet
            .tree()
            .snapshot()
            .into_iter()
            .filter(|c| c.path != "root/serving-cert-manager" && c.restarts > 0)
            .collect();
        assert!(others.is_empty(), "{others:?}");
    });
}
