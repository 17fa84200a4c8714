//! Starting one container (upstream `doBackOff` + `startContainer`):
//! restart backoff, image, log directory, config, `CreateContainer`,
//! `StartContainer`, legacy log symlink, postStart hook.
//!
//! Events (upstream's, about the container): `BackOff` (Warning) while in
//! restart backoff, `Created`, `Started`, and `Failed` with `Error: <why>`
//! when the image, the config, `CreateContainer` or `StartContainer` fails
//! (a failed postStart hook has its own event, see [`super::hooks`]).

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};
use tokio::time::Instant;

use super::backoff::container_backoff_key;
use super::container_config::{ContainerConfigInput, container_log_dir, generate_container_config};
use super::container_files::{self, ContainerFiles};
use super::etc_hosts::{self, EtcHosts};
use super::hash::container_hash;
use super::manager::{RuntimeManager, format_pod_of, go_duration};
use super::pod_status::{ContainerState, RuntimePodStatus};
use super::sandbox_config::pod_hostname_and_domain;
use super::sync_result::{SyncError, SyncErrorReason};
use super::termination_message;
use crate::cri::v1;
use crate::messages::event::EventType;

/// Longest file name ext4 allows.
const MAX_FILE_NAME_LEN: usize = 255;

/// The legacy `/var/log/containers/<pod>_<ns>_<container>-<id>.log` symlink
/// path (upstream `legacyLogSymlink`, cut to the file name limit).
pub fn legacy_log_symlink(dir: &Path, pod: &str, namespace: &str, container: &str, container_id: &str) -> PathBuf {
    let suffix = ".log";
    let mut name = format!("{pod}_{namespace}_{container}-{container_id}");
    let max = MAX_FILE_NAME_LEN - suffix.len();
    if name.len() > max {
        let cut = (0..=max).rev().find(|i| name.is_char_boundary(*i)).unwrap_or(0);
        name.truncate(cut);
    }
    dir.join(format!("{name}{suffix}"))
}

/// What [`RuntimeManager::start_container`] needs besides the container.
#[derive(Clone, Copy, Debug)]
pub struct StartContext<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The runtime status the sync started from.
    pub status: &'a RuntimePodStatus,
    /// The sandbox to create the container in.
    pub sandbox_id: &'a str,
    /// That sandbox's config.
    pub sandbox_config: &'a v1::PodSandboxConfig,
    /// The pod's IPs.
    pub pod_ips: &'a [String],
    /// Fired by a kill: an image pull still waiting or running is abandoned.
    pub cancel: &'a tokio_util::sync::CancellationToken,
    /// The pod's volumes and env objects (from the volume manager).
    pub volumes: Option<&'a crate::volumes::PodVolumeContext>,
}

impl RuntimeManager {
    /// Upstream `doBackOff`: if the container's last exit is within its
    /// restart backoff, `CrashLoopBackOff`; else advances the backoff.
    pub fn check_restart_backoff(
        &self,
        pod: &Pod,
        container: &Container,
        status: &RuntimePodStatus,
    ) -> Result<(), SyncError> {
        let last_exit = status
            .containers
            .iter()
            .find(|c| c.name == container.name && c.state == ContainerState::Exited);
        let Some(finished) = last_exit.and_then(|c| c.finished_at) else {
            return Ok(());
        };
        let m = &pod.metadata;
        let key = container_backoff_key(
            m.name.as_deref().unwrap_or_default(),
            m.namespace.as_deref().unwrap_or_default(),
            m.uid.as_deref().unwrap_or_default(),
            &container.name,
            &container_hash(container),
        );
        let (now, finished) = (Instant::now(), self.instant_of(finished));
        if self.backoff.is_in_backoff(&key, now, finished) {
            let message = format!(
                "back-off {} restarting failed container={} pod={}",
                go_duration(self.backoff.get(&key)),
                container.name,
                format_pod_of(pod)
            );
            tracing::info!(%message, "back-off restarting failed container");
            self.container_event(
                pod,
                &container.name,
                EventType::Warning,
                "BackOff",
                format!(
                    "Back-off restarting failed container {} in pod {}",
                    container.name,
                    format_pod_of(pod)
                ),
            );
            return Err(SyncError::new(SyncErrorReason::CrashLoopBackOff, message));
        }
        self.backoff.next(&key, finished, now);
        Ok(())
    }

    /// When the first restart backoff of `pod`'s containers that are in
    /// backoff now (judged from `status`, as [`check_restart_backoff`](Self::check_restart_backoff)
    /// does) runs out: the pod must be synced again then (upstream requeues
    /// the pod worker at the backoff expiration).
    pub fn restart_backoff_expiry(&self, pod: &Pod, status: &RuntimePodStatus) -> Option<Instant> {
        let spec = pod.spec.as_ref()?;
        let m = &pod.metadata;
        let now = Instant::now();
        let containers = spec.init_containers.iter().flatten().chain(spec.containers.iter());
        containers
            .filter_map(|container| {
                let last_exit = status
                    .containers
                    .iter()
                    .find(|c| c.name == container.name && c.state == ContainerState::Exited)?;
                let finished = self.instant_of(last_exit.finished_at?);
                let key = container_backoff_key(
                    m.name.as_deref().unwrap_or_default(),
                    m.namespace.as_deref().unwrap_or_default(),
                    m.uid.as_deref().unwrap_or_default(),
                    &container.name,
                    &container_hash(container),
                );
                self.backoff
                    .is_in_backoff(&key, now, finished)
                    .then(|| finished + self.backoff.get(&key))
            })
            .min()
    }

    /// When the earliest image pull backoff of the pod's containers ends
    /// (upstream retries a pull once its backoff has passed).
    pub fn image_backoff_expiry(&self, pod: &Pod) -> Option<Instant> {
        let spec = pod.spec.as_ref()?;
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let now = Instant::now();
        spec.init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
            .filter_map(|c| {
                let image = c.image.as_deref()?;
                self.image_backoff
                    .expiry_since_update(&super::backoff::image_backoff_key(uid, image), now)
            })
            .min()
    }

    /// Starts one container (init or regular) and returns its id, or the
    /// upstream reason it could not be started.
    pub async fn start_container(
        &self,
        ctx: StartContext<'_>,
        container: &Container,
        mounts: Vec<v1::Mount>,
    ) -> Result<String, SyncError> {
        let (pod, status) = (ctx.pod, ctx.status);
        self.check_restart_backoff(pod, container, status)?;
        let result = self.create_and_start(ctx, container, mounts).await;
        if let Err(e) = &result
            && e.reason != SyncErrorReason::PostStartHookError
        {
            // Upstream `startContainer`: every failure after the backoff check
            // is a `Failed` event; image failures name their reason.
            let why = match e.reason {
                SyncErrorReason::CreateContainerConfigError
                | SyncErrorReason::CreateContainerError
                | SyncErrorReason::RunContainerError => e.message.clone(),
                _ => e.reason.as_str().to_string(),
            };
            self.container_event(
                pod,
                &container.name,
                EventType::Warning,
                "Failed",
                format!("Error: {why}"),
            );
        }
        result
    }

    async fn create_and_start(
        &self,
        ctx: StartContext<'_>,
        container: &Container,
        mut mounts: Vec<v1::Mount>,
    ) -> Result<String, SyncError> {
        let StartContext {
            pod,
            status,
            sandbox_id,
            sandbox_config,
            pod_ips,
            cancel,
            volumes,
        } = ctx;
        let credentials = volumes.map(|v| v.pull_secrets.as_slice()).unwrap_or_default();
        let image = self
            .ensure_image(pod, container, sandbox_config, credentials, cancel)
            .await?;
        let config_error = |message: String| SyncError::new(SyncErrorReason::CreateContainerConfigError, message);
        // The restart count: one more than the newest instance, or
        // recovered from the log directory (read with the other files).
        let known = status
            .find_container(&container.name)
            .map(|c| c.restart_count.saturating_add(1));
        let message_path = container.termination_message_path.as_deref().unwrap_or_default();
        let message = self
            .config
            .pods_dir
            .as_deref()
            .filter(|_| !message_path.is_empty())
            .map(|pods_dir| {
                let uid = pod.metadata.uid.as_deref().unwrap_or_default();
                let dir = termination_message::container_dir(pods_dir, uid, &container.name);
                (dir, message_path.to_owned())
            });
        let host_network = pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false);
        let etc_hosts = match self.config.pods_dir.as_deref() {
            Some(pods_dir) if etc_hosts::should_mount(container, pod_ips, host_network) => {
                let (hostname, domain) = pod_hostname_and_domain(pod, &self.config.cluster_domain)
                    .map_err(|e| config_error(e.to_string()))?;
                let pod_dir = pods_dir.join(pod.metadata.uid.as_deref().unwrap_or_default());
                Some((pod_dir, EtcHosts::for_pod(pod, pod_ips, &hostname, &domain)))
            }
            _ => None,
        };
        let files = container_files::prepare(ContainerFiles {
            container: container.name.clone(),
            log_dir: container_log_dir(&self.config.pod_logs_dir, pod, &container.name),
            count_from_logs: known.is_none(),
            message,
            etc_hosts,
        })
        .await
        .map_err(|e| config_error(e.to_string()))?;
        let restart_count = known.or(files.restart_count).unwrap_or(0);
        mounts.extend(files.message_mount);
        mounts.extend(files.etc_hosts_mount);
        let input = ContainerConfigInput {
            pod,
            container,
            restart_count,
            image_ref: &image.image_ref,
            image_user: &image.user,
            pod_ips,
            mounts,
            volumes,
        };
        // An ephemeral container with a target joins its PID namespace.
        let target = super::ephemeral::target_id(pod, &container.name, status).map_err(config_error)?;
        let mut config = generate_container_config(input, &self.config).map_err(|e| config_error(e.to_string()))?;
        if let Some(target) = target {
            super::ephemeral::apply_pid_target(&mut config, &target);
        }
        let log_path = config.log_path.clone();
        let created_with = config.linux.as_ref().and_then(|l| l.resources.clone());

        let req = v1::CreateContainerRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            config: Some(config),
            sandbox_config: Some(sandbox_config.clone()),
        };
        let id = match self.runtime.create_container(req).await {
            Ok(resp) => resp.container_id,
            Err(e) => return Err(SyncError::new(SyncErrorReason::CreateContainerError, e.message)),
        };
        tracing::debug!(container_id = %id, restart_count, "created container");
        if let Some(resources) = &created_with {
            let uid = crate::messages::PodUid::new(pod.metadata.uid.clone().unwrap_or_default());
            self.actuated.record(&uid, &id, resources);
        }
        let name = &container.name;
        self.container_event(
            pod,
            name,
            EventType::Normal,
            "Created",
            format!("Created container {name}"),
        );
        if let Err(e) = self
            .runtime
            .start_container(v1::StartContainerRequest {
                container_id: id.clone(),
            })
            .await
        {
            return Err(SyncError::new(SyncErrorReason::RunContainerError, e.message));
        }
        tracing::debug!(container_id = %id, "started container");
        self.container_event(
            pod,
            name,
            EventType::Normal,
            "Started",
            format!("Started container {name}"),
        );
        self.link_legacy_log(pod, &container.name, &id, &sandbox_config.log_directory, &log_path)
            .await;
        // The postStart hook; if it fails the container is killed
        // (`FailedPostStartHook`) and the start fails (`PostStartHookError`).
        if let Err(msg) = self.post_start(pod, container, &id).await {
            return Err(SyncError::new(SyncErrorReason::PostStartHookError, msg));
        }
        Ok(id)
    }

    async fn link_legacy_log(&self, pod: &Pod, container: &str, id: &str, log_directory: &str, log_path: &str) {
        let Some(dir) = &self.config.container_logs_dir else {
            return;
        };
        let target = Path::new(log_directory).join(log_path);
        if tokio::fs::symlink_metadata(&target).await.is_err() {
            return; // upstream links only existing log files
        }
        let m = &pod.metadata;
        let link = legacy_log_symlink(
            dir,
            m.name.as_deref().unwrap_or_default(),
            m.namespace.as_deref().unwrap_or_default(),
            container,
            id,
        );
        if let Err(e) = tokio::fs::symlink(&target, &link).await {
            tracing::warn!(path = %link.display(), error = %e, "failed to create legacy symbolic link");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_symlinks_are_named_pod_namespace_container_id() {
        let p = legacy_log_symlink(Path::new("/var/log/containers"), "web", "prod", "nginx", "abc123");
        assert_eq!(p, PathBuf::from("/var/log/containers/web_prod_nginx-abc123.log"));
        let long = legacy_log_symlink(Path::new("/d"), &"p".repeat(200), "ns", "c", &"f".repeat(64));
        assert_eq!(long.file_name().map(|n| n.len()), Some(255));
    }
}
