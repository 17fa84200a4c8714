//! How actlet's watches come back after the API server was away.
//!
//! kube-runtime's default watcher backoff (client-go's reflector: 0.8 s
//! doubling to 30 s, jittered) is kind to a struggling API server, but after
//! a 60 s outage it leaves the pod watch asleep for up to 30 s more, and the
//! 410 Gone a restarted API server answers the resumed watch with costs
//! another full backoff before the re-list. Measured on real containerd and
//! kube-apiserver (tests/chaos_apiserver_down.rs): mirror pods and statuses
//! converged 73–83 s after the API server returned.
//!
//! Two remedies, both keeping the backoff for a server that is still away:
//! - [`WatchBackoff`]: the same exponential backoff, except that the retry
//!   after a watch expiry (410 Gone/Expired) is immediate — the watcher has
//!   already dropped its resourceVersion and the next step is the re-list.
//! - [`ApiReachability`]: a shared signal the heartbeat (node Lease) raises
//!   when it gets through to the API server after failing; a watch that is
//!   failing restarts at once instead of sleeping out its backoff. The
//!   heartbeat retries every 0.2–7 s while the server is away, so the
//!   restart is spread out across nodes the way lease renewals are.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{Stream, TryStreamExt};
use kube::runtime::utils::{Backoff, StreamBackoff};
use kube::runtime::watcher;
use tokio::sync::watch;

/// The exponential part of [`WatchBackoff`]: first delay and cap.
///
/// ```
/// let p = actlet::cluster::WatchBackoffPolicy::default();
/// assert_eq!((p.initial, p.max), (std::time::Duration::from_millis(800), std::time::Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchBackoffPolicy {
    /// The first retry delay (doubled after each failure in a row).
    pub initial: Duration,
    /// The longest retry delay.
    pub max: Duration,
}

impl Default for WatchBackoffPolicy {
    /// client-go's reflector: 0.8 s … 30 s.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
        }
    }
}

/// Whether a watcher error is a watch expiry (HTTP 410: the resourceVersion
/// is too old), after which the watcher re-lists.
///
/// ```
/// use kube::core::Status;
/// use kube::runtime::watcher::Error;
/// let gone = |code| Error::WatchError(Status::failure("too old resource version", "Expired").with_code(code).boxed());
/// assert!(actlet::cluster::watch_backoff::is_expiry(&gone(410)));
/// assert!(!actlet::cluster::watch_backoff::is_expiry(&gone(500)));
/// ```
pub fn is_expiry(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchError(status) => status.code == 410,
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

/// Exponential backoff whose next delay is zero right after a watch expiry.
/// Reset by the watcher stream on every successful event.
///
/// ```
/// use std::time::Duration;
/// use actlet::cluster::watch_backoff::{WatchBackoff, WatchBackoffPolicy};
/// let policy = WatchBackoffPolicy { initial: Duration::from_secs(1), max: Duration::from_secs(4) };
/// let mut b = WatchBackoff::new(policy);
/// let expired = b.expiry_flag();
/// assert!(b.next().is_some_and(|d| d <= Duration::from_secs(2))); // 1 s + jitter
/// expired.store(true, std::sync::atomic::Ordering::SeqCst);
/// assert_eq!(b.next(), Some(Duration::ZERO)); // the re-list right away
/// ```
pub struct WatchBackoff {
    policy: WatchBackoffPolicy,
    /// The un-jittered next delay.
    next: Duration,
    expired: Arc<AtomicBool>,
}

impl WatchBackoff {
    /// A backoff after `policy`: doubling, each delay jittered up to twice
    /// its base as client-go's, never above `policy.max`.
    pub fn new(policy: WatchBackoffPolicy) -> Self {
        Self {
            policy,
            next: policy.initial,
            expired: Arc::default(),
        }
    }

    /// The flag that makes the next delay zero (set it when the error just
    /// seen was a watch expiry).
    pub fn expiry_flag(&self) -> Arc<AtomicBool> {
        self.expired.clone()
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.expired.swap(false, Ordering::SeqCst) {
            return Some(Duration::ZERO);
        }
        let base = self.next.min(self.policy.max);
        self.next = base.saturating_mul(2).min(self.policy.max);
        let jitter = base.mul_f64(rand::random::<f64>());
        Some((base + jitter).min(self.policy.max))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.expired.store(false, Ordering::SeqCst);
        self.next = self.policy.initial;
    }
}

/// A watcher stream with [`WatchBackoff`]: errors are still yielded (for
/// logging), expiries re-list at once, other errors back off.
pub fn backoff_watch<S, T>(
    stream: S,
    policy: WatchBackoffPolicy,
) -> impl Stream<Item = Result<T, watcher::Error>> + Send + use<S, T>
where
    S: Stream<Item = Result<T, watcher::Error>> + Send,
    T: Send,
{
    let backoff = WatchBackoff::new(policy);
    let expired = backoff.expiry_flag();
    let stream = stream.inspect_err(move |e| {
        if is_expiry(e) {
            expired.store(true, Ordering::SeqCst);
        }
    });
    StreamBackoff::new(stream, backoff)
}

/// "The API server answered the heartbeat again": a generation counter the
/// node Lease bumps on its first success after a failure (and on its first
/// success after it starts). Shared, outside every actor; cheap to clone.
///
/// ```
/// let r = actlet::cluster::ApiReachability::default();
/// let mut seen = r.subscribe();
/// r.reached();
/// assert!(seen.has_changed().unwrap_or(false));
/// ```
#[derive(Clone, Debug)]
pub struct ApiReachability {
    tx: Arc<watch::Sender<u64>>,
}

impl Default for ApiReachability {
    fn default() -> Self {
        Self {
            tx: Arc::new(watch::channel(0).0),
        }
    }
}

impl ApiReachability {
    /// Records that the API server answered after being unreachable.
    pub fn reached(&self) {
        self.tx.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// A receiver that changes whenever [`Self::reached`] is called.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use kube::core::Status;

    fn err(code: u16) -> watcher::Error {
        watcher::Error::WatchError(Status::failure("m", "r").with_code(code).boxed())
    }

    #[test]
    fn backoff_grows_to_the_cap_and_resets() {
        let policy = WatchBackoffPolicy {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(4),
        };
        let mut b = WatchBackoff::new(policy);
        let delays: Vec<_> = (0..6).map(|_| b.next().unwrap_or_default()).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(4)), "{delays:?}");
        assert!(delays[5] >= Duration::from_secs(2), "grew: {delays:?}");
        b.reset();
        assert!(b.next().unwrap_or_default() <= Duration::from_secs(2));
    }

    #[test]
    fn an_expiry_makes_only_the_next_delay_zero() {
        let mut b = WatchBackoff::new(WatchBackoffPolicy {
            initial: Duration::from_secs(10),
            max: Duration::from_secs(10),
        });
        b.expiry_flag().store(true, Ordering::SeqCst);
        assert_eq!(b.next(), Some(Duration::ZERO));
        assert!(b.next().unwrap_or_default() > Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_410_is_retried_at_once_other_errors_wait() {
        let policy = WatchBackoffPolicy {
            initial: Duration::from_secs(600),
            max: Duration::from_secs(600),
        };
        // 410 then Ok: no wait at all (paused time would otherwise have to advance).
        let start = tokio::time::Instant::now();
        let s = backoff_watch(futures::stream::iter([Err(err(410)), Ok(1)]), policy);
        let got: Vec<_> = s.map(|r| r.is_ok()).collect().await;
        assert_eq!(got, vec![false, true]);
        assert_eq!(start.elapsed(), Duration::ZERO, "re-listed right after the expiry");

        // 500 then Ok: the backoff delay runs (auto-advanced paused time).
        let start = tokio::time::Instant::now();
        let s = backoff_watch(futures::stream::iter([Err(err(500)), Ok(1)]), policy);
        let _: Vec<_> = s.collect().await;
        assert!(
            start.elapsed() >= Duration::from_secs(300),
            "backed off: {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn reachability_is_a_counter_every_subscriber_sees() {
        let r = ApiReachability::default();
        let mut a = r.subscribe();
        let b = r.clone();
        b.reached();
        b.reached();
        assert_eq!(*a.borrow_and_update(), 2);
        assert!(!a.has_changed().unwrap_or(true));
    }
}
