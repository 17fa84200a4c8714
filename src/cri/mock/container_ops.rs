//! The container calls of the mock: create, start, stop, remove, status,
//! list, update, reopen log, exec and stats.

use std::path::Path;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tonic::Code;

use super::MockRuntime;
use super::exec;
use super::images::MockImage;
use super::logs::LogWriter;
use super::observe::MockEvent;
use super::process::{Process, Signal};
use super::script::ContainerInfo;
use super::state::{ContainerRecord, random_id};
use crate::cri::v1::{self, ContainerState, NamespaceMode, PodSandboxState};
use crate::cri::{CriError, CriResult};

/// containerd's message for an unknown container in most calls.
fn not_found(method: &'static str, id: &str) -> CriError {
    CriError::new(
        method,
        Code::NotFound,
        format!("an error occurred when try to find container {id:?}: not found"),
    )
}

/// The process command line, as containerd builds it: `command` replaces the
/// image entrypoint (and drops the image cmd), `args` replace the image cmd.
fn command_line(config: &v1::ContainerConfig, image: &MockImage) -> Vec<String> {
    let (command, args) = match (config.command.is_empty(), config.args.is_empty()) {
        (false, _) => (&config.command[..], &config.args[..]),
        (true, true) => (image.entrypoint_argv(), image.cmd_argv()),
        (true, false) => (image.entrypoint_argv(), &config.args[..]),
    };
    command.iter().chain(args).cloned().collect()
}

impl MockRuntime {
    pub(super) async fn do_create_container(
        &self,
        req: v1::CreateContainerRequest,
    ) -> CriResult<v1::CreateContainerResponse> {
        const M: &str = "CreateContainer";
        let err = |code, msg: String| CriError::new(M, code, msg);
        let config = req.config.unwrap_or_default();
        let meta = config
            .metadata
            .clone()
            .ok_or_else(|| err(Code::Unknown, "container config must include metadata".into()))?;
        let (id, latency) = {
            let mut st = self.shared.lock();
            let sb = st
                .resolve_sandbox(&req.pod_sandbox_id)
                .and_then(|id| st.sandboxes.get(&id))
                .ok_or_else(|| {
                    err(
                        Code::NotFound,
                        format!("failed to find sandbox id {:?}: not found", req.pod_sandbox_id),
                    )
                })?;
            if sb.state != PodSandboxState::SandboxReady {
                let msg = format!(
                    "failed to get sandbox container task: no running task found: task {} not found: not found",
                    sb.id
                );
                return Err(err(Code::NotFound, msg));
            }
            let image_name = config.image.as_ref().map(|i| i.image.clone()).unwrap_or_default();
            let image = st.images.resolve(&image_name).ok_or_else(|| {
                err(
                    Code::NotFound,
                    format!("failed to resolve image {image_name:?}: not found"),
                )
            })?;
            let pod = sb.metadata();
            let name_key = format!(
                "{}_{}_{}_{}_{}",
                meta.name, pod.name, pod.namespace, pod.uid, meta.attempt
            );
            if let Some(holder) = st.names.get(&name_key) {
                let msg = format!(
                    "failed to reserve container name {name_key:?}: name {name_key:?} is reserved for {holder:?}"
                );
                return Err(err(Code::Unknown, msg));
            }
            let id = random_id();
            let argv = command_line(&config, image);
            if argv.is_empty() {
                return Err(err(
                    Code::Unknown,
                    format!("failed to generate container {id:?} spec: no command specified"),
                ));
            }
            let pid_mode = config
                .linux
                .as_ref()
                .and_then(|l| l.security_context.as_ref())
                .and_then(|s| s.namespace_options.as_ref())
                .map_or(NamespaceMode::Pod, |n| n.pid());
            let info = ContainerInfo {
                pod_name: pod.name.clone(),
                pod_namespace: pod.namespace.clone(),
                pod_uid: pod.uid.clone(),
                name: meta.name.clone(),
                attempt: meta.attempt,
                argv,
                image: image.repo_tags().first().cloned().unwrap_or_default(),
                pid1: pid_mode == NamespaceMode::Container,
                stdin: config.stdin,
                busybox_image: image.is_busybox(),
            };
            let behaviour = st.behaviour_for(&info);
            if let Some((code, msg)) = behaviour.create_error.clone() {
                return Err(err(code, msg));
            }
            let log_dir = req
                .sandbox_config
                .as_ref()
                .map(|c| c.log_directory.clone())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| sb.config.log_directory.clone());
            let log_path = match config.log_path.as_str() {
                "" => String::new(),
                rel => Path::new(&log_dir).join(rel).to_string_lossy().into_owned(),
            };
            let latency = behaviour.latency_of(M);
            let record = ContainerRecord {
                id: id.clone(),
                sandbox_id: sb.id.clone(),
                image_id: image.id().to_string(),
                state: ContainerState::ContainerCreated,
                starting: false,
                created_at: self.shared.clock.now_nanos(),
                started_at: 0,
                finished_at: 0,
                exit_code: 0,
                reason: String::new(),
                message: String::new(),
                log_path,
                resources: config
                    .linux
                    .as_ref()
                    .and_then(|l| l.resources.clone())
                    .unwrap_or_default(),
                behaviour,
                info,
                name_key: name_key.clone(),
                process: None,
                exited: watch::channel(false).0,
                config,
            };
            st.names.insert(name_key, id.clone());
            st.insert_container(record);
            (id, latency)
        };
        self.shared.emit(MockEvent::ContainerCreated { id: id.clone() });
        tokio::time::sleep(latency).await;
        Ok(v1::CreateContainerResponse { container_id: id })
    }

    pub(super) async fn do_start_container(
        &self,
        req: v1::StartContainerRequest,
    ) -> CriResult<v1::StartContainerResponse> {
        const M: &str = "StartContainer";
        let (id, latency, start_error, log_path, steps, on_term) = {
            let mut st = self.shared.lock();
            let id = st
                .resolve_container(&req.container_id)
                .ok_or_else(|| not_found(M, &req.container_id))?;
            let c = st.containers.get_mut(&id).expect("resolved id exists");
            if c.state != ContainerState::ContainerCreated || c.starting {
                let why = if c.starting {
                    "container is already in starting state".to_string()
                } else {
                    format!("container is in {} state", c.state.as_str_name())
                };
                return Err(CriError::new(
                    M,
                    Code::Unknown,
                    format!("failed to set starting state for container {id:?}: {why}"),
                ));
            }
            c.starting = true;
            let b = &c.behaviour;
            (
                id.clone(),
                b.latency_of(M),
                b.start_error.clone(),
                c.log_path.clone(),
                b.steps.clone(),
                b.on_term,
            )
        };
        tokio::time::sleep(latency).await;
        let sandbox_ready = {
            let st = self.shared.lock();
            let sandbox_id = st.containers.get(&id).map(|c| c.sandbox_id.clone()).unwrap_or_default();
            let ready = st
                .sandboxes
                .get(&sandbox_id)
                .is_some_and(|s| s.state == PodSandboxState::SandboxReady);
            ready.then_some(()).ok_or(sandbox_id)
        };
        let log = match (sandbox_ready, start_error) {
            (Err(sandbox_id), _) => Err(format!("sandbox container {sandbox_id:?} is not running")),
            (Ok(()), Some(msg)) => Err(msg),
            (Ok(()), None) if Path::new(&log_path).is_absolute() => {
                LogWriter::open(Path::new(&log_path), self.shared.clock.clone())
                    .map(Some)
                    .map_err(|e| format!("failed to create container loggers: failed to create and open log file: {e}"))
            }
            (Ok(()), None) => Ok(None),
        };
        let log = match log {
            Ok(log) => log,
            Err(msg) => {
                self.shared.finish_container(&id, 128, "StartError", &msg);
                return Err(CriError::new(M, Code::Unknown, msg));
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.shared.lock();
            let c = st.containers.get_mut(&id).ok_or_else(|| not_found(M, &id))?;
            c.state = ContainerState::ContainerRunning;
            c.starting = false;
            c.started_at = self.shared.clock.now_nanos();
            c.process = Some(tx);
        }
        self.shared.emit(MockEvent::ContainerStarted { id: id.clone() });
        if let Some(process) = Process::new(&self.shared, &id, steps, on_term, log).start() {
            tokio::spawn(process.run(rx));
        }
        Ok(v1::StartContainerResponse {})
    }

    /// Sends SIGTERM and waits up to `grace`, then SIGKILL and waits for the
    /// exit; a zero `grace` kills at once. No-op unless the container runs.
    pub(super) async fn stop_process(&self, id: &str, grace: Duration) {
        let found = {
            let st = self.shared.lock();
            st.containers
                .get(id)
                .and_then(|c| Some((c.process.clone()?, c.exited.subscribe())))
        };
        let Some((signals, mut exited)) = found else { return };
        if !grace.is_zero() {
            let _ = signals.send(Signal::Term);
            if tokio::time::timeout(grace, exited.wait_for(|e| *e)).await.is_ok() {
                return;
            }
        }
        let _ = signals.send(Signal::Kill);
        let _ = exited.wait_for(|e| *e).await;
    }

    /// Resolves a container id, applying the container's latency for `method`.
    async fn resolve_with_latency(&self, method: &'static str, id: &str) -> CriResult<String> {
        let (id, latency) = {
            let st = self.shared.lock();
            let id = st.resolve_container(id).ok_or_else(|| not_found(method, id))?;
            let latency = st.containers[&id].behaviour.latency_of(method);
            (id, latency)
        };
        tokio::time::sleep(latency).await;
        Ok(id)
    }

    pub(super) async fn do_stop_container(
        &self,
        req: v1::StopContainerRequest,
    ) -> CriResult<v1::StopContainerResponse> {
        let id = self.resolve_with_latency("StopContainer", &req.container_id).await?;
        let grace = Duration::from_secs(u64::try_from(req.timeout).unwrap_or(0));
        self.stop_process(&id, grace).await;
        Ok(v1::StopContainerResponse {})
    }

    pub(super) async fn do_remove_container(
        &self,
        req: v1::RemoveContainerRequest,
    ) -> CriResult<v1::RemoveContainerResponse> {
        let Ok(id) = self.resolve_with_latency("RemoveContainer", &req.container_id).await else {
            return Ok(v1::RemoveContainerResponse {});
        };
        self.stop_process(&id, Duration::ZERO).await;
        let removed = {
            let mut st = self.shared.lock();
            let now = self.shared.clock.now_nanos();
            let deleted = v1::ContainerEventType::ContainerDeletedEvent;
            self.shared.cri_events.publish(&st, &id, deleted, now);
            let removed = st.remove_container(&id);
            if let Some(c) = &removed {
                st.names.remove(&c.name_key);
            }
            removed.is_some()
        };
        if removed {
            self.shared.emit(MockEvent::ContainerRemoved { id });
        }
        Ok(v1::RemoveContainerResponse {})
    }

    pub(super) async fn do_container_status(
        &self,
        req: v1::ContainerStatusRequest,
    ) -> CriResult<v1::ContainerStatusResponse> {
        let id = self.resolve_with_latency("ContainerStatus", &req.container_id).await?;
        let st = self.shared.lock();
        let c = st
            .containers
            .get(&id)
            .ok_or_else(|| not_found("ContainerStatus", &id))?;
        let mut status = c.to_status(&st.images);
        if !st.features.supplemental_groups_policy {
            status.user = None;
        }
        Ok(v1::ContainerStatusResponse {
            status: Some(status),
            info: Default::default(),
        })
    }

    pub(super) fn do_list_containers(&self, req: &v1::ListContainersRequest) -> v1::ListContainersResponse {
        let filter = req.filter.clone().unwrap_or_default();
        let st = self.shared.lock();
        let items = st.containers_matching(&filter.id, &filter.pod_sandbox_id, &filter.label_selector, |c| {
            c.matches(&filter)
        });
        v1::ListContainersResponse {
            containers: items.into_iter().map(ContainerRecord::to_list_item).collect(),
        }
    }

    pub(super) fn do_update_container_resources(
        &self,
        req: v1::UpdateContainerResourcesRequest,
    ) -> CriResult<v1::UpdateContainerResourcesResponse> {
        let mut st = self.shared.lock();
        let c = st
            .resolve_container(&req.container_id)
            .and_then(|id| st.containers.get_mut(&id));
        let c = c.ok_or_else(|| {
            CriError::new(
                "UpdateContainerResources",
                Code::NotFound,
                "failed to find container: not found",
            )
        })?;
        if let Some(linux) = req.linux {
            c.resources = linux;
        }
        Ok(v1::UpdateContainerResourcesResponse {})
    }

    pub(super) async fn do_reopen_container_log(
        &self,
        req: v1::ReopenContainerLogRequest,
    ) -> CriResult<v1::ReopenContainerLogResponse> {
        const M: &str = "ReopenContainerLog";
        let signals = {
            let st = self.shared.lock();
            let id = st
                .resolve_container(&req.container_id)
                .ok_or_else(|| not_found(M, &req.container_id))?;
            let c = &st.containers[&id];
            c.process
                .clone()
                .filter(|_| c.state == ContainerState::ContainerRunning)
        };
        let not_running = || CriError::new(M, Code::Unknown, "container is not running");
        let signals = signals.ok_or_else(not_running)?;
        let (ack, done) = oneshot::channel();
        signals.send(Signal::ReopenLog(ack)).map_err(|_| not_running())?;
        match done.await {
            Ok(Err(e)) => Err(CriError::new(
                M,
                Code::Unknown,
                format!("failed to reopen container log: {e}"),
            )),
            Ok(Ok(())) => Ok(v1::ReopenContainerLogResponse {}),
            Err(_) => Err(not_running()),
        }
    }

    pub(super) async fn do_exec_sync(&self, req: v1::ExecSyncRequest) -> CriResult<v1::ExecSyncResponse> {
        const M: &str = "ExecSync";
        let (handlers, latency) = {
            let st = self.shared.lock();
            let c = st
                .resolve_container(&req.container_id)
                .and_then(|id| st.containers.get(&id))
                .ok_or_else(|| {
                    let msg = format!(
                        "failed to exec in container: failed to find container {:?} in store: not found",
                        req.container_id
                    );
                    CriError::new(M, Code::NotFound, msg)
                })?;
            if c.state != ContainerState::ContainerRunning {
                let msg = format!(
                    "failed to exec in container: container is in {} state",
                    c.state.as_str_name()
                );
                return Err(CriError::new(M, Code::Unknown, msg));
            }
            (c.behaviour.exec.clone(), c.behaviour.latency_of(M))
        };
        tokio::time::sleep(latency).await;
        exec::run(&handlers, &req.cmd, req.timeout).await
    }

    pub(super) fn do_container_stats(&self, req: &v1::ContainerStatsRequest) -> CriResult<v1::ContainerStatsResponse> {
        const M: &str = "ContainerStats";
        let st = self.shared.lock();
        let c = st
            .resolve_container(&req.container_id)
            .and_then(|id| st.containers.get(&id));
        let c = c.ok_or_else(|| CriError::new(M, Code::NotFound, "failed to find container: not found"))?;
        if c.state != ContainerState::ContainerRunning {
            return Err(CriError::new(M, Code::Unknown, "unexpected metrics response: []"));
        }
        Ok(v1::ContainerStatsResponse {
            stats: Some(self.stats_of(c)),
        })
    }

    pub(super) fn do_list_container_stats(
        &self,
        req: &v1::ListContainerStatsRequest,
    ) -> v1::ListContainerStatsResponse {
        let filter = req.filter.clone().unwrap_or_default();
        let st = self.shared.lock();
        let items = st.containers_matching(&filter.id, &filter.pod_sandbox_id, &filter.label_selector, |c| {
            c.matches_stats(&filter)
        });
        v1::ListContainerStatsResponse {
            stats: items.into_iter().map(|c| self.stats_of(c)).collect(),
        }
    }
}
