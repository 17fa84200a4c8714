//! Restart backoff and criticality: how soon a failed child comes back, and
//! whether its failures may take its supervisor (and so the node agent) down.
//!
//! Pure decisions ([`verdict`]) kept apart from the engine that applies them,
//! so they are tested as a truth table.

use std::time::Duration;

/// Exponential delay before a failed child is restarted.
///
/// The first restart after a quiet period is immediate (as in OTP); each
/// further consecutive failure doubles the delay from `initial` up to `max`.
/// An instance that ran for `reset_after` before failing counts as a fresh
/// start: its failure is the first of a new series.
///
/// ```
/// use std::time::Duration;
/// use actlet::actors::supervisor::RestartBackoff;
/// let b = RestartBackoff::default();
/// assert_eq!(b.delay(1), Duration::ZERO); // first failure: restarted at once
/// assert_eq!(b.delay(2), b.initial);
/// assert_eq!(b.delay(3), b.initial * 2);
/// assert_eq!(b.delay(60), b.max); // capped
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartBackoff {
    /// Delay before the second consecutive restart (default 100 ms).
    pub initial: Duration,
    /// Largest delay (default 10 s).
    pub max: Duration,
    /// Run time after which an instance's failure starts a new series (default 60 s).
    pub reset_after: Duration,
}

impl Default for RestartBackoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
            reset_after: Duration::from_secs(60),
        }
    }
}

impl RestartBackoff {
    /// No delay at all: every restart is immediate.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::actors::supervisor::RestartBackoff;
    /// assert_eq!(RestartBackoff::NONE.delay(9), Duration::ZERO);
    /// ```
    pub const NONE: Self = Self {
        initial: Duration::ZERO,
        max: Duration::ZERO,
        reset_after: Duration::ZERO,
    };

    /// The delay before the restart that follows the `consecutive`-th failure
    /// in a row (1 = the first).
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::actors::supervisor::RestartBackoff;
    /// let b = RestartBackoff { initial: Duration::from_secs(1), max: Duration::from_secs(5), reset_after: Duration::from_secs(60) };
    /// let delays: Vec<u64> = (1..=5).map(|n| b.delay(n).as_secs()).collect();
    /// assert_eq!(delays, [0, 1, 2, 4, 5]);
    /// ```
    pub fn delay(&self, consecutive: u32) -> Duration {
        if consecutive <= 1 {
            return Duration::ZERO;
        }
        let doublings = (consecutive - 2).min(31);
        self.initial
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// Whether a child's repeated failures may escalate to its supervisor.
///
/// A [`Critical`](Self::Critical) child (the default) counts toward its
/// supervisor's restart intensity: too many restarts stop the supervisor and
/// escalate (at the root: the node agent exits naming the child). A
/// [`NonCritical`](Self::NonCritical) child (an HTTP server, the event
/// recorder, …) never does: its restarts are counted against the intensity
/// on its own, and once it exceeds it, it is reported as
/// [`exhausted`](super::ChildInfo::exhausted) and retried every
/// [`RestartBackoff::max`] while the rest of the tree keeps running.
///
/// ```
/// use actlet::actors::supervisor::Criticality;
/// assert_eq!(Criticality::default(), Criticality::Critical);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Criticality {
    /// Failures count toward the supervisor's intensity and may escalate.
    #[default]
    Critical,
    /// Failures are contained: retried with backoff, never escalated.
    NonCritical,
}

/// What to do with a child that failed and whose policy says restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Restart it after `delay`.
    Restart { delay: Duration },
    /// Too many restarts of a critical child: stop the supervisor, escalate.
    Escalate,
    /// Too many restarts of a non-critical child: report it exhausted and
    /// try again after `delay`.
    Exhausted { delay: Duration },
}

/// Decides a restart.
///
/// `in_window` is the number of restarts that count against `max_restarts`
/// (the supervisor's for a critical child, the child's own for a
/// non-critical one) including the restart about to happen; `consecutive` is
/// the child's failures in a row, this one included.
pub(crate) fn verdict(
    criticality: Criticality,
    in_window: usize,
    max_restarts: u32,
    backoff: &RestartBackoff,
    consecutive: u32,
) -> Verdict {
    let over = in_window > max_restarts as usize;
    match (criticality, over) {
        (Criticality::Critical, true) => Verdict::Escalate,
        (Criticality::NonCritical, true) => Verdict::Exhausted {
            delay: backoff.max.max(backoff.delay(consecutive)),
        },
        (_, false) => Verdict::Restart {
            delay: backoff.delay(consecutive),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: RestartBackoff = RestartBackoff {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(5),
        reset_after: Duration::from_secs(60),
    };

    /// criticality × (under / at / over the limit) × (first / later failure).
    #[test]
    fn verdict_truth_table() {
        use Criticality::*;
        let ms = Duration::from_millis;
        let table = [
            (Critical, 1, 1, Verdict::Restart { delay: ms(0) }),
            (Critical, 3, 1, Verdict::Restart { delay: ms(0) }),
            (Critical, 3, 3, Verdict::Restart { delay: ms(200) }),
            (Critical, 4, 1, Verdict::Escalate),
            (Critical, 4, 9, Verdict::Escalate),
            (NonCritical, 1, 1, Verdict::Restart { delay: ms(0) }),
            (NonCritical, 3, 2, Verdict::Restart { delay: ms(100) }),
            (NonCritical, 4, 1, Verdict::Exhausted { delay: ms(5000) }),
            (NonCritical, 40, 40, Verdict::Exhausted { delay: ms(5000) }),
        ];
        for (crit, in_window, consecutive, want) in table {
            assert_eq!(
                verdict(crit, in_window, 3, &B, consecutive),
                want,
                "{crit:?} in_window={in_window} consecutive={consecutive}"
            );
        }
    }

    #[test]
    fn delays_double_and_cap() {
        let got: Vec<u128> = (1..=9).map(|n| B.delay(n).as_millis()).collect();
        assert_eq!(got, [0, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(B.delay(u32::MAX), B.max, "no overflow");
        assert_eq!(RestartBackoff::NONE.delay(5), Duration::ZERO);
    }
}
