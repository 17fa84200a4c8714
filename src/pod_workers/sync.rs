//! The body of one pod worker step (upstream `SyncPod` / `SyncTerminatingPod`
//! in `kubelet.go`), as plain async functions the [`PodWorker`](super::worker::PodWorker)
//! actor runs one at a time.
//!
//! A worker acts on its own CRI results at once: after a sync it re-reads the
//! pod's runtime status, stores it in the pod cache and publishes the API
//! status, so a started container shows as Running without waiting for the
//! next PLEG relist.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use tokio::time::Instant;

use super::active_deadline::{self, Deadline};
use super::deps::WorkerDeps;
use super::publish_memo::{PublishInputs, PublishMemo, Published, StatusExtras};
use crate::kuberuntime::pod_status::{ContainerState, RuntimePodStatus, SandboxState};
use crate::kuberuntime::{PodSyncResult, RuntimeManager, SyncAction, SyncErrorReason, SyncPodOptions};
use crate::messages::event::EventType;
use crate::messages::pod_work::{KillOptions, KillStatus};
use crate::messages::status::UpdatePodStatus;
use crate::pod_manager::pod_uid;
use crate::status::generate::{StatusInput, TerminalOverride, generate_api_pod_status};
use crate::status::phase::Phase;

/// Why containers wait, by container name: (reason, message).
pub type Waiting = HashMap<String, (String, String)>;

/// The result of one worker step.
#[derive(Debug)]
pub struct StepOutcome {
    /// When the step started (the next step waits for a cache entry newer than this).
    pub started_at: Instant,
    /// Error text, when the step failed (the sync loop retries with backoff).
    pub error: Option<String>,
    /// Waiting reasons found by the step.
    pub waiting: Waiting,
    /// The pod must now terminate (deleted, or reached a terminal phase);
    /// the options say how.
    pub terminate: Option<KillOptions>,
    /// (Kill steps) nothing of the pod runs any more.
    pub terminated: bool,
    /// A container is in restart backoff until then: sync the pod again at
    /// that time (a backoff is not an error, so the regular resync would
    /// come up to `syncFrequency` late).
    pub retry_at: Option<Instant>,
    /// (Sync steps) the step's last status publication, for the next step.
    pub publish: Option<PublishMemo>,
}

/// The runtime status of `pod` from the pod cache (upstream: the pod
/// worker's `GetNewerThan`): an entry newer than `newer_than` (the previous
/// step), or for a worker's first step any entry once the PLEG has relisted
/// (no entry then means nothing in the runtime: a new pod costs no read).
/// An entry holding a read error is replaced by a fresh runtime read. When
/// neither the entry nor the global timestamp is newer than the previous
/// step, a targeted PLEG relist of the pod is requested, so the wait does
/// not depend on the global relist's period (300 s while the runtime's event
/// stream is up) — except for a `resync` (a periodic or PLEG-triggered
/// `SyncPodSync` after a step that succeeded) while the event stream keeps
/// the cache current ([`PodCache::events_live`](crate::pleg::PodCache::events_live))
/// and no relist of the pod is pending: then the entry as it stands is the
/// state (a step that changed the runtime ended with a read of its own, so
/// the entry holds the worker's own changes; a change it missed is an event
/// on its way, which syncs the pod again). At 10k idle pods this spares ~170
/// targeted relists a second.
pub async fn runtime_status(
    deps: &WorkerDeps,
    pod: &Pod,
    newer_than: Option<Instant>,
    resync: bool,
) -> Result<Arc<RuntimePodStatus>, String> {
    let uid = pod_uid(pod);
    let entry = match newer_than {
        Some(min) if !deps.cache.is_newer_than(&uid, min) => {
            let fed = resync && deps.cache.events_live() && !deps.cache.relist_pending(&uid);
            match fed.then(|| deps.cache.current(&uid)).flatten() {
                Some(entry) => entry,
                None => {
                    // Not read since the last step: ask for a targeted relist
                    // rather than wait for the next global one.
                    let (name, ns) = name_ns(pod);
                    deps.cache.request_relist(&uid, &name, &ns);
                    deps.cache.get_newer_than(&uid, min).await
                }
            }
        }
        Some(min) => deps.cache.get_newer_than(&uid, min).await,
        None => deps.cache.get_relisted(&uid).await,
    };
    if let Some(status) = entry.status {
        return Ok(status);
    }
    if entry.error.is_none() {
        let (name, ns) = name_ns(pod);
        return Ok(Arc::new(RuntimePodStatus::empty(uid, name, ns)));
    }
    refresh(deps, pod).await
}

/// Reads the pod's status from the runtime now and stores it in the cache.
pub async fn refresh(deps: &WorkerDeps, pod: &Pod) -> Result<Arc<RuntimePodStatus>, String> {
    let uid = pod_uid(pod);
    let (name, ns) = name_ns(pod);
    let read_at = Instant::now();
    match deps.runtime.get_pod_status(&uid, &name, &ns).await {
        Ok(s) => {
            let s = Arc::new(s);
            deps.cache.set(uid, Some(s.clone()), None, read_at);
            Ok(s)
        }
        Err(e) => Err(format!("failed to read runtime status: {e}")),
    }
}

/// Upstream's pod worker event when the pod's runtime status cannot be read.
fn failed_sync(deps: &WorkerDeps, pod: &Pod, error: &str) {
    deps.runtime.events().pod_event(
        pod,
        None,
        EventType::Warning,
        "FailedSync",
        format!("error determining status: {error}"),
    );
}

fn name_ns(pod: &Pod) -> (String, String) {
    (
        pod.metadata.name.clone().unwrap_or_default(),
        pod.metadata.namespace.clone().unwrap_or_default(),
    )
}

/// What a status generation reads besides the step's own inputs: the status
/// manager's status, the probe results (seeded from that status first, as
/// after a kubelet restart) and the resize state.
struct Gathered {
    previous: Option<Arc<PodStatus>>,
    extras: StatusExtras,
}

impl Gathered {
    fn read(deps: &WorkerDeps, pod: &Pod, runtime: &RuntimePodStatus) -> Self {
        let uid = pod_uid(pod);
        let previous = deps.statuses.status(&uid);
        deps.probes.seed_from(
            &uid,
            pod,
            previous
                .as_deref()
                .unwrap_or(pod.status.as_ref().unwrap_or(&PodStatus::default())),
        );
        let extras = StatusExtras {
            readiness: deps.probes.readiness(&uid),
            started: deps.probes.started(&uid),
            resize_in_progress: deps.runtime.resize_in_progress(pod, runtime),
            resize_error: deps.runtime.resize_error(pod),
            resize_pending: deps.allocations.pending(&uid).map(|p| (p.reason, p.message)),
        };
        Self { previous, extras }
    }

    fn inputs<'a>(
        &'a self,
        pod: &'a Arc<Pod>,
        runtime: &'a Arc<RuntimePodStatus>,
        waiting: &'a Waiting,
    ) -> PublishInputs<'a> {
        PublishInputs {
            pod,
            runtime,
            previous: self.previous.as_ref(),
            waiting,
            extras: &self.extras,
        }
    }

    fn generate(
        &self,
        deps: &WorkerDeps,
        (pod, runtime): (&Pod, &RuntimePodStatus),
        waiting: &Waiting,
        terminal: Option<&KillStatus>,
        pod_is_terminal: bool,
    ) -> PodStatus {
        let input = StatusInput {
            previous: self.previous.as_deref(),
            waiting,
            readiness: &self.extras.readiness,
            started: &self.extras.started,
            host_ip: deps.host_ip.clone(),
            runtime_name: &deps.runtime_name,
            pod_is_terminal,
            terminal_override: terminal.map(|k| TerminalOverride {
                phase: Phase::parse(Some(k.phase.as_str())).unwrap_or(Phase::Failed),
                reason: k.reason.clone(),
                message: k.message.clone(),
                disruption: k.disruption,
            }),
            resize_in_progress: self.extras.resize_in_progress,
            resize_error: self.extras.resize_error.clone(),
            resize_pending: self.extras.resize_pending.clone(),
            ..StatusInput::new(pod, runtime, deps.wall_clock.now())
        };
        generate_api_pod_status(&input)
    }
}

/// Hands `status` to the status manager.
fn send(deps: &WorkerDeps, pod: &Arc<Pod>, status: PodStatus) {
    if let Err(e) = deps.status_manager.do_send(UpdatePodStatus {
        pod: pod.clone(),
        status,
    }) {
        tracing::warn!(error = %e, "status manager unavailable; status will be regenerated by the next sync");
    }
}

/// Generates the API status and hands it to the status manager.
pub fn publish_status(
    deps: &WorkerDeps,
    pod: &Arc<Pod>,
    runtime: &RuntimePodStatus,
    waiting: &Waiting,
    terminal: Option<&KillStatus>,
    pod_is_terminal: bool,
) -> PodStatus {
    let gathered = Gathered::read(deps, pod, runtime);
    let status = gathered.generate(deps, (pod, runtime), waiting, terminal, pod_is_terminal);
    send(deps, pod, status.clone());
    status
}

/// [`publish_status`] for a sync step (no terminal verdict), skipped when
/// its inputs are the last publication's (`memo`, see [`PublishMemo`]);
/// `memo` then describes this publication.
fn publish_sync_status(
    deps: &WorkerDeps,
    pod: &Arc<Pod>,
    runtime: &Arc<RuntimePodStatus>,
    waiting: &Waiting,
    memo: &mut Option<PublishMemo>,
) -> Published {
    let gathered = Gathered::read(deps, pod, runtime);
    let inputs = gathered.inputs(pod, runtime, waiting);
    if let Some(published) = memo.as_mut().and_then(|m| m.reuse(&inputs)) {
        return published;
    }
    let status = gathered.generate(deps, (pod, runtime), waiting, None, false);
    let published = Published::of(&status);
    *memo = Some(PublishMemo::new(&inputs, published.clone()));
    send(deps, pod, status);
    published
}

/// Waiting reasons from the failed `StartContainer` steps of a sync.
pub fn waiting_from(result: &PodSyncResult) -> Waiting {
    result
        .results
        .iter()
        .filter(|r| r.action == SyncAction::StartContainer)
        .filter_map(|r| {
            r.error
                .as_ref()
                .map(|e| (r.target.clone(), (e.reason.as_str().to_string(), e.message.clone())))
        })
        .collect()
}

/// What a sync step does after its status read and before the runtime.
enum Before {
    /// The pod is deleted or terminal: terminate it.
    Terminate,
    /// The pod is past its active deadline.
    PastDeadline,
    /// Sync it; sync again when its active deadline is reached.
    Run(Option<Instant>),
}

/// A sync of a pod that should run (upstream `SyncPod`).
///
/// Its runtime work (sandbox, images, containers and the status read after
/// them) waits for a turn of [`SyncSlots`](super::SyncSlots) and runs boxed:
/// a step waiting for its turn (or for its status, cgroup or volumes) holds
/// a small future, the nested CRI futures exist only for the steps that
/// have a turn. A kill (`cancel`) ends the wait for a turn at once.
pub async fn sync_pod(
    deps: &WorkerDeps,
    pod: &Arc<Pod>,
    newer_than: Option<Instant>,
    resync: bool,
    waiting: &Waiting,
    cancel: tokio_util::sync::CancellationToken,
    memo: Option<PublishMemo>,
) -> StepOutcome {
    // A resize the node has not allocated: run with what it has.
    let pod = &deps.allocations.apply(pod);
    let started_at = Instant::now();
    let mut out = StepOutcome {
        started_at,
        error: None,
        waiting: waiting.clone(),
        terminate: None,
        terminated: false,
        retry_at: None,
        publish: memo,
    };
    let status = match Box::pin(runtime_status(deps, pod, newer_than, resync)).await {
        Ok(s) => s,
        Err(e) => {
            failed_sync(deps, pod, &e);
            out.error = Some(e);
            return out;
        }
    };
    // The API status is not kept across the waits below.
    let before = {
        let api = publish_sync_status(deps, pod, &status, waiting, &mut out.publish);
        if pod.metadata.deletion_timestamp.is_some() || api.terminal {
            Before::Terminate
        } else {
            match active_deadline::check(pod, api.start_time.as_ref(), deps.wall_clock.now()) {
                Deadline::Exceeded => Before::PastDeadline,
                Deadline::In(left) => Before::Run(Some(Instant::now() + left)),
                Deadline::None => Before::Run(None),
            }
        }
    };
    let deadline_at = match before {
        Before::PastDeadline => {
            out.publish = None;
            out.terminate = Some(past_deadline(deps, pod, &status, waiting));
            return out;
        }
        Before::Terminate => {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .map(|s| std::time::Duration::from_secs(s.max(0) as u64));
            out.terminate = Some(KillOptions {
                grace_period_override: grace,
                status: None,
            });
            return out;
        }
        Before::Run(at) => at,
    };
    // Upstream: the pod's cgroup exists, with its limits, before its sandbox.
    if let Err(e) = Box::pin(deps.cgroups.ensure_pod(pod)).await {
        deps.runtime.events().pod_event(
            pod,
            None,
            EventType::Warning,
            "FailedToCreatePodContainer",
            format!("unable to ensure pod container exists: {e}"),
        );
        out.error = Some(format!(
            "failed to ensure that the pod: {} cgroups exist and are correctly applied: {e}",
            pod_uid(pod)
        ));
        return out;
    }
    // Upstream: wait for the pod's volumes (bounded) before the runtime sync.
    let volumes = match Box::pin(deps.volumes.prepare(pod)).await {
        Ok(v) => v.map(Arc::new),
        Err(e) => {
            out.error = Some(format!("unable to attach or mount volumes: {e}"));
            return out;
        }
    };
    // The runtime work takes a turn (issue #16 item 4c): at most
    // `--max-concurrent-pod-syncs` pods are in it at once, in FIFO order.
    let Some(turn) = deps.sync_slots.acquire(&cancel).await else {
        // A kill arrived while this step waited: nothing was asked of the
        // runtime; the kill runs next.
        tracing::debug!(pod_uid = %pod_uid(pod), "sync given up while waiting for its turn: the pod is being killed");
        return out;
    };
    let options = SyncPodOptions {
        volumes,
        cancel,
        ..SyncPodOptions::default()
    };
    let runtime_work = Box::pin(sync_runtime(deps, pod, &status, &options, deadline_at, out));
    turn.hold_during(runtime_work).await
}

/// The runtime part of a sync step (the step holds a turn): the runtime
/// manager's `SyncPod`, the pod cgroup after a resize, when to sync again,
/// and the status read after whatever changed.
async fn sync_runtime(
    deps: &WorkerDeps,
    pod: &Arc<Pod>,
    status: &RuntimePodStatus,
    options: &SyncPodOptions,
    deadline_at: Option<Instant>,
    mut out: StepOutcome,
) -> StepOutcome {
    // The container events of this step's own changes wait for its read
    // below instead of costing the PLEG a read each (see `pleg::requests`).
    let _step = deps.cache.begin_step(&pod_uid(pod));
    let result = deps
        .runtime
        .sync_pod(pod, status, &deps.probes.probe_view(&pod_uid(pod)), options)
        .await;
    out.waiting = waiting_from(&result);
    // Resized containers: the pod cgroup follows (after them, so a smaller
    // memory limit is never set below what they use).
    let resized = result
        .results
        .iter()
        .any(|r| r.action == SyncAction::ResizePodInPlace && r.error.is_none());
    if resized && let Err(e) = deps.cgroups.update_pod(pod).await {
        tracing::warn!(error = %e, "failed to update the pod cgroup after a resize");
    }
    let in_backoff = result.results.iter().any(|r| {
        r.error
            .as_ref()
            .is_some_and(|e| e.reason == SyncErrorReason::CrashLoopBackOff)
    });
    if in_backoff {
        out.retry_at = deps.runtime.restart_backoff_expiry(pod, status);
    }
    let pulling = result.results.iter().any(|r| {
        r.error.as_ref().is_some_and(|e| {
            matches!(
                e.reason,
                SyncErrorReason::ErrImagePull | SyncErrorReason::ImagePullBackOff
            )
        })
    });
    if pulling && let Some(at) = deps.runtime.image_backoff_expiry(pod) {
        out.retry_at = Some(out.retry_at.map_or(at, |r| r.min(at)));
    }
    if let Some(at) = deadline_at {
        out.retry_at = Some(out.retry_at.map_or(at, |r| r.min(at)));
    }
    if result.has_real_errors() {
        out.error = result.error_message();
    }
    if !result.did_work() {
        // Nothing was asked of the runtime (an idle resync: only the
        // sandbox config step upstream records every time): the status read
        // before the sync (and published above) stands; the PLEG reports
        // later changes. Reading it again cost every idle pod a runtime read
        // per `syncFrequency` (~170 reads a second at 10k pods).
        return out;
    }
    drop(result);
    match refresh(deps, pod).await {
        Ok(fresh) => {
            let api = publish_sync_status(deps, pod, &fresh, &out.waiting, &mut out.publish);
            if api.terminal {
                out.terminate = Some(KillOptions {
                    grace_period_override: None,
                    status: None,
                });
            }
        }
        Err(e) => out.error = out.error.or(Some(e)),
    }
    out
}

/// The pod is past its active deadline: an event, the Failed status
/// published, and the kill that follows (upstream: the active deadline
/// handler's `ShouldEvict` inside `generateAPIPodStatus`).
fn past_deadline(deps: &WorkerDeps, pod: &Arc<Pod>, status: &RuntimePodStatus, waiting: &Waiting) -> KillOptions {
    let failed = active_deadline::kill_status();
    deps.runtime.events().pod_event(
        pod,
        None,
        EventType::Normal,
        active_deadline::REASON,
        active_deadline::MESSAGE.to_string(),
    );
    publish_status(deps, pod, status, waiting, Some(&failed), false);
    KillOptions {
        grace_period_override: None,
        status: Some(failed),
    }
}

/// A kill step (upstream `SyncTerminatingPod`): stop every container with the
/// grace period, stop the sandboxes, publish the final status.
pub async fn terminate_pod(
    deps: &WorkerDeps,
    pod: &Arc<Pod>,
    newer_than: Option<Instant>,
    kill: &KillOptions,
    waiting: &Waiting,
) -> StepOutcome {
    let started_at = Instant::now();
    let mut out = StepOutcome {
        started_at,
        error: None,
        waiting: waiting.clone(),
        terminate: None,
        terminated: false,
        retry_at: None,
        publish: None,
    };
    let status = match runtime_status(deps, pod, newer_than, false).await {
        Ok(s) => s,
        Err(e) => {
            failed_sync(deps, pod, &e);
            out.error = Some(e);
            return out;
        }
    };
    let grace = kill.grace_period_override.map(|d| d.as_secs() as i64);
    let _step = deps.cache.begin_step(&pod_uid(pod));
    let result = deps.runtime.kill_pod(Some(pod), &status, grace).await;
    if !result.is_ok() {
        out.error = result.error_message();
    }
    match refresh(deps, pod).await {
        Ok(fresh) => {
            out.terminated = !fresh.containers.iter().any(|c| c.state == ContainerState::Running)
                && !fresh.sandboxes.iter().any(|s| s.state == SandboxState::Ready);
            publish_status(deps, pod, &fresh, waiting, kill.status.as_ref(), out.terminated);
        }
        Err(e) => out.error = out.error.or(Some(e)),
    }
    out
}

/// The size in bytes of the future `f` returns, without calling it (the
/// state a spawned step holds from its first poll to its end).
fn future_size<A, B, C, D, E, G, Fut: std::future::Future>(_: impl FnOnce(A, B, C, D, E, G) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// Like [`future_size`], for seven arguments.
fn future_size7<A, B, C, D, E, G, H, Fut: std::future::Future>(_: impl FnOnce(A, B, C, D, E, G, H) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// Like [`future_size`], for four arguments.
fn future_size4<A, B, C, D, Fut: std::future::Future>(_: impl FnOnce(A, B, C, D) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// Like [`future_size`], for one argument.
fn future_size1<A, Fut: std::future::Future>(_: impl FnOnce(A) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// Like [`future_size`], for two arguments.
fn future_size2<A, B, Fut: std::future::Future>(_: impl FnOnce(A, B) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// Like [`future_size`], for five arguments.
fn future_size5<A, B, C, D, E, Fut: std::future::Future>(_: impl FnOnce(A, B, C, D, E) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// The sizes in bytes of the pod worker step futures, by name, as this
/// build lays them out (the benchmark prints them; issue #16: every pod
/// with a step in flight holds one). Not part of the API.
#[doc(hidden)]
pub fn step_future_sizes() -> Vec<(&'static str, usize)> {
    vec![
        (
            "pod_workers::worker::Step::run (spawned)",
            future_size1(super::worker::Step::run),
        ),
        ("pod_workers::sync::sync_pod", future_size7(sync_pod)),
        (
            "pod_workers::sync::sync_runtime (boxed, with a turn)",
            future_size(sync_runtime),
        ),
        ("pod_workers::sync::terminate_pod", future_size5(terminate_pod)),
        ("RuntimeManager::sync_pod", future_size5(RuntimeManager::sync_pod)),
        ("RuntimeManager::kill_pod", future_size4(RuntimeManager::kill_pod)),
        ("pod_workers::sync::runtime_status", future_size4(runtime_status)),
        ("pod_workers::sync::refresh", future_size2(refresh)),
        (
            "ContainerManager::ensure_pod",
            future_size2(crate::cm::ContainerManager::ensure_pod),
        ),
        (
            "VolumeHandle::prepare",
            future_size2(crate::volumes::VolumeHandle::prepare),
        ),
    ]
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
