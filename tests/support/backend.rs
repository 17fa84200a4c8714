//! One cluster scenario, two API servers: the project's test API server
//! (tests/support/apiserver, always) or a real kube-apiserver from
//! tests/support/envtest.rs (when `KUBEBUILDER_ASSETS` is set). A scenario
//! written against [`Backend`] arranges and observes the cluster as admin over
//! HTTP and starts the node with its own `system:node:<NODE>` client, so the
//! same code checks actlet against both; what only the fake can do (inspect
//! requests, go down) it reaches through [`Backend::fake`].
//!
//! Include after `apiserver`, `cluster` and `envtest`:
//! `#[path = "support/backend.rs"] mod backend;`.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use actlet::ActletBuilder;
use actlet::cri::mock::MockRuntime;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use tempfile::TempDir;

use crate::apiserver::{Identity, TestApiServer};
use crate::cluster::{self, ClusterNode, NODE};
use crate::envtest::EnvTest;

/// The API server a scenario runs against, and an admin client for it.
pub struct Backend {
    pub admin: kube::Client,
    fake: Option<TestApiServer>,
    real: Option<EnvTest>,
    dir: TempDir,
}

impl Backend {
    /// The project's test API server.
    pub async fn test_apiserver() -> Backend {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let admin = cluster::client(&server, &Identity::Admin, &dir).await;
        Backend {
            admin,
            fake: Some(server),
            real: None,
            dir,
        }
    }

    /// A real kube-apiserver with the `default` namespace prepared (its ServiceAccount
    /// and `kube-root-ca.crt`); `None` (SKIPPED) without `KUBEBUILDER_ASSETS`.
    pub async fn real() -> Option<Backend> {
        let env = EnvTest::start().await?;
        env.prepare_namespace("default").await;
        let admin = env.admin_client().await;
        Some(Backend {
            admin,
            fake: None,
            real: Some(env),
            dir: TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}")),
        })
    }

    /// The test API server, when that is the backend.
    pub fn fake(&self) -> Option<&TestApiServer> {
        self.fake.as_ref()
    }

    /// The real API server, when that is the backend.
    pub fn envtest(&self) -> Option<&EnvTest> {
        self.real.as_ref()
    }

    /// Takes the API server away (`true`: connections refused) or brings it back; the
    /// real one is killed and started again on the same port and etcd.
    pub async fn set_down(&self, down: bool) {
        match (&self.fake, &self.real, down) {
            (Some(server), _, _) => server.set_down(down),
            (_, Some(env), true) => env.stop_apiserver(),
            (_, Some(env), false) => env.start_apiserver().await,
            _ => unreachable!("a backend has a server"),
        }
    }

    /// A client as `system:node:<NODE>`.
    pub async fn node_client(&self) -> kube::Client {
        match (&self.fake, &self.real) {
            (Some(server), _) => cluster::client(server, &Identity::node(NODE), &self.dir).await,
            (_, Some(env)) => env.node_client(NODE).await,
            _ => unreachable!("a backend has a server"),
        }
    }

    /// Starts actlet in process as [`NODE`] on `mock` (see [`cluster::start_node`]).
    pub async fn start_node(
        &self,
        mock: MockRuntime,
        customize: impl FnOnce(ActletBuilder) -> ActletBuilder,
    ) -> ClusterNode {
        let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
        cluster::start_node_with(self.node_client().await, dir, mock, customize)
    }

    /// Pods in `default`, as admin.
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), "default")
    }

    /// The pod `default/<name>`, if it exists (and the API answers).
    pub async fn pod(&self, name: &str) -> Option<Pod> {
        self.pods().get_opt(name).await.ok().flatten()
    }

    /// The Node [`NODE`].
    pub async fn node(&self) -> Option<Node> {
        Api::<Node>::all(self.admin.clone()).get_opt(NODE).await.ok().flatten()
    }

    /// The Lease of [`NODE`].
    pub async fn lease(&self) -> Option<Lease> {
        Api::<Lease>::namespaced(self.admin.clone(), "kube-node-lease")
            .get_opt(NODE)
            .await
            .ok()
            .flatten()
    }

    /// Creates a pod in `default` from JSON (e.g. [`cluster::bound_pod`]).
    pub async fn create_pod(&self, pod: &serde_json::Value) -> Pod {
        let pod: Pod = serde_json::from_value(pod.clone()).unwrap_or_else(|e| panic!("pod: {e}"));
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .unwrap_or_else(|e| panic!("create pod: {e}"))
    }

    /// Deletes `default/<name>` as admin (`grace` seconds, or the pod's own).
    pub async fn delete_pod(&self, name: &str, grace: Option<u32>) {
        let mut dp = DeleteParams::default();
        if let Some(g) = grace {
            dp = dp.grace_period(g);
        }
        self.pods()
            .delete(name, &dp)
            .await
            .unwrap_or_else(|e| panic!("delete pod {name}: {e}"));
    }
}

/// Polls the async `f` every 100 ms until it returns `Some`, or panics after `timeout`.
pub async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
