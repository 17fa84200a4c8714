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
///
/// ```
/// use std::time::Duration;
/// use actlet::cri::mock::{Clock, MockRuntime};
/// # actlet::testing::run_paused(async {
/// let mock = MockRuntime::builder().clock(Clock::tokio()).build(); // the default
/// let t0 = mock.clock().now();
/// tokio::time::sleep(Duration::from_secs(90)).await; // virtual: returns at once
/// assert_eq!(mock.clock().now().duration_since(t0).unwrap(), Duration::from_secs(90));
/// # });
/// ```
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl Clock {
    /// System time at creation plus the tokio time elapsed since (the default).
    ///
    /// ```
    /// use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// let clock = actlet::cri::mock::Clock::tokio();
    /// let t0 = clock.now();
    /// tokio::time::advance(Duration::from_secs(5)).await;
    /// assert_eq!(clock.now().duration_since(t0).unwrap(), Duration::from_secs(5));
    /// # });
    /// ```
    pub fn tokio() -> Self {
        let base = SystemTime::now();
        let start = tokio::time::Instant::now();
        Self(Arc::new(move || base + start.elapsed()))
    }

    /// The real system clock, ignoring tokio's virtual time.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let clock = actlet::cri::mock::Clock::system();
    /// let now = clock.now();
    /// let diff = now.duration_since(SystemTime::now()).unwrap_or_else(|e| e.duration());
    /// assert!(diff < Duration::from_secs(60)); // the real time, whatever tokio does
    /// ```
    pub fn system() -> Self {
        Self(Arc::new(SystemTime::now))
    }

    /// Any time source, e.g. a fixed instant for golden tests.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let clock = actlet::cri::mock::Clock::from_fn(|| UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    /// assert_eq!(clock.now_nanos(), 1_700_000_000_000_000_000);
    /// ```
    pub fn from_fn(f: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The current time.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let clock = actlet::cri::mock::Clock::from_fn(|| UNIX_EPOCH + Duration::from_secs(60));
    /// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(60));
    /// ```
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }

    /// The current time in nanoseconds since the Unix epoch (the CRI's unit).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let clock = actlet::cri::mock::Clock::from_fn(|| UNIX_EPOCH + Duration::from_millis(1500));
    /// assert_eq!(clock.now_nanos(), 1_500_000_000); // like the CRI's `created_at`
    /// ```
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
