//! Shared harness for the `kuberuntime_*` integration tests: a mock CRI
//! runtime, a [`RuntimeManager`] on it (logs in a temp dir, timestamps read
//! on the mock's virtual clock) and pods from inline YAML.
//!
//! Included by the test files with `#[path]`; compiled alone it has no tests.
#![allow(dead_code)]

use std::sync::Arc;

use actlet::cri::mock::MockRuntime;
use actlet::kuberuntime::convert::timestamp_from_system_time;
use actlet::kuberuntime::pod_status::{ContainerState, RuntimePodStatus, SandboxState};
use actlet::kuberuntime::{PodSyncResult, ProbeView, RuntimeManager, RuntimeManagerConfig, SyncAction, SyncPodOptions};
use actlet::messages::PodUid;
use k8s_openapi::api::core::v1::Pod;
use tempfile::TempDir;

/// A pod from YAML (panics on bad YAML: tests only).
pub fn pod(yaml: &str) -> Pod {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad pod YAML: {e}\n{yaml}"))
}

/// A node: the mock runtime and a runtime manager on it.
pub struct Node {
    pub mock: MockRuntime,
    pub mgr: RuntimeManager,
    pub logs: TempDir,
}

impl Node {
    /// A node on `mock`.
    pub fn new(mock: MockRuntime) -> Self {
        let logs = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let config = RuntimeManagerConfig {
            pod_logs_dir: logs.path().join("pods"),
            container_logs_dir: Some(logs.path().join("containers")),
            cluster_dns: vec!["10.96.0.10".into()],
            cluster_domain: "cluster.local".into(),
            node_name: "node-1".into(),
            node_ips: vec!["192.168.1.10".into()],
            ..Default::default()
        };
        let mgr = Self::manager(&mock, config);
        Self { mock, mgr, logs }
    }

    /// A second manager on the same runtime (a restarted kubelet: no backoff
    /// state, no pod specs).
    pub fn restarted_manager(&self) -> RuntimeManager {
        Self::manager(&self.mock, self.mgr.config().clone())
    }

    fn manager(mock: &MockRuntime, config: RuntimeManagerConfig) -> RuntimeManager {
        let clock = mock.clock().clone();
        RuntimeManager::new(Arc::new(mock.clone()), config)
            .with_wall_clock(move || timestamp_from_system_time(clock.now()))
    }

    /// The runtime's view of `pod` now.
    pub async fn status(&self, pod: &Pod) -> RuntimePodStatus {
        let m = &pod.metadata;
        let uid = PodUid::new(m.uid.clone().unwrap_or_default());
        let (name, ns) = (
            m.name.as_deref().unwrap_or_default(),
            m.namespace.as_deref().unwrap_or_default(),
        );
        self.mgr
            .get_pod_status(&uid, name, ns)
            .await
            .unwrap_or_else(|e| panic!("get_pod_status: {e}"))
    }

    /// One sync of `pod` from a fresh status, like a pod worker.
    pub async fn sync(&self, pod: &Pod) -> PodSyncResult {
        self.sync_with(pod, &ProbeView::new()).await
    }

    /// One sync with probe results.
    pub async fn sync_with(&self, pod: &Pod, probes: &ProbeView) -> PodSyncResult {
        let status = self.status(pod).await;
        self.mgr
            .sync_pod(pod, &status, probes, &SyncPodOptions::default())
            .await
    }

    /// Names of the running containers of `pod`, sorted.
    pub async fn running(&self, pod: &Pod) -> Vec<String> {
        let st = self.status(pod).await;
        let mut names: Vec<String> = st
            .containers
            .iter()
            .filter(|c| c.state == ContainerState::Running)
            .map(|c| c.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Number of ready sandboxes of `pod`.
    pub async fn ready_sandboxes(&self, pod: &Pod) -> usize {
        self.status(pod)
            .await
            .sandboxes
            .iter()
            .filter(|s| s.state == SandboxState::Ready)
            .count()
    }

    /// How many containers named `name` were created so far.
    pub fn created(&self, name: &str) -> usize {
        self.mock
            .snapshot()
            .containers
            .iter()
            .filter(|c| c.name() == name)
            .count()
    }
}

/// Asserts every step of `result` succeeded.
pub fn assert_ok(result: &PodSyncResult) {
    assert!(result.is_ok(), "sync failed: {:?}", result.error_message());
}

/// The reason `container` could not be started in `result`, if any.
pub fn start_failure(result: &PodSyncResult, container: &str) -> Option<(String, String)> {
    result
        .failure_of(SyncAction::StartContainer, container)
        .map(|e| (e.reason.as_str().to_string(), e.message.clone()))
}
