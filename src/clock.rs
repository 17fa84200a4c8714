//! The one wall clock of the crate: what API timestamps, status times, event
//! stamps, lease renewals and GC ages are read against.
//!
//! Every component that needs "now" as a [`Timestamp`] takes a [`WallClock`]:
//! the system clock in production, a virtual one in tests (the mock runtime's
//! paused clock, or a frozen instant). Monotonic deadlines are not read here:
//! they use tokio's clock, which `tokio::time::pause` controls.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::jiff::Timestamp;

/// A source of wall-clock time: the system clock, or (tests) a virtual one
/// such as the mock runtime's.
///
/// ```
/// use std::sync::Arc;
/// use actlet::clock::WallClock;
/// use k8s_openapi::jiff::Timestamp;
/// // a frozen clock, e.g. for reproducible status timestamps in tests
/// let t = Timestamp::from_second(1_700_000_000).unwrap();
/// let clock = WallClock(Arc::new(move || t));
/// assert_eq!(clock.now(), t);
/// let mut config = actlet::KubeletConfig::new("node-a");
/// config.wall_clock = clock;
/// ```
#[derive(Clone)]
pub struct WallClock(pub Arc<dyn Fn() -> Timestamp + Send + Sync>);

impl WallClock {
    /// The system clock.
    ///
    /// ```
    /// use actlet::clock::WallClock;
    /// let now = WallClock::system().now();
    /// assert!(now > k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    /// ```
    pub fn system() -> Self {
        Self(Arc::new(system_now))
    }

    /// A clock reading `f`.
    ///
    /// ```
    /// use actlet::clock::WallClock;
    /// use k8s_openapi::jiff::Timestamp;
    /// let clock = WallClock::from_fn(|| Timestamp::UNIX_EPOCH);
    /// assert_eq!(clock.now(), Timestamp::UNIX_EPOCH);
    /// ```
    pub fn from_fn(f: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// The current time.
    ///
    /// ```
    /// let clock = actlet::clock::WallClock::default(); // the system clock
    /// let (a, b) = (clock.now(), clock.now());
    /// assert!(a <= b);
    /// ```
    pub fn now(&self) -> Timestamp {
        (self.0)()
    }
}

impl Default for WallClock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for WallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WallClock")
    }
}

/// A [`SystemTime`] as a [`Timestamp`] (jiff is built without `std` here);
/// times before the epoch read as the epoch.
pub fn timestamp_from_system_time(t: SystemTime) -> Timestamp {
    let nanos = t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    Timestamp::from_nanosecond(i128::try_from(nanos).unwrap_or(0)).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The system clock as a [`Timestamp`].
pub fn system_now() -> Timestamp {
    timestamp_from_system_time(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_time_before_the_epoch_reads_as_the_epoch() {
        let before = UNIX_EPOCH - std::time::Duration::from_secs(5);
        assert_eq!(timestamp_from_system_time(before), Timestamp::UNIX_EPOCH);
    }

    #[test]
    fn system_time_converts_to_the_nanosecond() {
        let t = UNIX_EPOCH + std::time::Duration::new(1_700_000_000, 123);
        assert_eq!(timestamp_from_system_time(t).as_nanosecond(), 1_700_000_000_000_000_123);
    }
}
