//! [`ContainerGc`]: the `container-gc` actor. Every `ContainerGCPeriod`
//! (1 min; the first round at start) it lists the runtime, reads the pod
//! lifecycle records, and removes what [`super::containers`] decides:
//! dead containers (with their logs), then dead sandboxes, then pod log
//! directories, dead legacy log symlinks and the pod cgroups of removed
//! pods. A failed round is logged and recorded as a `ContainerGCFailed`
//! Warning event on the node.
//!
//! A period whose inputs did not move since a round that removed nothing
//! is skipped ([`super::quiet`]).
//!
//! The actor holds no state of its own: liveness is read fresh each round,
//! and the round lock and the last quiet round live in [`GcState`];
//! removals run as tasks of their own ([`super::exec`]), so a restart
//! never cancels nor overlaps them.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;

use super::cgroups;
use super::containers::{evictable_containers, evictable_log_dirs, evictable_sandboxes, known_pods};
use super::error::GcError;
use super::exec::{self, LogDirs, RoundGuard, detached};
use super::liveness::PodLiveness;
use super::policy::ContainerGcPolicy;
use super::quiet::RoundMarks;
use super::state::GcState;
use crate::clock::WallClock;
use crate::cri::{SharedRuntime, v1};
use crate::events::{EventRecorder, node_ref};
use crate::messages::event::EventType;
use crate::pod_manager::PodManager;
use crate::pod_workers::PodSyncStatuses;
use crate::sync_loop::SyncLoopState;

/// What the container GC works with.
#[derive(Clone)]
pub struct ContainerGcDeps {
    /// The runtime.
    pub runtime: SharedRuntime,
    /// The desired pods.
    pub pods: PodManager,
    /// The pods' lifecycle records (worker states).
    pub pod_sync_statuses: PodSyncStatuses,
    /// The sync loop's state (whether all pod sources are ready).
    pub sync_state: SyncLoopState,
    /// The policy.
    pub policy: ContainerGcPolicy,
    /// Round period (`ContainerGCPeriod`).
    pub period: Duration,
    /// `/var/log/pods`.
    pub pod_logs_dir: std::path::PathBuf,
    /// `/var/log/containers`, if kept.
    pub container_logs_dir: Option<std::path::PathBuf>,
    /// Where the cgroup hierarchies are mounted, to remove the pod cgroups
    /// of removed pods (`None`: leave them).
    pub cgroup_mount: Option<std::path::PathBuf>,
    /// systemd, when pod cgroups are its slices (stopped before removal).
    pub systemd_slices: Option<std::sync::Arc<crate::cm::systemd::SystemdSlices>>,
    /// State outliving the actor.
    pub state: GcState,
    /// Node events.
    pub events: EventRecorder,
    /// The node's name (events).
    pub node_name: String,
    /// The wall clock container creation times are compared with.
    pub wall_clock: WallClock,
    /// The PLEG's pod cache: with it, a period whose inputs did not move
    /// since a round that removed nothing is skipped ([`super::quiet`]);
    /// `None`: every period runs a round.
    pub runtime_cache: Option<crate::pleg::PodCache>,
}

impl ContainerGcDeps {
    /// The generations of a round's inputs now; `None` when rounds are
    /// never skipped (no pod cache, or a `min_age` that lets time alone
    /// make a container removable).
    fn marks(&self) -> Option<RoundMarks> {
        let cache = self.runtime_cache.as_ref().filter(|_| self.policy.min_age.is_zero())?;
        Some(RoundMarks {
            pods: self.pods.generation(),
            workers: self.pod_sync_statuses.generation(),
            runtime: cache.generation(),
        })
    }
}

/// What one round removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerRound {
    /// Dead containers removed (or attempted).
    pub containers: usize,
    /// Sandboxes removed (or attempted).
    pub sandboxes: usize,
    /// Pod log directories removed (or attempted).
    pub log_dirs: usize,
    /// Pod cgroups removed.
    pub pod_cgroups: usize,
}

/// The `container-gc` actor.
pub struct ContainerGc {
    deps: ContainerGcDeps,
}

impl ContainerGc {
    /// An actor collecting with `deps`.
    pub fn new(deps: ContainerGcDeps) -> Self {
        Self { deps }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let Some(guard) = self.deps.state.try_container_round() else {
            tracing::debug!("container GC: the previous round is still running");
            return;
        };
        // Read before the round lists: a change while it runs moves them.
        let marks = self.deps.marks();
        if let Some(marks) = marks
            && self.deps.state.container_quiet().skip(marks)
        {
            tracing::debug!(
                ?marks,
                "container GC: nothing changed since a round that removed nothing; skipped"
            );
            return;
        }
        let deps = self.deps.clone();
        ctx.spawn(
            async move {
                let result = round(&deps, guard).await;
                if let Some(marks) = marks {
                    let clean = matches!(result, Ok(Some(r)) if r == ContainerRound::default());
                    deps.state.container_quiet().finished(marks, clean);
                }
                result
            }
            .into_actor(self)
            .map(|result, act, _| act.finished(result)),
        );
    }

    fn finished(&mut self, result: Result<Option<ContainerRound>, GcError>) {
        let failed_before = &self.deps.state.container_failed;
        match result {
            Ok(None) => {}
            Ok(Some(r)) => {
                if failed_before.swap(false, std::sync::atomic::Ordering::AcqRel) {
                    tracing::info!(?r, "container garbage collection succeeded");
                } else {
                    tracing::debug!(?r, "container garbage collection succeeded");
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "container garbage collection failed");
                self.deps.events.event(
                    node_ref(&self.deps.node_name),
                    EventType::Warning,
                    "ContainerGCFailed",
                    e.to_string(),
                );
                failed_before.store(true, std::sync::atomic::Ordering::Release);
            }
        }
    }
}

impl Actor for ContainerGc {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.tick(ctx);
        ctx.run_interval(self.deps.period, |act, ctx| act.tick(ctx));
    }
}

fn cri(call: &'static str) -> impl FnOnce(crate::cri::CriError) -> GcError {
    move |source| GcError::Cri { call, source }
}

/// Every container and sandbox the runtime holds (the GC lists with an
/// empty filter, the PLEG with none: the same answer).
async fn list(runtime: &SharedRuntime) -> Result<(Vec<v1::Container>, Vec<v1::PodSandbox>), GcError> {
    let containers = runtime
        .list_containers(v1::ListContainersRequest {
            filter: Some(Default::default()),
        })
        .await
        .map_err(cri("ListContainers"))?
        .containers;
    let sandboxes = runtime
        .list_pod_sandbox(v1::ListPodSandboxRequest {
            filter: Some(Default::default()),
        })
        .await
        .map_err(cri("ListPodSandbox"))?
        .items;
    Ok((containers, sandboxes))
}

/// The liveness of pods as of now (see [`super::liveness`]).
fn liveness(deps: &ContainerGcDeps) -> PodLiveness {
    let desired: HashMap<_, _> = deps
        .pods
        .pods()
        .into_iter()
        .map(|d| {
            let uid = crate::pod_manager::pod_uid(&d.pod);
            (uid, d.pod.metadata.deletion_timestamp.is_some())
        })
        .collect();
    PodLiveness {
        sources_ready: deps.sync_state.sources_ready(),
        desired,
        workers: Some(deps.pod_sync_statuses.states()),
        active: Default::default(),
    }
}

/// One round (upstream `GarbageCollect`); `Ok(None)` while the sources are not ready.
pub(crate) async fn round(deps: &ContainerGcDeps, guard: RoundGuard) -> Result<Option<ContainerRound>, GcError> {
    if !deps.sync_state.sources_ready() {
        return Ok(None);
    }
    let mut errors = vec![];
    let base = liveness(deps);
    let logs = LogDirs {
        pods: deps.pod_logs_dir.clone(),
        containers: deps.container_logs_dir.clone(),
    };

    // Dead containers.
    let (containers, sandboxes) = list(&deps.runtime).await?;
    let known = known_pods(&containers, &sandboxes);
    let live = base.clone().with_runtime(&containers, &sandboxes);
    let now_ns = i64::try_from(deps.wall_clock.now().as_nanosecond()).unwrap_or(i64::MAX);
    let doomed = evictable_containers(&containers, &live, &deps.policy, now_ns);
    let mut report = ContainerRound {
        containers: doomed.len(),
        ..Default::default()
    };
    if !doomed.is_empty() {
        let task = exec::remove_containers(deps.runtime.clone(), doomed, logs.clone(), guard.clone());
        errors.extend(
            detached(task)
                .await
                .unwrap_or_else(|| vec!["container removal task panicked".into()]),
        );
    }

    // Dead sandboxes, from a fresh listing.
    let (containers, sandboxes) = list(&deps.runtime).await?;
    let live = base.with_runtime(&containers, &sandboxes);
    let doomed = evictable_sandboxes(&containers, &sandboxes, &live);
    report.sandboxes = doomed.len();
    if !doomed.is_empty() {
        let task = exec::remove_sandboxes(deps.runtime.clone(), doomed, guard.clone());
        errors.extend(
            detached(task)
                .await
                .unwrap_or_else(|| vec!["sandbox removal task panicked".into()]),
        );
    }

    // Pod log directories and dead legacy symlinks.
    match exec::dir_names(&logs.pods).await {
        Ok(names) => {
            let doomed = evictable_log_dirs(names.iter().map(String::as_str), &live, &known);
            report.log_dirs = doomed.len();
            if !doomed.is_empty() {
                errors.extend(
                    detached(exec::remove_log_dirs(logs.pods.clone(), doomed))
                        .await
                        .unwrap_or_default(),
                );
            }
        }
        Err(e) => errors.push(format!(
            "failed to read podLogsDirectory {:?}: {e}",
            logs.pods.display().to_string()
        )),
    }
    if let Some(dir) = logs.containers.clone() {
        let _ = detached(exec::remove_dead_symlinks(deps.runtime.clone(), dir)).await;
    }
    if let Some(mount) = deps.cgroup_mount.clone() {
        report.pod_cgroups = remove_pod_cgroups(deps, mount, &live, &known).await?;
    }
    drop(guard);
    if errors.is_empty() {
        Ok(Some(report))
    } else {
        Err(GcError::Removals {
            what: "container garbage collection",
            errors,
        })
    }
}

/// Removes the pod cgroups of removed pods the runtime held at the start of
/// the round and holds nothing of now (see [`super::cgroups`]). A cgroup
/// that cannot be removed yet is logged and retried next round.
async fn remove_pod_cgroups(
    deps: &ContainerGcDeps,
    mount: std::path::PathBuf,
    live: &PodLiveness,
    known: &std::collections::HashSet<crate::messages::PodUid>,
) -> Result<usize, GcError> {
    let found = tokio::task::spawn_blocking(move || cgroups::find_pod_cgroups(&mount))
        .await
        .unwrap_or_default();
    if !found.iter().any(|(uid, _)| known.contains(uid)) {
        return Ok(0);
    }
    let (containers, sandboxes) = list(&deps.runtime).await?;
    let held = known_pods(&containers, &sandboxes);
    let doomed = cgroups::evictable_pod_cgroups(&found, live, known, &held);
    let slices = deps.systemd_slices.clone();
    let removed = tokio::task::spawn_blocking(move || {
        doomed
            .iter()
            .filter(|dir| {
                // A pod slice systemd knows is stopped first (upstream's
                // Destroy); systemd then removes its cgroup itself.
                let unit = dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .filter(|n| n.ends_with(".slice"));
                if let (Some(slices), Some(unit)) = (&slices, unit) {
                    slices.stop_slice(unit);
                }
                true
            })
            .filter(|dir| match cgroups::remove_cgroup(dir) {
                Ok(()) => {
                    tracing::info!(path = %dir.display(), "removed pod cgroup");
                    true
                }
                Err(e) => {
                    tracing::warn!(error = %e, "pod cgroup not removed; retrying next round");
                    false
                }
            })
            .count()
    })
    .await
    .unwrap_or(0);
    Ok(removed)
}
