//! [`ContainerLogManager`]: the `container-log-manager` actor (upstream
//! `containerLogManager.Start`). Each `containerLogMonitorInterval` it
//! starts one round — unless the previous one still runs — as a task of its
//! own: take the running containers and their log paths from the PLEG's pod
//! cache (in the kubelet; [`LogManagerDeps::cache`]) or list them from the
//! runtime and read each one's log path from its CRI status once
//! ([`LogPaths`]; upstream asks `ContainerStatus` of every running container
//! every round: 1,000 calls a second at 10k pods), and rotate the logs that
//! are due ([`super::rotate_one`]), `containerLogMaxWorkers` at a time. The
//! actor holds nothing a restart could lose (see the [module docs](super));
//! the "round running" flag and the paths live in its deps.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use futures::StreamExt;

use super::{LogRotatePolicy, Rotation, rotate_one};
use crate::clock::WallClock;
use crate::cri::{SharedRuntime, v1};
use crate::kuberuntime::pod_status::{ContainerState, RuntimePodStatus};
use crate::pleg::PodCache;

/// What the log manager works with.
#[derive(Clone)]
pub struct LogManagerDeps {
    /// The runtime (lists containers, reopens their logs).
    pub runtime: SharedRuntime,
    /// Sizes, counts, period.
    pub policy: LogRotatePolicy,
    /// The clock of the rotated files' timestamps.
    pub wall_clock: WallClock,
    /// A round is running (outlives the actor).
    pub running: Arc<AtomicBool>,
    /// The log path of each running container seen (outlives the actor).
    pub paths: LogPaths,
    /// The PLEG's pod cache: when set, a round takes the running containers
    /// and their log paths from it (statuses the PLEG read anyway) instead
    /// of listing them from the runtime: at 10k pods the list and its
    /// clone were most of an idle node's rotation rounds. Containers
    /// without the kubelet's labels are not in the cache and are not
    /// rotated then (upstream rotates every running CRI container).
    pub cache: Option<PodCache>,
}

/// Container id → log path, for the containers the last round listed.
#[derive(Clone, Debug, Default)]
pub struct LogPaths(Arc<Mutex<HashMap<String, String>>>);

impl LogPaths {
    /// The known path of `id`.
    pub fn get(&self, id: &str) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned()
    }

    /// Remembers the path of `id`.
    pub fn insert(&self, id: &str, path: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned(), path.to_owned());
    }

    /// Forgets every container not in `listed`.
    pub fn retain_listed(&self, listed: &HashSet<&str>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|id, _| listed.contains(id.as_str()));
    }

    /// Containers remembered.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for LogManagerDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogManagerDeps")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl LogManagerDeps {
    /// Deps with upstream's policy and the system clock.
    pub fn new(runtime: SharedRuntime, policy: LogRotatePolicy) -> Self {
        Self {
            runtime,
            policy,
            wall_clock: WallClock::system(),
            running: Arc::default(),
            paths: LogPaths::default(),
            cache: None,
        }
    }
}

/// The `container-log-manager` actor.
pub struct ContainerLogManager {
    deps: LogManagerDeps,
}

impl ContainerLogManager {
    /// A log manager working with `deps`.
    pub fn new(deps: LogManagerDeps) -> Self {
        Self { deps }
    }

    fn tick(&mut self) {
        if self.deps.running.swap(true, Ordering::AcqRel) {
            tracing::debug!("container log rotation: the previous round is still running");
            return;
        }
        let deps = self.deps.clone();
        // Detached: a restart of the actor neither cancels nor repeats it.
        tokio::spawn(async move {
            round(&deps).await;
            deps.running.store(false, Ordering::Release);
        });
    }
}

/// How many log files one trip to the blocking pool stats.
const STAT_BATCH: usize = 512;

/// One round over the running containers: their log paths (from the pod
/// cache, or listed and remembered), the size of every log in batches of
/// 512 (one trip to the blocking pool each, not one per container: at 10k
/// containers a round was 10,000 hops; a batch of the pod cache's statuses
/// is a copy of 512 pointers, and only the paths of due logs are copied),
/// then [`rotate_one`] for the logs that are due (too big, missing, or not
/// readable), `containerLogMaxWorkers` at a time.
pub async fn round(deps: &LogManagerDeps) {
    let policy = deps.policy;
    match &deps.cache {
        Some(cache) => {
            let statuses = cache.statuses();
            for batch in statuses.chunks(STAT_BATCH) {
                let batch = batch.to_vec();
                let due = tokio::task::spawn_blocking(move || super::due_logs(running_logs(&batch), &policy));
                if !rotate_due(deps, due.await).await {
                    return;
                }
            }
        }
        None => {
            let Some(mut rest) = listed_logs(deps).await else {
                return;
            };
            while !rest.is_empty() {
                let tail = rest.split_off(rest.len().min(STAT_BATCH));
                let batch = std::mem::replace(&mut rest, tail);
                let due = tokio::task::spawn_blocking(move || {
                    super::due_logs(batch.iter().map(|(id, path)| (id.as_str(), path.as_str())), &policy)
                });
                if !rotate_due(deps, due.await).await {
                    return;
                }
            }
        }
    }
}

/// Rotates the due logs of one batch; false when the batch's stats failed.
async fn rotate_due(deps: &LogManagerDeps, due: Result<Vec<(String, String)>, tokio::task::JoinError>) -> bool {
    let due = match due {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, "container log rotation: stat of the container logs failed");
            return false;
        }
    };
    let workers = deps.policy.max_workers.max(1);
    futures::stream::iter(due)
        .for_each_concurrent(workers, |(id, path)| rotate_container(deps, id, path))
        .await;
    true
}

/// (container id, log path) of every running container in `statuses` that
/// has a log.
pub fn running_logs(statuses: &[Arc<RuntimePodStatus>]) -> impl Iterator<Item = (&str, &str)> {
    statuses
        .iter()
        .flat_map(|s| s.containers.iter())
        .filter(|c| c.state == ContainerState::Running && !c.log_path.is_empty())
        .map(|c| (c.id.as_str(), c.log_path.as_str()))
}

/// The running containers listed from the runtime, with their log paths
/// (remembered or read); `None` when the list failed.
async fn listed_logs(deps: &LogManagerDeps) -> Option<Vec<(String, String)>> {
    let running = v1::ContainerFilter {
        state: Some(v1::ContainerStateValue {
            state: v1::ContainerState::ContainerRunning as i32,
        }),
        ..Default::default()
    };
    let list = deps
        .runtime
        .list_containers(v1::ListContainersRequest { filter: Some(running) })
        .await;
    let containers = match list {
        Ok(r) => r.containers,
        Err(e) => {
            tracing::error!(error = %e, "container log rotation: failed to list running containers");
            return None;
        }
    };
    deps.paths
        .retain_listed(&containers.iter().map(|c| c.id.as_str()).collect());
    let workers = deps.policy.max_workers.max(1);
    let logs = futures::stream::iter(containers)
        .map(|c| async move {
            let path = log_path(deps, &c.id).await.filter(|p| !p.is_empty())?;
            Some((c.id, path))
        })
        .buffer_unordered(workers)
        .filter_map(futures::future::ready)
        .collect()
        .await;
    Some(logs)
}

/// The log path of `id`: remembered, or from its CRI status (then remembered).
async fn log_path(deps: &LogManagerDeps, id: &str) -> Option<String> {
    if let Some(path) = deps.paths.get(id) {
        return Some(path);
    }
    let status = deps
        .runtime
        .container_status(v1::ContainerStatusRequest {
            container_id: id.to_owned(),
            verbose: false,
        })
        .await;
    match status {
        Ok(s) => {
            let path = s.status.map(|s| s.log_path).unwrap_or_default();
            deps.paths.insert(id, &path);
            Some(path)
        }
        // Removed since the list (the container GC, a deleted pod): nothing to rotate.
        Err(e) if e.is_not_found() => {
            tracing::debug!(container_id = %id, "container log rotation: container gone since the list");
            None
        }
        Err(e) => {
            tracing::warn!(container_id = %id, error = %e, "container log rotation: failed to get container status");
            None
        }
    }
}

async fn rotate_container(deps: &LogManagerDeps, id: String, log_path: String) {
    let reopen = || {
        let (runtime, id) = (deps.runtime.clone(), id.clone());
        async move {
            runtime
                .reopen_container_log(v1::ReopenContainerLogRequest { container_id: id })
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    };
    let path = std::path::PathBuf::from(&log_path);
    match rotate_one(&path, &deps.policy, deps.wall_clock.now(), reopen).await {
        Ok(Rotation::Rotated) => tracing::info!(container_id = %id, path = %log_path, "container log rotated"),
        Ok(Rotation::Reopened) => {
            tracing::info!(container_id = %id, path = %log_path, "missing container log reopened")
        }
        Ok(Rotation::NotNeeded) => {}
        Err(e) => tracing::warn!(container_id = %id, error = %e, "failed to rotate container log"),
    }
}

impl Actor for ContainerLogManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(policy = ?self.deps.policy, "container log manager started");
        ctx.run_interval(self.deps.policy.monitor_interval, |act, _| act.tick());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::test_support::container;

    #[test]
    fn running_logs_are_the_running_containers_with_a_log() {
        let mut pod = RuntimePodStatus::empty("u".into(), "web", "default");
        for (id, state, log) in [
            ("run", ContainerState::Running, "/logs/web/app/1.log"),
            ("old", ContainerState::Exited, "/logs/web/app/0.log"),
            ("new", ContainerState::Created, "/logs/web/side/0.log"),
            ("nolog", ContainerState::Running, ""),
        ] {
            let mut c = container(id, "app", state, 0, "h");
            c.log_path = log.into();
            pod.containers.push(c);
        }
        let other = RuntimePodStatus::empty("v".into(), "db", "default");
        let statuses = [Arc::new(pod), Arc::new(other)];
        let logs: Vec<_> = running_logs(&statuses).collect();
        assert_eq!(logs, [("run", "/logs/web/app/1.log")]);
    }
}
