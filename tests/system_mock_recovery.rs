//! Crash recovery of the assembled kubelet on the mock CRI under paused
//! time: a pod worker that panics in the middle of a sync is rebuilt by its
//! supervisor and finishes the pod without creating anything twice.

#[path = "support/system.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason};
use actlet::cri::mock::MockRuntime;
use actlet::cri::v1::*;
use actlet::cri::{CriResult, Runtime};
use support::{Node, pod, run_paused, uid_of};
use tokio::time::sleep;

/// The message the wrapper panics with.
const BOOM: &str = "injected panic in CreateContainer";

/// Forwards every call to the mock, but panics (once) in the first
/// `CreateContainer` of a container named `app` — after the sandbox exists,
/// before the mock sees the call.
struct PanicOnce {
    mock: MockRuntime,
    armed: AtomicBool,
}

#[async_trait::async_trait]
impl Runtime for PanicOnce {
    async fn version(&self, req: VersionRequest) -> CriResult<VersionResponse> {
        self.mock.version(req).await
    }
    async fn run_pod_sandbox(&self, req: RunPodSandboxRequest) -> CriResult<RunPodSandboxResponse> {
        self.mock.run_pod_sandbox(req).await
    }
    async fn stop_pod_sandbox(&self, req: StopPodSandboxRequest) -> CriResult<StopPodSandboxResponse> {
        self.mock.stop_pod_sandbox(req).await
    }
    async fn remove_pod_sandbox(&self, req: RemovePodSandboxRequest) -> CriResult<RemovePodSandboxResponse> {
        self.mock.remove_pod_sandbox(req).await
    }
    async fn pod_sandbox_status(&self, req: PodSandboxStatusRequest) -> CriResult<PodSandboxStatusResponse> {
        self.mock.pod_sandbox_status(req).await
    }
    async fn list_pod_sandbox(&self, req: ListPodSandboxRequest) -> CriResult<ListPodSandboxResponse> {
        self.mock.list_pod_sandbox(req).await
    }
    async fn create_container(&self, req: CreateContainerRequest) -> CriResult<CreateContainerResponse> {
        let name = req
            .config
            .as_ref()
            .and_then(|c| c.metadata.as_ref())
            .map(|m| m.name.clone())
            .unwrap_or_default();
        if name == "app" && self.armed.swap(false, Ordering::SeqCst) {
            panic!("{BOOM}");
        }
        self.mock.create_container(req).await
    }
    async fn start_container(&self, req: StartContainerRequest) -> CriResult<StartContainerResponse> {
        self.mock.start_container(req).await
    }
    async fn stop_container(&self, req: StopContainerRequest) -> CriResult<StopContainerResponse> {
        self.mock.stop_container(req).await
    }
    async fn remove_container(&self, req: RemoveContainerRequest) -> CriResult<RemoveContainerResponse> {
        self.mock.remove_container(req).await
    }
    async fn list_containers(&self, req: ListContainersRequest) -> CriResult<ListContainersResponse> {
        self.mock.list_containers(req).await
    }
    async fn container_status(&self, req: ContainerStatusRequest) -> CriResult<ContainerStatusResponse> {
        self.mock.container_status(req).await
    }
    async fn update_container_resources(
        &self,
        req: UpdateContainerResourcesRequest,
    ) -> CriResult<UpdateContainerResourcesResponse> {
        self.mock.update_container_resources(req).await
    }
    async fn reopen_container_log(&self, req: ReopenContainerLogRequest) -> CriResult<ReopenContainerLogResponse> {
        self.mock.reopen_container_log(req).await
    }
    async fn exec_sync(&self, req: ExecSyncRequest) -> CriResult<ExecSyncResponse> {
        self.mock.exec_sync(req).await
    }
    async fn container_stats(&self, req: ContainerStatsRequest) -> CriResult<ContainerStatsResponse> {
        self.mock.container_stats(req).await
    }
    async fn list_container_stats(&self, req: ListContainerStatsRequest) -> CriResult<ListContainerStatsResponse> {
        self.mock.list_container_stats(req).await
    }
    async fn status(&self, req: StatusRequest) -> CriResult<StatusResponse> {
        self.mock.status(req).await
    }
    async fn list_images(&self, req: ListImagesRequest) -> CriResult<ListImagesResponse> {
        self.mock.list_images(req).await
    }
    async fn image_status(&self, req: ImageStatusRequest) -> CriResult<ImageStatusResponse> {
        self.mock.image_status(req).await
    }
    async fn pull_image(&self, req: PullImageRequest) -> CriResult<PullImageResponse> {
        self.mock.pull_image(req).await
    }
    async fn remove_image(&self, req: RemoveImageRequest) -> CriResult<RemoveImageResponse> {
        self.mock.remove_image(req).await
    }
    async fn image_fs_info(&self, req: ImageFsInfoRequest) -> CriResult<ImageFsInfoResponse> {
        self.mock.image_fs_info(req).await
    }
}

/// The pod worker panics in its first sync, between `RunPodSandbox` and
/// `CreateContainer`: the `pod-workers` supervisor restarts it (the tree
/// records the restart and the panic), the new instance resumes from the
/// caches, and the pod runs with exactly one sandbox and one container.
#[test]
fn worker_panic_mid_sync_recovers_without_duplicate_containers() {
    run_paused(|| async {
        let mock = MockRuntime::new();
        let wrapper = Arc::new(PanicOnce {
            mock: mock.clone(),
            armed: AtomicBool::new(true),
        });
        let node = Node::builder(mock).runtime(wrapper.clone()).start();
        let p = pod(r#"
metadata: {name: phoenix, namespace: default, uid: u-phoenix}
spec:
  containers:
  - {name: app, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("phoenix Running", Duration::from_secs(30), |n| {
            n.phase(&uid) == "Running" && n.is_running(&uid, "app")
        })
        .await;
        assert!(!wrapper.armed.load(Ordering::SeqCst), "the panic was injected");

        let path = "root/pod-workers/pod-u-phoenix";
        let info = node
            .kubelet
            .tree()
            .snapshot()
            .into_iter()
            .find(|c| c.path == path)
            .unwrap_or_else(|| panic!("no {path} in {:?}", node.kubelet.tree().snapshot()));
        assert!(info.restarts >= 1, "{info:?}");
        assert_eq!(info.state, ChildState::Running);
        let failure = info.last_failure.expect("the panic is recorded");
        assert!(
            matches!(&failure.reason, ExitReason::Panicked(m) if m.contains(BOOM)),
            "{failure:?}"
        );

        // Resyncs and relists must not add anything.
        sleep(Duration::from_secs(90)).await;
        assert_eq!(node.sandboxes("phoenix").len(), 1, "{}", node.describe());
        assert_eq!(node.containers("phoenix", "app").len(), 1, "{}", node.describe());
        assert_eq!(node.calls("RunPodSandbox").len(), 1);
        assert_eq!(
            node.calls("CreateContainer").len(),
            1,
            "the panicking call never reached the mock"
        );
        assert_eq!(node.restart_count(&uid, "app"), 0);
        assert_eq!(node.phase(&uid), "Running");
        // The rest of the tree is untouched.
        for c in node.kubelet.tree().snapshot() {
            if c.path != path {
                assert_eq!(c.restarts, 0, "{c:?}");
            }
        }
    });
}
