//! End-to-end: the real `actlet` binary joins a cluster with `--kubeconfig`,
//! as an operator would run it, and the cluster sees a working node.
//!
//! The same scenario runs twice:
//! * `e2e_on_the_test_apiserver` — always: against the project's test API
//!   server (tests/support/apiserver), as `system:node:<node>` with the Node
//!   authorizer's rules.
//! * `e2e_on_envtest` — against a real kube-apiserver v1.36 + etcd from
//!   `KUBEBUILDER_ASSETS` (tests/support/envtest.rs; TLS, client certificates,
//!   Node,RBAC + NodeRestriction); SKIPPED loudly when the variable is unset.
//! * `e2e_on_a_real_cluster` — when `ACTLET_E2E_KUBECONFIG` names an admin
//!   kubeconfig of a real cluster (v1.24+). The node's own credentials come
//!   from `ACTLET_E2E_NODE_KUBECONFIG` (default: the admin one), its name from
//!   `ACTLET_E2E_NODE_NAME` (default `actlet-e2e`). Without the variable it
//!   prints a loud SKIPPED line and passes.
//!
//! The runtime is the containerd at `ACTLET_CRI_ENDPOINT` when set, else
//! `actlet mock-cri` (the mock CRI served over gRPC by the same binary).
//!
//! Scenario: the Node is registered and Ready with the hostname/os/arch
//! labels; its Lease in `kube-node-lease` is owned by the Node and renewed; a
//! pod bound to the node runs and its status reaches the API (phase, Ready,
//! containerStatuses, podIP, hostIP) and so do its Created/Started events;
//! deleting it with a grace period kills it
//! and the pod object disappears. Everything started is stopped (by PID) and
//! the Node is deleted at the end.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use tempfile::TempDir;

use apiserver::{Identity, TestApiServer};

const WAIT: Duration = Duration::from_secs(90);

/// A child process of this test, killed (by its PID) on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SIGTERM first: actlet shuts down its tree in order.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            for _ in 0..50 {
                if let Ok(Some(_)) = self.0.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn log_file(dir: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(dir.join(name)).unwrap_or_else(|e| panic!("create {name}: {e}"))
}

/// The runtime endpoint, starting `actlet mock-cri` when no containerd is given.
fn runtime(dir: &Path) -> (String, Option<Proc>) {
    if let Ok(ep) = std::env::var("ACTLET_CRI_ENDPOINT") {
        return (ep, None);
    }
    let ep = format!("unix://{}", dir.join("mock-cri.sock").display());
    let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
        .args(["mock-cri", "--listen", &ep])
        .stdout(Stdio::null())
        .stderr(log_file(dir, "mock-cri.log"))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn actlet mock-cri: {e}"));
    (ep, Some(Proc(child)))
}

/// Starts the actlet daemon for `node` with `kubeconfig`.
fn start_actlet(dir: &Path, node: &str, kubeconfig: &Path, endpoint: &str) -> Proc {
    let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        // Eviction runs on the real node stats, but no test here may depend on
        // how full the host disk is (upstream defaults evict at 10-15% free, and
        // a CI machine full of build output once had under 1% of 252 GiB free).
        .arg("--eviction-hard=memory.available<100Mi,nodefs.available<64Mi,imagefs.available<64Mi")
        .args(["--hostname-override", node, "--node-ip", "10.0.0.1"])
        .args(["--container-runtime-endpoint", endpoint])
        .arg("--root-dir")
        .arg(dir.join("root"))
        .args(["--read-only-port", "0", "--healthz-port", "0", "--port", "0", "-v", "2"])
        .env("RUST_LOG", "info,actlet=debug")
        .stdout(Stdio::null())
        .stderr(log_file(dir, "actlet.log"))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn actlet: {e}"));
    Proc(child)
}

async fn poll<T, F: std::future::Future<Output = Option<T>>>(what: &str, dir: &Path, mut f: impl FnMut() -> F) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("actlet.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            panic!(
                "timed out waiting for {what}; actlet log tail:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn test_pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app.kubernetes.io/created-by": "actlet-e2e"}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 2,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{
                "name": "app",
                "image": "docker.io/library/busybox:1.36",
                "imagePullPolicy": "IfNotPresent",
                "command": ["sleep", "3600"]
            }]
        }
    }))
    .unwrap_or_else(|e| panic!("pod: {e}"))
}

/// The scenario of the module docs.
async fn scenario(admin: kube::Client, node_kubeconfig: PathBuf, node: String, dir: &Path) {
    let (endpoint, _runtime) = runtime(dir);
    let mut daemon = Some(start_actlet(dir, &node, &node_kubeconfig, &endpoint));
    let nodes: Api<Node> = Api::all(admin.clone());
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");

    let registered = poll("the Node to be registered and Ready", dir, || async {
        let n = nodes.get_opt(&node).await.ok().flatten()?;
        (cluster::node_condition(&n, "Ready")?.status == "True").then_some(n)
    })
    .await;
    let labels = registered.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("kubernetes.io/hostname"), Some(&node));
    assert_eq!(labels.get("kubernetes.io/os").map(String::as_str), Some("linux"));
    let node_uid = registered.metadata.uid.clone();

    // A Lease created before the Node existed gets its owner on a later renewal.
    let first = poll("the node Lease, owned by the Node", dir, || async {
        let l = leases.get_opt(&node).await.ok().flatten()?;
        let owner = l.metadata.owner_references.clone().unwrap_or_default();
        owner
            .iter()
            .any(|o| o.kind == "Node" && Some(&o.uid) == node_uid.as_ref())
            .then_some(l)
    })
    .await;
    let renew = |l: &Lease| l.spec.as_ref().and_then(|s| s.renew_time.clone());
    let first_renew = renew(&first);
    poll("the Lease to be renewed", dir, || async {
        let l = leases.get_opt(&node).await.ok().flatten()?;
        (renew(&l) != first_renew).then_some(())
    })
    .await;

    let name = format!("actlet-e2e-{}", std::process::id());
    let _ = pods.delete(&name, &DeleteParams::default().grace_period(0)).await;
    pods.create(&PostParams::default(), &test_pod(&name, &node))
        .await
        .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
    let running = poll("the pod's status: Running and Ready, with IPs", dir, || async {
        let p = pods.get_opt(&name).await.ok().flatten()?;
        let s = p.status.clone()?;
        let ready = s
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        (s.phase.as_deref() == Some("Running") && ready && s.pod_ip.is_some() && s.host_ip.is_some()).then_some(s)
    })
    .await;
    let cs = running.container_statuses.clone().unwrap_or_default();
    assert_eq!(cs.len(), 1, "{cs:?}");
    assert!(
        cs[0].ready && cs[0].state.as_ref().is_some_and(|s| s.running.is_some()),
        "{cs:?}"
    );
    assert_eq!(running.host_ip.as_deref(), Some("10.0.0.1"));
    // The kubelet's events about the pod reached the API (core/v1, from "kubelet" on the node).
    let events: Api<Event> = Api::namespaced(admin.clone(), "default");
    let reasons = poll("the pod's Created and Started events", dir, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        let reasons: Vec<String> = list
            .items
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
            .filter(|e| e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("kubelet"))
            .filter_map(|e| e.reason)
            .collect();
        (reasons.iter().any(|r| r == "Created") && reasons.iter().any(|r| r == "Started")).then_some(reasons)
    })
    .await;
    assert!(!reasons.iter().any(|r| r == "Failed"), "{reasons:?}");

    pods.delete(&name, &DeleteParams::default().grace_period(2))
        .await
        .unwrap_or_else(|e| panic!("delete pod {name}: {e}"));
    poll("the deleted pod to be finalised (gone from the API)", dir, || async {
        matches!(pods.get_opt(&name).await, Ok(None)).then_some(())
    })
    .await;

    drop(daemon.take());
    let _ = nodes.delete(&node, &DeleteParams::default()).await;
}

#[test]
fn e2e_on_the_test_apiserver() {
    cluster::run(|| async {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let admin = cluster::client(&server, &Identity::Admin, &dir).await;
        let kubeconfig = dir.path().join("node.kubeconfig");
        std::fs::write(&kubeconfig, server.kubeconfig(&Identity::node("e2e-node")))
            .unwrap_or_else(|e| panic!("write kubeconfig: {e}"));
        scenario(admin, kubeconfig, "e2e-node".into(), dir.path()).await;
    });
}

#[test]
fn e2e_on_envtest() {
    cluster::run(|| async {
        let Some(env) = envtest::EnvTest::start().await else {
            return;
        };
        env.prepare_namespace("default").await;
        let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let admin = env.admin_client().await;
        scenario(
            admin,
            env.node_kubeconfig("envtest-node"),
            "envtest-node".into(),
            dir.path(),
        )
        .await;
    });
}

#[test]
fn e2e_on_a_real_cluster() {
    let Ok(admin_kc) = std::env::var("ACTLET_E2E_KUBECONFIG") else {
        eprintln!(
            "\n*** SKIPPED e2e_on_a_real_cluster: set ACTLET_E2E_KUBECONFIG to an admin kubeconfig of a real \
             cluster (v1.24+) to run it ***\n"
        );
        return;
    };
    cluster::run(|| async move {
        let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let admin = actlet::cluster::client_from_kubeconfig(Path::new(&admin_kc), actlet::cluster::Qps::default())
            .await
            .unwrap_or_else(|e| panic!("ACTLET_E2E_KUBECONFIG: {e}"));
        let node_kc = std::env::var("ACTLET_E2E_NODE_KUBECONFIG").unwrap_or(admin_kc);
        let node = std::env::var("ACTLET_E2E_NODE_NAME").unwrap_or_else(|_| "actlet-e2e".into());
        scenario(admin, PathBuf::from(node_kc), node, dir.path()).await;
    });
}
