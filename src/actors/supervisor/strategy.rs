//! Restart strategies, per-child restart policies and restart intensity.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::exit::ExitReason;

/// Which children a supervisor restarts when one of them must be restarted
/// (OTP `strategy`).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intensity {
    /// Restarts tolerated inside the window (`0` escalates on the first one).
    pub max_restarts: u32,
    /// Length of the sliding window.
    pub within: Duration,
}

impl Intensity {
    /// `max_restarts` restarts within `within`.
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
