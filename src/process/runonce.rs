//! `--runonce` (`runOnce`): run the static pods once, wait until each is
//! running (every container of its spec running) or has failed, report each,
//! and exit with the outcome — upstream's `RunOnce` before v1.31, which
//! removed the mode (k/k #126336). actlet keeps it: the project's semantics
//! (kubelet-semantics.md §1) ask for it. As upstream, the pods are left
//! running when actlet exits. A pod that succeeds (all containers exited 0,
//! phase `Succeeded`) also counts as run.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};

use crate::kubelet::Kubelet;
use crate::pod_manager::{format_pod, pod_uid};

/// How long upstream waits for the first pod update (`runOnceManifestDelay`).
pub const MANIFEST_DELAY: Duration = Duration::from_secs(1);
/// Upstream's retry schedule: 10 retries, 1 s doubling (≈ 17 min in all).
pub const MAX_RETRIES: u32 = 10;

/// Where one pod stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every container of the spec is running.
    Running,
    /// The pod completed successfully.
    Succeeded,
    /// The pod failed (phase `Failed`), or timed out.
    Failed(String),
    /// Not there yet.
    Pending,
}

/// Where `pod` stands given its latest generated status.
///
/// ```
/// use actlet::process::runonce::{Outcome, outcome};
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})).unwrap();
/// let status = serde_json::from_value(serde_json::json!({"phase": "Running",
///     "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
///                            "state": {"running": {}}}]})).unwrap();
/// assert_eq!(outcome(&pod, Some(&status)), Outcome::Running);
/// assert_eq!(outcome(&pod, None), Outcome::Pending);
/// ```
pub fn outcome(pod: &Pod, status: Option<&PodStatus>) -> Outcome {
    let Some(status) = status else {
        return Outcome::Pending;
    };
    match status.phase.as_deref() {
        Some("Failed") => {
            let why = status
                .reason
                .clone()
                .or(status.message.clone())
                .unwrap_or_else(|| "pod failed".into());
            return Outcome::Failed(why);
        }
        Some("Succeeded") => return Outcome::Succeeded,
        _ => {}
    }
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    let running = |name: &str| {
        statuses
            .iter()
            .any(|c| c.name == name && c.state.as_ref().is_some_and(|s| s.running.is_some()))
    };
    if !containers.is_empty() && containers.iter().all(|c| running(&c.name)) {
        Outcome::Running
    } else {
        Outcome::Pending
    }
}

/// The result of a run: each pod (`namespace/name`) and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Per pod, sorted by name.
    pub pods: Vec<(String, Outcome)>,
}

impl Report {
    /// Upstream's error when some pods did not run: `N out of M pods failed to run`.
    pub fn error(&self) -> Option<String> {
        let failed = self
            .pods
            .iter()
            .filter(|(_, o)| !matches!(o, Outcome::Running | Outcome::Succeeded))
            .count();
        (failed > 0).then(|| format!("{failed} out of {} pods failed to run", self.pods.len()))
    }
}

/// Sum of upstream's retry delays: 1 s doubling, [`MAX_RETRIES`] times.
pub fn default_timeout() -> Duration {
    Duration::from_secs((1u64 << MAX_RETRIES) - 1)
}

/// Waits until every pod the sources gave is running, succeeded or failed,
/// or `timeout` passes (the rest then fail), and reports them.
pub async fn run_once(kubelet: &Kubelet, timeout: Duration) -> Report {
    let start = tokio::time::Instant::now();
    // the sources' first update
    while kubelet.pods.is_empty() && start.elapsed() < MANIFEST_DELAY {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pods: Vec<_> = kubelet.pods.pods();
    tracing::info!(num_pods = pods.len(), "processing manifest with pods");
    let mut delay = Duration::from_millis(200);
    loop {
        let now: Vec<(String, Outcome)> = pods
            .iter()
            .map(|d| {
                let status = kubelet.statuses.get(&pod_uid(&d.pod));
                (format_pod(&d.pod), outcome(&d.pod, status.as_ref().map(|s| &*s.status)))
            })
            .collect();
        let timed_out = start.elapsed() >= timeout;
        if timed_out || now.iter().all(|(_, o)| *o != Outcome::Pending) {
            let mut report = Report {
                pods: now
                    .into_iter()
                    .map(|(name, o)| match o {
                        Outcome::Pending => (
                            name,
                            Outcome::Failed(format!("containers not running after {:?}", timeout)),
                        ),
                        o => (name, o),
                    })
                    .collect(),
            };
            report.pods.sort_by(|a, b| a.0.cmp(&b.0));
            for (pod, o) in &report.pods {
                match o {
                    Outcome::Running | Outcome::Succeeded => tracing::info!(%pod, outcome = ?o, "started pod"),
                    Outcome::Failed(why) => tracing::warn!(%pod, reason = %why, "failed to start pod"),
                    Outcome::Pending => {}
                }
            }
            return report;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}}))
        .unwrap()
    }

    fn status(phase: &str, running: &[&str]) -> PodStatus {
        let cs: Vec<_> = ["a", "b"]
            .iter()
            .map(|n| {
                let state = if running.contains(n) {
                    json!({"running": {}})
                } else {
                    json!({"waiting": {"reason": "ContainerCreating"}})
                };
                json!({"name": n, "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": state})
            })
            .collect();
        serde_json::from_value(json!({"phase": phase, "containerStatuses": cs})).unwrap()
    }

    #[test]
    fn running_needs_every_container_running() {
        assert_eq!(outcome(&pod(), Some(&status("Pending", &["a"]))), Outcome::Pending);
        assert_eq!(outcome(&pod(), Some(&status("Running", &["a", "b"]))), Outcome::Running);
        assert_eq!(outcome(&pod(), Some(&status("Succeeded", &[]))), Outcome::Succeeded);
        assert!(matches!(
            outcome(&pod(), Some(&status("Failed", &[]))),
            Outcome::Failed(_)
        ));
    }

    #[test]
    fn the_report_errs_like_upstream() {
        let r = Report {
            pods: vec![
                ("a/x".into(), Outcome::Running),
                ("a/y".into(), Outcome::Failed("boom".into())),
                ("a/z".into(), Outcome::Succeeded),
            ],
        };
        assert_eq!(r.error().as_deref(), Some("1 out of 3 pods failed to run"));
        assert_eq!(Report::default().error(), None);
        assert_eq!(default_timeout(), Duration::from_secs(1023));
    }
}
