//! [`DeliveredSnapshot`]: what a source's recipient has handled, so a
//! re-read that found nothing new is not sent again.
//!
//! At 10k static pods a periodic re-read that changed nothing still cost a
//! merge of 10k pods in the pod config (and the copies on the way) every
//! 20 s. A snapshot is skipped only when the recipient *handled* one with
//! the same pods (the same allocations, in the same order: the scan cache
//! hands back the pods of unchanged files as they were) and the same
//! errors: a snapshot lost in a restart of the recipient (sent but never
//! handled) is sent again by the next re-read.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::messages::pod_update::{ManifestError, SourceSnapshot};

/// The last snapshot the recipient confirmed, and the sends since.
///
/// ```
/// use std::sync::Arc;
/// use actlet::config::delivered::DeliveredSnapshot;
/// use actlet::messages::pod_update::{PodSource, SourceSnapshot};
/// let pod = Arc::new(k8s_openapi::api::core::v1::Pod::default());
/// let snap = SourceSnapshot { source: PodSource::File, pods: vec![pod.clone()], errors: vec![] };
/// let mut delivered = DeliveredSnapshot::default();
/// assert!(!delivered.is_handled(&snap), "nothing confirmed yet");
/// let seq = delivered.sending(&snap);
/// assert!(!delivered.is_handled(&snap), "sent, not yet handled");
/// delivered.handled(seq);
/// assert!(delivered.is_handled(&snap));
/// ```
#[derive(Debug, Default)]
pub struct DeliveredSnapshot {
    /// The number of the latest send, and what it carried.
    latest: Option<(u64, Sent)>,
    /// What the recipient confirmed last (it was the latest send then).
    confirmed: Option<Sent>,
    /// The number of the next send (never reused).
    next: u64,
}

#[derive(Clone, Debug)]
struct Sent {
    pods: Vec<Arc<Pod>>,
    errors: Vec<ManifestError>,
}

impl Sent {
    fn is(&self, snapshot: &SourceSnapshot) -> bool {
        self.errors == snapshot.errors
            && self.pods.len() == snapshot.pods.len()
            && self.pods.iter().zip(&snapshot.pods).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

impl DeliveredSnapshot {
    /// Whether the recipient has handled a snapshot with exactly these pods
    /// and errors, and nothing was sent after it.
    pub fn is_handled(&self, snapshot: &SourceSnapshot) -> bool {
        self.latest.is_none() && self.confirmed.as_ref().is_some_and(|s| s.is(snapshot))
    }

    /// Whether the latest snapshot sent was handled (none in flight, none
    /// lost): a re-read that found exactly what the read before it found
    /// need not even be built.
    pub fn is_settled(&self) -> bool {
        self.latest.is_none() && self.confirmed.is_some()
    }

    /// Records that `snapshot` is being sent; returns the number to confirm
    /// with [`handled`](Self::handled) once the recipient answered.
    pub fn sending(&mut self, snapshot: &SourceSnapshot) -> u64 {
        let seq = self.next;
        self.next += 1;
        let sent = Sent {
            pods: snapshot.pods.clone(),
            errors: snapshot.errors.clone(),
        };
        // A new send makes the confirmed one stale (the recipient may
        // handle the new one, or lose it).
        self.confirmed = None;
        self.latest = Some((seq, sent));
        seq
    }

    /// The recipient handled send `seq`: it becomes the confirmed snapshot
    /// when no later one was sent since (an earlier answer is stale).
    pub fn handled(&mut self, seq: u64) {
        if self.latest.as_ref().is_some_and(|(n, _)| *n == seq) {
            self.confirmed = self.latest.take().map(|(_, s)| s);
        }
    }

    /// The send was not handled (the recipient was gone or restarting):
    /// the next snapshot is sent whatever it holds.
    pub fn lost(&mut self) {
        self.latest = None;
        self.confirmed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::pod_update::PodSource;

    fn snap(pods: &[Arc<Pod>], errors: &[&str]) -> SourceSnapshot {
        SourceSnapshot {
            source: PodSource::File,
            pods: pods.to_vec(),
            errors: errors
                .iter()
                .map(|e| ManifestError {
                    origin: "f.yaml".into(),
                    reason: (*e).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn only_a_handled_identical_snapshot_is_skipped() {
        let (a, b) = (Arc::new(Pod::default()), Arc::new(Pod::default()));
        let mut d = DeliveredSnapshot::default();
        let seq = d.sending(&snap(&[a.clone(), b.clone()], &[]));
        d.handled(seq);
        assert!(d.is_handled(&snap(&[a.clone(), b.clone()], &[])));
        assert!(d.is_settled());
        // Equal content but another allocation, another order, fewer pods,
        // other errors: all sent.
        assert!(!d.is_handled(&snap(&[a.clone(), Arc::new(Pod::default())], &[])));
        assert!(!d.is_handled(&snap(&[b.clone(), a.clone()], &[])));
        assert!(!d.is_handled(&snap(std::slice::from_ref(&a), &[])));
        assert!(!d.is_handled(&snap(&[a.clone(), b.clone()], &["bad"])));
    }

    #[test]
    fn a_lost_or_superseded_send_is_never_taken_as_handled() {
        let a = Arc::new(Pod::default());
        let one = snap(std::slice::from_ref(&a), &[]);
        let mut d = DeliveredSnapshot::default();
        assert!(!d.is_settled(), "nothing sent yet");
        let first = d.sending(&one);
        assert!(!d.is_settled(), "in flight");
        d.lost();
        assert!(!d.is_settled(), "lost");
        assert!(!d.is_handled(&one), "lost in a restart: sent again");
        let second = d.sending(&one);
        let third = d.sending(&snap(&[], &[]));
        d.handled(second);
        assert!(!d.is_handled(&one), "a later send is in flight");
        d.handled(first);
        assert!(!d.is_handled(&one), "a stale answer");
        d.handled(third);
        assert!(d.is_handled(&snap(&[], &[])));
        assert!(!d.is_handled(&one));
    }
}
