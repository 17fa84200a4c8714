//! [`Coalesce`]: leading-edge coalescing of work whose cost grows with the
//! whole set (the API source sends PodConfig every pod it knows after each
//! change, as upstream's undelta store does).
//!
//! At 10,000 pods each such snapshot costs milliseconds in the source and
//! the merge, and a node that starts pods sees a watch event for every
//! status patch it makes: one snapshot per event would be quadratic. So the
//! first change after a quiet `window` is published at once (a single new
//! pod waits for nothing), and every further change within the window is
//! folded into one publish at its end. Nothing is lost: the publish sends
//! the set as it is then, which holds every change.

use std::time::Duration;

use tokio::time::Instant;

/// What to do about a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publish {
    /// Publish now (the window since the last publish has passed).
    Now,
    /// Schedule one publish after this delay.
    After(Duration),
    /// A publish is already scheduled; it will include this change.
    Scheduled,
}

/// The coalescing state of one publisher.
///
/// ```
/// use std::time::Duration;
/// use actlet::cluster::coalesce::{Coalesce, Publish};
/// use tokio::time::Instant;
///
/// let mut c = Coalesce::new(Duration::from_millis(50));
/// let t0 = Instant::now();
/// assert_eq!(c.change(t0), Publish::Now);
/// assert_eq!(c.change(t0 + Duration::from_millis(10)), Publish::After(Duration::from_millis(40)));
/// assert_eq!(c.change(t0 + Duration::from_millis(20)), Publish::Scheduled);
/// c.published(t0 + Duration::from_millis(50)); // the scheduled publish ran
/// assert_eq!(c.change(t0 + Duration::from_millis(200)), Publish::Now);
/// ```
#[derive(Debug)]
pub struct Coalesce {
    window: Duration,
    last: Option<Instant>,
    scheduled: bool,
}

impl Coalesce {
    /// At most one publish per `window`, the first at once.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            last: None,
            scheduled: false,
        }
    }

    /// A change happened at `now`: publish now (recorded as done), schedule
    /// one, or nothing (one is scheduled).
    pub fn change(&mut self, now: Instant) -> Publish {
        if self.scheduled {
            return Publish::Scheduled;
        }
        match self.last {
            Some(last) if now < last + self.window => {
                self.scheduled = true;
                Publish::After(last + self.window - now)
            }
            _ => {
                self.last = Some(now);
                Publish::Now
            }
        }
    }

    /// A scheduled publish ran, or the caller published out of turn (a flush).
    pub fn published(&mut self, now: Instant) {
        self.last = Some(now);
        self.scheduled = false;
    }

    /// Whether a publish is scheduled.
    pub fn is_scheduled(&self) -> bool {
        self.scheduled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_millis(50);

    #[test]
    fn a_burst_is_one_publish_now_and_one_at_the_window_end() {
        let mut c = Coalesce::new(W);
        let t0 = Instant::now();
        let mut now_count = 0;
        let mut scheduled = vec![];
        for i in 0..1000u64 {
            match c.change(t0 + Duration::from_micros(i * 10)) {
                Publish::Now => now_count += 1,
                Publish::After(d) => scheduled.push(d),
                Publish::Scheduled => {}
            }
        }
        assert_eq!(now_count, 1);
        assert_eq!(scheduled.len(), 1, "1000 changes in 10 ms: one scheduled publish");
        assert!(scheduled[0] <= W);
        assert!(c.is_scheduled());
    }

    #[test]
    fn a_flush_starts_a_new_window_and_quiet_changes_publish_at_once() {
        let mut c = Coalesce::new(W);
        let t0 = Instant::now();
        assert_eq!(c.change(t0), Publish::Now);
        assert!(matches!(c.change(t0 + Duration::from_millis(1)), Publish::After(_)));
        c.published(t0 + Duration::from_millis(2)); // flushed out of turn
        assert!(!c.is_scheduled());
        assert_eq!(
            c.change(t0 + Duration::from_millis(3)),
            Publish::After(Duration::from_millis(49))
        );
        c.published(t0 + Duration::from_millis(52));
        assert_eq!(c.change(t0 + Duration::from_millis(102)), Publish::Now);
    }
}
