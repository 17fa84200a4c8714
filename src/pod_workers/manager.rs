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

use std::collections::{HashMap, HashSet};

use actix::prelude::*;

use super::deps::WorkerDeps;
use super::worker::PodWorker;
use crate::actors::supervisor::{
    ChildRef, ChildSpec, RestartPolicy, SendError, StartChild, StopChild, SupervisedRecipient, Supervisor,
};
use crate::messages::PodUid;
use crate::messages::pod_work::{SyncFinished, UpdatePod, UpdateType, WorkerState};
use crate::pod_manager::pod_uid;

/// Mailbox capacity of one pod worker (updates are coalesced by the worker,
/// so a small mailbox suffices).
pub const WORKER_MAILBOX: usize = 64;

/// SyncLoop → PodWorkers: forget the workers of these pods (housekeeping:
/// pods no longer desired whose workers have terminated).
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct ForgetWorkers(pub Vec<PodUid>);

/// Anyone → PodWorkers: the lifecycle state of every known worker.
#[derive(Clone, Copy, Debug, Message)]
#[rtype(result = "HashMap<PodUid, WorkerState>")]
pub struct GetWorkerStates;

/// The pod workers manager actor.
pub struct PodWorkers {
    deps: WorkerDeps,
    supervisor: ChildRef<Supervisor>,
    me: SupervisedRecipient<SyncFinished>,
    sync_loop: Option<SupervisedRecipient<SyncFinished>>,
    workers: HashMap<PodUid, ChildRef<PodWorker>>,
    states: HashMap<PodUid, WorkerState>,
    /// Pods a kill was sent for: terminating from then on, even before
    /// their worker reports it (the kill may still be pending behind a sync).
    kill_requested: HashSet<PodUid>,
    restart_requested: HashSet<PodUid>,
}

impl PodWorkers {
    /// A manager starting workers under `supervisor`; workers report to `me`
    /// (this manager's own supervised address), and finished steps are
    /// forwarded to `sync_loop`.
    pub fn new(
        deps: WorkerDeps,
        supervisor: ChildRef<Supervisor>,
        me: SupervisedRecipient<SyncFinished>,
        sync_loop: Option<SupervisedRecipient<SyncFinished>>,
    ) -> Self {
        Self {
            deps,
            supervisor,
            me,
            sync_loop,
            workers: HashMap::new(),
            states: HashMap::new(),
            kill_requested: HashSet::new(),
            restart_requested: HashSet::new(),
        }
    }

    fn spawn_worker(&mut self, uid: &PodUid) -> ChildRef<PodWorker> {
        let (deps, me, u) = (self.deps.clone(), self.me.clone(), uid.clone());
        let spec = ChildSpec::with_context(format!("pod-{uid}"), move |cx| {
            PodWorker::new(u.clone(), deps.clone(), me.clone(), cx.generation())
        })
        .restart(RestartPolicy::Transient)
        .mailbox_capacity(WORKER_MAILBOX);
        let child = spec.child_ref();
        if let Err(e) = self.supervisor.do_send(StartChild(spec.into())) {
            tracing::error!(pod_uid = %uid, error = %e, "cannot start pod worker: pod-workers supervisor unavailable");
        }
        self.workers.insert(uid.clone(), child.clone());
        self.states.insert(uid.clone(), WorkerState::Syncing);
        child
    }

    fn forget(&mut self, uid: &PodUid) {
        if self.workers.remove(uid).is_some() {
            let _ = self.supervisor.do_send(StopChild(format!("pod-{uid}")));
        }
        self.states.remove(uid);
        self.kill_requested.remove(uid);
    }

    fn dispatch(&mut self, update: UpdatePod) {
        let uid = pod_uid(&update.pod);
        if self.states.get(&uid) == Some(&WorkerState::Terminated) && update.update_type == UpdateType::Create {
            // The pod was re-added after it terminated: start it afresh.
            self.forget(&uid);
        } else if (self.states.get(&uid) == Some(&WorkerState::Terminating) || self.kill_requested.contains(&uid))
            && update.update_type == UpdateType::Create
        {
            // Re-added while terminating: started afresh once terminated.
            self.restart_requested.insert(uid.clone());
        }
        if update.update_type == UpdateType::Kill {
            self.kill_requested.insert(uid.clone());
        }
        let worker = match self.workers.get(&uid) {
            Some(w) if w.is_open() => w.clone(),
            _ => self.spawn_worker(&uid),
        };
        match worker.try_send(update) {
            Ok(()) => {}
            Err(e) => {
                let closed = matches!(e, crate::actors::supervisor::TrySendError::Closed(_));
                let update = e.into_inner();
                if closed {
                    // The worker's supervisor lost it (restarted): make a new one.
                    let w = self.spawn_worker(&uid);
                    if let Err(e) = w.do_send(update) {
                        tracing::error!(pod_uid = %uid, error = %e, "cannot deliver update to new pod worker");
                    }
                } else {
                    tracing::warn!(pod_uid = %uid, error = %SendError::Full, "pod worker mailbox full; the next resync retries");
                }
            }
        }
    }
}

impl Actor for PodWorkers {
    type Context = Context<Self>;
}

impl Handler<UpdatePod> for PodWorkers {
    type Result = ();

    fn handle(&mut self, msg: UpdatePod, _ctx: &mut Self::Context) {
        self.dispatch(msg);
    }
}

impl Handler<SyncFinished> for PodWorkers {
    type Result = ();

    fn handle(&mut self, msg: SyncFinished, _ctx: &mut Self::Context) {
        if self.workers.contains_key(&msg.uid) {
            self.states.insert(msg.uid.clone(), msg.state);
        }
        if msg.state == WorkerState::Terminated && self.restart_requested.remove(&msg.uid) {
            if let Some(desired) = self.deps.pods.get(&msg.uid) {
                self.forget(&msg.uid);
                self.dispatch(UpdatePod {
                    update_type: UpdateType::Create,
                    pod: desired.pod,
                    kill: None,
                });
            }
        }
        if let Some(sl) = &self.sync_loop
            && let Err(e) = sl.do_send(msg)
        {
            tracing::warn!(error = %e, "cannot report to sync loop");
        }
    }
}

impl Handler<ForgetWorkers> for PodWorkers {
    type Result = ();

    fn handle(&mut self, msg: ForgetWorkers, _ctx: &mut Self::Context) {
        for uid in &msg.0 {
            self.forget(uid);
        }
    }
}

impl Handler<GetWorkerStates> for PodWorkers {
    type Result = MessageResult<GetWorkerStates>;

    /// A worker that was sent a kill counts as terminating at once, so
    /// housekeeping does not send the same kill again while it runs.
    fn handle(&mut self, _msg: GetWorkerStates, _ctx: &mut Self::Context) -> Self::Result {
        let states = self.states.iter().map(|(uid, st)| {
            let st = match st {
                WorkerState::Syncing if self.kill_requested.contains(uid) => WorkerState::Terminating,
                other => *other,
            };
            (uid.clone(), st)
        });
        MessageResult(states.collect())
    }
}
