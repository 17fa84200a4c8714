//! Targeted relist requests, and the pods whose worker is in a runtime step.
//!
//! A pod worker's step that changes the runtime (a sync that starts
//! containers, a kill) ends with a read of the pod's status of its own. The
//! container events its own changes cause arrive while the step runs; read
//! by the PLEG at once, each would cost a pod-status read (4 CRI calls) that
//! the step's own read makes moot a moment later — at 10k pod starts, 2.4
//! reads per pod. So a request for a pod in a step is **parked** until the
//! step ends ([`StepGuard`]'s drop), then handed to the PLEG with its
//! original time: the step's read, taken after it, answers it without
//! another read ([`PodCache::read_after`](super::PodCache::read_after)); a
//! change the step's read did not see is asked for later than that read and
//! is read as usual. Upstream's pod worker cannot act on those events before
//! its step ends either: they wait in its channel. A step that lasts (a
//! kill's grace period, an image pull) parks its pod's requests for at most
//! [`MAX_PARK`]: the PLEG's next tick after that reads them (its observers
//! see the pod's events late by no more than that and a relist period).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::messages::PodUid;

/// How many pods may wait for a targeted relist at once; further requests
/// are dropped (and counted): the next global relist covers them.
pub const MAX_PENDING_RELISTS: usize = 65_536;

/// The longest a request waits for its pod's step to end.
pub const MAX_PARK: Duration = Duration::from_secs(1);

/// A pending targeted relist of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelistRequest {
    /// The pod's name (empty when the requester did not know it).
    pub name: String,
    /// The pod's namespace.
    pub namespace: String,
    /// When it was last asked for: a cache entry read strictly after this
    /// already holds whatever the requests were about.
    pub at: Instant,
}

/// The requests, shared by every clone of the cache (they outlive a PLEG
/// restart).
#[derive(Debug, Default)]
pub(super) struct RelistRequests {
    state: Mutex<State>,
    wake: Notify,
    dropped: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// What the PLEG reads next, one entry per pod.
    pending: HashMap<PodUid, RelistRequest>,
    /// Requests for pods in a step, handed over when it ends.
    parked: HashMap<PodUid, RelistRequest>,
    /// Pods with a step in flight.
    in_step: HashMap<PodUid, Step>,
    /// No parked request is overdue before this (`None`: none parked). Not
    /// moved later when a step ends: a stale time costs one scan of the
    /// parked requests, which sets it again.
    recheck_at: Option<Instant>,
}

/// The steps in flight of one pod (more than one: a kill may overlap a
/// sync that is being given up).
#[derive(Debug)]
struct Step {
    count: u32,
    /// When the first of them began.
    since: Instant,
}

impl State {
    /// Whether a parked request may have waited longer than [`MAX_PARK`]
    /// (without a scan: the PLEG asks on every dispatch).
    fn overdue(&self) -> bool {
        self.recheck_at.is_some_and(|t| Instant::now() >= t)
    }

    /// Moves the overdue parked requests into `out`, and sets when to look again.
    fn hand_over_overdue(&mut self, out: &mut HashMap<PodUid, RelistRequest>) {
        let parked = std::mem::take(&mut self.parked);
        let mut recheck_at: Option<Instant> = None;
        for (uid, request) in parked {
            match self.in_step.get(&uid).map(|s| s.since + MAX_PARK) {
                Some(due) if Instant::now() < due => {
                    recheck_at = Some(recheck_at.map_or(due, |t| t.min(due)));
                    self.parked.insert(uid, request);
                }
                _ => {
                    merge(out, &uid, &request.name, &request.namespace, request.at);
                }
            }
        }
        self.recheck_at = recheck_at;
    }
}

/// Adds a request to `map` (coalesced per pod: the latest time wins).
fn merge(map: &mut HashMap<PodUid, RelistRequest>, uid: &PodUid, name: &str, namespace: &str, at: Instant) -> bool {
    match map.get_mut(uid) {
        Some(request) => request.at = request.at.max(at),
        None => {
            if map.len() >= MAX_PENDING_RELISTS {
                return false;
            }
            let request = RelistRequest {
                name: name.to_string(),
                namespace: namespace.to_string(),
                at,
            };
            map.insert(uid.clone(), request);
        }
    }
    true
}

impl RelistRequests {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks for a read of `uid` (parked while it is in a step).
    pub(super) fn request(&self, uid: &PodUid, name: &str, namespace: &str) {
        let now = Instant::now();
        let mut state = self.state();
        let park_until = state
            .in_step
            .get(uid)
            .map(|s| s.since + MAX_PARK)
            .filter(|due| now < *due);
        let State {
            pending,
            parked,
            recheck_at,
            ..
        } = &mut *state;
        let (map, wake) = if park_until.is_some() {
            (parked, false)
        } else {
            (pending, true)
        };
        if !merge(map, uid, name, namespace, now) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Some(due) = park_until {
            *recheck_at = Some(recheck_at.map_or(due, |t| t.min(due)));
        }
        drop(state);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Takes every pending request, and the parked ones whose step has
    /// lasted longer than [`MAX_PARK`].
    pub(super) fn take(&self) -> HashMap<PodUid, RelistRequest> {
        let mut state = self.state();
        let mut out = std::mem::take(&mut state.pending);
        if state.overdue() {
            state.hand_over_overdue(&mut out);
        }
        out
    }

    /// Whether any request waits for the PLEG (pending, or parked longer
    /// than [`MAX_PARK`]).
    pub(super) fn any_pending(&self) -> bool {
        let state = self.state();
        !state.pending.is_empty() || state.overdue()
    }

    /// Whether a request for `uid` waits, pending or parked.
    pub(super) fn is_pending(&self, uid: &PodUid) -> bool {
        let state = self.state();
        state.pending.contains_key(uid) || state.parked.contains_key(uid)
    }

    /// Resolves once a request was made pending since the last call.
    pub(super) async fn requested(&self) {
        self.wake.notified().await;
    }

    /// Requests dropped because [`MAX_PENDING_RELISTS`] were waiting.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Whether `uid` is in a step.
    pub(super) fn in_step(&self, uid: &PodUid) -> bool {
        self.state().in_step.contains_key(uid)
    }

    fn begin(&self, uid: &PodUid) {
        let mut state = self.state();
        let step = state.in_step.entry(uid.clone()).or_insert(Step {
            count: 0,
            since: Instant::now(),
        });
        step.count += 1;
    }

    fn end(&self, uid: &PodUid) {
        let mut state = self.state();
        let State {
            pending,
            parked,
            in_step,
            ..
        } = &mut *state;
        match in_step.get_mut(uid) {
            Some(step) if step.count > 1 => {
                step.count -= 1;
                return;
            }
            Some(_) => {
                in_step.remove(uid);
            }
            None => return,
        }
        let Some(request) = parked.remove(uid) else {
            return;
        };
        if !merge(pending, uid, &request.name, &request.namespace, request.at) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        drop(state);
        self.wake.notify_one();
    }
}

/// A pod worker's runtime step in flight ([`PodCache::begin_step`](super::PodCache::begin_step)):
/// relist requests for its pod are parked until this is dropped, then handed
/// to the PLEG. Dropped with the step's future, so a cancelled, panicked or
/// restarted step never leaves its pod's requests parked.
#[derive(Debug)]
#[must_use = "the step ends when the guard is dropped"]
pub struct StepGuard {
    requests: Arc<RelistRequests>,
    uid: PodUid,
}

impl StepGuard {
    pub(super) fn new(requests: Arc<RelistRequests>, uid: PodUid) -> Self {
        requests.begin(&uid);
        Self { requests, uid }
    }
}

impl Drop for StepGuard {
    fn drop(&mut self) {
        self.requests.end(&self.uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(r: &Arc<RelistRequests>, uid: &str) -> StepGuard {
        StepGuard::new(r.clone(), uid.into())
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_during_a_step_waits_for_its_end_and_keeps_its_time() {
        let r = Arc::new(RelistRequests::default());
        let step = guard(&r, "u1");
        r.request(&"u1".into(), "web", "default");
        let asked = Instant::now();
        r.request(&"u2".into(), "db", "default");
        let now = r.take();
        assert_eq!(
            now.keys().collect::<Vec<_>>(),
            vec![&PodUid::from("u2")],
            "only the pod in no step"
        );
        assert!(r.is_pending(&"u1".into()), "parked counts as pending");
        assert!(!r.any_pending());
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        drop(step);
        let after = r.take();
        assert_eq!(
            after[&PodUid::from("u1")].at,
            asked,
            "handed over with the time it was asked"
        );
        assert_eq!(after[&PodUid::from("u1")].name, "web");
        assert!(!r.in_step(&"u1".into()) && !r.is_pending(&"u1".into()));
    }

    #[tokio::test]
    async fn the_end_of_a_step_wakes_the_pleg_only_when_something_was_parked() {
        let r = Arc::new(RelistRequests::default());
        drop(guard(&r, "quiet"));
        let woken = tokio::time::timeout(std::time::Duration::from_millis(20), r.requested()).await;
        assert!(woken.is_err(), "nothing parked: no wake-up");
        let step = guard(&r, "busy");
        r.request(&"busy".into(), "web", "default");
        drop(step);
        let woken = tokio::time::timeout(std::time::Duration::from_secs(1), r.requested()).await;
        assert!(woken.is_ok(), "the parked request was handed over");
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_step_parks_its_requests_no_longer_than_the_bound() {
        let r = Arc::new(RelistRequests::default());
        let _kill = guard(&r, "u1");
        r.request(&"u1".into(), "web", "default");
        assert!(!r.any_pending() && r.take().is_empty());
        tokio::time::advance(MAX_PARK).await;
        assert!(r.any_pending(), "the PLEG's tick finds it overdue");
        assert_eq!(r.take().len(), 1);
        r.request(&"u1".into(), "web", "default");
        assert_eq!(r.take().len(), 1, "later requests of the long step are not parked");
        assert!(!r.any_pending(), "nothing left to hand over");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stale_recheck_time_costs_one_empty_take_not_a_busy_loop() {
        let r = Arc::new(RelistRequests::default());
        let step = guard(&r, "u1");
        r.request(&"u1".into(), "web", "default");
        drop(step);
        assert_eq!(r.take().len(), 1, "handed over at the step's end");
        tokio::time::advance(MAX_PARK).await;
        let _ = r.any_pending(); // may be true once: the recheck time is not moved on a step's end
        assert!(r.take().is_empty());
        assert!(!r.any_pending(), "the scan set the recheck time again");
    }

    #[test]
    fn overlapping_steps_park_until_the_last_ends() {
        let r = Arc::new(RelistRequests::default());
        let kill = guard(&r, "u1");
        let sync = guard(&r, "u1");
        r.request(&"u1".into(), "web", "default");
        drop(sync);
        assert!(r.take().is_empty(), "still in the kill");
        drop(kill);
        assert_eq!(r.take().len(), 1);
    }

    #[test]
    fn a_panicking_step_hands_its_requests_over() {
        let r = Arc::new(RelistRequests::default());
        let shared = r.clone();
        let step = std::thread::spawn(move || {
            let _step = guard(&shared, "u1");
            shared.request(&"u1".into(), "web", "default");
            panic!("the step panics mid-flight");
        });
        assert!(step.join().is_err());
        assert!(!r.in_step(&"u1".into()));
        assert_eq!(r.take().len(), 1, "unwinding dropped the guard");
    }
}
