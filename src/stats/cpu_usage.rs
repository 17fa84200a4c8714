//! `usageNanoCores` from two samples of cumulative CPU time, as upstream's
//! CRI stats provider computes it (`getAndUpdateContainerUsageNanoCores`):
//! the runtime's own value wins; otherwise the rate between the cached
//! sample and this one; nothing on the first sample or when the counter went
//! backwards (a new container under the same key). Entries not updated for
//! [`CACHE_PERIOD`] (by the local monotonic clock, not the runtime's sample
//! times) are dropped.
//!
//! The cache is a shared handle: the stats provider lives in the server, but
//! a restarted holder must not lose the samples (the next scrape would have
//! no rate).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Samples older than this are forgotten (upstream `defaultCachePeriod`).
pub const CACHE_PERIOD: Duration = Duration::from_secs(10 * 60);

/// One CPU sample: when (Unix nanoseconds) and the cumulative usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuSample {
    /// Sample time in Unix nanoseconds.
    pub timestamp: i64,
    /// Cumulative core-nanoseconds.
    pub usage_core_nano_seconds: u64,
}

#[derive(Clone, Copy, Debug)]
struct Record {
    sample: CpuSample,
    usage_nano_cores: Option<u64>,
    updated: Instant,
}

/// The rate between two samples, or `None` when it cannot be computed.
///
/// ```
/// use actlet::stats::cpu_usage::{CpuSample, nano_cores};
/// let a = CpuSample { timestamp: 0, usage_core_nano_seconds: 1_000_000_000 };
/// let b = CpuSample { timestamp: 10_000_000_000, usage_core_nano_seconds: 6_000_000_000 };
/// assert_eq!(nano_cores(&a, &b), Some(500_000_000)); // half a core
/// assert_eq!(nano_cores(&b, &a), None);
/// ```
pub fn nano_cores(prev: &CpuSample, now: &CpuSample) -> Option<u64> {
    let interval = now.timestamp - prev.timestamp;
    if interval <= 0 || now.usage_core_nano_seconds < prev.usage_core_nano_seconds {
        return None;
    }
    let delta = (now.usage_core_nano_seconds - prev.usage_core_nano_seconds) as f64;
    Some((delta / interval as f64 * 1e9) as u64)
}

/// Cached samples by key (container ID, `pod/<uid>`, `node`).
#[derive(Clone, Debug, Default)]
pub struct CpuUsageCache {
    inner: Arc<Mutex<HashMap<String, Record>>>,
}

impl CpuUsageCache {
    /// `usageNanoCores` for `key` given this sample and what the runtime
    /// reported (`reported` wins and bypasses the cache, as upstream);
    /// caches the sample.
    pub fn update(&self, key: &str, sample: CpuSample, reported: Option<u64>) -> Option<u64> {
        self.update_at(key, sample, reported, Instant::now())
    }

    /// [`update`](Self::update) at local time `now`.
    pub fn update_at(&self, key: &str, sample: CpuSample, reported: Option<u64>, now: Instant) -> Option<u64> {
        if reported.is_some() {
            return reported;
        }
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let usage = map.get(key).and_then(|prev| nano_cores(&prev.sample, &sample));
        let keep = match map.get(key) {
            // the same sample again: keep the earlier rate
            Some(prev) if prev.sample == sample => prev.usage_nano_cores,
            _ => usage,
        };
        map.insert(
            key.to_string(),
            Record {
                sample,
                usage_nano_cores: keep,
                updated: now,
            },
        );
        keep
    }

    /// The last computed rate for `key`, without a new sample
    /// (upstream `getContainerUsageNanoCores`).
    pub fn last(&self, key: &str) -> Option<u64> {
        let map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key).and_then(|r| r.usage_nano_cores)
    }

    /// Drops keys not updated within [`CACHE_PERIOD`] before `now`.
    pub fn expire(&self, now: Instant) {
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, r| now.saturating_duration_since(r.updated) <= CACHE_PERIOD);
    }

    /// Number of cached keys.
    pub fn len(&self) -> usize {
        self.inner.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_secs: i64, used_ms: u64) -> CpuSample {
        CpuSample {
            timestamp: t_secs * 1_000_000_000,
            usage_core_nano_seconds: used_ms * 1_000_000,
        }
    }

    #[test]
    fn first_sample_has_no_rate_second_has_it() {
        let c = CpuUsageCache::default();
        assert_eq!(c.update("a", s(100, 1000), None), None);
        assert_eq!(c.update("a", s(110, 3500), None), Some(250_000_000));
        assert_eq!(c.last("a"), Some(250_000_000));
        // the same sample again keeps the rate
        assert_eq!(c.update("a", s(110, 3500), None), Some(250_000_000));
    }

    #[test]
    fn reported_value_bypasses_the_cache() {
        let c = CpuUsageCache::default();
        assert_eq!(c.update("a", s(100, 1000), Some(7)), Some(7));
        assert!(c.is_empty());
    }

    #[test]
    fn counter_going_backwards_restarts_the_window() {
        let c = CpuUsageCache::default();
        c.update("a", s(100, 5000), None);
        assert_eq!(c.update("a", s(110, 10), None), None);
        assert_eq!(c.update("a", s(120, 1010), None), Some(100_000_000));
    }

    #[test]
    fn old_samples_expire() {
        let c = CpuUsageCache::default();
        let t0 = Instant::now();
        c.update_at("old", s(0, 1), None, t0);
        c.update_at("new", s(700, 1), None, t0 + Duration::from_secs(700));
        c.expire(t0 + Duration::from_secs(700));
        assert_eq!(c.len(), 1);
        assert_eq!(c.update("old", s(701, 2), None), None);
    }
}
