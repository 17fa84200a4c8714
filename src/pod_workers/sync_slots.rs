//! [`SyncSlots`]: how many pod sync steps run their runtime work at once
//! (`--max-concurrent-pod-syncs`, actlet only; issue #16 item 4c).
//!
//! A sync step reads the pod's runtime status, publishes its API status,
//! makes its cgroup and waits for its volumes on its own; then, before it
//! asks the runtime for anything (sandbox, image, containers) it takes a
//! permit here, and holds it to the end of the step (the read that follows
//! the sync included). With 10,000 pods arriving at once only N pods are in
//! their runtime work, the rest wait in FIFO order (tokio's semaphore is
//! fair: the first to ask is the first served), so a pod that arrived early
//! is not overtaken by pods that arrived later, and the heavy state of a
//! step (the nested CRI futures, boxed) exists for N pods only.
//!
//! # Guarantees
//! - At most N sync steps hold a turn at once (a step standing aside for a
//!   pull holds none; a mutation that a dropped step left running in its
//!   own task, `cri::to_completion`, no longer counts).
//! - FIFO: permits are given in the order steps asked for them.
//! - A wait is cancellable: the kill that cancels a sync step's token ends
//!   its wait at once ([`SyncSlots::acquire`] returns `None`), so the kill
//!   runs next instead of after the queue.
//! - Kills (terminating steps) never take a permit: a kill is never delayed
//!   by queued starts, and no grace period is stretched by a queue (a
//!   terminating pod holds its step for up to its grace period; a bound on
//!   kills would make a kill wait for other pods' grace periods).
//! - The semaphore lives in the kubelet's shared handles
//!   ([`WorkerDeps`](super::WorkerDeps)), not in an actor: a restarted pod
//!   worker, manager or supervisor finds the same one. A permit belongs to
//!   its step's future: a worker that is force-stopped or panics drops its
//!   step, and with it the permit.
//! - A step gives its turn back while it waits for an image pull (queued
//!   behind other pulls or running: `serializeImagePulls`,
//!   `maxParallelImagePulls`) and takes a new one, at the end of the
//!   queue, when the pull ends ([`step_aside`]): N pods pulling slow images
//!   never keep the pods whose images are present from starting (k/k
//!   #108405 for pulls, kept with turns).
//! - 0 means unbounded (no semaphore at all).

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The default of `--max-concurrent-pod-syncs` (chosen from the P2
/// benchmark at 10,000 pods: `docs/performance.md`, session 15).
pub const DEFAULT_MAX_CONCURRENT_POD_SYNCS: usize = 256;

/// The shared bound on pod sync steps (cheap to clone: one semaphore).
#[derive(Clone, Debug, Default)]
pub struct SyncSlots {
    slots: Option<Arc<Semaphore>>,
    limit: usize,
}

/// A sync step's turn: held until the step ends (nothing when unbounded);
/// [`SyncPermit::hold_during`] lends it to [`step_aside`].
#[derive(Clone, Debug)]
pub struct SyncPermit {
    slots: Option<Arc<Semaphore>>,
    held: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
}

tokio::task_local! {
    /// The turn of the step whose runtime work runs on this task.
    static TURN: SyncPermit;
}

impl SyncPermit {
    fn new(slots: Option<Arc<Semaphore>>, permit: Option<OwnedSemaphorePermit>) -> Self {
        Self {
            slots,
            held: Arc::new(Mutex::new(permit)),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the turn is held now (false while it stands aside, or when unbounded).
    pub fn is_held(&self) -> bool {
        self.held().is_some()
    }

    /// Runs `fut` (the step's runtime work) with this turn, which a pull
    /// inside it may give back for as long as it waits ([`step_aside`]).
    /// The turn ends with `fut`.
    pub async fn hold_during<F: Future>(self, fut: F) -> F::Output {
        let held = self.held.clone();
        let out = TURN.scope(self, fut).await;
        // Given back now, whoever else still has a handle on it.
        drop(held.lock().unwrap_or_else(|e| e.into_inner()).take());
        out
    }
}

/// Awaits `fut` (an image pull, queued or running) without the turn of the
/// step it runs in, then takes a turn again, at the end of the queue,
/// unless `cancel` fires first (the kill runs; the step stops at its next
/// CRI boundary). Outside a step's runtime work, or unbounded: just `fut`.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::pod_workers::{SyncSlots, sync_slots::step_aside};
/// let slots = SyncSlots::new(1);
/// let token = Default::default();
/// let turn = slots.acquire(&token).await.unwrap_or_else(|| unreachable!());
/// let during = turn.clone();
/// turn.hold_during(async {
///     let in_use = step_aside(async { slots.in_use() }, &token).await;
///     assert_eq!(in_use, 0, "given back while the pull waits");
///     assert!(during.is_held(), "taken again after it");
/// }).await;
/// assert_eq!(slots.in_use(), 0);
/// # });
/// ```
pub async fn step_aside<F: Future>(fut: F, cancel: &CancellationToken) -> F::Output {
    let Some(turn) = TURN.try_with(Clone::clone).ok().filter(|t| t.slots.is_some()) else {
        return fut.await;
    };
    let given_back = turn.held().take();
    let had_it = given_back.is_some();
    drop(given_back);
    let out = fut.await;
    if had_it && let Some(slots) = &turn.slots {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {}
            permit = slots.clone().acquire_owned() => *turn.held() = permit.ok(),
        }
    }
    out
}

impl SyncSlots {
    /// At most `max` sync steps at once; 0: unbounded.
    ///
    /// ```
    /// use actlet::pod_workers::SyncSlots;
    /// assert_eq!(SyncSlots::new(64).limit(), Some(64));
    /// assert_eq!(SyncSlots::new(0).limit(), None);
    /// ```
    pub fn new(max: usize) -> Self {
        Self {
            slots: (max > 0).then(|| Arc::new(Semaphore::new(max))),
            limit: max,
        }
    }

    /// No bound (what [`Default`] gives too).
    pub fn unbounded() -> Self {
        Self::new(0)
    }

    /// The bound, `None` when unbounded.
    pub fn limit(&self) -> Option<usize> {
        self.slots.as_ref().map(|_| self.limit)
    }

    /// Permits held now (0 when unbounded).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::pod_workers::SyncSlots;
    /// let slots = SyncSlots::new(2);
    /// let token = Default::default();
    /// let a = slots.acquire(&token).await;
    /// assert_eq!(slots.in_use(), 1);
    /// drop(a);
    /// assert_eq!(slots.in_use(), 0);
    /// # });
    /// ```
    pub fn in_use(&self) -> usize {
        self.slots
            .as_ref()
            .map_or(0, |s| self.limit.saturating_sub(s.available_permits()))
    }

    /// Waits for a turn, in FIFO order; `None` when `cancel` fires first
    /// (or had fired already): the step gives up and the kill runs.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::pod_workers::SyncSlots;
    /// use tokio_util::sync::CancellationToken;
    /// let slots = SyncSlots::new(1);
    /// let first = slots.acquire(&CancellationToken::new()).await;
    /// assert!(first.is_some());
    /// let cancel = CancellationToken::new();
    /// cancel.cancel();
    /// assert!(slots.acquire(&cancel).await.is_none(), "a cancelled wait ends at once");
    /// drop(first);
    /// assert!(slots.acquire(&CancellationToken::new()).await.is_some());
    /// # });
    /// ```
    pub async fn acquire(&self, cancel: &CancellationToken) -> Option<SyncPermit> {
        let Some(slots) = &self.slots else {
            return (!cancel.is_cancelled()).then(|| SyncPermit::new(None, None));
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            // Closed never happens (nothing closes it): then run unbounded.
            permit = slots.clone().acquire_owned() => Some(SyncPermit::new(Some(slots.clone()), permit.ok())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn turns_are_given_in_the_order_they_were_asked_for() {
        let slots = SyncSlots::new(1);
        let first = slots.acquire(&CancellationToken::new()).await;
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = vec![];
        for i in 0..5 {
            let (slots, order) = (slots.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let _turn = slots.acquire(&CancellationToken::new()).await;
                order.lock().unwrap_or_else(|e| e.into_inner()).push(i);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }));
            // Each asks after the previous one is queued.
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.in_use(), 1);
        drop(first);
        for t in tasks {
            t.await.unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(*order.lock().unwrap_or_else(|e| e.into_inner()), vec![0, 1, 2, 3, 4]);
        assert_eq!(slots.in_use(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_queued_wait_ends_when_its_token_is_cancelled() {
        let slots = SyncSlots::new(1);
        let _held = slots.acquire(&CancellationToken::new()).await;
        let cancel = CancellationToken::new();
        let waiter = {
            let (slots, cancel) = (slots.clone(), cancel.clone());
            tokio::spawn(async move { slots.acquire(&cancel).await.is_some() })
        };
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!waiter.is_finished(), "waits while the permit is held");
        cancel.cancel();
        assert!(!waiter.await.unwrap_or_else(|e| panic!("{e}")), "cancelled: no permit");
    }

    #[tokio::test]
    async fn unbounded_never_waits() {
        let slots = SyncSlots::unbounded();
        let token = CancellationToken::new();
        let held: Vec<_> = futures::future::join_all((0..1000).map(|_| slots.acquire(&token))).await;
        assert!(held.iter().all(Option::is_some));
        assert_eq!(slots.in_use(), 0);
    }
}
