//! [`Fixture`]: what one conformance check works with — the runtime, the
//! environment, config builders, polling helpers, and cleanup of every
//! sandbox the check created.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::ConformanceEnv;
use crate::cri::v1::{self, ContainerState, NamespaceMode};
use crate::cri::{CriError, CriResult, Runtime};

/// The label every sandbox and container of the suite carries (value: the check name).
pub const CHECK_LABEL: &str = "conformance.actlet.io/check";

/// The outcome of a step of a check: `Err` is the failure detail.
pub type Step<T = ()> = Result<T, String>;

/// Turns a CRI error into a failure detail naming the step.
pub(crate) fn ctx<T>(what: &str, r: CriResult<T>) -> Step<T> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Fails with `detail` unless `cond` holds.
pub(crate) fn ensure(cond: bool, detail: impl FnOnce() -> String) -> Step {
    if cond { Ok(()) } else { Err(detail()) }
}

/// Expects an error with `code` (and a message containing `needle`).
pub(crate) fn expect_err<T: std::fmt::Debug>(
    what: &str,
    r: CriResult<T>,
    code: tonic::Code,
    needle: &str,
) -> Step<CriError> {
    match r {
        Err(e) if e.code == code && e.message.contains(needle) => Ok(e),
        Err(e) => Err(format!("{what}: expected {code:?} containing {needle:?}, got {e}")),
        Ok(v) => Err(format!("{what}: expected {code:?}, got Ok({v:?})")),
    }
}

/// One check's view of the runtime under test.
pub struct Fixture<'a> {
    /// The runtime under test.
    pub rt: &'a dyn Runtime,
    /// The environment.
    pub env: &'a ConformanceEnv,
    check: &'static str,
    /// Sandboxes to remove afterwards, with their log directories.
    sandboxes: Mutex<Vec<(String, PathBuf)>>,
    timings: Mutex<Vec<(String, Duration)>>,
}

impl<'a> Fixture<'a> {
    pub(crate) fn new(rt: &'a dyn Runtime, env: &'a ConformanceEnv, check: &'static str) -> Self {
        Self {
            rt,
            env,
            check,
            sandboxes: Mutex::default(),
            timings: Mutex::default(),
        }
    }

    /// Records a measured duration for the report.
    pub fn record(&self, label: &str, d: Duration) {
        self.timings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((label.to_string(), d));
    }

    pub(crate) fn take_timings(&self) -> Vec<(String, Duration)> {
        std::mem::take(&mut *self.timings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A sandbox config unique to this check and run: name
    /// `<check>-<suffix>-<run id>`, a fresh uid, the env's namespace, a log
    /// directory under the log root, pid namespace per container.
    pub fn sandbox_config(&self, suffix: &str, host_network: bool) -> v1::PodSandboxConfig {
        let name = format!("{}-{suffix}-{}", self.check.replace('_', "-"), self.env.run_id);
        let uid = format!("{}-{:08x}", self.env.run_id, rand::random::<u32>());
        let namespace = self.env.namespace.clone();
        let log_directory = self.env.log_root.join(format!("{namespace}_{name}_{uid}"));
        let network = if host_network {
            NamespaceMode::Node
        } else {
            NamespaceMode::Pod
        };
        v1::PodSandboxConfig {
            metadata: Some(v1::PodSandboxMetadata {
                name: name.clone(),
                uid,
                namespace,
                attempt: 0,
            }),
            hostname: if host_network { String::new() } else { name },
            log_directory: log_directory.to_string_lossy().into_owned(),
            labels: HashMap::from([(CHECK_LABEL.to_string(), self.check.to_string())]),
            annotations: HashMap::from([("conformance.actlet.io/run".to_string(), self.env.run_id.clone())]),
            linux: Some(v1::LinuxPodSandboxConfig {
                security_context: Some(v1::LinuxSandboxSecurityContext {
                    namespace_options: Some(v1::NamespaceOption {
                        network: network as i32,
                        pid: NamespaceMode::Container as i32,
                        ipc: NamespaceMode::Pod as i32,
                        target_id: String::new(),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Runs a sandbox (remembered for cleanup); returns its id and config.
    pub async fn run_sandbox(&self, suffix: &str, host_network: bool) -> Step<(String, v1::PodSandboxConfig)> {
        let config = self.sandbox_config(suffix, host_network);
        let req = v1::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        };
        let id = ctx("RunPodSandbox", self.rt.run_pod_sandbox(req).await)?.pod_sandbox_id;
        let logs = PathBuf::from(&config.log_directory);
        self.sandboxes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id.clone(), logs));
        Ok((id, config))
    }

    /// A busybox container running `argv` as PID 1 of its own PID namespace
    /// (`pid_pod` = false, as the kubelet does) or in the pod's.
    pub fn container_config(&self, name: &str, argv: &[&str], pid_pod: bool) -> v1::ContainerConfig {
        let pid = if pid_pod {
            NamespaceMode::Pod
        } else {
            NamespaceMode::Container
        };
        v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: name.to_string(),
                attempt: 0,
            }),
            image: Some(v1::ImageSpec {
                image: self.env.busybox_image.clone(),
                ..Default::default()
            }),
            command: argv.iter().map(|s| s.to_string()).collect(),
            log_path: format!("{name}/0.log"),
            labels: HashMap::from([
                (CHECK_LABEL.to_string(), self.check.to_string()),
                ("name".to_string(), name.to_string()),
            ]),
            annotations: HashMap::from([("conformance.actlet.io/note".to_string(), "hello".to_string())]),
            linux: Some(v1::LinuxContainerConfig {
                security_context: Some(v1::LinuxContainerSecurityContext {
                    namespace_options: Some(v1::NamespaceOption {
                        pid: pid as i32,
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Creates a container in a sandbox.
    pub async fn create(&self, sandbox: &(String, v1::PodSandboxConfig), config: v1::ContainerConfig) -> Step<String> {
        let req = v1::CreateContainerRequest {
            pod_sandbox_id: sandbox.0.clone(),
            config: Some(config),
            sandbox_config: Some(sandbox.1.clone()),
        };
        Ok(ctx("CreateContainer", self.rt.create_container(req).await)?.container_id)
    }

    /// Creates and starts a busybox container running `argv`.
    pub async fn start(
        &self,
        sandbox: &(String, v1::PodSandboxConfig),
        name: &str,
        argv: &[&str],
        pid_pod: bool,
    ) -> Step<String> {
        let id = self.create(sandbox, self.container_config(name, argv, pid_pod)).await?;
        ctx(
            "StartContainer",
            self.rt
                .start_container(v1::StartContainerRequest {
                    container_id: id.clone(),
                })
                .await,
        )?;
        Ok(id)
    }

    /// `ContainerStatus` of `id`.
    pub async fn status(&self, id: &str) -> Step<v1::ContainerStatus> {
        let req = v1::ContainerStatusRequest {
            container_id: id.to_string(),
            verbose: false,
        };
        ctx("ContainerStatus", self.rt.container_status(req).await)?
            .status
            .ok_or_else(|| "ContainerStatus: empty status".into())
    }

    /// `PodSandboxStatus` of `id`.
    pub async fn sandbox_status(&self, id: &str) -> Step<v1::PodSandboxStatus> {
        let req = v1::PodSandboxStatusRequest {
            pod_sandbox_id: id.to_string(),
            verbose: false,
        };
        ctx("PodSandboxStatus", self.rt.pod_sandbox_status(req).await)?
            .status
            .ok_or_else(|| "PodSandboxStatus: empty status".into())
    }

    /// Polls `ContainerStatus` until the container is in `state` (up to the
    /// env's wait timeout).
    pub async fn wait_state(&self, id: &str, state: ContainerState) -> Step<v1::ContainerStatus> {
        let deadline = Instant::now() + self.env.wait_timeout;
        loop {
            let s = self.status(id).await?;
            if s.state() == state {
                return Ok(s);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "container {id} still {:?} after {:?}, wanted {state:?}",
                    s.state(),
                    self.env.wait_timeout
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The container's log file path, from its status.
    pub async fn log_file(&self, id: &str) -> Step<PathBuf> {
        Ok(PathBuf::from(self.status(id).await?.log_path))
    }

    /// Stops and removes every sandbox this check ran and deletes their log
    /// directories, as the kubelet would (errors ignored).
    pub(crate) async fn cleanup(&self) {
        let sandboxes = std::mem::take(&mut *self.sandboxes.lock().unwrap_or_else(|e| e.into_inner()));
        for (id, logs) in sandboxes {
            let _ = self
                .rt
                .stop_pod_sandbox(v1::StopPodSandboxRequest {
                    pod_sandbox_id: id.clone(),
                })
                .await;
            let _ = self
                .rt
                .remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: id })
                .await;
            let _ = std::fs::remove_dir_all(logs);
        }
    }
}
