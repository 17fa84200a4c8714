//! [`Clock`]: where the mock's CRI timestamps (`created_at`, `started_at`,
//! `finished_at`, log line times) come from.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock behind every timestamp the mock reports.
///
/// The default, [`Clock::tokio`], is the system time taken when the mock is
/// built, advanced by **tokio** time since then. Outside a paused runtime it
/// follows the real clock; under `#[tokio::test(start_paused = true)]` it
/// moves exactly as far as the virtual clock does, so a container that exits
/// "after 30 s" has `finished_at - started_at == 30 s` even though the test
/// took microseconds.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl Clock {
    /// System time at creation plus the tokio time elapsed since (the default).
    pub fn tokio() -> Self {
        let base = SystemTime::now();
        let start = tokio::time::Instant::now();
        Self(Arc::new(move || base + start.elapsed()))
    }

    /// The real system clock, ignoring tokio's virtual time.
    pub fn system() -> Self {
        Self(Arc::new(SystemTime::now))
    }

    /// Any time source, e.g. a fixed instant for golden tests.
    pub fn from_fn(f: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The current time.
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }

    /// The current time in nanoseconds since the Unix epoch (the CRI's unit).
    pub fn now_nanos(&self) -> i64 {
        unix_nanos(self.now())
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::tokio()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Clock").field(&self.now()).finish()
    }
}

/// Nanoseconds since the Unix epoch; 0 before it, saturating far after it.
pub(crate) fn unix_nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
