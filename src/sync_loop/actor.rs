//! [`SyncLoop`]: the actor at the centre of the kubelet.
//!
//! Inputs (each a typed message or stream): [`PodUpdate`] and
//! [`SourcesReady`] from PodConfig, [`PlegEvents`] from the PLEG,
//! [`SyncFinished`] from the pod workers, the runtime health watch, a 1 s
//! sync tick and a 2 s housekeeping tick. Output: [`UpdatePod`] work for the
//! pod workers and [`ForgetWorkers`].
//!
//! # Guarantees
//! - While the runtime is not ready, no work is dispatched; updates are
//!   applied to the pod manager and their pods are synced as soon as the
//!   runtime is back (checked with a 100 ms → 5 s backoff besides the
//!   health watch).
//! - After a successful sync a pod is resynced every `syncFrequency`; after
//!   an error, after the backoff period (10 s).
//! - Housekeeping runs only once all sources are ready: it kills running pods
//!   nobody wants (also ones found in the runtime after a restart) and
//!   forgets terminated workers of removed pods.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_stream::wrappers::WatchStream;

use super::dispatch::{Desired, plan, pods_to_sync};
use super::housekeeping::{Inputs, SkipWhenUnchanged, cleanup};
use super::requeue::{Requeue, requeue};
use super::state::SyncLoopState;
use crate::actors::supervisor::{ChildRef, SupervisedRecipient};
use crate::admission::{NodeAllocatable, Rejection, Usage, admit_supplemental_groups_policy, admit_with};
use crate::cluster::mirror_index::full_name;
use crate::events::EventRecorder;
use crate::kuberuntime::pod_status::RuntimePodStatus;
use crate::messages::PodUid;
use crate::messages::event::EventType;
use crate::messages::pleg::PlegEvents;
use crate::messages::pod_update::{PodUpdate, SourcesReady};
use crate::messages::pod_work::{KillOptions, KillStatus, PodWork, SyncFinished, SyncKind, UpdatePod, WorkerState};
use crate::messages::probe::{ProbeKind, ProbeOutcome, ProbeResult};
use crate::messages::runtime_health::RuntimeHealthChanged;
use crate::messages::status::ForgetPodStatus;
use crate::pleg::PodCache;
use crate::pod_manager::{PodManager, pod_uid};
use crate::pod_workers::{ForgetWorkers, PodSyncStatuses, PodWorkers};
use crate::runtime_health::HealthGate;
use crate::status::StatusCache;

/// Grace period of pods found running in the runtime that no source wants
/// (upstream `HandlePodCleanups`: orphans after a restart are killed with 1 s).
pub const ORPHAN_GRACE_PERIOD: Duration = Duration::from_secs(1);

/// Timing of the sync loop (upstream defaults in [`Default`]).
#[derive(Clone, Debug)]
pub struct SyncLoopConfig {
    /// `syncFrequency`: resync period of a healthy pod (1 m, + up to 50 % jitter).
    pub sync_frequency: Duration,
    /// How often due pods are looked for (1 s).
    pub sync_tick: Duration,
    /// How often housekeeping runs (2 s).
    pub housekeeping_period: Duration,
    /// Delay before a pod whose sync failed is synced again (10 s, + up to 50 %).
    pub backoff_period: Duration,
}

impl Default for SyncLoopConfig {
    fn default() -> Self {
        Self {
            sync_frequency: Duration::from_secs(60),
            sync_tick: Duration::from_secs(1),
            housekeeping_period: Duration::from_secs(2),
            backoff_period: Duration::from_secs(10),
        }
    }
}

/// When the sync loop last turned; read by `/healthz`.
#[derive(Clone, Debug, Default)]
pub struct SyncLoopHeartbeat(Arc<Mutex<Option<Instant>>>);

impl SyncLoopHeartbeat {
    /// The last turn.
    pub fn last(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn beat(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
}

/// The sync loop actor.
///
/// # State
/// Owned (survives a restart, in [`SyncLoopState`]): sources-ready and the
/// admission book. Derived: the work queue (every desired pod is resynced at
/// start), the runtime gate (from the health watch), the usage totals (from
/// the book), the worker states (read from [`PodSyncStatuses`]).
pub struct SyncLoop {
    admission: Option<(NodeAllocatable, StatusCache)>,
    /// The Node object's labels and taints (cluster mode), and the version
    /// of them the admission node holds (derived).
    node_object: Option<(crate::cluster::NodeHandle, Option<Arc<crate::cluster::NodeObject>>)>,
    sysctls: Option<crate::sysctl::Allowlist>,
    eviction: Option<crate::eviction::EvictionHandle>,
    shutdown: Option<crate::nodeshutdown::ShutdownHandle>,
    events: EventRecorder,
    state: SyncLoopState,
    usage: Usage,
    statuses: PodSyncStatuses,
    forget_status: Option<SupervisedRecipient<ForgetPodStatus>>,
    config: SyncLoopConfig,
    pods: PodManager,
    cache: PodCache,
    workers: ChildRef<PodWorkers>,
    health: watch::Receiver<RuntimeHealthChanged>,
    heartbeat: SyncLoopHeartbeat,
    gate: HealthGate,
    queue: crate::pod_workers::work_queue::WorkQueue,
    deferred: HashMap<PodUid, SyncKind>,
    allocations: crate::allocation::Allocations,
    /// When housekeeping may skip a pass (a restart loses it: the next pass
    /// is a full one).
    housekeeping_skip: SkipWhenUnchanged,
}

impl SyncLoop {
    /// A sync loop dispatching to `workers`.
    pub fn new(
        config: SyncLoopConfig,
        pods: PodManager,
        cache: PodCache,
        workers: ChildRef<PodWorkers>,
        health: watch::Receiver<RuntimeHealthChanged>,
        heartbeat: SyncLoopHeartbeat,
    ) -> Self {
        Self {
            admission: None,
            node_object: None,
            sysctls: None,
            eviction: None,
            shutdown: None,
            events: EventRecorder::disabled(),
            state: SyncLoopState::default(),
            usage: Usage::default(),
            statuses: PodSyncStatuses::default(),
            forget_status: None,
            config,
            pods,
            cache,
            workers,
            health,
            heartbeat,
            gate: HealthGate::new(),
            queue: Default::default(),
            housekeeping_skip: SkipWhenUnchanged::default(),
            deferred: HashMap::new(),
            allocations: Default::default(),
        }
    }

    /// Keeps what must survive a restart in `state` and reads the pod
    /// workers' lifecycle from `statuses` (both outlive this instance).
    pub fn with_state(mut self, state: SyncLoopState, statuses: PodSyncStatuses) -> Self {
        self.usage = Usage::of(state.lock().admitted.values().map(|p| p.as_ref()));
        self.state = state;
        self.statuses = statuses;
        self
    }

    /// Tells `status_manager` to forget the statuses of pods housekeeping
    /// forgets (upstream `RemoveOrphanedStatuses`), so the status cache,
    /// store and syncer hold only pods the node still knows.
    pub fn with_status_forgetting(mut self, status_manager: SupervisedRecipient<ForgetPodStatus>) -> Self {
        self.forget_status = Some(status_manager);
        self
    }

    /// Admits new pods against `node` (pods whose status in `statuses` is
    /// terminal do not count as active).
    pub fn with_admission(mut self, node: NodeAllocatable, statuses: StatusCache) -> Self {
        self.admission = Some((node, statuses));
        self
    }

    /// Records a Warning event for every pod admission rejects (reason and
    /// message as the pod's status has them).
    pub fn with_events(mut self, events: EventRecorder) -> Self {
        self.events = events;
        self
    }

    /// Rejects pods the node's pressure forbids (`Evicted`, upstream's
    /// eviction admit handler, checked first).
    pub fn with_eviction(mut self, eviction: crate::eviction::EvictionHandle) -> Self {
        self.eviction = Some(eviction);
        self
    }

    /// Rejects every pod while the node shuts down (`NodeShutdown`, upstream's
    /// shutdown admit handler, checked last).
    pub fn with_shutdown(mut self, shutdown: crate::nodeshutdown::ShutdownHandle) -> Self {
        self.shutdown = Some(shutdown);
        self
    }

    /// Pending in-place resizes go to `allocations` (shared with the pod
    /// workers, outliving this instance).
    pub fn with_allocations(mut self, allocations: crate::allocation::Allocations) -> Self {
        self.allocations = allocations;
        self
    }

    /// Admission follows the labels and taints of the Node object `node`
    /// last read from the API server (until then, the registered ones).
    pub fn with_node_object(mut self, node: crate::cluster::NodeHandle) -> Self {
        self.node_object = Some((node, None));
        self
    }

    /// Refreshes the admission node's labels and taints from the Node
    /// object when it changed.
    fn follow_node_object(&mut self) {
        let (Some((handle, seen)), Some((node, _))) = (&mut self.node_object, &mut self.admission) else {
            return;
        };
        let Some(object) = handle.object() else { return };
        if seen.as_ref().is_some_and(|s| Arc::ptr_eq(s, &object)) {
            return;
        }
        node.labels = object.labels.clone();
        node.taints = object.taints.clone();
        *seen = Some(object);
    }

    /// Rejects pods setting sysctls outside `allowlist` (`SysctlForbidden`).
    pub fn with_sysctls(mut self, allowlist: crate::sysctl::Allowlist) -> Self {
        self.sysctls = Some(allowlist);
        self
    }

    /// Upstream `canAdmitPod`: `Err` with the rejection for a pod that may
    /// not run here. The fast path checks the running totals of admitted
    /// pods; only when that fails are the totals recomputed without pods
    /// that reached a terminal phase.
    fn admit(&mut self, pod: &Arc<Pod>) -> Result<(), Rejection> {
        self.follow_node_object();
        // A pod whose resize was never allocated (restored from the
        // checkpoint) is admitted with what it was allocated; housekeeping
        // retries the resize.
        let pod = &self.allocations.apply(pod);
        let Some((node, statuses)) = &self.admission else {
            return Ok(());
        };
        // Upstream's admit handlers: eviction, then the sysctl allowlist,
        // then the resource predicates.
        if let Some(eviction) = &self.eviction {
            eviction.admit(pod)?;
        }
        if let Some(sysctls) = &self.sysctls {
            sysctls
                .admit(pod)
                .map_err(|(reason, message)| Rejection::new(reason, message))?;
        }
        admit_supplemental_groups_policy(pod, self.health.borrow().features)?;
        let uid = pod_uid(pod);
        let mut book = self.state.lock();
        if let Some(old) = book.admitted.remove(&uid) {
            self.usage.remove(&old);
        }
        if admit_with(pod, &self.usage, node).is_err() {
            book.admitted.retain(|u, _| {
                !statuses
                    .get(u)
                    .is_some_and(|v| matches!(v.status.phase.as_deref(), Some("Succeeded" | "Failed")))
            });
            self.usage = Usage::of(book.admitted.values().map(|p| p.as_ref()));
        }
        admit_with(pod, &self.usage, node)?;
        if let Some(shutdown) = &self.shutdown {
            shutdown.admit(pod)?;
        }
        self.usage.add(pod);
        book.admitted.insert(uid, pod.clone());
        Ok(())
    }

    fn forget_admitted(&mut self, uid: &PodUid) {
        let mut book = self.state.lock();
        if let Some(old) = book.admitted.remove(uid) {
            self.usage.remove(&old);
        }
        book.rejected.remove(uid);
    }

    /// This actor's address for the messages it takes from peers, as one
    /// value per message type.
    pub fn recipients(me: &ChildRef<Self>) -> SyncLoopRecipients {
        SyncLoopRecipients {
            updates: me.recipient(),
            ready: me.recipient(),
            pleg: me.recipient(),
            finished: me.recipient(),
        }
    }

    fn send(&mut self, update: UpdatePod) {
        let uid = PodUid::new(update.pod.metadata.uid.clone().unwrap_or_default());
        if let Some(kind) = update.work.sync_kind()
            && !self.gate.is_open()
        {
            let t = self.deferred.entry(uid).or_insert(kind);
            if kind == SyncKind::Create {
                *t = SyncKind::Create;
            }
            return;
        }
        let is_kill = update.work.is_kill();
        if is_kill {
            // Terminating from now on, for every reader (housekeeping must
            // not send a second kill with a shorter grace meanwhile).
            self.statuses.request_kill(&uid, &full_name(&update.pod));
        }
        if let Err(e) = self.workers.do_send(update) {
            tracing::error!(pod_uid = %uid, error = %e, "cannot dispatch to pod workers; retrying at the next resync");
            if is_kill {
                // Nobody will run this kill: let housekeeping find the pod again.
                self.statuses.update_existing(&uid, |s| {
                    if s.worker.is_none() {
                        s.kill_requested = false;
                    }
                });
            }
            self.queue.enqueue(uid, Instant::now(), self.config.backoff_period);
        }
    }

    fn sync_uid(&mut self, uid: &PodUid, t: SyncKind) {
        if let Some(d) = self.pods.get(uid) {
            self.send(UpdatePod::sync(t, d.pod));
        }
    }

    fn on_health(&mut self, ready: bool) {
        let was = self.gate.is_open();
        self.gate.set_ready(ready);
        if ready && !was {
            tracing::info!(pods = self.deferred.len(), "runtime ready again; resuming pod syncs");
            for (uid, t) in std::mem::take(&mut self.deferred) {
                self.sync_uid(&uid, t);
            }
        } else if !ready && was {
            tracing::warn!("skipping pod synchronization: container runtime not ready");
        }
    }

    fn tick(&mut self) {
        self.heartbeat.beat();
        if !self.gate.is_open() {
            return;
        }
        for uid in self.queue.take_due(Instant::now()) {
            self.sync_uid(&uid, SyncKind::Sync);
        }
    }

    fn housekeeping(&mut self) {
        if !self.state.sources_ready() || !self.gate.is_open() {
            return;
        }
        // Read synchronously from the one owner of pod lifecycle state: no
        // ask that can fail, no window in which a kill is not yet visible.
        let inputs = Inputs {
            pods: self.pods.generation(),
            runtime: self.cache.generation(),
            workers: self.statuses.generation(),
        };
        let now = tokio::time::Instant::now();
        if !self.housekeeping_skip.may_skip(inputs, now) {
            let states = self.statuses.states();
            let found_nothing = self.cleanup(states);
            self.housekeeping_skip.ran(inputs, now, found_nothing);
        }
        self.retry_pending_resizes();
    }

    /// One cleanup pass; true when it found nothing to kill or forget.
    fn cleanup(&mut self, states: HashMap<PodUid, WorkerState>) -> bool {
        let runtime = self.cache.statuses();
        let plan = cleanup(|uid| self.pods.contains(uid), &runtime, &states);
        let found_nothing = plan.is_empty();
        let by_uid: HashMap<&PodUid, &RuntimePodStatus> = if plan.kill.is_empty() {
            HashMap::new()
        } else {
            runtime.iter().map(|s| (&s.uid, &**s)).collect()
        };
        for uid in plan.kill {
            let Some(status) = by_uid.get(&uid) else {
                continue;
            };
            tracing::info!(pod_uid = %uid, pod = %status.name, "killing unwanted pod found in the runtime");
            let mut pod = Pod::default();
            pod.metadata.uid = Some(uid.to_string());
            pod.metadata.name = Some(status.name.clone());
            pod.metadata.namespace = Some(status.namespace.clone());
            // Upstream `HandlePodCleanups` kills orphans aggressively (grace
            // 1 s); without an override the spec-less pod would get the
            // default 30 s instead of even its own grace period.
            let kill = KillOptions {
                grace_period_override: Some(ORPHAN_GRACE_PERIOD),
                status: None,
            };
            self.send(UpdatePod::kill(Arc::new(pod), kill));
        }
        if !plan.forget.is_empty() {
            for uid in &plan.forget {
                self.queue.remove(uid);
                self.cache.delete(uid);
                if let Some(sm) = &self.forget_status
                    && let Err(e) = sm.do_send(ForgetPodStatus { uid: uid.clone() })
                {
                    tracing::warn!(pod_uid = %uid, error = %e, "cannot tell the status manager to forget a pod; the next housekeeping retries");
                }
            }
            let _ = self.workers.do_send(ForgetWorkers(plan.forget));
        }
        found_nothing
    }
}

/// The sync loop's inputs as recipients, for wiring peers.
#[derive(Clone)]
pub struct SyncLoopRecipients {
    /// From PodConfig.
    pub updates: SupervisedRecipient<PodUpdate>,
    /// From PodConfig.
    pub ready: SupervisedRecipient<SourcesReady>,
    /// From the PLEG.
    pub pleg: SupervisedRecipient<PlegEvents>,
    /// From the pod workers.
    pub finished: SupervisedRecipient<SyncFinished>,
}

impl Actor for SyncLoop {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let initial = self.health.borrow().runtime_ready;
        self.gate.set_ready(initial);
        ctx.add_stream(WatchStream::new(self.health.clone()));
        // While the runtime is down, look again with a 100 ms → 5 s backoff
        // (the watch also wakes us the moment it comes back).
        fn recheck(act: &mut SyncLoop, ctx: &mut Context<SyncLoop>) {
            let ready = act.health.borrow().runtime_ready;
            act.on_health(ready);
            let delay = if act.gate.is_open() {
                Duration::from_secs(1)
            } else {
                act.gate.next_delay()
            };
            ctx.run_later(delay, recheck);
        }
        ctx.run_later(Duration::from_millis(100), recheck);
        ctx.run_interval(self.config.sync_tick, |act, _| act.tick());
        ctx.run_interval(self.config.housekeeping_period, |act, _| act.housekeeping());
        // A restarted sync loop resyncs every desired pod at once.
        for uid in self.pods.uids() {
            self.queue.enqueue(uid, Instant::now(), Duration::ZERO);
        }
    }
}

impl StreamHandler<RuntimeHealthChanged> for SyncLoop {
    fn handle(&mut self, msg: RuntimeHealthChanged, _ctx: &mut Self::Context) {
        self.on_health(msg.runtime_ready);
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl Handler<PodUpdate> for SyncLoop {
    type Result = ();

    fn handle(&mut self, msg: PodUpdate, _ctx: &mut Self::Context) {
        let p = plan(&msg);
        tracing::debug!(op = ?msg.op, source = msg.source.as_str(), pods = msg.pods.len(), "pod update");
        let mut removed = false;
        for d in p.desired {
            match d {
                Desired::Upsert(pod) => self.pods.upsert(pod, msg.source.clone()),
                Desired::Remove(uid) => {
                    self.pods.remove(&uid);
                    self.forget_admitted(&uid);
                    self.deferred.remove(&uid);
                    self.allocations.clear(&uid);
                    removed = true;
                }
            }
        }
        if removed {
            self.retry_pending_resizes();
        }
        for mut w in p.work {
            if w.work == PodWork::Sync(SyncKind::Update) {
                self.resize(&w.pod);
            }
            if w.work == PodWork::Sync(SyncKind::Create)
                && let Err(r) = self.admit(&w.pod)
            {
                tracing::warn!(pod = %crate::pod_manager::format_pod(&w.pod), reason = %r.reason, message = %r.message, "pod rejected by admission");
                // Upstream `rejectPod`: a Warning event with the bare message.
                self.events.pod_event(
                    &w.pod,
                    None,
                    EventType::Warning,
                    &r.reason,
                    r.event_message().to_string(),
                );
                self.state.lock().rejected.insert(pod_uid(&w.pod));
                let status = KillStatus {
                    phase: "Failed".into(),
                    reason: r.reason,
                    message: r.message,
                    disruption: false,
                };
                let kill = KillOptions {
                    grace_period_override: None,
                    status: Some(status),
                };
                w = UpdatePod::kill(w.pod, kill);
            }
            self.send(w);
        }
    }
}

impl Handler<SourcesReady> for SyncLoop {
    type Result = ();

    fn handle(&mut self, _msg: SourcesReady, _ctx: &mut Self::Context) {
        let mut book = self.state.lock();
        if !book.sources_ready {
            tracing::info!("all pod sources are ready; housekeeping enabled");
        }
        book.sources_ready = true;
    }
}

impl Handler<PlegEvents> for SyncLoop {
    type Result = ();

    fn handle(&mut self, msg: PlegEvents, _ctx: &mut Self::Context) {
        for uid in pods_to_sync(&msg.0) {
            self.sync_uid(&uid, SyncKind::Sync);
        }
    }
}

impl Handler<SyncFinished> for SyncLoop {
    type Result = ();

    fn handle(&mut self, msg: SyncFinished, _ctx: &mut Self::Context) {
        let c = &self.config;
        match requeue(
            msg.state,
            msg.error.is_some(),
            c.sync_frequency,
            c.backoff_period,
            rand::random(),
        ) {
            Requeue::Forget => self.queue.remove(&msg.uid),
            Requeue::After(delay) => self.queue.enqueue(msg.uid, Instant::now(), delay),
        }
    }
}

impl Handler<ProbeResult> for SyncLoop {
    type Result = ();

    /// Upstream `handleProbeSync`: a liveness failure, a readiness change or
    /// a startup result syncs the pod at once; the worker decides what to
    /// restart.
    fn handle(&mut self, msg: ProbeResult, _ctx: &mut Self::Context) {
        let worth = match msg.kind {
            ProbeKind::Liveness => msg.outcome == ProbeOutcome::Failure,
            ProbeKind::Readiness | ProbeKind::Startup => true,
        };
        if worth {
            self.sync_uid(&msg.uid, SyncKind::Sync);
        }
    }
}

#[path = "resize.rs"]
mod resize;
