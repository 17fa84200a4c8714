//! `impl Runtime for MockRuntime`: every call goes through the call log and
//! fault injection, then to the sandbox, container or image handlers.

use std::future::Future;

use tonic::Code;

use super::MockRuntime;
use super::faults::FaultKind;
use super::images::{normalize_image_name, pull_failure_message};
use super::observe::CallOutcome;
use crate::cri::v1::*;
use crate::cri::{CriError, CriResult, Runtime};

impl MockRuntime {
    /// Logs the call, applies the down switch and the method's fault, then
    /// runs `op` (unless the fault ends the call first).
    async fn call<T>(
        &self,
        method: &'static str,
        target: &str,
        op: impl Future<Output = CriResult<T>>,
    ) -> CriResult<T> {
        let (index, down, fault) = {
            let mut st = self.shared.lock();
            let index = st.calls.start(method, target.to_string());
            let down = st.faults.is_down();
            (index, down, if down { None } else { st.faults.take(method) })
        };
        let result = if down {
            Err(CriError::new(
                method,
                Code::Unavailable,
                "error trying to connect: connection refused (mock runtime is down)",
            ))
        } else {
            match fault {
                None => op.await,
                Some(FaultKind::Error { code, message }) => Err(CriError::new(method, code, message)),
                Some(FaultKind::Latency(delay)) => {
                    tokio::time::sleep(delay).await;
                    op.await
                }
                Some(FaultKind::Hang(deadline)) => {
                    tokio::time::sleep(deadline.unwrap_or(self.shared.request_timeout)).await;
                    Err(CriError::new(
                        method,
                        Code::DeadlineExceeded,
                        "context deadline exceeded",
                    ))
                }
                Some(FaultKind::HangForever) => std::future::pending().await,
            }
        };
        let outcome = result
            .as_ref()
            .map_or_else(|e| CallOutcome::Err(e.code), |_| CallOutcome::Ok);
        self.shared.lock().calls.finish(index, method, outcome);
        result
    }

    /// Verbose: `info["config"]` names the sandbox image, as containerd's does.
    fn do_status(&self, verbose: bool) -> StatusResponse {
        let (conditions, features) = {
            let st = self.shared.lock();
            (st.conditions.clone(), st.features)
        };
        let mut info = std::collections::HashMap::new();
        if verbose {
            let config = serde_json::json!({ "sandboxImage": self.shared.sandbox_image });
            info.insert("config".to_string(), config.to_string());
        }
        StatusResponse {
            status: Some(RuntimeStatus { conditions }),
            info,
            features: Some(features),
        }
    }

    fn do_image_status(&self, req: &ImageStatusRequest) -> ImageStatusResponse {
        let name = req.image.as_ref().map_or("", |i| i.image.as_str());
        let image = self.shared.lock().images.resolve(name).map(|i| i.to_cri());
        ImageStatusResponse {
            image,
            info: Default::default(),
        }
    }

    fn do_list_images(&self, req: &ListImagesRequest) -> ListImagesResponse {
        let st = self.shared.lock();
        let wanted = req
            .filter
            .as_ref()
            .and_then(|f| f.image.as_ref())
            .map(|i| i.image.as_str())
            .filter(|s| !s.is_empty());
        let images = match wanted {
            Some(name) => st.images.resolve(name).map(|i| i.to_cri()).into_iter().collect(),
            None => st.images.list().into_iter().map(|i| i.to_cri()).collect(),
        };
        ListImagesResponse { images }
    }

    async fn do_pull_image(&self, req: PullImageRequest) -> CriResult<PullImageResponse> {
        let name = req.image.map(|i| i.image).unwrap_or_default();
        let Some(normalized) = normalize_image_name(&name) else {
            let msg = format!("failed to parse image reference {name:?}: invalid reference format");
            return Err(CriError::new("PullImage", Code::Unknown, msg));
        };
        let found = self.shared.lock().registry.get(&normalized);
        let Some((mut image, latency)) = found else {
            return Err(CriError::new(
                "PullImage",
                Code::Unknown,
                pull_failure_message(&normalized),
            ));
        };
        tokio::time::sleep(latency).await;
        if !normalized.contains('@') {
            image = image.tag(&normalized);
        }
        let image_ref = image.id().to_string();
        self.shared.lock().images.add(image);
        Ok(PullImageResponse { image_ref })
    }

    fn do_image_fs_info(&self) -> ImageFsInfoResponse {
        let (used, count) = {
            let st = self.shared.lock();
            (st.images.total_size(), st.images.list().len() as u64)
        };
        ImageFsInfoResponse {
            image_filesystems: vec![FilesystemUsage {
                timestamp: self.shared.clock.now_nanos(),
                fs_id: Some(FilesystemIdentifier {
                    mountpoint: self.shared.image_fs_mountpoint.clone(),
                }),
                used_bytes: Some(UInt64Value { value: used }),
                inodes_used: Some(UInt64Value { value: 100 * count }),
            }],
            container_filesystems: Vec::new(),
        }
    }
}

fn image_name(spec: &Option<ImageSpec>) -> &str {
    spec.as_ref().map_or("", |i| i.image.as_str())
}

fn pod_name(config: &Option<PodSandboxConfig>) -> &str {
    config
        .as_ref()
        .and_then(|c| c.metadata.as_ref())
        .map_or("", |m| m.name.as_str())
}

fn container_name(config: &Option<ContainerConfig>) -> &str {
    config
        .as_ref()
        .and_then(|c| c.metadata.as_ref())
        .map_or("", |m| m.name.as_str())
}

#[async_trait::async_trait]
impl Runtime for MockRuntime {
    async fn version(&self, _req: VersionRequest) -> CriResult<VersionResponse> {
        self.call("Version", "", async {
            Ok(VersionResponse {
                version: "0.1.0".into(),
                runtime_name: super::RUNTIME_NAME.into(),
                runtime_version: env!("CARGO_PKG_VERSION").into(),
                runtime_api_version: "v1".into(),
            })
        })
        .await
    }

    async fn run_pod_sandbox(&self, req: RunPodSandboxRequest) -> CriResult<RunPodSandboxResponse> {
        let target = pod_name(&req.config).to_string();
        self.call("RunPodSandbox", &target, self.do_run_pod_sandbox(req)).await
    }

    async fn stop_pod_sandbox(&self, req: StopPodSandboxRequest) -> CriResult<StopPodSandboxResponse> {
        let target = req.pod_sandbox_id.clone();
        self.call("StopPodSandbox", &target, self.do_stop_pod_sandbox(req))
            .await
    }

    async fn remove_pod_sandbox(&self, req: RemovePodSandboxRequest) -> CriResult<RemovePodSandboxResponse> {
        let target = req.pod_sandbox_id.clone();
        self.call("RemovePodSandbox", &target, self.do_remove_pod_sandbox(req))
            .await
    }

    async fn pod_sandbox_status(&self, req: PodSandboxStatusRequest) -> CriResult<PodSandboxStatusResponse> {
        self.call("PodSandboxStatus", &req.pod_sandbox_id, async {
            self.do_pod_sandbox_status(&req)
        })
        .await
    }

    async fn list_pod_sandbox(&self, req: ListPodSandboxRequest) -> CriResult<ListPodSandboxResponse> {
        self.call("ListPodSandbox", "", async { Ok(self.do_list_pod_sandbox(&req)) })
            .await
    }

    async fn create_container(&self, req: CreateContainerRequest) -> CriResult<CreateContainerResponse> {
        let target = format!("{}/{}", req.pod_sandbox_id, container_name(&req.config));
        self.call("CreateContainer", &target, self.do_create_container(req))
            .await
    }

    async fn start_container(&self, req: StartContainerRequest) -> CriResult<StartContainerResponse> {
        let target = req.container_id.clone();
        self.call("StartContainer", &target, self.do_start_container(req)).await
    }

    async fn stop_container(&self, req: StopContainerRequest) -> CriResult<StopContainerResponse> {
        let target = req.container_id.clone();
        self.call("StopContainer", &target, self.do_stop_container(req)).await
    }

    async fn remove_container(&self, req: RemoveContainerRequest) -> CriResult<RemoveContainerResponse> {
        let target = req.container_id.clone();
        self.call("RemoveContainer", &target, self.do_remove_container(req))
            .await
    }

    async fn list_containers(&self, req: ListContainersRequest) -> CriResult<ListContainersResponse> {
        self.call("ListContainers", "", async { Ok(self.do_list_containers(&req)) })
            .await
    }

    async fn container_status(&self, req: ContainerStatusRequest) -> CriResult<ContainerStatusResponse> {
        let target = req.container_id.clone();
        self.call("ContainerStatus", &target, self.do_container_status(req))
            .await
    }

    async fn update_container_resources(
        &self,
        req: UpdateContainerResourcesRequest,
    ) -> CriResult<UpdateContainerResourcesResponse> {
        let target = req.container_id.clone();
        self.call("UpdateContainerResources", &target, async {
            self.do_update_container_resources(req)
        })
        .await
    }

    async fn reopen_container_log(&self, req: ReopenContainerLogRequest) -> CriResult<ReopenContainerLogResponse> {
        let target = req.container_id.clone();
        self.call("ReopenContainerLog", &target, self.do_reopen_container_log(req))
            .await
    }

    async fn exec_sync(&self, req: ExecSyncRequest) -> CriResult<ExecSyncResponse> {
        let target = req.container_id.clone();
        self.call("ExecSync", &target, self.do_exec_sync(req)).await
    }

    async fn exec(&self, req: ExecRequest) -> CriResult<ExecResponse> {
        let target = req.container_id.clone();
        self.call("Exec", &target, async {
            let container_id = self.running_container_for("Exec", &req.container_id)?;
            let session = super::streaming::Session::Exec {
                container_id,
                cmd: req.cmd.clone(),
                stdin: req.stdin,
            };
            Ok(ExecResponse {
                url: self.streaming_url("Exec", "exec", session).await?,
            })
        })
        .await
    }

    async fn attach(&self, req: AttachRequest) -> CriResult<AttachResponse> {
        let target = req.container_id.clone();
        self.call("Attach", &target, async {
            self.running_container_for("Attach", &req.container_id)?;
            Ok(AttachResponse {
                url: self
                    .streaming_url("Attach", "attach", super::streaming::Session::Attach)
                    .await?,
            })
        })
        .await
    }

    async fn port_forward(&self, req: PortForwardRequest) -> CriResult<PortForwardResponse> {
        let target = req.pod_sandbox_id.clone();
        self.call("PortForward", &target, async {
            let ready = {
                let st = self.shared.lock();
                st.resolve_sandbox(&req.pod_sandbox_id)
                    .and_then(|id| st.sandboxes.get(&id).map(|s| s.state == PodSandboxState::SandboxReady))
            };
            match ready {
                None => {
                    return Err(CriError::new(
                        "PortForward",
                        tonic::Code::NotFound,
                        format!("failed to find sandbox {:?}: not found", req.pod_sandbox_id),
                    ));
                }
                Some(false) => {
                    return Err(CriError::new(
                        "PortForward",
                        tonic::Code::FailedPrecondition,
                        "sandbox is not ready",
                    ));
                }
                Some(true) => {}
            }
            let ports = req.port.iter().filter_map(|p| u16::try_from(*p).ok()).collect();
            let session = super::streaming::Session::PortForward { ports };
            Ok(PortForwardResponse {
                url: self.streaming_url("PortForward", "portforward", session).await?,
            })
        })
        .await
    }

    async fn container_stats(&self, req: ContainerStatsRequest) -> CriResult<ContainerStatsResponse> {
        self.call("ContainerStats", &req.container_id, async {
            self.do_container_stats(&req)
        })
        .await
    }

    async fn list_container_stats(&self, req: ListContainerStatsRequest) -> CriResult<ListContainerStatsResponse> {
        self.call("ListContainerStats", "", async {
            Ok(self.do_list_container_stats(&req))
        })
        .await
    }

    async fn pod_sandbox_stats(&self, req: PodSandboxStatsRequest) -> CriResult<PodSandboxStatsResponse> {
        self.call("PodSandboxStats", &req.pod_sandbox_id, async {
            self.do_pod_sandbox_stats(&req)
        })
        .await
    }

    async fn list_pod_sandbox_stats(&self, req: ListPodSandboxStatsRequest) -> CriResult<ListPodSandboxStatsResponse> {
        self.call("ListPodSandboxStats", "", async {
            Ok(self.do_list_pod_sandbox_stats(&req))
        })
        .await
    }

    async fn get_container_events(&self, req: GetEventsRequest) -> CriResult<crate::cri::ContainerEventStream> {
        let _ = req;
        self.call("GetContainerEvents", "", async {
            Ok(self.shared.cri_events.subscribe())
        })
        .await
    }

    async fn status(&self, req: StatusRequest) -> CriResult<StatusResponse> {
        self.call("Status", "", async { Ok(self.do_status(req.verbose)) }).await
    }

    async fn list_images(&self, req: ListImagesRequest) -> CriResult<ListImagesResponse> {
        self.call("ListImages", "", async { Ok(self.do_list_images(&req)) })
            .await
    }

    async fn image_status(&self, req: ImageStatusRequest) -> CriResult<ImageStatusResponse> {
        self.call("ImageStatus", image_name(&req.image), async {
            Ok(self.do_image_status(&req))
        })
        .await
    }

    async fn pull_image(&self, req: PullImageRequest) -> CriResult<PullImageResponse> {
        let target = image_name(&req.image).to_string();
        self.call("PullImage", &target, self.do_pull_image(req)).await
    }

    async fn remove_image(&self, req: RemoveImageRequest) -> CriResult<RemoveImageResponse> {
        self.call("RemoveImage", image_name(&req.image), async {
            self.shared.lock().images.remove(image_name(&req.image));
            Ok(RemoveImageResponse {})
        })
        .await
    }

    async fn image_fs_info(&self, _req: ImageFsInfoRequest) -> CriResult<ImageFsInfoResponse> {
        self.call("ImageFsInfo", "", async { Ok(self.do_image_fs_info()) })
            .await
    }
}

impl MockRuntime {
    /// The full ID of the running container `id` (prefixes resolve), or the
    /// error containerd gives.
    fn running_container_for(&self, method: &'static str, id: &str) -> CriResult<String> {
        let st = self.shared.lock();
        let full = st
            .resolve_container(id)
            .filter(|full| st.containers.contains_key(full))
            .ok_or_else(|| {
                CriError::new(
                    method,
                    tonic::Code::NotFound,
                    format!("failed to find container {id:?} in store: not found"),
                )
            })?;
        let running = st
            .containers
            .get(&full)
            .is_some_and(|c| c.state == crate::cri::v1::ContainerState::ContainerRunning);
        if !running {
            return Err(CriError::new(
                method,
                tonic::Code::FailedPrecondition,
                "container is not running",
            ));
        }
        Ok(full)
    }

    /// A single-use URL on the mock's streaming server (started on first use).
    async fn streaming_url(
        &self,
        method: &'static str,
        kind: &str,
        session: super::streaming::Session,
    ) -> CriResult<String> {
        let server = self
            .shared
            .streaming
            .get_or_try_init(super::streaming::StreamServer::start)
            .await
            .map_err(|e| CriError::new(method, tonic::Code::Internal, format!("streaming server: {e}")))?;
        Ok(server.register(kind, session, self.clone()))
    }
}
