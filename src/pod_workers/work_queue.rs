//! [`WorkQueue`]: when each pod is next due for a sync (upstream `queue.WorkQueue`).

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::messages::PodUid;

/// Pods and the time their next sync is due. Re-enqueueing a pod replaces its
/// due time; [`WorkQueue::take_due`] removes and returns every due pod.
#[derive(Debug, Default)]
pub struct WorkQueue {
    due: HashMap<PodUid, Instant>,
}

impl WorkQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `uid` to be synced `delay` after `now`.
    pub fn enqueue(&mut self, uid: PodUid, now: Instant, delay: Duration) {
        self.due.insert(uid, now + delay);
    }

    /// Removes `uid` from the queue.
    pub fn remove(&mut self, uid: &PodUid) {
        self.due.remove(uid);
    }

    /// Removes and returns every pod due at `now`, in a stable order.
    pub fn take_due(&mut self, now: Instant) -> Vec<PodUid> {
        let mut out: Vec<PodUid> = self
            .due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(u, _)| u.clone())
            .collect();
        out.sort();
        for u in &out {
            self.due.remove(u);
        }
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
}
