//! Stopping containers and pods (upstream `killContainer`,
//! `killContainersWithSyncResult`, `killPodWithSyncResult`).
//!
//! # Grace period
//! 1. With a spec: the pod's `deletionGracePeriodSeconds`, else — for a
//!    liveness/startup kill — the probe's `terminationGracePeriodSeconds`,
//!    else `terminationGracePeriodSeconds` (default 30).
//!    Without one (an orphan found after a restart): the same values read back
//!    from the container's annotations, else 2s.
//! 2. The preStop hook runs here (see [`super::hooks`]) and uses up part of it.
//! 3. At least 2s (`minimumGracePeriodInSeconds`) is left for the stop.
//! 4. An explicit override (e.g. a force delete) replaces all of the above.
//!
//! `StopContainer` gets the grace period as its timeout and is awaited to
//! the end — never dropped on a local timeout; the runtime bounds it.
//! NOT_FOUND counts as stopped.
//!
//! A container of a known pod gets a `Killing` event (`Stopping container
//! <name>`, or the kill's own message, e.g. a failed liveness probe). An
//! orphan found without its pod gets none (upstream rebuilds a pod from the
//! container's labels for it).

use futures::future::join_all;
use k8s_openapi::api::core::v1::{Container, Pod};
use tracing::Instrument;

use super::actions::KillReason;
use super::labels::{DEFAULT_TERMINATION_GRACE_PERIOD, container_info_from_annotations};
use super::manager::{RuntimeManager, format_pod};
use super::pod_status::{ContainerState, RuntimePodStatus};
use super::sync_result::{PodSyncResult, SyncAction, SyncError, SyncErrorReason, SyncResult};
use crate::cri::{CriResult, v1};
use crate::messages::event::EventType;

/// Upstream `minimumGracePeriodInSeconds`.
pub const MINIMUM_GRACE_PERIOD_SECONDS: i64 = 2;

/// The grace period for killing `container` of `pod` for `reason` (before
/// the preStop hook and the minimum; upstream `setTerminationGracePeriod`).
pub fn termination_grace_period(pod: &Pod, container: Option<&Container>, reason: KillReason) -> i64 {
    if let Some(grace) = pod.metadata.deletion_grace_period_seconds {
        return grace;
    }
    let probe = match reason {
        KillReason::LivenessProbe => container.and_then(|c| c.liveness_probe.as_ref()),
        KillReason::StartupProbe => container.and_then(|c| c.startup_probe.as_ref()),
        _ => None,
    };
    probe
        .and_then(|p| p.termination_grace_period_seconds)
        .or_else(|| pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
        .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD)
}

/// The stop timeout once the preStop hook took `hook_seconds`: at least the
/// minimum, unless `grace_override` is given.
pub fn stop_timeout(grace: i64, hook_seconds: i64, grace_override: Option<i64>) -> i64 {
    grace_override.unwrap_or_else(|| (grace - hook_seconds).max(MINIMUM_GRACE_PERIOD_SECONDS))
}

impl RuntimeManager {
    /// The grace period of an orphan container, from its annotations.
    async fn restored_grace_period(&self, container_id: &str) -> CriResult<Option<i64>> {
        let req = v1::ContainerStatusRequest {
            container_id: container_id.to_string(),
            verbose: false,
        };
        match self.runtime.container_status(req).await {
            Ok(resp) => {
                let annotations = resp.status.map(|s| s.annotations).unwrap_or_default();
                let info = container_info_from_annotations(&annotations);
                Ok(Some(
                    info.pod_deletion_grace_period
                        .or(info.pod_termination_grace_period)
                        .unwrap_or(MINIMUM_GRACE_PERIOD_SECONDS),
                ))
            }
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Stops one container: grace period as documented in this module, then
    /// `StopContainer` with it as timeout. Works without the pod spec.
    pub async fn kill_container(
        &self,
        pod: Option<&Pod>,
        container_id: &str,
        name: &str,
        message: &str,
        reason: KillReason,
        grace_override: Option<i64>,
    ) -> CriResult<()> {
        let span = tracing::info_span!("kill_container", container = %name, container_id = %container_id);
        async move {
            let grace = match pod {
                Some(pod) => {
                    let spec = pod.spec.as_ref();
                    let all = spec
                        .into_iter()
                        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()));
                    let container = all.into_iter().find(|c| c.name == name);
                    termination_grace_period(pod, container, reason)
                }
                None => match self.restored_grace_period(container_id).await? {
                    Some(grace) => grace,
                    None => return Ok(()), // already gone
                },
            };
            let message = if message.is_empty() {
                format!("Stopping container {name}")
            } else {
                message.to_string()
            };
            tracing::info!(%message, "killing container");
            if let Some(pod) = pod {
                self.container_event(pod, name, EventType::Normal, "Killing", message.as_str());
            }
            // The preStop hook (exec / httpGet / sleep) runs here, inside
            // the grace period, and its duration is subtracted.
            let spec = pod.and_then(|p| crate::prober::worker::find_container(p, name).map(|c| (p, c)));
            let hook_seconds = match spec {
                Some((p, c)) => self.pre_stop(p, c, container_id, grace).await,
                None => 0,
            };
            let timeout = stop_timeout(grace, hook_seconds, grace_override);
            tracing::info!(grace_period = timeout, "stopping container with a grace period");
            let req = v1::StopContainerRequest {
                container_id: container_id.to_string(),
                timeout,
            };
            match self.runtime.stop_container(req).await {
                Ok(_) => Ok(()),
                Err(e) if e.is_not_found() => Ok(()),
                Err(e) => {
                    tracing::error!(error = %e, "container termination failed");
                    Err(e)
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Kills a pod: stops its running containers in parallel, then every
    /// sandbox (upstream `killPodWithSyncResult`). `pod` may be `None` when
    /// only the runtime status is known (orphans after a restart).
    pub async fn kill_pod(
        &self,
        pod: Option<&Pod>,
        status: &RuntimePodStatus,
        grace_override: Option<i64>,
    ) -> PodSyncResult {
        let span = tracing::info_span!(
            "kill_pod",
            pod = %format_pod(&status.name, &status.namespace, status.uid.as_str())
        );
        async move {
            let mut result = PodSyncResult::default();
            self.actuated.forget(&status.uid);
            self.resize_errors.forget(&status.uid);
            // Native sidecars stop after everything else, last one first.
            let sidecars: Vec<&str> = pod
                .and_then(|p| p.spec.as_ref())
                .and_then(|s| s.init_containers.as_deref())
                .unwrap_or_default()
                .iter()
                .filter(|c| super::sidecars::is_sidecar(c))
                .map(|c| c.name.as_str())
                .rev()
                .collect();
            let (running_sidecars, running): (Vec<_>, Vec<_>) = status
                .containers
                .iter()
                .filter(|c| c.state == ContainerState::Running)
                .partition(|c| sidecars.contains(&c.name.as_str()));
            let kill_one = |c: &super::pod_status::ContainerStatus| {
                let (id, name) = (c.id.clone(), c.name.clone());
                async move {
                    match self
                        .kill_container(pod, &id, &name, "", KillReason::Unknown, grace_override)
                        .await
                    {
                        Ok(()) => SyncResult::ok(SyncAction::KillContainer, &name),
                        Err(e) => SyncResult::failed(
                            SyncAction::KillContainer,
                            &name,
                            SyncError::new(SyncErrorReason::KillContainerError, e.to_string()),
                        ),
                    }
                }
            };
            for r in join_all(running.into_iter().map(kill_one)).await {
                result.add(r);
            }
            for name in sidecars {
                for c in running_sidecars.iter().filter(|c| c.name == name) {
                    result.add(kill_one(c).await);
                }
            }
            let mut sandbox_result = SyncResult::ok(SyncAction::KillPodSandbox, status.uid.as_str());
            for sandbox in &status.sandboxes {
                let req = v1::StopPodSandboxRequest {
                    pod_sandbox_id: sandbox.id.clone(),
                };
                match self.runtime.stop_pod_sandbox(req).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => {
                        tracing::error!(sandbox_id = %sandbox.id, error = %e, "failed to stop sandbox");
                        sandbox_result.error =
                            Some(SyncError::new(SyncErrorReason::KillPodSandboxError, e.to_string()));
                    }
                }
            }
            result.add(sandbox_result);
            result
        }
        .instrument(span)
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::test_support::pod;

    fn grace(yaml: &str, reason: KillReason) -> i64 {
        let p = pod(yaml);
        let c = p.spec.as_ref().and_then(|s| s.containers.first()).cloned();
        termination_grace_period(&p, c.as_ref(), reason)
    }

    #[test]
    fn grace_period_defaults_to_thirty_seconds() {
        assert_eq!(
            grace(
                "metadata: {name: p}\nspec: {containers: [{name: c}]}",
                KillReason::Unknown
            ),
            30
        );
    }

    #[test]
    fn deletion_grace_wins_then_probe_then_pod() {
        let base = "spec: {terminationGracePeriodSeconds: 60, containers: [{name: c, livenessProbe: {exec: {command: [x]}, terminationGracePeriodSeconds: 5}}]}";
        assert_eq!(
            grace(&format!("metadata: {{name: p}}\n{base}"), KillReason::Unknown),
            60
        );
        assert_eq!(
            grace(&format!("metadata: {{name: p}}\n{base}"), KillReason::LivenessProbe),
            5
        );
        assert_eq!(
            grace(&format!("metadata: {{name: p}}\n{base}"), KillReason::StartupProbe),
            60,
            "no startup probe"
        );
        assert_eq!(
            grace(
                &format!("metadata: {{name: p, deletionGracePeriodSeconds: 7}}\n{base}"),
                KillReason::LivenessProbe
            ),
            7
        );
    }

    #[test]
    fn stop_timeout_keeps_a_minimum_unless_overridden() {
        assert_eq!(stop_timeout(30, 0, None), 30);
        assert_eq!(stop_timeout(30, 29, None), 2, "preStop used most of it");
        assert_eq!(stop_timeout(0, 0, None), 2);
        assert_eq!(stop_timeout(30, 0, Some(0)), 0, "force kill");
        assert_eq!(stop_timeout(30, 0, Some(5)), 5);
    }
}
