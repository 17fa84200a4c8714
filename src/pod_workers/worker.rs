//! [`PodWorker`]: the actor that owns one pod UID's lifecycle.
//!
//! # Lifecycle
//! `Syncing → Terminating → Terminated` (upstream `SyncPod`,
//! `TerminatingPod`, `TerminatedPod`), never back.
//!
//! # Guarantees
//! - One step (sync or kill) runs at a time; updates arriving meanwhile are
//!   coalesced by [`UpdateSlot`]: only the latest is kept, a pending kill is
//!   never replaced.
//! - Before a step the worker waits for a pod-cache entry newer than its
//!   previous step (or reads the runtime itself), so it never acts twice on
//!   the same stale view.
//! - A step's CRI calls run inside the actor's context: a panic anywhere in
//!   a step is contained by the supervisor, which rebuilds the worker; the new
//!   instance resumes from the caches (desired pod from the pod manager,
//!   runtime state from the pod cache or the runtime), never from scratch, so
//!   nothing already created is created twice.
//! - A sync step's runtime work waits for a turn of the shared
//!   [`SyncSlots`](super::SyncSlots) (`--max-concurrent-pod-syncs`); a kill
//!   cancels that wait and never takes a turn itself.
//! - A failed kill is retried every second until the pod is stopped.
//! - A pod whose container is in restart backoff (`CrashLoopBackOff`) is
//!   synced again when that backoff runs out.
//!
//! The worker reports every finished step to the [`PodWorkers`](super::manager::PodWorkers)
//! manager as a [`SyncFinished`] left in [`FinishedSteps`] (coalesced per
//! pod: at 10k pods the manager's mailbox could not take them all).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;
use tracing::Instrument;

use super::deps::WorkerDeps;
use super::finished::FinishedSteps;
use super::pending::{Offer, UpdateSlot};
use super::publish_memo::PublishMemo;
use super::sync::{StepOutcome, Waiting, sync_pod, terminate_pod};
use crate::messages::PodUid;
use crate::messages::pod_work::{KillOptions, PodWork, SyncFinished, SyncKind, UpdatePod};
use crate::pod_manager::format_pod;

/// Delay before a failed kill is tried again.
pub const KILL_RETRY: Duration = Duration::from_secs(1);

/// The per-pod worker actor.
pub struct PodWorker {
    uid: PodUid,
    deps: WorkerDeps,
    report: FinishedSteps,
    generation: u64,
    slot: UpdateSlot,
    pod: Option<Arc<Pod>>,
    last_step: Option<Instant>,
    /// The last step succeeded (so it ended with the pod's status read
    /// after whatever it changed in the runtime).
    last_ok: bool,
    waiting: Waiting,
    last_kill: Option<UpdatePod>,
    backoff_retry: Option<SpawnHandle>,
    /// Cancels the running sync step when a kill arrives.
    step_cancel: Option<tokio_util::sync::CancellationToken>,
    /// The last sync step's status publication (a cache: a restarted
    /// instance starts without it and generates the status once more).
    publish: Option<PublishMemo>,
}

impl PodWorker {
    /// A worker for `uid`; `generation` > 1 means it replaces an earlier
    /// worker of the pod (one that crashed, or that its supervisor lost).
    pub fn new(uid: PodUid, deps: WorkerDeps, report: FinishedSteps, generation: u64) -> Self {
        Self {
            uid,
            deps,
            report,
            generation,
            slot: UpdateSlot::new(),
            pod: None,
            // A restarted instance must not act on a cache entry its
            // predecessor may have outdated (e.g. read before it created the
            // sandbox): its first step waits for a status read after now.
            last_step: (generation > 1).then(Instant::now),
            last_ok: false,
            waiting: Waiting::new(),
            last_kill: None,
            backoff_retry: None,
            step_cancel: None,
            publish: None,
        }
    }

    fn offer(&mut self, update: UpdatePod, ctx: &mut Context<Self>) {
        self.pod = Some(update.pod.clone());
        let is_kill = update.work.is_kill();
        match self.slot.offer(update) {
            Offer::RunNow(u) => self.run(u, ctx),
            // A kill waiting behind a sync: the sync stops at its next CRI
            // boundary (a pull is abandoned) so the kill starts sooner.
            Offer::Queued if is_kill => {
                if let Some(cancel) = &self.step_cancel {
                    cancel.cancel();
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, update: UpdatePod, ctx: &mut Context<Self>) {
        let deps = self.deps.clone();
        let newer_than = self.last_step;
        // A periodic or event-triggered sync after a good step may use the
        // event-fed cache as it stands (`runtime_status`).
        let resync = self.last_ok && matches!(update.work, PodWork::Sync(SyncKind::Sync));
        let waiting = self.waiting.clone();
        let span = tracing::info_span!("pod_worker", pod = %format_pod(&update.pod), work = ?update.work);
        let kill = update.work.kill_options().cloned();
        if kill.is_some() {
            self.last_kill = Some(update.clone());
        }
        let pod = update.pod;
        let cancel = tokio_util::sync::CancellationToken::new();
        self.step_cancel = kill.is_none().then(|| cancel.clone());
        let operation = match &update.work {
            PodWork::Kill(_) => "kill",
            PodWork::Sync(SyncKind::Create) => "create",
            PodWork::Sync(SyncKind::Update) => "update",
            PodWork::Sync(SyncKind::Sync) => "sync",
        };
        let step = Step {
            deps,
            uid: self.uid.to_string(),
            pod,
            newer_than,
            kill,
            resync,
            waiting,
            cancel,
            operation,
            publish: self.publish.take(),
        }
        .run();
        let step = crate::cri::to_completion::for_pod(self.uid.to_string(), step);
        ctx.spawn(
            step.instrument(span)
                .into_actor(self)
                .map(|out, act, ctx| act.finished(out, ctx)),
        );
    }

    fn finished(&mut self, out: StepOutcome, ctx: &mut Context<Self>) {
        self.last_step = Some(out.started_at);
        self.last_ok = out.error.is_none();
        self.waiting = out.waiting;
        self.publish = out.publish;
        if let (Some(kill), Some(pod)) = (out.terminate, self.pod.clone()) {
            tracing::info!(pod = %format_pod(&pod), "pod is terminal or deleted; terminating");
            // Offered while busy, so it becomes the (sticky) pending update.
            let _ = self.slot.offer(UpdatePod::kill(pod, kill));
        }
        let next = self.slot.finish(out.terminated);
        if let Some(e) = &out.error {
            tracing::warn!(pod_uid = %self.uid, error = %e, "pod worker step failed");
        }
        let report = SyncFinished {
            uid: self.uid.clone(),
            error: out.error,
            state: self.slot.state(),
        };
        // Coalesced per pod, never dropped (see `FinishedSteps`).
        self.report.report(report);
        if let Some(handle) = self.backoff_retry.take() {
            ctx.cancel_future(handle);
        }
        if let Some(at) = out.retry_at
            && self.slot.state() == crate::messages::pod_work::WorkerState::Syncing
        {
            // Sync again when the container's restart backoff runs out.
            let delay = at.saturating_duration_since(Instant::now());
            self.backoff_retry = Some(ctx.run_later(delay, |act, ctx| {
                act.backoff_retry = None;
                if let Some(desired) = act.deps.pods.get(&act.uid) {
                    act.offer(UpdatePod::sync(SyncKind::Sync, desired.pod), ctx);
                }
            }));
        }
        match next {
            Some(update) => self.run(update, ctx),
            None if self.slot.state() == crate::messages::pod_work::WorkerState::Terminating => {
                ctx.run_later(KILL_RETRY, |act, ctx| {
                    if let Some(kill) = act.last_kill.clone() {
                        act.offer(kill, ctx);
                    }
                });
            }
            None => {}
        }
    }
}

/// One step as the worker spawns it: what it needs, owned.
pub(crate) struct Step {
    deps: WorkerDeps,
    uid: String,
    pod: Arc<Pod>,
    newer_than: Option<Instant>,
    kill: Option<KillOptions>,
    resync: bool,
    waiting: Waiting,
    cancel: tokio_util::sync::CancellationToken,
    operation: &'static str,
    publish: Option<PublishMemo>,
}

impl Step {
    /// Runs the step (the future every pod with a step in flight holds).
    pub(crate) async fn run(self) -> StepOutcome {
        let Self {
            deps,
            uid,
            pod,
            mut newer_than,
            kill,
            resync,
            waiting,
            cancel,
            operation,
            publish,
        } = self;
        // A predecessor killed mid-call may have left a mutation in
        // flight: act on the runtime only once it has been answered.
        if deps.in_flight.settled(&uid).await {
            // ... and on a status read made after that answer.
            newer_than = Some(Instant::now());
        }
        let began = std::time::Instant::now();
        let out = match kill {
            // Boxed: a kill is the rare branch, and no sync step should
            // carry its state (sync steps are small, see `sync_pod`).
            Some(k) => Box::pin(terminate_pod(&deps, &pod, newer_than, &k, &waiting)).await,
            None => sync_pod(&deps, &pod, newer_than, resync, &waiting, cancel, publish).await,
        };
        if let Some(m) = &deps.metrics {
            m.observe_sync(operation, began.elapsed());
        }
        out
    }
}

impl Actor for PodWorker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.generation > 1 {
            // A restarted instance resumes from the caches: the kill its
            // predecessor was running (kept in the lifecycle records), else
            // the desired pod.
            if let Some(kill) = self.deps.sync_statuses.get(&self.uid).and_then(|r| r.kill) {
                tracing::info!(pod = %format_pod(&kill.pod), generation = self.generation, "pod worker restarted; resuming its kill");
                self.offer(kill, ctx);
            } else if let Some(desired) = self.deps.pods.get(&self.uid) {
                tracing::info!(pod = %format_pod(&desired.pod), generation = self.generation, "pod worker restarted; resuming");
                self.offer(UpdatePod::sync(SyncKind::Sync, desired.pod), ctx);
            }
        }
    }
}

impl Handler<UpdatePod> for PodWorker {
    type Result = ();

    fn handle(&mut self, msg: UpdatePod, ctx: &mut Self::Context) {
        self.offer(msg, ctx);
    }
}
