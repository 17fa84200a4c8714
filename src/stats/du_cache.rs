//! Disk usage of directories (container logs, volumes) remembered for a
//! short while: a directory walk per scrape would make every concurrent
//! `/stats/summary` walk every pod's files (upstream likewise measures
//! volumes every `volumeStatsAggPeriod` and logs on cAdvisor's housekeeping).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a measurement is reused.
pub const DU_TTL: Duration = Duration::from_secs(10);

/// `(bytes, inodes)` measured at an instant.
type Measured = (Instant, (u64, u64));

/// Cached `(bytes, inodes)` by directory (cheap to clone; clones share).
#[derive(Clone, Debug, Default)]
pub struct DiskUsageCache {
    inner: Arc<Mutex<HashMap<PathBuf, Measured>>>,
}

impl DiskUsageCache {
    /// The usage of `path`, measured at most [`DU_TTL`] ago; entries older
    /// than that are dropped on the way.
    pub fn usage(&self, path: &Path) -> (u64, u64) {
        self.usage_at(path, Instant::now(), super::host::disk_usage)
    }

    /// [`usage`](Self::usage) at `now`, measuring with `measure`.
    pub fn usage_at(&self, path: &Path, now: Instant, measure: impl FnOnce(&Path) -> (u64, u64)) -> (u64, u64) {
        {
            let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            map.retain(|_, (at, _)| now.saturating_duration_since(*at) < DU_TTL);
            if let Some((_, u)) = map.get(path) {
                return *u;
            }
        }
        let u = measure(path);
        let mut map = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(path.to_path_buf(), (now, u));
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurements_are_reused_within_the_ttl() {
        let c = DiskUsageCache::default();
        let t0 = Instant::now();
        let p = Path::new("/x");
        assert_eq!(c.usage_at(p, t0, |_| (1, 1)), (1, 1));
        assert_eq!(c.usage_at(p, t0 + Duration::from_secs(5), |_| (2, 2)), (1, 1));
        assert_eq!(c.usage_at(p, t0 + DU_TTL, |_| (3, 3)), (3, 3));
    }
}
