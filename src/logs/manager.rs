//! [`ContainerLogManager`]: the `container-log-manager` actor (upstream
//! `containerLogManager`). Every `containerLogMonitorInterval` (10 s; the
//! first round at start) it lists the running containers and, with up to
//! `containerLogMaxWorkers` at a time, rotates each log file that reached
//! `containerLogMaxSize` ([`rotate_container`], [`super::rotate`]) and has
//! the runtime reopen it (CRI `ReopenContainerLog`).
//!
//! The actor owns nothing: the files are the state, re-read each round.
//! Its one shared piece, [`LogRotationState`], holds the round lock: a round
//! runs as a task of its own holding it, so when the actor is killed the
//! round in flight finishes (a rename is never left without its reopen) and
//! the restarted actor's rounds wait for it instead of overlapping.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actix::prelude::*;
use futures::StreamExt;

use super::rotate::{self, RotateError};
use crate::clock::WallClock;
use crate::cri::{CriError, SharedRuntime, v1};

/// Upstream's `LogRotatePolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRotatePolicy {
    /// Rotate at this size in bytes (`containerLogMaxSize`, default 10Mi).
    pub max_size: u64,
    /// Files kept per container, the live one included (`containerLogMaxFiles`, default 5, > 1).
    pub max_files: usize,
}

/// Everything the manager works with.
#[derive(Clone)]
pub struct LogManagerDeps {
    /// The runtime (container list, log paths, `ReopenContainerLog`).
    pub runtime: SharedRuntime,
    /// The policy.
    pub policy: LogRotatePolicy,
    /// `containerLogMaxWorkers`.
    pub workers: usize,
    /// `containerLogMonitorInterval`.
    pub interval: Duration,
    /// The clock of the rotated files' suffix (local time).
    pub wall_clock: WallClock,
    /// State outliving the actor.
    pub state: LogRotationState,
}

/// The round lock and counters (shared by every instance of the actor).
#[derive(Clone, Debug, Default)]
pub struct LogRotationState {
    round: Arc<tokio::sync::Mutex<()>>,
    rotations: Arc<AtomicU64>,
    rounds: Arc<AtomicU64>,
}

impl LogRotationState {
    /// Log files rotated so far.
    pub fn rotations(&self) -> u64 {
        self.rotations.load(Ordering::Acquire)
    }

    /// Rounds finished so far.
    pub fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Acquire)
    }
}

/// Rotating a container's log failed.
#[derive(Debug, thiserror::Error)]
pub enum LogRotationError {
    /// A CRI call failed.
    #[error("{call} failed: {source}")]
    Cri {
        /// The call.
        call: &'static str,
        /// The runtime's error.
        #[source]
        source: CriError,
    },
    /// A file operation failed.
    #[error(transparent)]
    Files(#[from] RotateError),
    /// The log file cannot be read.
    #[error("failed to stat container log {path:?}: {source}")]
    Stat {
        /// The log file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

async fn reopen(runtime: &SharedRuntime, id: &str) -> Result<(), LogRotationError> {
    let req = v1::ReopenContainerLogRequest {
        container_id: id.to_string(),
    };
    runtime
        .reopen_container_log(req)
        .await
        .map(|_| ())
        .map_err(|source| LogRotationError::Cri {
            call: "ReopenContainerLog",
            source,
        })
}

async fn size_of(path: &Path) -> Result<Option<u64>, LogRotationError> {
    match tokio::fs::metadata(path).await {
        Ok(m) => Ok(Some(m.len())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogRotationError::Stat {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Rotates container `id`'s log when it reached the policy's size
/// (upstream `processContainer` + `rotateLog`): a missing live file is
/// reopened first; after the rename the runtime reopens the path, and when
/// it cannot the rename is undone. Returns the rotated file, if any.
pub async fn rotate_container(deps: &LogManagerDeps, id: &str) -> Result<Option<PathBuf>, LogRotationError> {
    let status = deps
        .runtime
        .container_status(v1::ContainerStatusRequest {
            container_id: id.to_string(),
            verbose: false,
        })
        .await
        .map_err(|source| LogRotationError::Cri {
            call: "ContainerStatus",
            source,
        })?;
    let path = PathBuf::from(status.status.map(|s| s.log_path).unwrap_or_default());
    if !path.is_absolute() {
        return Ok(None);
    }
    let size = match size_of(&path).await? {
        Some(s) => s,
        None => {
            reopen(&deps.runtime, id).await?;
            size_of(&path).await?.unwrap_or(0)
        }
    };
    if size < deps.policy.max_size {
        return Ok(None);
    }
    let suffix = rotate::timestamp_suffix(&deps.wall_clock.now().to_zoned(jiff::tz::TimeZone::system()));
    let (p, max_files) = (path.clone(), deps.policy.max_files);
    let rotated = blocking(move || {
        rotate::prepare(&p, max_files)?;
        rotate::rename_latest(&p, &suffix)
    })
    .await?;
    let Some(rotated) = rotated else {
        return Ok(None);
    };
    if let Err(e) = reopen(&deps.runtime, id).await {
        let (p, r) = (path.clone(), rotated.clone());
        if let Err(undo) = blocking(move || rotate::undo_rename(&p, &r)).await {
            tracing::error!(error = %undo, container_id = id, "failed to rename the rotated log back");
        }
        return Err(e);
    }
    Ok(Some(rotated))
}

/// One round over the running containers; returns how many were rotated.
pub async fn round(deps: &LogManagerDeps) -> Result<usize, LogRotationError> {
    let running = v1::ContainerStateValue {
        state: v1::ContainerState::ContainerRunning as i32,
    };
    let containers = deps
        .runtime
        .list_containers(v1::ListContainersRequest {
            filter: Some(v1::ContainerFilter {
                state: Some(running),
                ..Default::default()
            }),
        })
        .await
        .map_err(|source| LogRotationError::Cri {
            call: "ListContainers",
            source,
        })?
        .containers;
    let rotated = futures::stream::iter(containers)
        .map(|c| async move {
            match rotate_container(deps, &c.id).await {
                Ok(Some(file)) => {
                    tracing::debug!(container_id = %c.id, rotated = %file.display(), "rotated container log");
                    1
                }
                Ok(None) => 0,
                Err(e) => {
                    tracing::error!(container_id = %c.id, error = %e, "failed to rotate log for container");
                    0
                }
            }
        })
        .buffer_unordered(deps.workers.max(1))
        .fold(0, |n, r| async move { n + r })
        .await;
    deps.state.rotations.fetch_add(rotated as u64, Ordering::AcqRel);
    deps.state.rounds.fetch_add(1, Ordering::AcqRel);
    Ok(rotated)
}

/// The `container-log-manager` actor.
pub struct ContainerLogManager {
    deps: LogManagerDeps,
}

impl ContainerLogManager {
    /// A manager working with `deps`.
    pub fn new(deps: LogManagerDeps) -> Self {
        Self { deps }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let Ok(guard) = self.deps.state.round.clone().try_lock_owned() else {
            tracing::debug!("container log rotation: the previous round is still running");
            return;
        };
        let deps = self.deps.clone();
        // A task of its own: killing the actor does not cut a rotation short.
        let task = actix::spawn(async move {
            let result = round(&deps).await;
            drop(guard);
            result
        });
        ctx.spawn(task.into_actor(self).map(|result, _, _| match result {
            Ok(Err(e)) => tracing::error!(error = %e, "failed to rotate container logs"),
            Err(e) => tracing::error!(error = %e, "container log rotation round panicked"),
            Ok(Ok(_)) => {}
        }));
    }
}

impl Actor for ContainerLogManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(
            workers = self.deps.workers,
            monitor_period = ?self.deps.interval,
            "initializing container log rotate workers"
        );
        self.tick(ctx);
        ctx.run_interval(self.deps.interval, |act, ctx| act.tick(ctx));
    }
}
