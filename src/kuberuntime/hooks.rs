//! Lifecycle hooks (upstream `pkg/kubelet/lifecycle/handlers.go`,
//! `executePreStopHook` and the postStart step of `startContainer`).
//!
//! - **exec**: CRI `ExecSync`; a non-zero exit fails the hook
//!   (`command '<cmd>' exited with <code>: <stderr>`).
//! - **httpGet**: host default the pod IP, `User-Agent: kube-lifecycle/1.36`,
//!   redirects followed, certificates not verified; only a transport error
//!   fails it (the status code is not looked at, as upstream).
//! - **sleep**: waits `seconds` (0 = no-op).
//!
//! postStart runs right after `StartContainer`; when it fails the container
//! gets a `FailedPostStartHook` event, is killed (Killing message
//! `FailedPostStartHook`) and the start fails with `PostStartHookError`.
//! preStop runs inside the kill's grace period: the kill waits for it at most
//! the grace period, subtracts the seconds it took, and a failure is only a
//! `FailedPreStopHook` event (the stop goes on). Hook messages stay out of
//! events (they may hold secrets), as upstream.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};
use tokio::time::Instant;

use super::manager::{RuntimeManager, format_pod_of};
use crate::cri::v1::ExecSyncRequest;
use crate::messages::PodUid;
use crate::messages::event::EventType;
use crate::prober::handlers::http;

/// How long a postStart exec or httpGet hook may take (upstream sets no
/// bound; the CRI runtime request timeout bounds an exec there).
pub const POST_START_TIMEOUT: Duration = Duration::from_secs(120);

impl RuntimeManager {
    /// The pod IP for an httpGet hook without a host.
    async fn hook_pod_ip(&self, pod: &Pod) -> String {
        let m = &pod.metadata;
        let uid = PodUid::new(m.uid.clone().unwrap_or_default());
        let name = m.name.clone().unwrap_or_default();
        let ns = m.namespace.clone().unwrap_or_default();
        match self.get_pod_status(&uid, &name, &ns).await {
            Ok(s) => s.ips.into_iter().find(|ip| !ip.is_empty()).unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the pod IP for an httpGet hook");
                String::new()
            }
        }
    }

    /// Upstream `handlerRunner.Run`: runs `handler` for `container`
    /// (instance `container_id`) within `bound`; `Err` carries upstream's
    /// message.
    pub async fn run_hook(
        &self,
        pod: &Pod,
        container: &Container,
        container_id: &str,
        handler: &LifecycleHandler,
        bound: Duration,
    ) -> Result<(), String> {
        let (c, p) = (&container.name, format_pod_of(pod));
        if let Some(exec) = &handler.exec {
            let cmd = exec.command.clone().unwrap_or_default();
            let req = ExecSyncRequest {
                container_id: container_id.to_string(),
                cmd: cmd.clone(),
                timeout: 0,
            };
            let outcome = match tokio::time::timeout(bound, self.runtime.exec_sync(req)).await {
                Err(_) => Err((format!("command {:?} timed out", cmd.join(" ")), Vec::new())),
                Ok(Err(e)) => Err((e.to_string(), Vec::new())),
                Ok(Ok(r)) if r.exit_code != 0 => {
                    let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
                    let mut out = r.stdout;
                    out.extend_from_slice(&r.stderr);
                    Err((
                        format!("command '{}' exited with {}: {stderr}", cmd.join(" "), r.exit_code),
                        out,
                    ))
                }
                Ok(Ok(_)) => Ok(()),
            };
            return outcome.map_err(|(err, out)| {
                format!(
                    "Exec lifecycle hook ([{}]) for Container {c:?} in Pod {p:?} failed - error: {err}, message: {:?}",
                    cmd.join(" "),
                    String::from_utf8_lossy(&out)
                )
            });
        }
        if let Some(get) = &handler.http_get {
            let ip = match get.host.as_deref().filter(|h| !h.is_empty()) {
                Some(_) => String::new(),
                None => self.hook_pod_ip(pod).await,
            };
            return http::hook(get, container, &ip, bound).await.map_err(|err| {
                let path = get.path.as_deref().unwrap_or_default();
                format!("HTTP lifecycle hook ({path}) for Container {c:?} in Pod {p:?} failed - error: {err}")
            });
        }
        if let Some(sleep) = &handler.sleep {
            // A sleep longer than the bound is cut short (the caller stops
            // waiting at the bound anyway).
            let want = Duration::from_secs(sleep.seconds.max(0).unsigned_abs());
            tokio::time::sleep(want.min(bound)).await;
            return Ok(());
        }
        Err("Cannot run handler: invalid handler".to_string())
    }

    /// Runs the postStart hook, if any; on failure records
    /// `FailedPostStartHook`, kills the container and returns the message.
    pub(super) async fn post_start(&self, pod: &Pod, container: &Container, id: &str) -> Result<(), String> {
        let Some(handler) = container.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) else {
            return Ok(());
        };
        let Err(msg) = self.run_hook(pod, container, id, handler, POST_START_TIMEOUT).await else {
            return Ok(());
        };
        tracing::warn!(container_id = %id, %msg, "failed to execute PostStartHook");
        let name = &container.name;
        self.container_event(
            pod,
            name,
            EventType::Warning,
            "FailedPostStartHook",
            "PostStartHook failed",
        );
        let reason = super::actions::KillReason::Unknown;
        if let Err(e) = self
            .kill_container(Some(pod), id, name, "FailedPostStartHook", reason, None)
            .await
        {
            tracing::error!(container_id = %id, error = %e, "failed to kill container");
        }
        Err(msg)
    }

    /// Runs the preStop hook, if any, for at most `grace` seconds; returns
    /// the whole seconds it took (upstream `executePreStopHook`).
    pub(super) async fn pre_stop(&self, pod: &Pod, container: &Container, id: &str, grace: i64) -> i64 {
        let Some(handler) = container.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()) else {
            return 0;
        };
        if grace <= 0 {
            return 0;
        }
        let start = Instant::now();
        let bound = Duration::from_secs(grace.unsigned_abs());
        tracing::info!(container_id = %id, grace_period = grace, "running preStop hook");
        match tokio::time::timeout(bound, self.run_hook(pod, container, id, handler, bound)).await {
            Err(_) => tracing::info!(container_id = %id, "preStop hook not completed in grace period"),
            Ok(Err(msg)) => {
                tracing::warn!(container_id = %id, %msg, "preStop hook failed");
                let name = &container.name;
                self.container_event(pod, name, EventType::Warning, "FailedPreStopHook", "PreStopHook failed");
            }
            Ok(Ok(())) => tracing::debug!(container_id = %id, "preStop hook completed"),
        }
        i64::try_from(start.elapsed().as_secs()).unwrap_or(i64::MAX)
    }
}
