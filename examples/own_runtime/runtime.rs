//! `ProcessRuntime`: a toy CRI runtime whose containers are host processes.
//!
//! A sandbox is only a record (no namespaces, no network: use it for
//! `hostNetwork` pods); a container is its `command` + `args`, run with the
//! agent's environment plus its own `envs`, in its own process group. Images
//! are never looked at (`ImageStatus` says every image is present). Each
//! object keeps its CRI status, updated as its process starts and exits.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actlet::cri::v1::*;
use actlet::cri::{CriError, CriResult, Runtime};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::sync::watch;
use tonic::Code;

/// A container: its CRI status, what to run, and its process once started.
struct Process {
    status: ContainerStatus,
    sandbox_id: String,
    argv: Vec<String>,
    envs: Vec<KeyValue>,
    pid: Option<Pid>,
    /// Turns true when the process has exited.
    exited: Option<watch::Receiver<bool>>,
}

/// The runtime; clones share the same state.
#[derive(Clone, Default)]
pub struct ProcessRuntime {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    sandboxes: HashMap<String, PodSandboxStatus>,
    containers: HashMap<String, Process>,
}

const READY: i32 = PodSandboxState::SandboxReady as i32;
const NOT_READY: i32 = PodSandboxState::SandboxNotready as i32;
const CREATED: i32 = ContainerState::ContainerCreated as i32;
const RUNNING: i32 = ContainerState::ContainerRunning as i32;
const EXITED: i32 = ContainerState::ContainerExited as i32;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn new_id() -> String {
    format!("{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>())
}

fn not_found<T>(method: &'static str, id: &str) -> CriResult<T> {
    Err(CriError::new(method, Code::NotFound, format!("{id:?}: not found")))
}

fn unsupported<T>(method: &'static str) -> CriResult<T> {
    Err(CriError::new(method, Code::Unimplemented, "not supported"))
}

/// Every `selector` entry is among `labels`.
fn selected(labels: &HashMap<String, String>, selector: &HashMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl ProcessRuntime {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// SIGTERM to the container's process group (unless `grace` is zero),
    /// SIGKILL after `grace`; returns once the process has exited.
    async fn stop(&self, id: &str, grace: Duration) -> CriResult<()> {
        let (pid, mut exited) = match self.lock().containers.get(id) {
            None => return not_found("StopContainer", id),
            Some(Process {
                pid: Some(pid),
                exited: Some(rx),
                ..
            }) => (*pid, rx.clone()),
            Some(_) => return Ok(()), // never started
        };
        if !grace.is_zero() {
            let _ = killpg(pid, Signal::SIGTERM);
            if tokio::time::timeout(grace, exited.wait_for(|e| *e)).await.is_ok() {
                return Ok(());
            }
        }
        let _ = killpg(pid, Signal::SIGKILL);
        let _ = exited.wait_for(|e| *e).await;
        Ok(())
    }

    /// Records that container `id` exited with `code`.
    fn exited(&self, id: &str, code: i32) {
        if let Some(c) = self.lock().containers.get_mut(id) {
            let s = &mut c.status;
            (s.state, s.exit_code, s.finished_at) = (EXITED, code, now());
            s.reason = if code == 0 { "Completed" } else { "Error" }.into();
        }
    }
}

#[async_trait::async_trait]
impl Runtime for ProcessRuntime {
    async fn version(&self, _: VersionRequest) -> CriResult<VersionResponse> {
        let v = |s: &str| s.to_string();
        let (version, runtime_name, runtime_api_version) = (v("0.1.0"), v("process-runtime"), v("v1"));
        let runtime_version = version.clone();
        Ok(VersionResponse {
            version,
            runtime_name,
            runtime_version,
            runtime_api_version,
        })
    }

    async fn run_pod_sandbox(&self, req: RunPodSandboxRequest) -> CriResult<RunPodSandboxResponse> {
        let (id, config) = (new_id(), req.config.unwrap_or_default());
        let security = config.linux.and_then(|l| l.security_context);
        let namespaces = Some(Namespace {
            options: security.and_then(|s| s.namespace_options),
        });
        let status = PodSandboxStatus {
            id: id.clone(),
            metadata: config.metadata,
            state: READY,
            created_at: now(),
            network: Some(PodSandboxNetworkStatus::default()),
            linux: Some(LinuxPodSandboxStatus { namespaces }),
            labels: config.labels,
            annotations: config.annotations,
            runtime_handler: req.runtime_handler,
        };
        self.lock().sandboxes.insert(id.clone(), status);
        Ok(RunPodSandboxResponse { pod_sandbox_id: id })
    }

    async fn stop_pod_sandbox(&self, req: StopPodSandboxRequest) -> CriResult<StopPodSandboxResponse> {
        let id = req.pod_sandbox_id;
        let containers: Vec<String> = {
            let mut st = self.lock();
            let Some(sandbox) = st.sandboxes.get_mut(&id) else {
                return not_found("StopPodSandbox", &id);
            };
            sandbox.state = NOT_READY;
            let mine = st.containers.iter().filter(|(_, c)| c.sandbox_id == id);
            mine.map(|(cid, _)| cid.clone()).collect()
        };
        for c in containers {
            self.stop(&c, Duration::ZERO).await?;
        }
        Ok(StopPodSandboxResponse {})
    }

    async fn remove_pod_sandbox(&self, req: RemovePodSandboxRequest) -> CriResult<RemovePodSandboxResponse> {
        let pod_sandbox_id = req.pod_sandbox_id;
        if self.lock().sandboxes.contains_key(&pod_sandbox_id) {
            let id = pod_sandbox_id.clone();
            self.stop_pod_sandbox(StopPodSandboxRequest { pod_sandbox_id: id })
                .await?;
        }
        let mut st = self.lock();
        st.containers.retain(|_, c| c.sandbox_id != pod_sandbox_id);
        st.sandboxes.remove(&pod_sandbox_id);
        Ok(RemovePodSandboxResponse {})
    }

    async fn pod_sandbox_status(&self, req: PodSandboxStatusRequest) -> CriResult<PodSandboxStatusResponse> {
        let Some(status) = self.lock().sandboxes.get(&req.pod_sandbox_id).cloned() else {
            return not_found("PodSandboxStatus", &req.pod_sandbox_id);
        };
        let status = Some(status);
        Ok(PodSandboxStatusResponse {
            status,
            ..Default::default()
        })
    }

    async fn list_pod_sandbox(&self, req: ListPodSandboxRequest) -> CriResult<ListPodSandboxResponse> {
        let f = req.filter.unwrap_or_default();
        let st = self.lock();
        let items = st.sandboxes.values().filter(|s| {
            (f.id.is_empty() || s.id == f.id)
                && f.state.as_ref().is_none_or(|v| v.state == s.state)
                && selected(&s.labels, &f.label_selector)
        });
        let items = items.map(|s| PodSandbox {
            id: s.id.clone(),
            metadata: s.metadata.clone(),
            state: s.state,
            created_at: s.created_at,
            labels: s.labels.clone(),
            annotations: s.annotations.clone(),
            runtime_handler: s.runtime_handler.clone(),
        });
        Ok(ListPodSandboxResponse { items: items.collect() })
    }

    async fn create_container(&self, req: CreateContainerRequest) -> CriResult<CreateContainerResponse> {
        let mut st = self.lock();
        if st.sandboxes.get(&req.pod_sandbox_id).is_none_or(|s| s.state != READY) {
            return not_found("CreateContainer", &req.pod_sandbox_id);
        }
        let (id, config) = (new_id(), req.config.unwrap_or_default());
        let status = ContainerStatus {
            id: id.clone(),
            metadata: config.metadata,
            state: CREATED,
            created_at: now(),
            image_ref: config.image.as_ref().map(|i| i.image.clone()).unwrap_or_default(),
            image: config.image,
            labels: config.labels,
            annotations: config.annotations,
            log_path: config.log_path,
            ..Default::default()
        };
        let argv = config.command.into_iter().chain(config.args).collect();
        let (sandbox_id, envs) = (req.pod_sandbox_id, config.envs);
        let process = Process {
            status,
            sandbox_id,
            argv,
            envs,
            pid: None,
            exited: None,
        };
        st.containers.insert(id.clone(), process);
        Ok(CreateContainerResponse { container_id: id })
    }

    async fn start_container(&self, req: StartContainerRequest) -> CriResult<StartContainerResponse> {
        let id = req.container_id;
        let mut st = self.lock();
        let Some(c) = st.containers.get_mut(&id).filter(|c| c.status.state == CREATED) else {
            return not_found("StartContainer", &id);
        };
        let Some((program, args)) = c.argv.split_first() else {
            return Err(CriError::new("StartContainer", Code::InvalidArgument, "no command"));
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).process_group(0);
        cmd.envs(c.envs.iter().map(|kv| (&kv.key, &kv.value)));
        c.status.started_at = now();
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                let message = format!("cannot run {program:?}: {e}");
                drop(st);
                self.exited(&id, 128);
                return Err(CriError::new("StartContainer", Code::Unknown, message));
            }
        };
        let (tx, rx) = watch::channel(false);
        c.status.state = RUNNING;
        (c.pid, c.exited) = (child.id().map(|p| Pid::from_raw(p as i32)), Some(rx));
        let runtime = self.clone();
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(status) => status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(9)),
                Err(_) => 255,
            };
            runtime.exited(&id, code);
            let _ = tx.send(true);
        });
        Ok(StartContainerResponse {})
    }

    async fn stop_container(&self, req: StopContainerRequest) -> CriResult<StopContainerResponse> {
        let grace = Duration::from_secs(req.timeout.max(0) as u64);
        self.stop(&req.container_id, grace).await?;
        Ok(StopContainerResponse {})
    }

    async fn remove_container(&self, req: RemoveContainerRequest) -> CriResult<RemoveContainerResponse> {
        if self.lock().containers.contains_key(&req.container_id) {
            self.stop(&req.container_id, Duration::ZERO).await?;
        }
        self.lock().containers.remove(&req.container_id);
        Ok(RemoveContainerResponse {})
    }

    async fn list_containers(&self, req: ListContainersRequest) -> CriResult<ListContainersResponse> {
        let f = req.filter.unwrap_or_default();
        let st = self.lock();
        let found = st.containers.values().filter(|c| {
            (f.id.is_empty() || c.status.id == f.id)
                && (f.pod_sandbox_id.is_empty() || c.sandbox_id == f.pod_sandbox_id)
                && f.state.as_ref().is_none_or(|v| v.state == c.status.state)
                && selected(&c.status.labels, &f.label_selector)
        });
        let containers = found.map(|c| Container {
            id: c.status.id.clone(),
            pod_sandbox_id: c.sandbox_id.clone(),
            metadata: c.status.metadata.clone(),
            image: c.status.image.clone(),
            image_ref: c.status.image_ref.clone(),
            state: c.status.state,
            created_at: c.status.created_at,
            labels: c.status.labels.clone(),
            annotations: c.status.annotations.clone(),
            image_id: String::new(),
        });
        let containers = containers.collect();
        Ok(ListContainersResponse { containers })
    }

    async fn container_status(&self, req: ContainerStatusRequest) -> CriResult<ContainerStatusResponse> {
        let Some(c) = self.lock().containers.get(&req.container_id).map(|c| c.status.clone()) else {
            return not_found("ContainerStatus", &req.container_id);
        };
        let status = Some(c);
        Ok(ContainerStatusResponse {
            status,
            ..Default::default()
        })
    }

    async fn status(&self, _: StatusRequest) -> CriResult<StatusResponse> {
        let ready = |t: &str| RuntimeCondition {
            r#type: t.into(),
            status: true,
            ..Default::default()
        };
        let status = Some(RuntimeStatus {
            conditions: vec![ready("RuntimeReady"), ready("NetworkReady")],
        });
        Ok(StatusResponse {
            status,
            ..Default::default()
        })
    }

    async fn image_status(&self, req: ImageStatusRequest) -> CriResult<ImageStatusResponse> {
        let name = req.image.map(|i| i.image).unwrap_or_default();
        let (id, repo_tags) = (format!("process:{name}"), vec![name]);
        let image = Some(Image {
            id,
            repo_tags,
            ..Default::default()
        });
        Ok(ImageStatusResponse {
            image,
            ..Default::default()
        })
    }

    async fn pull_image(&self, req: PullImageRequest) -> CriResult<PullImageResponse> {
        let image_ref = format!("process:{}", req.image.map(|i| i.image).unwrap_or_default());
        Ok(PullImageResponse { image_ref })
    }

    // What a process runtime does not do.
    async fn update_container_resources(
        &self,
        _: UpdateContainerResourcesRequest,
    ) -> CriResult<UpdateContainerResourcesResponse> {
        unsupported("UpdateContainerResources")
    }
    async fn reopen_container_log(&self, _: ReopenContainerLogRequest) -> CriResult<ReopenContainerLogResponse> {
        unsupported("ReopenContainerLog")
    }
    async fn exec_sync(&self, _: ExecSyncRequest) -> CriResult<ExecSyncResponse> {
        unsupported("ExecSync")
    }
    async fn container_stats(&self, _: ContainerStatsRequest) -> CriResult<ContainerStatsResponse> {
        unsupported("ContainerStats")
    }
    async fn list_container_stats(&self, _: ListContainerStatsRequest) -> CriResult<ListContainerStatsResponse> {
        unsupported("ListContainerStats")
    }
    async fn list_images(&self, _: ListImagesRequest) -> CriResult<ListImagesResponse> {
        unsupported("ListImages")
    }
    async fn remove_image(&self, _: RemoveImageRequest) -> CriResult<RemoveImageResponse> {
        unsupported("RemoveImage")
    }
    async fn image_fs_info(&self, _: ImageFsInfoRequest) -> CriResult<ImageFsInfoResponse> {
        unsupported("ImageFsInfo")
    }
}
