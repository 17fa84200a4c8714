//! [`WorkQueue`]: when each pod is next due for a sync (upstream `queue.WorkQueue`).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use crate::messages::PodUid;

/// Pods and the time their next sync is due. Re-enqueueing a pod replaces its
/// due time; [`WorkQueue::take_due`] removes and returns every due pod.
///
/// The pods are also kept ordered by due time, so taking the due ones costs
/// their number (and a log of the queue's length), not a walk over every
/// queued pod: at 10,000 pods the sync loop takes the due ones every second.
#[derive(Debug, Default)]
pub struct WorkQueue {
    due: HashMap<PodUid, Instant>,
    by_time: BTreeSet<(Instant, PodUid)>,
}

impl WorkQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `uid` to be synced `delay` after `now`.
    pub fn enqueue(&mut self, uid: PodUid, now: Instant, delay: Duration) {
        let at = now + delay;
        if let Some(old) = self.due.insert(uid.clone(), at) {
            self.by_time.remove(&(old, uid.clone()));
        }
        self.by_time.insert((at, uid));
    }

    /// Removes `uid` from the queue.
    pub fn remove(&mut self, uid: &PodUid) {
        if let Some(at) = self.due.remove(uid) {
            self.by_time.remove(&(at, uid.clone()));
        }
    }

    /// Removes and returns every pod due at `now`, sorted by UID.
    pub fn take_due(&mut self, now: Instant) -> Vec<PodUid> {
        let mut out = Vec::new();
        while self.by_time.first().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, uid)) = self.by_time.pop_first() {
                self.due.remove(&uid);
                out.push(uid);
            }
        }
        out.sort();
        out
    }

    /// Number of queued pods.
    pub fn len(&self) -> usize {
        self.due.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_due_pods_are_taken_and_reenqueue_replaces() {
        let t0 = Instant::now();
        let mut q = WorkQueue::new();
        q.enqueue("a".into(), t0, Duration::from_secs(1));
        q.enqueue("b".into(), t0, Duration::from_secs(60));
        q.enqueue("c".into(), t0, Duration::ZERO);
        assert_eq!(q.take_due(t0), vec![PodUid::from("c")]);
        assert_eq!(q.take_due(t0 + Duration::from_secs(1)), vec![PodUid::from("a")]);
        q.enqueue("b".into(), t0, Duration::from_secs(2));
        assert_eq!(q.take_due(t0 + Duration::from_secs(2)), vec![PodUid::from("b")]);
        assert!(q.is_empty());
    }

    #[test]
    fn removed_and_rescheduled_pods_leave_no_stale_entry() {
        let t0 = Instant::now();
        let mut q = WorkQueue::new();
        q.enqueue("a".into(), t0, Duration::ZERO);
        q.enqueue("a".into(), t0, Duration::from_secs(10));
        q.enqueue("b".into(), t0, Duration::ZERO);
        q.remove(&"b".into());
        assert!(q.take_due(t0 + Duration::from_secs(5)).is_empty());
        assert_eq!(q.len(), 1);
        assert_eq!(q.by_time.len(), 1);
        assert_eq!(q.take_due(t0 + Duration::from_secs(10)), vec![PodUid::from("a")]);
        assert!(q.is_empty() && q.by_time.is_empty());
    }

    #[test]
    fn due_pods_come_sorted_by_uid_whatever_their_due_order() {
        let t0 = Instant::now();
        let mut q = WorkQueue::new();
        q.enqueue("c".into(), t0, Duration::ZERO);
        q.enqueue("a".into(), t0, Duration::from_secs(2));
        q.enqueue("b".into(), t0, Duration::from_secs(1));
        let due = q.take_due(t0 + Duration::from_secs(3));
        assert_eq!(due, vec![PodUid::from("a"), PodUid::from("b"), PodUid::from("c")]);
    }
}
