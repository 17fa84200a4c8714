//! [`ContainerLogManager`]: the `container-log-manager` actor (upstream
//! `containerLogManager.Start`). Each `containerLogMonitorInterval` it
//! starts one round — unless the previous one still runs — as a task of its
//! own: list the running containers, read each one's log path from its CRI
//! status and rotate it ([`super::rotate_one`]), `containerLogMaxWorkers` at
//! a time. The actor holds nothing a restart could lose (see the
//! [module docs](super)); the "round running" flag lives in its deps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix::prelude::*;
use futures::StreamExt;

use super::{LogRotatePolicy, Rotation, rotate_one};
use crate::cri::{SharedRuntime, v1};
use crate::kubelet::WallClock;

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

/// One round over the running containers.
pub async fn round(deps: &LogManagerDeps) {
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
            return;
        }
    };
    futures::stream::iter(containers)
        .for_each_concurrent(deps.policy.max_workers.max(1), |c| rotate_container(deps, c.id))
        .await;
}

async fn rotate_container(deps: &LogManagerDeps, id: String) {
    let status = deps
        .runtime
        .container_status(v1::ContainerStatusRequest {
            container_id: id.clone(),
            verbose: false,
        })
        .await;
    let log_path = match status {
        Ok(s) => s.status.map(|s| s.log_path).unwrap_or_default(),
        // Removed since the list (the container GC, a deleted pod): nothing to rotate.
        Err(e) if e.is_not_found() => {
            tracing::debug!(container_id = %id, "container log rotation: container gone since the list");
            return;
        }
        Err(e) => {
            tracing::warn!(container_id = %id, error = %e, "container log rotation: failed to get container status");
            return;
        }
    };
    if log_path.is_empty() {
        return;
    }
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
