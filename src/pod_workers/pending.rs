//! [`UpdateSlot`]: the coalescing rules of a pod worker's mailbox
//! (upstream `podWorkers.UpdatePod`).
//!
//! # Guarantees
//! - One update runs at a time; while it runs only the *latest* update is kept.
//! - A pending kill is never replaced by a non-kill update; two kills merge
//!   into one that keeps the shorter grace period.
//! - Once a kill has been accepted the pod is terminating: later non-kill
//!   updates are dropped. Lifecycle never goes back.

use std::time::Duration;

use crate::messages::pod_work::{KillOptions, UpdatePod, WorkerState};

/// What the worker should do with an offered update.
#[derive(Debug)]
pub enum Offer {
    /// Idle: run this update now.
    RunNow(UpdatePod),
    /// Busy: kept as the pending update (possibly merged).
    Queued,
    /// Dropped (the pod is terminating or terminated and this is not a kill).
    Dropped,
}

/// A worker's mailbox state: lifecycle, whether a sync runs, and the pending update.
#[derive(Debug)]
pub struct UpdateSlot {
    state: WorkerState,
    busy: bool,
    pending: Option<UpdatePod>,
    kill_requested: bool,
}

impl Default for UpdateSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl UpdateSlot {
    /// A fresh slot: syncing, idle, nothing pending.
    pub fn new() -> Self {
        Self {
            state: WorkerState::Syncing,
            busy: false,
            pending: None,
            kill_requested: false,
        }
    }

    /// The lifecycle state.
    pub fn state(&self) -> WorkerState {
        self.state
    }

    /// Whether a sync is running.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// The pending update, if any.
    pub fn pending(&self) -> Option<&UpdatePod> {
        self.pending.as_ref()
    }

    /// Offers an update to the worker.
    pub fn offer(&mut self, update: UpdatePod) -> Offer {
        let is_kill = update.work.is_kill();
        if self.state == WorkerState::Terminated || (self.kill_requested && !is_kill) {
            return Offer::Dropped;
        }
        if is_kill {
            self.kill_requested = true;
        }
        if !self.busy {
            self.busy = true;
            self.on_start(&update);
            return Offer::RunNow(update);
        }
        self.pending = Some(match self.pending.take() {
            Some(prev) if prev.work.is_kill() && is_kill => merge_kills(prev, update),
            Some(prev) if prev.work.is_kill() => prev,
            _ => update,
        });
        Offer::Queued
    }

    /// The running sync finished; `terminated` says the pod is fully stopped.
    /// Returns the next update to run, if any.
    pub fn finish(&mut self, terminated: bool) -> Option<UpdatePod> {
        self.busy = false;
        if terminated && self.state == WorkerState::Terminating {
            self.state = WorkerState::Terminated;
            self.pending = None;
            return None;
        }
        let next = self.pending.take()?;
        self.busy = true;
        self.on_start(&next);
        Some(next)
    }

    fn on_start(&mut self, update: &UpdatePod) {
        if update.work.is_kill() && self.state == WorkerState::Syncing {
            self.state = WorkerState::Terminating;
        }
    }
}

/// Two kills: keep the newer pod, the shorter grace period, and the first status.
fn merge_kills(prev: UpdatePod, next: UpdatePod) -> UpdatePod {
    let grace = |u: &UpdatePod| u.work.kill_options().and_then(|k| k.grace_period_override);
    let shorter: Option<Duration> = match (grace(&prev), grace(&next)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let status = (prev.work.kill_options().and_then(|k| k.status.clone()))
        .or(next.work.kill_options().and_then(|k| k.status.clone()));
    UpdatePod::kill(
        next.pod,
        KillOptions {
            grace_period_override: shorter,
            status,
        },
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::messages::pod_work::SyncKind;

    fn pod(gen_: &str) -> Arc<Pod> {
        let mut pod = Pod::default();
        pod.metadata.resource_version = Some(gen_.to_string());
        Arc::new(pod)
    }

    fn upd(t: SyncKind, gen_: &str) -> UpdatePod {
        UpdatePod::sync(t, pod(gen_))
    }

    fn kill(grace: Option<u64>) -> UpdatePod {
        let options = KillOptions {
            grace_period_override: grace.map(Duration::from_secs),
            status: None,
        };
        UpdatePod::kill(pod("k"), options)
    }

    fn rv(u: &UpdatePod) -> &str {
        u.pod.metadata.resource_version.as_deref().unwrap_or("")
    }

    #[test]
    fn idle_worker_runs_at_once_busy_worker_keeps_only_latest() {
        let mut s = UpdateSlot::new();
        assert!(matches!(s.offer(upd(SyncKind::Create, "1")), Offer::RunNow(_)));
        assert!(matches!(s.offer(upd(SyncKind::Update, "2")), Offer::Queued));
        assert!(matches!(s.offer(upd(SyncKind::Update, "3")), Offer::Queued));
        let next = s.finish(false).expect("pending update");
        assert_eq!(rv(&next), "3");
        assert!(s.is_busy());
        assert!(s.finish(false).is_none());
        assert!(!s.is_busy());
    }

    #[test]
    fn pending_kill_is_never_overwritten() {
        let mut s = UpdateSlot::new();
        let _ = s.offer(upd(SyncKind::Create, "1"));
        let _ = s.offer(kill(Some(30)));
        assert!(matches!(s.offer(upd(SyncKind::Update, "3")), Offer::Dropped));
        let next = s.finish(false).unwrap();
        assert!(next.work.is_kill());
        assert_eq!(s.state(), WorkerState::Terminating);
    }

    #[test]
    fn two_kills_merge_with_shorter_grace() {
        let mut s = UpdateSlot::new();
        let _ = s.offer(upd(SyncKind::Create, "1"));
        let _ = s.offer(kill(Some(30)));
        let _ = s.offer(kill(Some(5)));
        let _ = s.offer(kill(None));
        let next = s.finish(false).unwrap();
        assert_eq!(
            next.work.kill_options().unwrap().grace_period_override,
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn lifecycle_never_goes_back() {
        let mut s = UpdateSlot::new();
        let _ = s.offer(kill(None));
        assert_eq!(s.state(), WorkerState::Terminating);
        assert!(matches!(s.offer(upd(SyncKind::Sync, "2")), Offer::Dropped));
        assert!(s.finish(true).is_none());
        assert_eq!(s.state(), WorkerState::Terminated);
        assert!(matches!(s.offer(kill(None)), Offer::Dropped));
        assert!(matches!(s.offer(upd(SyncKind::Create, "3")), Offer::Dropped));
    }

    #[test]
    fn unfinished_kill_can_be_retried_by_another_kill() {
        let mut s = UpdateSlot::new();
        let _ = s.offer(kill(Some(10)));
        assert!(s.finish(false).is_none(), "kill failed, not terminated");
        assert_eq!(s.state(), WorkerState::Terminating);
        assert!(matches!(s.offer(kill(Some(10))), Offer::RunNow(_)));
    }
}
