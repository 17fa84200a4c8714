//! [`PodWorkers`]: creates one supervised [`PodWorker`] per pod UID, routes
//! updates to it, and forgets workers whose pods are gone.
//!
//! Workers are dynamic children of the `pod-workers` supervisor (one-for-one,
//! restart on abnormal exit only). The manager sends each update straight
//! into the worker's mailbox, which exists before the worker starts and
//! outlives its restarts, so no update is lost while a worker is rebuilt.
//! If the whole `pod-workers` supervisor was restarted (its dynamic children
//! are then gone), a closed mailbox is noticed on the next send and the
//! worker is created again.
//!
//! # State
//! Owned: nothing. Every per-pod record (the worker's address, its state,
//! kill and restart requests, static pods waiting for their predecessor)
//! lives in the shared [`PodSyncStatuses`], so a restarted manager adopts the
//! running workers instead of orphaning them, and readers get the state
//! synchronously.
//!
//! # Static pods
//! A static pod whose full name is still held by another UID that may run
//! containers (a changed manifest: new UID, same name) waits until that pod
//! has terminated (upstream `allowStaticPodStart`), so the old and new
//! control-plane pod never hold the same ports or data at once.

use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;

use super::deps::WorkerDeps;
use super::finished::FinishedSteps;
use super::sync_statuses::PodSyncStatuses;
use super::worker::PodWorker;
use crate::actors::supervisor::{
    ChildRef, ChildSpec, RestartPolicy, SendError, StartChild, StopChild, SupervisedRecipient, Supervisor,
};
use crate::cluster::mirror_index::full_name;
use crate::messages::PodUid;
use crate::messages::event::EventType;
use crate::messages::pod_work::{PodWork, SyncFinished, SyncKind, UpdatePod, WorkerState};
use crate::pod_fields::{self, UNSUPPORTED_FIELD_REASON, unsupported_fields};
use crate::pod_manager::{format_pod, pod_uid};
use crate::status::pod_predicates::is_static_pod;

/// How often the manager looks for workers lost with their supervisor (a
/// pass reads each record once: well under a millisecond at 10,000 pods).
pub const REVIVE_PERIOD: std::time::Duration = std::time::Duration::from_secs(2);

/// Mailbox capacity of one pod worker (updates are coalesced by the worker,
/// so a small mailbox suffices).
pub const WORKER_MAILBOX: usize = 64;

pub use crate::messages::pod_work::{ForgetWorkers, GetWorkerStates};

/// The pod workers manager actor.
pub struct PodWorkers {
    deps: WorkerDeps,
    supervisor: ChildRef<Supervisor>,
    finished: FinishedSteps,
    sync_loop: Option<SupervisedRecipient<SyncFinished>>,
    statuses: PodSyncStatuses,
    /// Where workers run (empty: on this actor's arbiter).
    arbiters: Vec<actix::ArbiterHandle>,
    /// The workers' mailbox closes counted before this instance's last
    /// revive pass (`None`: none yet).
    revived_at: Option<u64>,
}

/// The arbiter of pod `uid`: the same one every time (a restarted worker
/// stays where its pod's state was), spread evenly by a hash of the UID.
fn pick_arbiter<'a>(arbiters: &'a [actix::ArbiterHandle], uid: &PodUid) -> Option<&'a actix::ArbiterHandle> {
    use std::hash::{Hash, Hasher};
    if arbiters.is_empty() {
        return None;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    uid.hash(&mut h);
    arbiters.get((h.finish() % arbiters.len() as u64) as usize)
}

impl PodWorkers {
    /// A manager starting workers under `supervisor`; workers leave their
    /// finished steps in `finished` (coalesced per pod; it outlives this
    /// instance, as `statuses` does), and the manager forwards them to
    /// `sync_loop`.
    pub fn new(
        deps: WorkerDeps,
        supervisor: ChildRef<Supervisor>,
        finished: FinishedSteps,
        sync_loop: Option<SupervisedRecipient<SyncFinished>>,
        statuses: PodSyncStatuses,
    ) -> Self {
        Self {
            deps,
            supervisor,
            finished,
            sync_loop,
            statuses,
            arbiters: Vec::new(),
            revived_at: None,
        }
    }

    /// Runs the workers on these arbiters (a pod always on the same one,
    /// picked by its UID) instead of this actor's; none: this actor's.
    pub fn with_arbiters(mut self, arbiters: Vec<actix::ArbiterHandle>) -> Self {
        self.arbiters = arbiters;
        self
    }

    /// Starts a worker for `uid`. A `successor` replaces a worker its
    /// supervisor lost: it starts as a restarted instance would (its first
    /// step reads the runtime afresh, and it resumes the pod's kill or sync
    /// by itself).
    fn spawn_worker(&mut self, uid: &PodUid, name: &str, successor: bool) -> ChildRef<PodWorker> {
        let (deps, me, u) = (self.deps.clone(), self.finished.clone(), uid.clone());
        let spec = ChildSpec::with_context(format!("pod-{uid}"), move |cx| {
            PodWorker::new(
                u.clone(),
                deps.clone(),
                me.clone(),
                cx.generation() + u64::from(successor),
            )
        })
        .restart(RestartPolicy::Transient)
        .mailbox_capacity(WORKER_MAILBOX)
        .count_closes(self.statuses.worker_closes().clone());
        let spec = match pick_arbiter(&self.arbiters, uid) {
            Some(arbiter) => spec.on_arbiter(arbiter.clone()),
            None => spec,
        };
        let child = spec.child_ref();
        if let Err(e) = self.supervisor.do_send(StartChild(spec.into())) {
            tracing::error!(pod_uid = %uid, error = %e, "cannot start pod worker: pod-workers supervisor unavailable");
        }
        let worker = child.clone();
        self.statuses.update(uid, name, |s| {
            s.worker = Some(worker);
            s.state = WorkerState::Syncing;
            s.terminated_at = None;
        });
        child
    }

    fn forget(&mut self, uid: &PodUid) {
        if let Some(record) = self.statuses.remove(uid)
            && record.worker.is_some()
        {
            let _ = self.supervisor.do_send(StopChild(format!("pod-{uid}")));
        }
    }

    fn dispatch(&mut self, update: UpdatePod) {
        let uid = pod_uid(&update.pod);
        let name = full_name(&update.pod);
        let record = self.statuses.get(&uid);
        let state = record.as_ref().map(|r| r.effective_state());
        let is_create = update.work == PodWork::Sync(SyncKind::Create);
        if record.is_none() && !update.work.is_kill() {
            // First sight of this pod (records outlive restarts): once per pod.
            self.report_unsupported_fields(&update.pod);
        }
        if state == Some(WorkerState::Terminated) && is_create {
            // The pod was re-added after it terminated: start it afresh.
            self.forget(&uid);
        } else if state == Some(WorkerState::Terminating) && is_create {
            // Re-added while terminating: started afresh once terminated.
            self.statuses.update(&uid, &name, |s| s.restart_requested = true);
        }
        if update.work.is_kill() {
            self.statuses.record_kill(&uid, &name, &update);
        }
        let worker = self.statuses.get(&uid).and_then(|r| r.worker).filter(|w| w.is_open());
        let worker = match worker {
            Some(w) => w,
            None => {
                if !update.work.is_kill() && is_static_pod(&update.pod) && !self.statuses.may_start(&uid, &name) {
                    tracing::info!(pod = %name, pod_uid = %uid, "static pod waits for the previous pod of the same name to terminate");
                    self.statuses.update(&uid, &name, |s| s.waiting_to_start = true);
                    return;
                }
                self.statuses.update(&uid, &name, |s| s.waiting_to_start = false);
                self.spawn_worker(&uid, &name, false)
            }
        };
        match worker.try_send(update) {
            Ok(()) => {}
            Err(e) => {
                let closed = matches!(e, crate::actors::supervisor::TrySendError::Closed(_));
                let update = e.into_inner();
                if closed {
                    // The worker's supervisor lost it (restarted): make a new one.
                    let w = self.spawn_worker(&uid, &name, true);
                    if let Err(e) = w.do_send(update) {
                        tracing::error!(pod_uid = %uid, error = %e, "cannot deliver update to new pod worker");
                    }
                } else {
                    tracing::warn!(pod_uid = %uid, error = %SendError::Full, "pod worker mailbox full; the next resync retries");
                }
            }
        }
    }

    /// Nothing silent: a field the pod sets that actlet does not implement is
    /// a `Warning` event and a log line naming it.
    fn report_unsupported_fields(&self, pod: &Pod) {
        let fields = unsupported_fields(pod);
        if fields.is_empty() {
            return;
        }
        let message = pod_fields::message(&fields);
        tracing::warn!(pod = %format_pod(pod), fields = ?fields, "pod sets fields actlet does not implement yet; they are ignored");
        self.deps
            .runtime
            .events
            .pod_event(pod, None, EventType::Warning, UNSUPPORTED_FIELD_REASON, message);
    }

    /// Makes a worker again for every pod whose worker was lost before it
    /// terminated (the `pod-workers` supervisor restarted: its dynamic
    /// children are gone); the successor resumes the pod's kill, or a sync of
    /// the desired pod. Nothing else would send these pods an update (a
    /// removed pod's kill was its last one), and housekeeping leaves
    /// terminating pods to their worker. Runs every [`REVIVE_PERIOD`], and
    /// walks the records only when a worker's mailbox closed since its last
    /// walk (an idle node's 10,000 records are not read every 2 s).
    fn revive_lost_workers(&mut self) {
        let closes = self.statuses.worker_closes().get();
        if self.revived_at == Some(closes) {
            return;
        }
        // A walk that left a lost worker for later is repeated next time.
        self.revived_at = Some(closes);
        for (uid, record) in self.statuses.lost_workers() {
            if record.kill.is_none() && self.deps.pods.get(&uid).is_none() {
                self.revived_at = None;
                continue;
            }
            tracing::info!(pod = %record.full_name, pod_uid = %uid, terminating = record.kill.is_some(), "pod worker lost with its supervisor; starting it again");
            self.spawn_worker(&uid, &record.full_name, true);
        }
    }

    /// Static pods that waited for `full_name` to be free start now.
    fn start_waiting(&mut self, full_name: Option<&str>) {
        let waiting: Vec<PodUid> = self
            .statuses
            .waiting_to_start()
            .into_iter()
            .filter(|(_, name)| full_name.is_none_or(|n| n == name))
            .map(|(uid, _)| uid)
            .collect();
        for uid in waiting {
            if let Some(desired) = self.deps.pods.get(&uid) {
                self.dispatch(UpdatePod::sync(SyncKind::Create, desired.pod));
            } else {
                self.statuses.remove(&uid);
            }
        }
    }
}

impl Actor for PodWorkers {
    type Context = Context<Self>;

    /// A restarted manager finds its workers in [`PodSyncStatuses`]; only
    /// static pods left waiting by a predecessor need a nudge.
    fn started(&mut self, ctx: &mut Self::Context) {
        let adopted = self.statuses.len();
        if adopted > 0 {
            tracing::info!(workers = adopted, "pod workers manager adopted running workers");
        }
        self.start_waiting(None);
        // Reports left while no instance ran are taken at once, then on
        // every wake-up.
        let reports = futures::stream::unfold(self.finished.clone(), |finished| async move {
            finished.reported().await;
            Some((StepsFinished, finished))
        });
        ctx.add_stream(reports);
        self.take_finished();
        // Backoff entries of pods that are gone expire 10 min after their
        // last failure; collect them whether or not more pods come and go
        // (upstream: `backOff.GC()` in every housekeeping pass).
        ctx.run_interval(BACKOFF_GC_PERIOD, |act, _| act.deps.runtime.gc_backoffs());
        ctx.run_interval(REVIVE_PERIOD, |act, _| act.revive_lost_workers());
    }
}

/// How often idle restart and image pull backoff entries are collected
/// (besides every [`ForgetWorkers`]).
pub const BACKOFF_GC_PERIOD: Duration = Duration::from_secs(60);

impl Handler<UpdatePod> for PodWorkers {
    type Result = ();

    fn handle(&mut self, msg: UpdatePod, _ctx: &mut Self::Context) {
        self.dispatch(msg);
    }
}

/// The workers left finished steps in [`FinishedSteps`].
struct StepsFinished;

impl actix::Message for StepsFinished {
    type Result = ();
}

impl actix::StreamHandler<StepsFinished> for PodWorkers {
    fn handle(&mut self, _: StepsFinished, _ctx: &mut Self::Context) {
        self.take_finished();
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl PodWorkers {
    fn take_finished(&mut self) {
        for report in self.finished.take() {
            self.on_finished(report);
        }
    }

    /// One finished step: the worker's state recorded, a restart done, the
    /// sync loop told (it queues the next sync).
    fn on_finished(&mut self, msg: SyncFinished) {
        self.statuses.set_state(&msg.uid, msg.state);
        if msg.state == WorkerState::Terminated {
            let record = self.statuses.get(&msg.uid);
            if record.as_ref().is_some_and(|r| r.restart_requested)
                && let Some(desired) = self.deps.pods.get(&msg.uid)
            {
                self.forget(&msg.uid);
                self.dispatch(UpdatePod::sync(SyncKind::Create, desired.pod));
            }
            if let Some(r) = record {
                self.start_waiting(Some(&r.full_name));
            }
        }
        if let Some(sl) = &self.sync_loop
            && let Err(e) = sl.do_send(msg)
        {
            tracing::warn!(error = %e, "cannot report to sync loop");
        }
    }
}

/// A finished step sent as a message (the workers use [`FinishedSteps`]).
impl Handler<SyncFinished> for PodWorkers {
    type Result = ();

    fn handle(&mut self, msg: SyncFinished, _ctx: &mut Self::Context) {
        self.on_finished(msg);
    }
}

impl Handler<ForgetWorkers> for PodWorkers {
    type Result = ();

    fn handle(&mut self, msg: ForgetWorkers, _ctx: &mut Self::Context) {
        for uid in &msg.0 {
            self.forget(uid);
        }
        // Restart backoffs of containers nobody will restart again.
        self.deps.runtime.gc_backoffs();
    }
}

impl Handler<GetWorkerStates> for PodWorkers {
    type Result = MessageResult<GetWorkerStates>;

    fn handle(&mut self, _msg: GetWorkerStates, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.statuses.states())
    }
}
