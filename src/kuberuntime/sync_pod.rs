//! `SyncPod`: one pass that moves the runtime towards the pod spec (upstream
//! `kubeGenericRuntimeManager.SyncPod`).
//!
//! # Steps
//! 1. Compute the actions ([`compute_pod_actions`]).
//! 2. Kill the pod if needed (containers in parallel with their grace period,
//!    then the sandboxes); when a new sandbox follows, remove the old init
//!    containers so initialization starts over. Otherwise kill the containers
//!    to kill, one by one; stop at the first failure.
//! 3. Remove all but the newest instance of each exited init container.
//! 4. Create the sandbox if needed (log directory, `RunPodSandbox`, then
//!    `PodSandboxStatus` for its IPs).
//! 5. Build the sandbox config the containers are created with.
//! 6. Start the next init container (stop on failure) — with native
//!    sidecars, the init containers to start in order (a sidecar that fails
//!    to start does not stop the others) — then the containers to start
//!    (each independently).
//!
//! Every step is recorded in the returned [`PodSyncResult`]. A failure never
//! panics or retries inside the sync: the caller retries later (the next
//! sync reads a fresh runtime status). CRI calls are awaited to the end.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::actions::{PodActions, ProbeView, compute_pod_actions};
use super::convert::sandbox_from_status;
use super::manager::{RuntimeManager, format_pod_of};
use super::pod_status::{ContainerState, RuntimePodStatus};
use super::sandbox_config::generate_pod_sandbox_config;
use super::start::StartContext;
use super::sync_result::{PodSyncResult, SyncAction, SyncError, SyncErrorReason, SyncResult};
use crate::cri::v1;
use crate::messages::event::EventType;

/// Inputs of a sync that come from other managers.
#[derive(Clone, Debug, Default)]
pub struct SyncPodOptions {
    /// Extra mounts per container name.
    pub mounts: HashMap<String, Vec<v1::Mount>>,
    /// Fired when a kill arrives while this sync runs (upstream cancels the
    /// sync's context): the sync stops between CRI calls and abandons a pull
    /// that has not finished; a create, start or stop already sent is
    /// always awaited to the end.
    pub cancel: CancellationToken,
    /// The pod's volumes and env objects, from the volume manager.
    pub volumes: Option<std::sync::Arc<crate::volumes::PodVolumeContext>>,
}

impl RuntimeManager {
    /// Syncs `pod` given the runtime `status` (from
    /// [`get_pod_status`](RuntimeManager::get_pod_status)) and probe results.
    pub async fn sync_pod(
        &self,
        pod: &Pod,
        status: &RuntimePodStatus,
        probes: &ProbeView,
        options: &SyncPodOptions,
    ) -> PodSyncResult {
        let span = tracing::info_span!("sync_pod", pod = %format_pod_of(pod));
        self.sync_pod_inner(pod, status, probes, options).instrument(span).await
    }

    async fn sync_pod_inner(
        &self,
        pod: &Pod,
        status: &RuntimePodStatus,
        probes: &ProbeView,
        options: &SyncPodOptions,
    ) -> PodSyncResult {
        let mut result = PodSyncResult::default();
        let mut actions = compute_pod_actions(pod, status, probes);
        let resizes = self.plan_resizes(pod, status, &mut actions);
        tracing::debug!(?actions, ?resizes, "computed pod actions");
        if actions.create_sandbox && !actions.sandbox_id.is_empty() {
            let message = "Pod sandbox changed, it will be killed and re-created.";
            tracing::info!(message);
            self.events
                .pod_event(pod, None, EventType::Normal, "SandboxChanged", message);
        }

        if actions.kill_pod {
            let killed = self.kill_pod(Some(pod), status, None).await;
            let failed = !killed.is_ok();
            result.extend(killed);
            if failed {
                return result;
            }
            if actions.create_sandbox {
                self.purge_init_containers(pod, status).await;
            } else {
                return result; // the pod is done; nothing is to start
            }
        } else {
            for (id, kill) in &actions.containers_to_kill {
                let outcome = self
                    .kill_container(Some(pod), id, &kill.name, &kill.message, kill.reason, None)
                    .await;
                if let Err(e) = outcome {
                    let error = SyncError::new(SyncErrorReason::KillContainerError, e.to_string());
                    result.add(SyncResult::failed(SyncAction::KillContainer, &kill.name, error));
                    return result;
                }
                result.add(SyncResult::ok(SyncAction::KillContainer, &kill.name));
            }
        }

        self.prune_init_containers(pod, status).await;

        // In-place resizes of running containers (upstream `doPodResizeAction`).
        for name in &resizes.restarts {
            result.add(SyncResult::ok(SyncAction::ResizePodInPlace, name));
        }
        if !resizes.updates.is_empty() {
            let mut failure = None;
            match self.check_memory_decreases(&resizes.updates).await {
                Err(message) => {
                    tracing::warn!(%message, "resize refused");
                    for update in &resizes.updates {
                        let error = SyncError::new(SyncErrorReason::ResizeError, message.clone());
                        result.add(SyncResult::failed(SyncAction::ResizePodInPlace, &update.name, error));
                    }
                    failure = Some(message);
                }
                Ok(()) => {
                    for update in &resizes.updates {
                        match self.update_resources(pod, update).await {
                            Ok(()) => result.add(SyncResult::ok(SyncAction::ResizePodInPlace, &update.name)),
                            Err(message) => {
                                let message = format!("failed to resize container {}: {message}", update.name);
                                tracing::warn!(%message);
                                let error = SyncError::new(SyncErrorReason::ResizeError, message.clone());
                                result.add(SyncResult::failed(SyncAction::ResizePodInPlace, &update.name, error));
                                failure.get_or_insert(message);
                            }
                        }
                    }
                }
            }
            self.record_resize_outcome(pod, failure);
        }

        let mut pod_ips = status.ips.clone();
        let mut sandbox_id = actions.sandbox_id.clone();
        if actions.create_sandbox {
            match self.create_sandbox(pod, &actions, &mut result).await {
                Some((id, ips)) => {
                    sandbox_id = id;
                    if !pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false) {
                        pod_ips = ips;
                    }
                }
                None => return result,
            }
        }

        // Upstream builds the sandbox config on every sync; it is only read
        // to start containers, so a resync with nothing to start skips it
        // (5.7 % of the 10k-pod resync wave's CPU).
        if !actions.starts_any_container() {
            return result;
        }
        let sandbox_config = match generate_pod_sandbox_config(pod, actions.attempt, &self.config) {
            Ok(config) => {
                result.add(SyncResult::ok(SyncAction::ConfigPodSandbox, &sandbox_id));
                config
            }
            Err(e) => {
                let message = format!("GeneratePodSandboxConfig for pod {:?} failed: {e}", format_pod_of(pod));
                let error = SyncError::new(SyncErrorReason::ConfigPodSandboxError, message);
                result.add(SyncResult::failed(SyncAction::ConfigPodSandbox, &sandbox_id, error));
                return result;
            }
        };
        if options.cancel.is_cancelled() {
            tracing::info!("sync abandoned: the pod is being killed");
            return result;
        }
        let ctx = StartContext {
            pod,
            status,
            sandbox_id: &sandbox_id,
            sandbox_config: &sandbox_config,
            pod_ips: &pod_ips,
            cancel: &options.cancel,
            volumes: options.volumes.as_deref(),
        };
        // Step 5 upstream: ephemeral containers first, so a pod whose
        // initialization fails can still be debugged.
        let ephemeral = super::ephemeral::ephemeral_containers(pod);
        for ec in actions
            .ephemeral_containers_to_start
            .iter()
            .filter_map(|i| ephemeral.get(*i))
        {
            let container = super::ephemeral::as_container(ec);
            self.start_one(ctx, &container, options, &mut result, "ephemeral container")
                .await;
        }
        let spec = pod.spec.as_ref();
        let init_containers = spec.and_then(|s| s.init_containers.as_deref()).unwrap_or_default();
        if let Some(container) = actions
            .next_init_container_to_start
            .and_then(|i| init_containers.get(i))
        {
            if !self
                .start_one(ctx, container, options, &mut result, "init container")
                .await
            {
                return result;
            }
        }
        for &i in &actions.init_containers_to_start {
            let Some(container) = init_containers.get(i) else {
                continue;
            };
            let started = self
                .start_one(ctx, container, options, &mut result, "init container")
                .await;
            if !started && !super::sidecars::is_sidecar(container) {
                return result; // initialization failed: nothing more to start
            }
        }
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        for container in actions.containers_to_start.iter().filter_map(|i| containers.get(*i)) {
            if options.cancel.is_cancelled() {
                tracing::info!("sync abandoned before starting the remaining containers: the pod is being killed");
                break;
            }
            self.start_one(ctx, container, options, &mut result, "container").await;
        }
        result
    }

    /// Starts one container and records the outcome; true on success.
    async fn start_one(
        &self,
        ctx: StartContext<'_>,
        container: &k8s_openapi::api::core::v1::Container,
        options: &SyncPodOptions,
        result: &mut PodSyncResult,
        kind: &'static str,
    ) -> bool {
        let span = tracing::info_span!("start_container", container = %container.name, kind);
        let mounts = options.mounts.get(&container.name).cloned().unwrap_or_default();
        match self
            .start_container(ctx, container, mounts)
            .instrument(span.clone())
            .await
        {
            Ok(_) => {
                result.add(SyncResult::ok(SyncAction::StartContainer, &container.name));
                true
            }
            Err(e) => {
                span.in_scope(|| tracing::warn!(reason = %e.reason, message = %e.message, "{kind} start failed"));
                result.add(SyncResult::failed(SyncAction::StartContainer, &container.name, e));
                false
            }
        }
    }

    /// Creates the sandbox; returns its id and IPs, or records the failure.
    async fn create_sandbox(
        &self,
        pod: &Pod,
        actions: &PodActions,
        result: &mut PodSyncResult,
    ) -> Option<(String, Vec<String>)> {
        let target = format_pod_of(pod);
        // Upstream: the step fails with its message; the event carries the cause.
        let fail = |result: &mut PodSyncResult, message: String, cause: String| {
            self.events.pod_event(
                pod,
                None,
                EventType::Warning,
                "FailedCreatePodSandBox",
                format!("Failed to create pod sandbox: {cause}"),
            );
            let error = SyncError::new(SyncErrorReason::CreatePodSandboxError, message);
            result.add(SyncResult::failed(SyncAction::CreatePodSandbox, &target, error));
            None
        };
        let config = match generate_pod_sandbox_config(pod, actions.attempt, &self.config) {
            Ok(config) => config,
            Err(e) => {
                return fail(
                    result,
                    format!("Failed to generate sandbox config for pod {target:?}: {e}"),
                    e.to_string(),
                );
            }
        };
        if let Err(e) = tokio::fs::create_dir_all(&config.log_directory).await {
            return fail(
                result,
                format!("Failed to create log directory for pod {target:?}: {e}"),
                e.to_string(),
            );
        }
        // Upstream `LookupRuntimeHandler`: an unknown class fails the sandbox step.
        let class = pod.spec.as_ref().and_then(|s| s.runtime_class_name.as_deref());
        let runtime_handler = match self.config.runtime_classes.lookup(class) {
            Ok(handler) if handler.is_empty() => self.config.runtime_handler.clone(),
            Ok(handler) => handler,
            Err(e) => {
                return fail(
                    result,
                    format!("Failed to create sandbox for pod {target:?}: {e}"),
                    e.to_string(),
                );
            }
        };
        let req = v1::RunPodSandboxRequest {
            config: Some(config),
            runtime_handler,
        };
        let id = match self.runtime.run_pod_sandbox(req).await {
            Ok(resp) => resp.pod_sandbox_id,
            Err(e) => {
                return fail(
                    result,
                    format!("Failed to create sandbox for pod {target:?}: {e}"),
                    e.to_string(),
                );
            }
        };
        // Debug, as upstream (V(4)): four info lines per pod start were 6 %
        // of the busiest thread at 10k pods; the Events say it at info.
        tracing::debug!(sandbox_id = %id, attempt = actions.attempt, "created pod sandbox");
        result.add(SyncResult::ok(SyncAction::CreatePodSandbox, &target));
        let req = v1::PodSandboxStatusRequest {
            pod_sandbox_id: id.clone(),
            verbose: false,
        };
        match self.runtime.pod_sandbox_status(req).await {
            Ok(v1::PodSandboxStatusResponse { status: Some(s), .. }) => {
                let ips = sandbox_from_status(&s)
                    .ips
                    .into_iter()
                    .filter(|ip| !ip.is_empty())
                    .collect();
                Some((id, ips))
            }
            Ok(_) => {
                result.sync_error = Some("pod sandbox status is nil".into());
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "failed to get pod sandbox status; skipping pod");
                let message = format!("Unable to get pod sandbox status: {e}");
                self.events
                    .pod_event(pod, None, EventType::Warning, "FailedPodSandBoxStatus", message);
                result.sync_error = Some(e.to_string());
                None
            }
        }
    }

    async fn remove_container(&self, id: &str, name: &str) {
        let req = v1::RemoveContainerRequest {
            container_id: id.to_string(),
        };
        if let Err(e) = self.runtime.remove_container(req).await {
            tracing::warn!(container = %name, container_id = %id, error = %e, "failed to remove init container");
        }
    }

    /// Removes every instance of every init container (before a new sandbox).
    async fn purge_init_containers(&self, pod: &Pod, status: &RuntimePodStatus) {
        let inits = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default();
        for c in status
            .containers
            .iter()
            .filter(|c| inits.iter().any(|i| i.name == c.name))
        {
            self.remove_container(&c.id, &c.name).await;
        }
    }

    /// Keeps only the newest exited (or unknown) instance of each init container.
    async fn prune_init_containers(&self, pod: &Pod, status: &RuntimePodStatus) {
        let inits = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default();
        for init in inits {
            let dead = status
                .containers
                .iter()
                .filter(|c| c.name == init.name && matches!(c.state, ContainerState::Exited | ContainerState::Unknown));
            for c in dead.skip(1) {
                self.remove_container(&c.id, &c.name).await;
            }
        }
    }
}
