//! [`Runtime`]: the interface between actlet and a container runtime.

use std::sync::Arc;

use super::error::CriResult;
use super::v1::*;

/// Calls `$callback!` with the table of every CRI call actlet makes:
/// `(trait method, gRPC method name, request type, response type)`, split into
/// the RuntimeService and ImageService calls. The client, the gRPC server and
/// the forwarding impls are generated from this one table.
macro_rules! cri_calls {
    ($callback:ident) => {
        $callback! {
            runtime {
                (version, "Version", VersionRequest, VersionResponse),
                (run_pod_sandbox, "RunPodSandbox", RunPodSandboxRequest, RunPodSandboxResponse),
                (stop_pod_sandbox, "StopPodSandbox", StopPodSandboxRequest, StopPodSandboxResponse),
                (remove_pod_sandbox, "RemovePodSandbox", RemovePodSandboxRequest, RemovePodSandboxResponse),
                (pod_sandbox_status, "PodSandboxStatus", PodSandboxStatusRequest, PodSandboxStatusResponse),
                (list_pod_sandbox, "ListPodSandbox", ListPodSandboxRequest, ListPodSandboxResponse),
                (create_container, "CreateContainer", CreateContainerRequest, CreateContainerResponse),
                (start_container, "StartContainer", StartContainerRequest, StartContainerResponse),
                (stop_container, "StopContainer", StopContainerRequest, StopContainerResponse),
                (remove_container, "RemoveContainer", RemoveContainerRequest, RemoveContainerResponse),
                (list_containers, "ListContainers", ListContainersRequest, ListContainersResponse),
                (container_status, "ContainerStatus", ContainerStatusRequest, ContainerStatusResponse),
                (update_container_resources, "UpdateContainerResources", UpdateContainerResourcesRequest, UpdateContainerResourcesResponse),
                (reopen_container_log, "ReopenContainerLog", ReopenContainerLogRequest, ReopenContainerLogResponse),
                (exec_sync, "ExecSync", ExecSyncRequest, ExecSyncResponse),
                (exec, "Exec", ExecRequest, ExecResponse),
                (attach, "Attach", AttachRequest, AttachResponse),
                (port_forward, "PortForward", PortForwardRequest, PortForwardResponse),
                (container_stats, "ContainerStats", ContainerStatsRequest, ContainerStatsResponse),
                (list_container_stats, "ListContainerStats", ListContainerStatsRequest, ListContainerStatsResponse),
                (pod_sandbox_stats, "PodSandboxStats", PodSandboxStatsRequest, PodSandboxStatsResponse),
                (list_pod_sandbox_stats, "ListPodSandboxStats", ListPodSandboxStatsRequest, ListPodSandboxStatsResponse),
                (status, "Status", StatusRequest, StatusResponse),
            }
            image {
                (list_images, "ListImages", ListImagesRequest, ListImagesResponse),
                (image_status, "ImageStatus", ImageStatusRequest, ImageStatusResponse),
                (pull_image, "PullImage", PullImageRequest, PullImageResponse),
                (remove_image, "RemoveImage", RemoveImageRequest, RemoveImageResponse),
                (image_fs_info, "ImageFsInfo", ImageFsInfoRequest, ImageFsInfoResponse),
            }
        }
    };
}
pub(crate) use cri_calls;

/// A container runtime as the CRI describes it: every RuntimeService and
/// ImageService call actlet makes, one method each, with the CRI's own request
/// and response messages.
///
/// Implementations: [`CriClient`](super::client::CriClient) (a real runtime
/// over gRPC), [`MockRuntime`](super::mock::MockRuntime), or the caller's own.
///
/// # Contract
/// - **Semantics** are the CRI's, as containerd implements them: removing an
///   unknown sandbox or container succeeds; status of an unknown one is
///   `NOT_FOUND`; `ImageStatus` of a missing image is OK with `image` unset;
///   a second `RunPodSandbox` with the same metadata fails.
/// - **Errors** are [`CriError`](super::CriError)s carrying the gRPC code.
///   `UNAVAILABLE` means the runtime is not reachable (retry later).
/// - **Timeouts**: each call is bounded by the implementation (the client sends
///   `runtimeRequestTimeout` as the gRPC deadline, so the runtime itself gives
///   up, and answers `DEADLINE_EXCEEDED`). Callers must not cancel a mutation
///   by dropping its future: they await it, then reconcile from a relist.
/// - **Concurrency**: calls may be made concurrently from many tasks.
///
/// ```
/// use actlet::cri::Runtime;
/// use actlet::cri::mock::MockRuntime;
/// use actlet::cri::v1::{StatusRequest, VersionRequest};
///
/// /// Code written against the trait works with any runtime.
/// async fn describe(rt: &dyn Runtime) -> String {
///     match rt.version(VersionRequest::default()).await {
///         Ok(v) => format!("{} {}", v.runtime_name, v.runtime_version),
///         Err(e) if e.is_unavailable() => "runtime down".to_string(),
///         Err(e) => e.to_string(),
///     }
/// }
///
/// actlet::testing::run_paused(async {
///     let mock = MockRuntime::new();
///     assert!(describe(&mock).await.starts_with("actlet-mock "));
///     let status = mock.status(StatusRequest::default()).await.unwrap();
///     assert!(status.status.unwrap().conditions.iter().all(|c| c.status)); // RuntimeReady, NetworkReady
///     mock.set_down(true);
///     assert_eq!(describe(&mock).await, "runtime down");
/// });
/// ```
///
/// To write your own runtime, implement every method (see
/// `examples/own_runtime/`); to wrap one, see `actlet::testing::HookedRuntime`
/// (feature `testing`).
#[async_trait::async_trait]
pub trait Runtime: Send + Sync + 'static {
    /// `Version`: runtime name and version.
    async fn version(&self, req: VersionRequest) -> CriResult<VersionResponse>;
    /// `RunPodSandbox`: create and start a pod sandbox.
    async fn run_pod_sandbox(&self, req: RunPodSandboxRequest) -> CriResult<RunPodSandboxResponse>;
    /// `StopPodSandbox`: stop a sandbox and all its containers.
    async fn stop_pod_sandbox(&self, req: StopPodSandboxRequest) -> CriResult<StopPodSandboxResponse>;
    /// `RemovePodSandbox`: remove a sandbox and all its containers.
    async fn remove_pod_sandbox(&self, req: RemovePodSandboxRequest) -> CriResult<RemovePodSandboxResponse>;
    /// `PodSandboxStatus`: status of one sandbox.
    async fn pod_sandbox_status(&self, req: PodSandboxStatusRequest) -> CriResult<PodSandboxStatusResponse>;
    /// `ListPodSandbox`: sandboxes matching a filter.
    async fn list_pod_sandbox(&self, req: ListPodSandboxRequest) -> CriResult<ListPodSandboxResponse>;
    /// `CreateContainer`: create a container in a ready sandbox.
    async fn create_container(&self, req: CreateContainerRequest) -> CriResult<CreateContainerResponse>;
    /// `StartContainer`: start a created container.
    async fn start_container(&self, req: StartContainerRequest) -> CriResult<StartContainerResponse>;
    /// `StopContainer`: signal, wait up to `timeout` seconds, then kill.
    async fn stop_container(&self, req: StopContainerRequest) -> CriResult<StopContainerResponse>;
    /// `RemoveContainer`: remove a container that is not running.
    async fn remove_container(&self, req: RemoveContainerRequest) -> CriResult<RemoveContainerResponse>;
    /// `ListContainers`: containers matching a filter.
    async fn list_containers(&self, req: ListContainersRequest) -> CriResult<ListContainersResponse>;
    /// `ContainerStatus`: status of one container.
    async fn container_status(&self, req: ContainerStatusRequest) -> CriResult<ContainerStatusResponse>;
    /// `UpdateContainerResources`: change a container's cgroup resources.
    async fn update_container_resources(
        &self,
        req: UpdateContainerResourcesRequest,
    ) -> CriResult<UpdateContainerResourcesResponse>;
    /// `ReopenContainerLog`: reopen the container's log file.
    async fn reopen_container_log(&self, req: ReopenContainerLogRequest) -> CriResult<ReopenContainerLogResponse>;
    /// `ExecSync`: run a command in a container and wait for its result.
    async fn exec_sync(&self, req: ExecSyncRequest) -> CriResult<ExecSyncResponse>;
    /// `Exec`: a URL on the runtime's streaming server that runs a command
    /// with the client's streams attached. Runtimes without a streaming
    /// server keep this default (`UNIMPLEMENTED`).
    async fn exec(&self, req: ExecRequest) -> CriResult<ExecResponse> {
        let _ = req;
        Err(super::CriError::new(
            "Exec",
            tonic::Code::Unimplemented,
            "no streaming server",
        ))
    }
    /// `Attach`: a URL on the streaming server attached to the container's
    /// main process (default `UNIMPLEMENTED`).
    async fn attach(&self, req: AttachRequest) -> CriResult<AttachResponse> {
        let _ = req;
        Err(super::CriError::new(
            "Attach",
            tonic::Code::Unimplemented,
            "no streaming server",
        ))
    }
    /// `PortForward`: a URL on the streaming server forwarding to the
    /// sandbox's ports (default `UNIMPLEMENTED`).
    async fn port_forward(&self, req: PortForwardRequest) -> CriResult<PortForwardResponse> {
        let _ = req;
        Err(super::CriError::new(
            "PortForward",
            tonic::Code::Unimplemented,
            "no streaming server",
        ))
    }
    /// `ContainerStats`: resource usage of one container.
    async fn container_stats(&self, req: ContainerStatsRequest) -> CriResult<ContainerStatsResponse>;
    /// `ListContainerStats`: resource usage of matching containers.
    async fn list_container_stats(&self, req: ListContainerStatsRequest) -> CriResult<ListContainerStatsResponse>;
    /// `PodSandboxStats`: resource usage of one sandbox and its containers.
    /// Runtimes without it keep this default (`UNIMPLEMENTED`); the stats
    /// provider then reads the pod's cgroup.
    async fn pod_sandbox_stats(&self, req: PodSandboxStatsRequest) -> CriResult<PodSandboxStatsResponse> {
        let _ = req;
        Err(super::CriError::new(
            "PodSandboxStats",
            tonic::Code::Unimplemented,
            "not implemented",
        ))
    }
    /// `ListPodSandboxStats`: resource usage of matching sandboxes (default
    /// `UNIMPLEMENTED`, see [`Runtime::pod_sandbox_stats`]).
    async fn list_pod_sandbox_stats(&self, req: ListPodSandboxStatsRequest) -> CriResult<ListPodSandboxStatsResponse> {
        let _ = req;
        Err(super::CriError::new(
            "ListPodSandboxStats",
            tonic::Code::Unimplemented,
            "not implemented",
        ))
    }
    /// `Status`: the RuntimeReady and NetworkReady conditions.
    async fn status(&self, req: StatusRequest) -> CriResult<StatusResponse>;
    /// `GetContainerEvents`: a stream of container and sandbox lifecycle
    /// events (containerd >= 1.7). Best effort: events may be dropped,
    /// duplicated or reordered, and the stream ends when the runtime goes
    /// away, so callers treat an event only as a hint to read the pod's state
    /// again. Runtimes without it keep this default (`UNIMPLEMENTED`); the
    /// PLEG then only relists.
    async fn get_container_events(&self, req: GetEventsRequest) -> CriResult<ContainerEventStream> {
        let _ = req;
        Err(super::CriError::new(
            "GetContainerEvents",
            tonic::Code::Unimplemented,
            "no container event stream",
        ))
    }
    /// `ListImages`: images in the store.
    async fn list_images(&self, req: ListImagesRequest) -> CriResult<ListImagesResponse>;
    /// `ImageStatus`: one image; `image` unset when it is not present.
    async fn image_status(&self, req: ImageStatusRequest) -> CriResult<ImageStatusResponse>;
    /// `PullImage`: pull an image from its registry.
    async fn pull_image(&self, req: PullImageRequest) -> CriResult<PullImageResponse>;
    /// `RemoveImage`: remove an image.
    async fn remove_image(&self, req: RemoveImageRequest) -> CriResult<RemoveImageResponse>;
    /// `ImageFsInfo`: usage of the image filesystem.
    async fn image_fs_info(&self, req: ImageFsInfoRequest) -> CriResult<ImageFsInfoResponse>;
}

/// A shared, type-erased runtime, as actors hold it.
///
/// ```
/// use std::sync::Arc;
/// use actlet::cri::{Runtime, SharedRuntime};
/// use actlet::cri::mock::MockRuntime;
/// use actlet::cri::v1::ListPodSandboxRequest;
///
/// actlet::testing::run_paused(async {
///     let runtime: SharedRuntime = Arc::new(MockRuntime::new());
///     let for_an_actor = runtime.clone(); // cheap: one runtime, many holders
///     let sandboxes = for_an_actor.list_pod_sandbox(ListPodSandboxRequest::default()).await.unwrap();
///     assert!(sandboxes.items.is_empty());
/// });
/// ```
pub type SharedRuntime = Arc<dyn Runtime>;

/// The stream [`Runtime::get_container_events`] answers with: one item per
/// event, an `Err` when the stream broke (it then ends).
pub type ContainerEventStream = futures::stream::BoxStream<'static, CriResult<ContainerEventResponse>>;

macro_rules! forward_impl {
    (runtime { $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)? }
     image { $(($iname:ident, $igrpc:literal, $ireq:ident, $iresp:ident)),* $(,)? }) => {
        #[async_trait::async_trait]
        impl<R: Runtime + ?Sized> Runtime for Arc<R> {
            $(async fn $name(&self, req: $req) -> CriResult<$resp> { (**self).$name(req).await })*
            $(async fn $iname(&self, req: $ireq) -> CriResult<$iresp> { (**self).$iname(req).await })*
            async fn get_container_events(&self, req: GetEventsRequest) -> CriResult<ContainerEventStream> {
                (**self).get_container_events(req).await
            }
        }
    };
}
cri_calls!(forward_impl);
