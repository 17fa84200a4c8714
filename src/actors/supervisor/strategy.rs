//! Restart strategies, per-child restart policies and restart intensity.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::exit::ExitReason;

/// Which children a supervisor restarts when one of them must be restarted
/// (OTP `strategy`).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let [a, b, c] = ["a", "b", "c"].map(|name| ChildSpec::new(name, || Counter(0)));
/// let refs = [a.child_ref(), b.child_ref(), c.child_ref()];
/// let _root = SupervisorSpec::new("root").strategy(Strategy::RestForOne).child(a).child(b).child(c).start_root();
/// for r in &refs {
///     r.send(Add(5)).await.unwrap();
/// }
/// refs[1].do_send(Crash).unwrap(); // `b` fails: `c`, started after it, is restarted too
/// assert_eq!(refs[1].send(Add(1)).await, Ok(1));
/// let counts = [refs[0].send(Add(0)).await, refs[2].send(Add(0)).await];
/// assert_eq!(counts, [Ok(5), Ok(0)], "a kept its state, c is fresh");
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Restart only the child that exited.
    #[default]
    OneForOne,
    /// Stop every other running child (reverse start order), then restart
    /// all of them in start order.
    OneForAll,
    /// Stop the running children started after the one that exited (reverse
    /// start order), then restart it and them in start order.
    RestForOne,
}

/// When a child is restarted after it exits (OTP `restart`).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let spec = ChildSpec::new("once", || Counter(0)).restart(RestartPolicy::Temporary);
/// let once = spec.child_ref();
/// let root = SupervisorSpec::new("root").child(spec).start_root();
/// once.do_send(Crash).unwrap(); // fails, and is not restarted
/// tokio::time::sleep(Duration::from_millis(10)).await;
/// assert!(!once.is_open());
/// assert_eq!(root.tree().get("root/once").map(|c| c.restarts).unwrap_or(0), 0);
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartPolicy {
    /// Always restarted, whatever the exit reason.
    #[default]
    Permanent,
    /// Restarted only after an abnormal exit (panic, [`fail`](super::fail),
    /// unexpected kill); a normal stop retires it.
    Transient,
    /// Never restarted.
    Temporary,
}

impl RestartPolicy {
    /// Whether a child with this policy is restarted after exiting with `reason`.
    ///
    /// ```
    /// # use actlet::actors::supervisor::{ExitReason, RestartPolicy};
    /// let crashed = ExitReason::Panicked("boom".into());
    /// assert!(RestartPolicy::Permanent.should_restart(&ExitReason::Normal));
    /// assert!(!RestartPolicy::Transient.should_restart(&ExitReason::Normal));
    /// assert!(RestartPolicy::Transient.should_restart(&crashed));
    /// assert!(!RestartPolicy::Temporary.should_restart(&crashed));
    /// ```
    pub fn should_restart(self, reason: &ExitReason) -> bool {
        match self {
            Self::Permanent => true,
            Self::Transient => reason.is_abnormal(),
            Self::Temporary => false,
        }
    }
}

/// Restart intensity: at most `max_restarts` restarts within any sliding
/// window of `within`; one more and the supervisor gives up and escalates.
///
/// ```
/// # use std::time::Duration;
/// # use actlet::actors::supervisor::Intensity;
/// let default = Intensity::default();
/// assert_eq!((default.max_restarts, default.within), (3, Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intensity {
    /// Restarts tolerated inside the window (`0` escalates on the first one).
    pub max_restarts: u32,
    /// Length of the sliding window.
    pub within: Duration,
}

impl Intensity {
    /// `max_restarts` restarts within `within`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::actors::supervisor::Intensity;
    /// const RELAXED: Intensity = Intensity::new(10, Duration::from_secs(60));
    /// assert_eq!(RELAXED.max_restarts, 10);
    /// ```
    pub const fn new(max_restarts: u32, within: Duration) -> Self {
        Self { max_restarts, within }
    }
}

impl Default for Intensity {
    /// Three restarts within five seconds.
    fn default() -> Self {
        Self::new(3, Duration::from_secs(5))
    }
}

/// Restart timestamps inside a sliding window (tokio time, so paused time works).
#[derive(Debug, Default)]
pub(crate) struct RestartWindow {
    times: VecDeque<Instant>,
}

impl RestartWindow {
    /// Records a restart at `now` and returns how many fall within `within`.
    pub(crate) fn record(&mut self, now: Instant, within: Duration) -> usize {
        self.times.push_back(now);
        self.count(now, within)
    }

    /// Restarts within `within` before `now` (older ones are forgotten).
    pub(crate) fn count(&mut self, now: Instant, within: Duration) -> usize {
        while let Some(&oldest) = self.times.front() {
            if now.duration_since(oldest) >= within {
                self.times.pop_front();
            } else {
                break;
            }
        }
        self.times.len()
    }
}
