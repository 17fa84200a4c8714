//! Keyed exponential backoff (upstream `flowcontrol.Backoff`), used for
//! container restarts (`CrashLoopBackOff`) and image pulls (`ImagePullBackOff`).
//!
//! # Semantics (as upstream, without jitter — the kubelet uses none)
//! - [`Backoff::next`] starts an entry at the initial delay (10s), or doubles
//!   it up to the maximum (300s). It records *now* as the entry's last update.
//! - [`Backoff::is_in_backoff`] is true while less than the entry's delay has
//!   passed since `last_finish` (when the container last exited).
//! - An entry whose event came more than 2×max (10 min) after its last update
//!   has *expired*: the container ran that long, so the delay starts over.
//! - [`Backoff::gc`] drops entries not updated for 2×max.
//!
//! Times are [`tokio::time::Instant`]s passed in by the caller, so tests drive
//! the backoff with paused time. The type is shared (`&self`, internal lock);
//! no lock is held across an await.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// Initial container restart and image pull backoff (upstream `backOffPeriod`).
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(10);
/// Maximum container restart and image pull backoff (`MaxContainerBackOff`).
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug)]
struct Entry {
    backoff: Duration,
    last_update: Instant,
}

/// Per-key exponential backoff.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(INITIAL_BACKOFF, MAX_BACKOFF)
    }
}

impl Backoff {
    /// A backoff starting at `initial`, doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock cannot leave the map inconsistent.
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn has_expired(&self, event_time: Instant, last_update: Instant) -> bool {
        event_time.saturating_duration_since(last_update) > self.max * 2
    }

    /// The current delay for `key` (zero when there is no entry).
    pub fn get(&self, key: &str) -> Duration {
        self.entries().get(key).map(|e| e.backoff).unwrap_or_default()
    }

    /// Moves `key` to its next delay: the initial delay for a new or expired
    /// entry (`event_time` more than 2×max after the last update), else double
    /// the current one, capped at max. Records `now` as the last update.
    pub fn next(&self, key: &str, event_time: Instant, now: Instant) {
        let mut entries = self.entries();
        let backoff = match entries.get(key) {
            Some(e) if !self.has_expired(event_time, e.last_update) => (e.backoff * 2).min(self.max),
            _ => self.initial,
        };
        entries.insert(
            key.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// Upstream `IsInBackOffSince`: true while less than the current delay has
    /// passed between `last_finish` and `now`. False for unknown or expired keys.
    pub fn is_in_backoff(&self, key: &str, now: Instant, last_finish: Instant) -> bool {
        match self.entries().get(key) {
            Some(e) if !self.has_expired(last_finish, e.last_update) => {
                now.saturating_duration_since(last_finish) < e.backoff
            }
            _ => false,
        }
    }

    /// Upstream `IsInBackOffSinceUpdate`: true while less than the current
    /// delay has passed since the last [`next`](Self::next) (image pulls).
    pub fn is_in_backoff_since_update(&self, key: &str, now: Instant) -> bool {
        match self.entries().get(key) {
            Some(e) if !self.has_expired(now, e.last_update) => {
                now.saturating_duration_since(e.last_update) < e.backoff
            }
            _ => false,
        }
    }

    /// When the current delay since the last [`next`](Self::next) ends, while
    /// [`is_in_backoff_since_update`](Self::is_in_backoff_since_update) is true.
    pub fn expiry_since_update(&self, key: &str, now: Instant) -> Option<Instant> {
        match self.entries().get(key) {
            Some(e)
                if !self.has_expired(now, e.last_update)
                    && now.saturating_duration_since(e.last_update) < e.backoff =>
            {
                Some(e.last_update + e.backoff)
            }
            _ => None,
        }
    }

    /// Forgets `key`.
    pub fn reset(&self, key: &str) {
        self.entries().remove(key);
    }

    /// Drops entries not updated for more than 2×max (housekeeping).
    pub fn gc(&self, now: Instant) {
        let max2 = self.max * 2;
        self.entries()
            .retain(|_, e| now.saturating_duration_since(e.last_update) <= max2);
    }

    /// The keys with an entry (expired ones too, until [`gc`](Self::gc)).
    pub fn keys(&self) -> Vec<String> {
        self.entries().keys().cloned().collect()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The restart backoff key of a container (upstream `getStableKey`):
/// `<pod>_<namespace>_<uid>_<container>_<hash>`, so a spec change starts a
/// fresh backoff.
pub fn container_backoff_key(pod_name: &str, namespace: &str, uid: &str, container: &str, hash: &str) -> String {
    format!("{pod_name}_{namespace}_{uid}_{container}_{hash}")
}

/// The image pull backoff key: `<uid>_<image>`.
pub fn image_backoff_key(uid: &str, image: &str) -> String {
    format!("{uid}_{image}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn unknown_keys_are_not_in_backoff() {
        let b = Backoff::default();
        let t0 = Instant::now();
        assert!(!b.is_in_backoff("k", t0, t0));
        assert!(!b.is_in_backoff_since_update("k", t0));
        assert_eq!(b.get("k"), Duration::ZERO);
        assert!(b.is_empty());
    }

    #[test]
    fn delays_double_from_10s_to_300s() {
        let b = Backoff::default();
        let mut now = Instant::now();
        let mut seen = vec![];
        for _ in 0..8 {
            b.next("k", now, now);
            seen.push(b.get("k").as_secs());
            now += S(1);
        }
        assert_eq!(seen, [10, 20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn in_backoff_until_the_delay_has_passed_since_the_last_finish() {
        let b = Backoff::default();
        let t0 = Instant::now();
        b.next("k", t0, t0);
        b.next("k", t0, t0); // 20s
        let finish = t0 + S(5);
        assert!(b.is_in_backoff("k", finish, finish));
        assert!(b.is_in_backoff("k", finish + S(19), finish));
        assert!(!b.is_in_backoff("k", finish + S(20), finish));
        assert!(
            b.is_in_backoff("k", finish - S(1), finish),
            "finish in the future counts as just now"
        );
    }

    #[test]
    fn a_container_that_ran_for_more_than_ten_minutes_starts_over() {
        let b = Backoff::default();
        let t0 = Instant::now();
        for _ in 0..6 {
            b.next("k", t0, t0);
        }
        assert_eq!(b.get("k"), S(300));
        let finish = t0 + S(601);
        assert!(!b.is_in_backoff("k", finish, finish), "expired entry: no backoff");
        b.next("k", finish, finish);
        assert_eq!(b.get("k"), S(10), "restarts from the initial delay");
        let short = finish + S(600);
        assert!(b.is_in_backoff("k", short, short), "exactly 2×max is not expired");
        b.next("k", short, short);
        assert_eq!(b.get("k"), S(20));
    }

    #[test]
    fn since_update_is_measured_from_the_last_next() {
        let b = Backoff::default();
        let t0 = Instant::now();
        b.next("img", t0, t0);
        assert!(b.is_in_backoff_since_update("img", t0 + S(9)));
        assert!(!b.is_in_backoff_since_update("img", t0 + S(10)));
        b.next("img", t0 + S(10), t0 + S(10));
        assert!(b.is_in_backoff_since_update("img", t0 + S(29)));
        assert!(!b.is_in_backoff_since_update("img", t0 + S(30)));
    }

    #[test]
    fn keys_are_independent_and_reset_forgets() {
        let b = Backoff::default();
        let t0 = Instant::now();
        b.next("a", t0, t0);
        b.next("a", t0, t0);
        b.next("b", t0, t0);
        assert_eq!((b.get("a"), b.get("b")), (S(20), S(10)));
        b.reset("a");
        assert_eq!(b.get("a"), Duration::ZERO);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn gc_drops_entries_idle_for_twice_the_max() {
        let b = Backoff::default();
        let t0 = Instant::now();
        b.next("old", t0, t0);
        b.next("new", t0 + S(300), t0 + S(300));
        b.gc(t0 + S(600));
        assert_eq!(b.len(), 2, "exactly 2×max idle is kept");
        b.gc(t0 + S(601));
        assert_eq!(b.len(), 1);
        assert_eq!(b.get("new"), S(10));
    }

    #[test]
    fn custom_bounds_are_honoured() {
        let b = Backoff::new(Duration::from_millis(100), S(1));
        let t0 = Instant::now();
        let delays: Vec<_> = (0..5)
            .map(|_| {
                b.next("k", t0, t0);
                b.get("k").as_millis()
            })
            .collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000]);
    }

    #[test]
    fn keys_follow_upstream_formats() {
        assert_eq!(
            container_backoff_key("web", "prod", "u1", "nginx", "ab12"),
            "web_prod_u1_nginx_ab12"
        );
        assert_eq!(image_backoff_key("u1", "busybox:1.36"), "u1_busybox:1.36");
    }

    #[test]
    fn expiry_since_update_is_last_update_plus_delay() {
        let b = Backoff::default();
        let t0 = Instant::now();
        assert_eq!(b.expiry_since_update("k", t0), None);
        b.next("k", t0, t0);
        assert_eq!(
            b.expiry_since_update("k", t0 + Duration::from_secs(3)),
            Some(t0 + Duration::from_secs(10))
        );
        assert_eq!(b.expiry_since_update("k", t0 + Duration::from_secs(10)), None);
    }
}
