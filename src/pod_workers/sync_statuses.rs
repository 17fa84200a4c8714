//! [`PodSyncStatuses`]: the one owner of per-pod lifecycle state (upstream
//! `podWorkers.podSyncStatuses`): for every pod UID with a worker, its
//! worker's address, lifecycle state, whether a kill was requested, whether
//! it must start afresh once terminated, and since when it is terminating or
//! terminated.
//!
//! It lives outside every actor (created by the tree assembly), so the
//! pod-workers manager adopts the running workers after its own restart,
//! and readers — housekeeping, GC, mirror pods, probes, volumes — get the
//! current state synchronously instead of asking an actor that may be
//! restarting (a failed ask used to read as "no workers").
//!
//! # Guarantees
//! - A kill is visible ([`PodSyncStatus::is_terminating`]) from the moment it
//!   is requested, before the worker even sees it.
//! - States only move forward: `Syncing → Terminating → Terminated`, unless
//!   the pod is forgotten and created afresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

use crate::actors::supervisor::{ChildRef, CloseCount};
use crate::messages::PodUid;
use crate::messages::pod_work::{UpdatePod, WorkerState};

use super::worker::PodWorker;

/// One pod's lifecycle record.
#[derive(Clone, Debug)]
pub struct PodSyncStatus {
    /// The worker's stable address (outlives the worker's restarts).
    pub worker: Option<ChildRef<PodWorker>>,
    /// What the worker last reported.
    pub state: WorkerState,
    /// A kill was requested (the pod is terminating from then on).
    pub kill_requested: bool,
    /// Re-added while terminating: start afresh once terminated.
    pub restart_requested: bool,
    /// `namespace/name` (upstream's full name gates static pods).
    pub full_name: String,
    /// When the kill was requested.
    pub terminating_at: Option<Instant>,
    /// When the worker reported the pod terminated.
    pub terminated_at: Option<Instant>,
    /// A static pod held back until the previous pod of its full name has
    /// terminated (no worker yet).
    pub waiting_to_start: bool,
    /// The latest kill sent to the pod's worker. A new instance of the
    /// worker (restarted after a panic, or made again after the
    /// `pod-workers` supervisor lost its children) runs it again, so a kill
    /// is never lost with the instance that was running it.
    pub kill: Option<UpdatePod>,
}

impl PodSyncStatus {
    fn new(full_name: String) -> Self {
        Self {
            worker: None,
            state: WorkerState::Syncing,
            kill_requested: false,
            restart_requested: false,
            full_name,
            terminating_at: None,
            terminated_at: None,
            waiting_to_start: false,
            kill: None,
        }
    }

    /// Terminating from now on (idempotent: the first request's time is kept).
    fn mark_terminating(&mut self) {
        if !self.kill_requested {
            self.kill_requested = true;
            self.terminating_at.get_or_insert_with(Instant::now);
        }
    }

    /// The state as seen from outside: a requested kill counts as terminating.
    pub fn effective_state(&self) -> WorkerState {
        match self.state {
            WorkerState::Syncing if self.kill_requested => WorkerState::Terminating,
            other => other,
        }
    }

    /// Terminating or terminated (upstream `IsPodTerminationRequested`).
    pub fn is_terminating(&self) -> bool {
        self.effective_state() != WorkerState::Syncing
    }

    /// May still have running containers (upstream
    /// `CouldHaveRunningContainers`): anything but terminated.
    pub fn could_have_running_containers(&self) -> bool {
        self.state != WorkerState::Terminated && !self.waiting_to_start
    }
}

/// Shared, cloneable handle on the per-pod lifecycle records.
///
/// ```
/// use actlet::pod_workers::PodSyncStatuses;
/// use actlet::messages::pod_work::WorkerState;
/// let statuses = PodSyncStatuses::default();
/// statuses.request_kill(&"u1".into(), "ns/web");
/// assert_eq!(statuses.state(&"u1".into()), Some(WorkerState::Terminating));
/// assert!(statuses.is_terminating_by_full_name("ns/web"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct PodSyncStatuses {
    records: Arc<Mutex<Records>>,
    /// Closes of the workers' mailboxes ([`worker_closes`](Self::worker_closes)).
    worker_closes: CloseCount,
}

/// The records, and the UIDs per full name (the static-pod start gate and
/// mirror-pod checks ask by full name once per pod: no scans of 10,000).
#[derive(Debug, Default)]
struct Records {
    by_uid: HashMap<PodUid, PodSyncStatus>,
    by_name: HashMap<String, Vec<PodUid>>,
    /// Bumped when a record is added or removed or its effective state
    /// changes ([`PodSyncStatuses::generation`]).
    generation: u64,
}

impl Records {
    fn index(&mut self, name: &str, uid: &PodUid) {
        let uids = self.by_name.entry(name.to_string()).or_default();
        if !uids.contains(uid) {
            uids.push(uid.clone());
        }
    }

    fn unindex(&mut self, name: &str, uid: &PodUid) {
        if let Some(uids) = self.by_name.get_mut(name) {
            uids.retain(|u| u != uid);
            if uids.is_empty() {
                self.by_name.remove(name);
            }
        }
    }

    /// Runs `f` on an existing record, keeping the name index in step.
    fn with<R>(&mut self, uid: &PodUid, f: impl FnOnce(&mut PodSyncStatus) -> R) -> Option<R> {
        let entry = self.by_uid.get_mut(uid)?;
        let (before, state) = (entry.full_name.clone(), entry.effective_state());
        let out = f(entry);
        if entry.effective_state() != state {
            self.generation += 1;
        }
        if entry.full_name != before {
            let after = entry.full_name.clone();
            self.unindex(&before, uid);
            self.index(&after, uid);
        }
        Some(out)
    }

    /// The records of `full_name`.
    fn named<'a>(&'a self, full_name: &str) -> impl Iterator<Item = (&'a PodUid, &'a PodSyncStatus)> {
        self.by_name
            .get(full_name)
            .into_iter()
            .flatten()
            .filter_map(|u| self.by_uid.get_key_value(u))
    }
}

impl PodSyncStatuses {
    fn lock(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the record of `uid`, creating it if needed.
    pub fn update<R>(&self, uid: &PodUid, full_name: &str, f: impl FnOnce(&mut PodSyncStatus) -> R) -> R {
        let mut records = self.lock();
        if !records.by_uid.contains_key(uid) {
            records
                .by_uid
                .insert(uid.clone(), PodSyncStatus::new(full_name.to_string()));
            records.index(full_name, uid);
            records.generation += 1;
        }
        records.with(uid, f).expect("the record exists: inserted above")
    }

    /// Runs `f` on the record of `uid` if there is one.
    pub fn update_existing<R>(&self, uid: &PodUid, f: impl FnOnce(&mut PodSyncStatus) -> R) -> Option<R> {
        self.lock().with(uid, f)
    }

    /// A copy of the record of `uid`.
    pub fn get(&self, uid: &PodUid) -> Option<PodSyncStatus> {
        self.lock().by_uid.get(uid).cloned()
    }

    /// The effective state of `uid`'s worker, if it has one.
    pub fn state(&self, uid: &PodUid) -> Option<WorkerState> {
        self.lock().by_uid.get(uid).map(PodSyncStatus::effective_state)
    }

    /// Effective states of every known pod.
    pub fn states(&self) -> HashMap<PodUid, WorkerState> {
        self.lock()
            .by_uid
            .iter()
            .map(|(uid, s)| (uid.clone(), s.effective_state()))
            .collect()
    }

    /// Marks `uid` terminating now (idempotent; the first request's time is kept).
    pub fn request_kill(&self, uid: &PodUid, full_name: &str) {
        self.update(uid, full_name, PodSyncStatus::mark_terminating);
    }

    /// [`request_kill`](Self::request_kill), keeping `kill` as the latest
    /// kill to run again should the worker running it be lost.
    pub fn record_kill(&self, uid: &PodUid, full_name: &str, kill: &UpdatePod) {
        self.update(uid, full_name, |s| {
            s.mark_terminating();
            s.kill = Some(kill.clone());
        });
    }

    /// Where the workers' mailboxes count their closes
    /// ([`ChildSpec::count_closes`](crate::actors::supervisor::ChildSpec::count_closes)):
    /// while it is unchanged, no worker was lost and
    /// [`lost_workers`](Self::lost_workers) would find none it did not before.
    pub fn worker_closes(&self) -> &CloseCount {
        &self.worker_closes
    }

    /// Pods whose worker is gone (its mailbox closed: the `pod-workers`
    /// supervisor was restarted) before they terminated, with their record.
    pub fn lost_workers(&self) -> Vec<(PodUid, PodSyncStatus)> {
        self.lock()
            .by_uid
            .iter()
            .filter(|(_, s)| s.state != WorkerState::Terminated && s.worker.as_ref().is_some_and(|w| !w.is_open()))
            .map(|(uid, s)| (uid.clone(), s.clone()))
            .collect()
    }

    /// Records what a worker reported.
    pub fn set_state(&self, uid: &PodUid, state: WorkerState) {
        self.update_existing(uid, |s| {
            if state > s.state {
                s.state = state;
            }
            match state {
                WorkerState::Terminating => {
                    s.terminating_at.get_or_insert_with(Instant::now);
                }
                WorkerState::Terminated => {
                    s.terminated_at.get_or_insert_with(Instant::now);
                }
                WorkerState::Syncing => {}
            }
        });
    }

    /// Static pods waiting to start: `(uid, full name)`.
    pub fn waiting_to_start(&self) -> Vec<(PodUid, String)> {
        self.lock()
            .by_uid
            .iter()
            .filter(|(_, s)| s.waiting_to_start)
            .map(|(uid, s)| (uid.clone(), s.full_name.clone()))
            .collect()
    }

    /// Drops the record of `uid` (its worker was forgotten).
    pub fn remove(&self, uid: &PodUid) -> Option<PodSyncStatus> {
        let mut records = self.lock();
        let removed = records.by_uid.remove(uid)?;
        records.unindex(&removed.full_name, uid);
        records.generation += 1;
        Some(removed)
    }

    /// A number that changes whenever a record is added or removed or a
    /// pod's [effective state](PodSyncStatus::effective_state) changes —
    /// what [`states`](Self::states) shows (the sync loop's housekeeping
    /// skips a pass when none of its inputs moved).
    ///
    /// ```
    /// use actlet::pod_workers::PodSyncStatuses;
    /// let statuses = PodSyncStatuses::default();
    /// let g = statuses.generation();
    /// statuses.request_kill(&"u1".into(), "ns/web");
    /// assert_ne!(statuses.generation(), g);
    /// ```
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.lock().by_uid.len()
    }

    /// No records.
    pub fn is_empty(&self) -> bool {
        self.lock().by_uid.is_empty()
    }

    /// A pod of this full name is terminating and may still run containers
    /// (upstream `IsPodForMirrorPodTerminatingByFullName`).
    pub fn is_terminating_by_full_name(&self, full_name: &str) -> bool {
        self.lock()
            .named(full_name)
            .any(|(_, s)| s.is_terminating() && s.could_have_running_containers())
    }

    /// Whether a pod `uid` named `full_name` may start now (upstream
    /// `allowStaticPodStart`): no *other* pod of the same full name may still
    /// run containers. Static pods replaced by a new UID (a changed
    /// manifest) wait until the old one has stopped, so two never hold the
    /// same ports or data at once.
    pub fn may_start(&self, uid: &PodUid, full_name: &str) -> bool {
        !self
            .lock()
            .named(full_name)
            .any(|(u, s)| u != uid && s.could_have_running_containers())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generation_moves_with_membership_and_effective_state_only() {
        let statuses = PodSyncStatuses::default();
        let uid: PodUid = "u1".into();
        let g0 = statuses.generation();
        statuses.update(&uid, "ns/web", |_| ());
        let g1 = statuses.generation();
        assert_ne!(g1, g0, "a new record");
        statuses.update(&uid, "ns/web", |_| ());
        statuses.set_state(&uid, WorkerState::Syncing);
        assert_eq!(statuses.generation(), g1, "nothing housekeeping reads changed");
        statuses.request_kill(&uid, "ns/web");
        let g2 = statuses.generation();
        assert_ne!(g2, g1, "Syncing -> Terminating");
        statuses.set_state(&uid, WorkerState::Terminating);
        assert_eq!(statuses.generation(), g2, "already terminating");
        statuses.set_state(&uid, WorkerState::Terminated);
        let g3 = statuses.generation();
        assert_ne!(g3, g2);
        statuses.remove(&uid);
        assert_ne!(statuses.generation(), g3, "removed");
    }

    #[test]
    fn a_requested_kill_reads_as_terminating_until_the_worker_reports_terminated() {
        let s = PodSyncStatuses::default();
        let uid = PodUid::from("u");
        s.update(&uid, "ns/a", |_| ());
        assert_eq!(s.state(&uid), Some(WorkerState::Syncing));
        s.request_kill(&uid, "ns/a");
        assert_eq!(s.state(&uid), Some(WorkerState::Terminating));
        s.set_state(&uid, WorkerState::Syncing); // a late report of an older step
        assert_eq!(s.state(&uid), Some(WorkerState::Terminating), "never goes back");
        s.set_state(&uid, WorkerState::Terminated);
        assert_eq!(s.state(&uid), Some(WorkerState::Terminated));
        assert!(s.get(&uid).unwrap().terminated_at.is_some());
    }

    #[test]
    fn static_pods_of_one_full_name_start_one_at_a_time() {
        let s = PodSyncStatuses::default();
        let (old, new) = (PodUid::from("old"), PodUid::from("new"));
        s.update(&old, "kube-system/etcd-n", |_| ());
        assert!(!s.may_start(&new, "kube-system/etcd-n"), "old still running");
        assert!(s.may_start(&old, "kube-system/etcd-n"), "itself does not count");
        s.request_kill(&old, "kube-system/etcd-n");
        assert!(s.is_terminating_by_full_name("kube-system/etcd-n"));
        assert!(!s.may_start(&new, "kube-system/etcd-n"), "still stopping");
        s.set_state(&old, WorkerState::Terminated);
        assert!(s.may_start(&new, "kube-system/etcd-n"));
        assert!(!s.is_terminating_by_full_name("kube-system/etcd-n"));
    }

    #[test]
    fn the_full_name_index_follows_inserts_renames_and_removals() {
        let s = PodSyncStatuses::default();
        let (a, b) = (PodUid::from("a"), PodUid::from("b"));
        s.update(&a, "ns/web", |_| ());
        s.update(&b, "ns/web", |_| ());
        assert!(!s.may_start(&b, "ns/web"), "a may still run containers");
        s.update_existing(&a, |r| r.full_name = "ns/other".into());
        assert!(s.may_start(&b, "ns/web"), "a no longer holds the name");
        assert!(!s.may_start(&b, "ns/other"));
        s.request_kill(&a, "ns/other");
        assert!(s.is_terminating_by_full_name("ns/other"));
        assert!(!s.is_terminating_by_full_name("ns/web"));
        s.remove(&a);
        assert!(s.may_start(&b, "ns/other"));
        assert!(!s.is_terminating_by_full_name("ns/other"));
        s.remove(&b);
        assert!(s.lock().by_name.is_empty(), "no name outlives its records");
    }
}
