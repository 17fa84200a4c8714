//! [`FinishedSteps`]: the pod workers' finished-step reports on their way to
//! the pod workers manager, coalesced per pod.
//!
//! Each worker reported with a message into the manager's bounded mailbox;
//! at 10k pods the steps end together and the reports met a full mailbox
//! (1,333 of 10,000 dropped in one start: the pod's worker state was not
//! recorded and the sync loop never queued its periodic or backoff resync).
//! A report is a state — the newest one of a pod supersedes the older — so
//! reports wait here, one per pod, and the manager takes them all on a
//! wake-up. Shared: reports made while the manager restarts wait for the
//! next instance.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::messages::PodUid;
use crate::messages::pod_work::SyncFinished;

/// Reports waiting for the manager (at most one per pod) and its wake-up.
///
/// ```
/// use actlet::messages::pod_work::{SyncFinished, WorkerState};
/// use actlet::pod_workers::finished::FinishedSteps;
/// let steps = FinishedSteps::default();
/// let report = |error: Option<&str>| SyncFinished { uid: "u1".into(), error: error.map(Into::into), state: WorkerState::Syncing };
/// steps.report(report(Some("ErrImagePull")));
/// steps.report(report(None)); // the newer step of the same pod
/// let taken = steps.take();
/// assert_eq!(taken.len(), 1);
/// assert_eq!(taken[0].error, None);
/// assert!(steps.take().is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct FinishedSteps(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    pending: Mutex<HashMap<PodUid, SyncFinished>>,
    wake: Notify,
}

impl FinishedSteps {
    /// Leaves `report` for the manager (replacing an older one of the same
    /// pod not yet taken) and wakes it. Never blocks, never fails.
    pub fn report(&self, report: SyncFinished) {
        self.0
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(report.uid.clone(), report);
        self.0.wake.notify_one();
    }

    /// Takes every waiting report.
    pub fn take(&self) -> Vec<SyncFinished> {
        let pending = std::mem::take(&mut *self.0.pending.lock().unwrap_or_else(|e| e.into_inner()));
        pending.into_values().collect()
    }

    /// Reports waiting.
    pub fn len(&self) -> usize {
        self.0.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves once a report was made since the last call (a report made
    /// while nobody waits is remembered: no wake-up is lost).
    pub async fn reported(&self) {
        self.0.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::messages::pod_work::WorkerState;

    fn done(uid: &str, state: WorkerState) -> SyncFinished {
        SyncFinished {
            uid: uid.into(),
            error: None,
            state,
        }
    }

    #[tokio::test]
    async fn reports_are_kept_one_per_pod_and_a_wake_up_made_before_the_wait_is_not_lost() {
        let steps = FinishedSteps::default();
        for i in 0..10_000 {
            steps.report(done(&format!("u{i}"), WorkerState::Syncing));
        }
        steps.report(done("u7", WorkerState::Terminated));
        assert_eq!(steps.len(), 10_000, "nothing dropped, one per pod");
        // The wake-up came before anyone waited.
        tokio::time::timeout(Duration::from_secs(1), steps.reported())
            .await
            .expect("woken");
        let mut taken = steps.take();
        taken.sort_by(|a, b| a.uid.cmp(&b.uid));
        assert_eq!(taken.len(), 10_000);
        let u7 = taken.iter().find(|r| r.uid.as_str() == "u7").map(|r| r.state);
        assert_eq!(u7, Some(WorkerState::Terminated), "the newest report of a pod");
        assert!(steps.is_empty());
    }
}
