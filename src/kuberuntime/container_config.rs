//! Container → `ContainerConfig` (upstream `generateContainerConfig` and
//! `applyPlatformSpecificContainerConfig`).
//!
//! - metadata: name, attempt = restart count;
//! - image: the resolved image ref, with the spec's image as
//!   `user_specified_image`;
//! - command/args with `$(VAR)` expanded against the environment;
//! - envs ([`env`](super::env)), mounts (the caller's, plus the container's
//!   `volumeMounts` over the volumes the volume manager set up:
//!   [`crate::volumes::mounts`]), log path `<container>/<restartCount>.log`;
//! - labels/annotations ([`labels`](super::labels));
//! - linux: resources ([`qos`](super::qos)) and security context
//!   ([`security_context`](super::security_context)).
//!
//! Any error is upstream's `CreateContainerConfigError`: the container is not
//! created and the sync is retried.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};

use super::config::RuntimeManagerConfig;
use super::env::{EnvError, expand_command_and_args, make_environment_variables};
use super::labels::{container_annotations, container_labels};
use super::qos::container_resources;
use super::sandbox_config::pod_log_directory;
use super::security_context::{
    ImageUser, apparmor_profile, container_security_context, seccomp_profile, verify_run_as_non_root,
};
use crate::cri::v1::{ContainerConfig, ContainerMetadata, ImageSpec, KeyValue, LinuxContainerConfig, Mount};
use crate::volumes::PodVolumeContext;

/// Upstream's waiting reason for these errors.
pub const CREATE_CONTAINER_CONFIG_ERROR: &str = "CreateContainerConfigError";

/// Why a container's config could not be built (`CreateContainerConfigError`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContainerConfigError {
    /// An environment variable could not be resolved.
    #[error(transparent)]
    Env(#[from] EnvError),
    /// `runAsNonRoot` is violated or cannot be verified.
    #[error("{0}")]
    RunAsNonRoot(String),
    /// The seccomp profile is invalid.
    #[error("{0}")]
    Seccomp(String),
    /// The AppArmor profile is invalid.
    #[error("{0}")]
    AppArmor(String),
    /// A `volumeMounts` entry cannot be satisfied.
    #[error("{0}")]
    Mount(String),
    /// The container log directory could not be created.
    #[error("create container log directory for container {container} failed: {message}")]
    LogDirectory {
        /// Container name.
        container: String,
        /// The I/O error.
        message: String,
    },
}

impl ContainerConfigError {
    /// The upstream reason: always `CreateContainerConfigError`.
    pub fn reason(&self) -> &'static str {
        CREATE_CONTAINER_CONFIG_ERROR
    }
}

/// Everything a container config is built from.
#[derive(Clone, Debug)]
pub struct ContainerConfigInput<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The container (init or regular) of that pod.
    pub container: &'a Container,
    /// Restart count: the attempt number of this container.
    pub restart_count: u32,
    /// The image as resolved by `ImageStatus`/`PullImage` (its id).
    pub image_ref: &'a str,
    /// The user the image runs as.
    pub image_user: &'a ImageUser,
    /// The pod's IPs (downward API).
    pub pod_ips: &'a [String],
    /// Extra mounts computed by the caller.
    pub mounts: Vec<Mount>,
    /// The pod's volumes and env objects from the volume manager (None: no
    /// volume manager; `volumeMounts` are then ignored).
    pub volumes: Option<&'a PodVolumeContext>,
}

/// `<pod_logs_dir>/<ns>_<name>_<uid>/<container>` (upstream `BuildContainerLogsDirectory`).
pub fn container_log_dir(pod_logs_dir: &Path, pod: &Pod, container: &str) -> PathBuf {
    let m = &pod.metadata;
    let ns = m.namespace.as_deref().unwrap_or_default();
    let name = m.name.as_deref().unwrap_or_default();
    let uid = m.uid.as_deref().unwrap_or_default();
    pod_log_directory(pod_logs_dir, ns, name, uid).join(container)
}

/// The log path relative to the sandbox log directory: `<container>/<n>.log`.
pub fn container_log_path(container: &str, restart_count: u32) -> String {
    format!("{container}/{restart_count}.log")
}

/// The restart count implied by the log files in `entries` (file names of a
/// container log directory): one more than the largest `<n>.log[...]`, or 0
/// (upstream `calcRestartCountByLogDir`, used when the runtime lost the
/// container's history).
pub fn restart_count_from_log_names<'a>(entries: impl IntoIterator<Item = &'a str>) -> u32 {
    entries
        .into_iter()
        .filter_map(|name| {
            let digits: &str = &name[..name.bytes().take_while(u8::is_ascii_digit).count()];
            let rest = &name[digits.len()..];
            (!digits.is_empty() && rest.starts_with(".log"))
                .then(|| digits.parse::<u32>().ok())
                .flatten()
        })
        .map(|n| n.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// Builds the CRI config of one container.
pub fn generate_container_config(
    input: ContainerConfigInput<'_>,
    cfg: &RuntimeManagerConfig,
) -> Result<ContainerConfig, ContainerConfigError> {
    let ContainerConfigInput {
        pod,
        container,
        restart_count,
        image_ref,
        image_user,
        pod_ips,
        mut mounts,
        volumes,
    } = input;
    verify_run_as_non_root(pod, container, image_user).map_err(ContainerConfigError::RunAsNonRoot)?;
    let mut env_ctx = cfg.env_context(pod_ips);
    if let Some(v) = volumes {
        env_ctx.objects = v.env.clone();
    }
    let envs = make_environment_variables(pod, container, &env_ctx)?;
    if let Some(v) = volumes {
        let volume_mounts = crate::volumes::mounts::container_mounts(container, &v.volumes, &envs)
            .map_err(ContainerConfigError::Mount)?;
        mounts.extend(volume_mounts);
    }
    let (command, args) = expand_command_and_args(container, &envs);
    let seccomp = seccomp_profile(pod, container, &cfg.seccomp_profile_root, cfg.seccomp_default)
        .map_err(ContainerConfigError::Seccomp)?;
    let apparmor = apparmor_profile(pod, container).map_err(ContainerConfigError::AppArmor)?;
    let mut security_context = container_security_context(pod, container, image_user, seccomp);
    security_context.apparmor = apparmor;
    let resources = container_resources(pod, container, cfg.memory_capacity, cfg.cpu_cfs_quota);
    Ok(ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: container.name.clone(),
            attempt: restart_count,
        }),
        image: Some(ImageSpec {
            image: image_ref.to_string(),
            user_specified_image: container.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command,
        args,
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs: envs.into_iter().map(|(key, value)| KeyValue { key, value }).collect(),
        mounts,
        devices: vec![],
        labels: container_labels(pod, container),
        annotations: container_annotations(pod, container, restart_count),
        log_path: container_log_path(&container.name, restart_count),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        linux: Some(LinuxContainerConfig {
            resources: Some(resources),
            security_context: Some(security_context),
        }),
    })
}

#[cfg(test)]
#[path = "container_config_tests.rs"]
mod tests;
