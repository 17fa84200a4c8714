//! [`StatusSyncer`]: the actor that writes pod statuses to the API server and
//! finishes the deletion of pods it has stopped.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, MessageResult, WrapFuture};
use kube::Client;

use super::api::{SyncError, WriteOutcome, delete_pod, write_status};
use super::logic::{Target, Written, backoff, can_be_deleted, needs_sync, resolve_target};
use crate::clock::WallClock;
use crate::cluster::mirror_index::MirrorPods;
use crate::messages::PodUid;
use crate::pleg::cache::PodCache;
use crate::pod_manager::PodManager;
use crate::status::StatusCache;

/// What the syncer needs. Build with [`StatusSyncDeps::new`], adjust the
/// public fields (intervals, clock) if needed.
#[derive(Clone)]
pub struct StatusSyncDeps {
    /// The API client (the node's identity).
    pub client: Client,
    /// Desired pods (to tell API pods from static pods, and deletions).
    pub pods: PodManager,
    /// The status manager's statuses (read the latest when writing).
    pub statuses: StatusCache,
    /// The runtime's view (whether a pod may still run).
    pub runtime: PodCache,
    /// Mirror pods on the API (where static pods' statuses go).
    pub mirrors: MirrorPods,
    /// Full re-check period (upstream 10 s).
    pub resync_interval: Duration,
    /// First retry delay of a failed write (doubled up to `max_backoff`).
    pub initial_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// "Now" for condition transition times.
    pub clock: WallClock,
}

impl fmt::Debug for StatusSyncDeps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusSyncDeps")
            .field("resync_interval", &self.resync_interval)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .finish_non_exhaustive()
    }
}

impl StatusSyncDeps {
    /// Deps with upstream's timing: resync every 10 s, retries from 500 ms up to 10 s.
    pub fn new(
        client: Client,
        pods: PodManager,
        statuses: StatusCache,
        runtime: PodCache,
        mirrors: MirrorPods,
    ) -> Self {
        Self {
            client,
            pods,
            statuses,
            runtime,
            mirrors,
            resync_interval: Duration::from_secs(10),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            clock: WallClock::system(),
        }
    }
}

pub use crate::messages::status::{GetSyncerPods, ResyncStatuses, StatusSyncEvent, SyncerPods};

/// The status syncer actor (upstream `status.manager`'s sync half). See the
/// [module docs](super).
pub struct StatusSyncer {
    deps: StatusSyncDeps,
    /// Pods to write; coalesced: one entry whatever the number of changes.
    dirty: BTreeSet<PodUid>,
    /// Pods with a write or delete in flight (at most one per pod).
    in_flight: HashSet<PodUid>,
    /// Pods waiting for their retry delay.
    backing_off: HashSet<PodUid>,
    failures: HashMap<PodUid, u32>,
    written: HashMap<PodUid, Written>,
    /// Pods finished with: deleted from the API, or gone from it.
    done: HashSet<PodUid>,
}

impl fmt::Debug for StatusSyncer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusSyncer")
            .field("dirty", &self.dirty.len())
            .field("in_flight", &self.in_flight.len())
            .field("written", &self.written.len())
            .finish_non_exhaustive()
    }
}

impl StatusSyncer {
    /// A syncer over `deps`; nothing is sent before it is started.
    pub fn new(deps: StatusSyncDeps) -> Self {
        Self {
            deps,
            dirty: BTreeSet::new(),
            in_flight: HashSet::new(),
            backing_off: HashSet::new(),
            failures: HashMap::new(),
            written: HashMap::new(),
            done: HashSet::new(),
        }
    }

    fn forget(&mut self, uid: &PodUid) {
        self.dirty.remove(uid);
        self.failures.remove(uid);
        self.written.remove(uid);
        self.done.remove(uid);
    }

    /// Starts `uid`'s write if it is dirty and neither busy nor backing off:
    /// what one change needs, without looking at the other dirty pods (at
    /// 10,000 pods with the API server away, every pod backs off and a scan
    /// per change would be quadratic).
    fn try_start(&mut self, uid: &PodUid, ctx: &mut Context<Self>) {
        if self.dirty.contains(uid) && !self.in_flight.contains(uid) && !self.backing_off.contains(uid) {
            self.dirty.remove(uid);
            self.start_write(uid.clone(), ctx);
        }
    }

    /// Starts a write for every dirty pod that is not busy or backing off
    /// (after a resync).
    fn kick(&mut self, ctx: &mut Context<Self>) {
        let ready: Vec<PodUid> = self
            .dirty
            .iter()
            .filter(|u| !self.in_flight.contains(*u) && !self.backing_off.contains(*u))
            .cloned()
            .collect();
        for uid in ready {
            self.dirty.remove(&uid);
            self.start_write(uid, ctx);
        }
    }

    fn retry_later(&mut self, uid: PodUid, ctx: &mut Context<Self>) {
        let failures = self.failures.entry(uid.clone()).or_insert(0);
        *failures = failures.saturating_add(1);
        let delay = backoff(*failures, self.deps.initial_backoff, self.deps.max_backoff);
        self.dirty.insert(uid.clone());
        if self.backing_off.insert(uid.clone()) {
            ctx.run_later(delay, move |act, ctx| {
                act.backing_off.remove(&uid);
                act.try_start(&uid, ctx);
            });
        }
    }

    fn start_write(&mut self, uid: PodUid, ctx: &mut Context<Self>) {
        if self.done.contains(&uid) {
            return;
        }
        let Some(current) = self.deps.statuses.get(&uid) else {
            self.forget(&uid);
            return;
        };
        let desired = self.deps.pods.get(&uid);
        let target = resolve_target(&uid, desired.as_ref(), &current, &self.deps.mirrors);
        if target == Target::Nowhere {
            tracing::debug!(%uid, pod = %current.pod_name, "no API object to write to yet (static pod without mirror pod?): status waits");
            self.retry_later(uid, ctx);
            return;
        }
        let could_run = self
            .deps
            .runtime
            .get(&uid)
            .is_some_and(|e| e.could_have_running_containers());
        let now = self.deps.clock.now();
        let version = current.version;
        self.in_flight.insert(uid.clone());
        let fut = write_status(self.deps.client.clone(), target.clone(), current.status, could_run, now);
        ctx.spawn(
            fut.into_actor(self)
                .map(move |res, act, ctx| act.write_finished(uid, version, target, res, ctx)),
        );
    }

    fn write_finished(
        &mut self,
        uid: PodUid,
        version: u64,
        target: Target,
        res: Result<WriteOutcome, SyncError>,
        ctx: &mut Context<Self>,
    ) {
        self.in_flight.remove(&uid);
        match res {
            Ok(WriteOutcome::Written(pod)) => {
                self.failures.remove(&uid);
                let target_uid = pod.metadata.uid.clone().unwrap_or_default();
                self.written.insert(uid.clone(), Written { version, target_uid });
                if self.dirty.contains(&uid) {
                    self.try_start(&uid, ctx);
                } else if matches!(target, Target::Pod { .. }) {
                    self.maybe_delete(uid, &pod, ctx);
                }
            }
            Ok(WriteOutcome::Gone) if matches!(target, Target::Mirror { .. }) => {
                tracing::debug!(%uid, "mirror pod gone: status waits for the new one");
                self.retry_later(uid, ctx);
            }
            Ok(WriteOutcome::Gone) => {
                tracing::debug!(%uid, "pod gone from the API: its status is no longer written");
                self.dirty.remove(&uid);
                self.done.insert(uid);
            }
            Err(e) => {
                tracing::warn!(%uid, error = %e, "pod status not written; retrying");
                self.retry_later(uid, ctx);
            }
        }
    }

    /// Finishes the deletion of an API pod once nothing of it runs and its
    /// latest status is on the API.
    fn maybe_delete(&mut self, uid: PodUid, pod: &k8s_openapi::api::core::v1::Pod, ctx: &mut Context<Self>) {
        let could_run = self
            .deps
            .runtime
            .get(&uid)
            .is_some_and(|e| e.could_have_running_containers());
        let latest = self.deps.statuses.version(&uid);
        let written = self.written.get(&uid).map(|w| w.version);
        if !can_be_deleted(pod, could_run, latest.is_some() && latest == written) {
            return;
        }
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
        tracing::info!(%uid, pod = %format!("{namespace}/{name}"), "pod stopped: finishing its deletion");
        self.in_flight.insert(uid.clone());
        let fut = delete_pod(self.deps.client.clone(), namespace, name, pod_uid);
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            act.in_flight.remove(&uid);
            match res {
                Ok(()) => {
                    act.dirty.remove(&uid);
                    act.done.insert(uid);
                }
                Err(e) => {
                    tracing::warn!(%uid, error = %e, "final pod delete failed; retrying");
                    act.retry_later(uid, ctx);
                }
            }
        }));
    }

    /// Marks every pod that needs a write (upstream `syncBatch(true)`).
    fn resync(&mut self, ctx: &mut Context<Self>) {
        let statuses = self.deps.statuses.snapshot();
        let known: HashSet<&PodUid> = statuses.keys().collect();
        self.written.retain(|u, _| known.contains(u));
        self.failures.retain(|u, _| known.contains(u));
        self.done.retain(|u| known.contains(u));
        self.dirty.retain(|u| known.contains(u));
        let now = self.deps.clock.now();
        for (uid, current) in &statuses {
            if self.done.contains(uid) || self.in_flight.contains(uid) {
                continue;
            }
            let desired = self.deps.pods.get(uid);
            let target = resolve_target(uid, desired.as_ref(), current, &self.deps.mirrors);
            let could_run = self
                .deps
                .runtime
                .get(uid)
                .is_some_and(|e| e.could_have_running_containers());
            let known_api = match (&target, &desired) {
                (Target::Pod { .. }, Some(d)) => d.pod.status.clone(),
                (Target::Mirror { namespace, name, .. }, _) => self
                    .deps
                    .mirrors
                    .get(&format!("{namespace}/{name}"))
                    .and_then(|m| m.status.clone()),
                _ => None,
            };
            let deleting = desired
                .as_ref()
                .is_some_and(|d| !d.source.is_static() && d.pod.metadata.deletion_timestamp.is_some());
            let write = needs_sync(
                self.written.get(uid),
                current,
                &target,
                known_api.as_ref(),
                could_run,
                now,
            );
            if write || (deleting && !could_run) {
                self.dirty.insert(uid.clone());
            }
        }
        self.kick(ctx);
    }
}

impl Actor for StatusSyncer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(resync = ?self.deps.resync_interval, "status syncer started");
        // A (re)started syncer knows nothing it wrote: check everything.
        self.resync(ctx);
        ctx.run_interval(self.deps.resync_interval, |act, ctx| act.resync(ctx));
    }
}

impl Handler<StatusSyncEvent> for StatusSyncer {
    type Result = ();

    fn handle(&mut self, msg: StatusSyncEvent, ctx: &mut Self::Context) {
        match msg {
            StatusSyncEvent::Changed(uid) => {
                if !self.done.contains(&uid) {
                    self.dirty.insert(uid.clone());
                    self.try_start(&uid, ctx);
                }
            }
            StatusSyncEvent::Forgotten(uid) => self.forget(&uid),
        }
    }
}

impl Handler<ResyncStatuses> for StatusSyncer {
    type Result = ();

    fn handle(&mut self, _msg: ResyncStatuses, ctx: &mut Self::Context) {
        self.resync(ctx);
    }
}

impl Handler<GetSyncerPods> for StatusSyncer {
    type Result = MessageResult<GetSyncerPods>;

    fn handle(&mut self, _msg: GetSyncerPods, _ctx: &mut Self::Context) -> Self::Result {
        let all: HashSet<&PodUid> = (self.dirty.iter())
            .chain(&self.in_flight)
            .chain(&self.backing_off)
            .chain(self.failures.keys())
            .chain(self.written.keys())
            .chain(&self.done)
            .collect();
        MessageResult(SyncerPods {
            dirty: self.dirty.len(),
            in_flight: self.in_flight.len(),
            backing_off: self.backing_off.len(),
            failures: self.failures.len(),
            written: self.written.len(),
            done: self.done.len(),
            total: all.len(),
        })
    }
}
