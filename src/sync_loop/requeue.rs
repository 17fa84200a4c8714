//! When a pod comes back to the sync loop after its worker finished a sync
//! (upstream `podWorkers.completeWork`): a healthy pod after `syncFrequency`
//! plus up to half of it (`workerResyncIntervalJitterFactor` = 0.5), a failed
//! one after the backoff period plus up to half of it
//! (`workerBackOffPeriodJitterFactor` = 0.5), a terminated one never.
//!
//! The jitter spreads the resyncs of pods that started together (10,000 pods
//! of one batch would otherwise all resync in the same second, every minute).

use std::time::Duration;

use crate::messages::pod_work::WorkerState;

/// Upstream `workerResyncIntervalJitterFactor`.
pub const RESYNC_JITTER_FACTOR: f64 = 0.5;

/// Upstream `workerBackOffPeriodJitterFactor`.
pub const BACKOFF_JITTER_FACTOR: f64 = 0.5;

/// Upstream `wait.Jitter`: `base` plus `unit × factor × base`, with `unit`
/// a uniform draw in `[0, 1)` (clamped; a NaN counts as 0).
///
/// ```
/// use std::time::Duration;
/// use actlet::sync_loop::requeue::jitter;
/// assert_eq!(jitter(Duration::from_secs(60), 0.5, 0.5), Duration::from_secs(75));
/// ```
pub fn jitter(base: Duration, factor: f64, unit: f64) -> Duration {
    let unit = if unit.is_nan() { 0.0 } else { unit.clamp(0.0, 1.0) };
    let factor = if factor.is_nan() { 0.0 } else { factor.max(0.0) };
    base + base.mul_f64(unit * factor)
}

/// What to do with a pod whose sync just finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Its worker is done: forget it in the work queue.
    Forget,
    /// Sync it again after this long.
    After(Duration),
}

/// The requeue of a pod after a sync that left its worker in `state`,
/// `failed` or not; `unit` is the jitter draw in `[0, 1)`.
pub fn requeue(state: WorkerState, failed: bool, resync: Duration, backoff: Duration, unit: f64) -> Requeue {
    match (state, failed) {
        (WorkerState::Terminated, _) => Requeue::Forget,
        (_, true) => Requeue::After(jitter(backoff, BACKOFF_JITTER_FACTOR, unit)),
        (_, false) => Requeue::After(jitter(resync, RESYNC_JITTER_FACTOR, unit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);
    const TEN: Duration = Duration::from_secs(10);

    #[test]
    fn a_healthy_pod_resyncs_between_one_and_one_and_a_half_sync_periods() {
        let at = |u| requeue(WorkerState::Syncing, false, MIN, TEN, u);
        assert_eq!(at(0.0), Requeue::After(MIN));
        assert_eq!(at(0.5), Requeue::After(Duration::from_secs(75)));
        assert_eq!(at(0.999_999), Requeue::After(jitter(MIN, 0.5, 0.999_999)));
        assert!(matches!(at(0.999_999), Requeue::After(d) if d < Duration::from_secs(90)));
        // a terminating pod is still resynced on the same schedule
        assert_eq!(
            requeue(WorkerState::Terminating, false, MIN, TEN, 0.5),
            Requeue::After(Duration::from_secs(75))
        );
    }

    #[test]
    fn a_failed_sync_backs_off_with_its_own_jitter() {
        assert_eq!(requeue(WorkerState::Syncing, true, MIN, TEN, 0.0), Requeue::After(TEN));
        assert_eq!(
            requeue(WorkerState::Syncing, true, MIN, TEN, 0.5),
            Requeue::After(Duration::from_millis(12_500))
        );
    }

    #[test]
    fn a_terminated_worker_is_forgotten_whatever_its_error() {
        assert_eq!(requeue(WorkerState::Terminated, false, MIN, TEN, 0.3), Requeue::Forget);
        assert_eq!(requeue(WorkerState::Terminated, true, MIN, TEN, 0.3), Requeue::Forget);
    }

    #[test]
    fn draws_out_of_range_are_clamped() {
        assert_eq!(jitter(MIN, 0.5, -1.0), MIN);
        assert_eq!(jitter(MIN, 0.5, f64::NAN), MIN);
        assert_eq!(jitter(MIN, 0.5, 7.0), Duration::from_secs(90));
        assert_eq!(jitter(MIN, f64::NAN, 0.5), MIN);
        assert_eq!(jitter(Duration::ZERO, 0.5, 0.5), Duration::ZERO);
    }
}
