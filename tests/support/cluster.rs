//! Harness for the `cluster_*` tests: actlet in cluster mode on the mock CRI,
//! against the test API server, on **real** time (the API server runs on its
//! own thread and real sockets; paused time would fire the client's timeouts).
//!
//! Include after the API server: `#[path = "support/apiserver/mod.rs"] mod apiserver;`
//! then `#[path = "support/cluster.rs"] mod cluster;`.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use actlet::ActletBuilder;
use actlet::cluster::{Qps, client_from_kubeconfig};
use actlet::cri::mock::MockRuntime;
use actlet::kubelet::Kubelet;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use tempfile::TempDir;

use crate::apiserver::{Identity, TestApiServer};

/// The node every cluster test runs as.
pub const NODE: &str = "test-node";

/// Runs `test` in an actix `System` on real time, with logs when `RUST_LOG` is set.
pub fn run<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    actix_rt::System::new().block_on(test());
}

/// A kube client for `identity` against `server` (kubeconfig written to `dir`).
pub async fn client(server: &TestApiServer, identity: &Identity, dir: &TempDir) -> kube::Client {
    let path = dir
        .path()
        .join(format!("kubeconfig-{}", identity.user_name().replace(':', "-")));
    std::fs::write(&path, server.kubeconfig(identity)).unwrap_or_else(|e| panic!("write kubeconfig: {e}"));
    client_from_kubeconfig(&path, Qps::default())
        .await
        .unwrap_or_else(|e| panic!("client: {e}"))
}

/// A node in cluster mode: the kubelet, its mock runtime, and its directory.
pub struct ClusterNode {
    pub kubelet: Kubelet,
    pub mock: MockRuntime,
    pub dir: TempDir,
}

/// Starts actlet as `system:node:test-node` on `mock`; `customize` adjusts the builder.
pub async fn start_node(
    server: &TestApiServer,
    mock: MockRuntime,
    customize: impl FnOnce(ActletBuilder) -> ActletBuilder,
) -> ClusterNode {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let client = client(server, &Identity::node(NODE), &dir).await;
    start_node_with(client, dir, mock, customize)
}

/// [`start_node`] with the node's own API client (any API server; e.g. a real one from
/// tests/support/envtest.rs); `dir` becomes the node's directory.
pub fn start_node_with(
    client: kube::Client,
    dir: TempDir,
    mock: MockRuntime,
    customize: impl FnOnce(ActletBuilder) -> ActletBuilder,
) -> ClusterNode {
    let root = dir.path().to_path_buf();
    let builder = ActletBuilder::new(NODE)
        .configure(|c| {
            c.node_ip = Some("10.0.0.1".into());
            c.root_dir = root.join("root");
            c.pod_logs_dir = root.join("pods");
            c.container_logs_dir = None;
        })
        .runtime(mock.clone())
        .api_client(client);
    let kubelet = customize(builder)
        .start()
        .unwrap_or_else(|e| panic!("actlet did not start: {e}"));
    ClusterNode { kubelet, mock, dir }
}

/// Polls `f` every 50 ms until it returns `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A pod bound to [`NODE`] as the scheduler would leave it (JSON for the admin client).
pub fn bound_pod(name: &str, command: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "app", "image": "busybox:1.36", "command": ["sh", "-c", command]}]
        }
    })
}

/// The condition `type_` of `node`, if reported.
pub fn node_condition(node: &Node, type_: &str) -> Option<NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .cloned()
}
