//! [`VolumeStore`]: the volume manager's actual state of the world, shared
//! by the reconciler actor (writer) and the pod workers (readers). It lives
//! outside the actor, so a restarted reconciler neither remounts nor
//! forgets what it mounted; after a restart of actlet it is rebuilt from
//! disk (reconstruction).
//!
//! Per pod UID: the mounted volumes, when each API data volume was last
//! written, the last failure of each volume with its retry time
//! (exponential backoff 500 ms doubling to 2 min 2 s, upstream's
//! `exponentialbackoff`), and whether a worker asked for a prompt retry.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::mounts::{MountedVolume, VolumeMap};

/// First retry delay after a failed mount.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(500);
/// Longest retry delay (upstream `maxDurationBeforeRetry`).
pub const MAX_BACKOFF: Duration = Duration::from_millis(122_000);

/// The last failure of one volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The error.
    pub message: String,
    /// When it happened.
    pub at: Instant,
    /// Not retried before then (unless a worker asks).
    pub retry_at: Instant,
    /// Failures in a row.
    pub attempts: u32,
}

/// One pod's volumes.
#[derive(Clone, Debug, Default)]
pub struct PodVolumes {
    /// Set up and usable.
    pub mounted: VolumeMap,
    /// When each API data volume was last written.
    pub synced: HashMap<String, Instant>,
    /// Failed volumes.
    pub failures: BTreeMap<String, Failure>,
    /// A worker waits: retry failed volumes now.
    pub retry_now: bool,
}

#[derive(Debug, Default)]
struct Inner {
    pods: HashMap<String, PodVolumes>,
    reconstructed: bool,
}

/// The shared actual state. Cheap to clone; clones share state.
#[derive(Clone, Debug)]
pub struct VolumeStore {
    inner: Arc<Mutex<Inner>>,
    version: Arc<watch::Sender<u64>>,
    sources_ready: Arc<AtomicBool>,
}

impl Default for VolumeStore {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            version: Arc::new(watch::channel(0).0),
            sources_ready: Arc::default(),
        }
    }
}

impl VolumeStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn changed(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// Notified after every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Every pod source has delivered its first state (orphans may be judged).
    pub fn set_sources_ready(&self) {
        self.sources_ready.store(true, Ordering::SeqCst);
        self.changed();
    }

    /// See [`set_sources_ready`](Self::set_sources_ready).
    pub fn sources_ready(&self) -> bool {
        self.sources_ready.load(Ordering::SeqCst)
    }

    /// True once volumes found on disk at start were recorded.
    pub fn reconstructed(&self) -> bool {
        self.lock().reconstructed
    }

    /// Records the volumes found on disk: (uid, volume name, volume), and
    /// pod directories without volumes as empty entries.
    pub fn reconstruct(&self, found: Vec<(String, Option<(String, MountedVolume)>)>) {
        let now = Instant::now();
        let mut inner = self.lock();
        for (uid, vol) in found {
            let pod = inner.pods.entry(uid).or_default();
            if let Some((name, v)) = vol {
                pod.synced.insert(name.clone(), now);
                pod.mounted.insert(name, v);
            }
        }
        inner.reconstructed = true;
        drop(inner);
        self.changed();
    }

    /// A copy of one pod's state.
    pub fn pod(&self, uid: &str) -> Option<PodVolumes> {
        self.lock().pods.get(uid).cloned()
    }

    /// Every pod UID with state.
    pub fn uids(&self) -> Vec<String> {
        self.lock().pods.keys().cloned().collect()
    }

    /// Records a set-up volume.
    pub fn mounted(&self, uid: &str, name: &str, volume: MountedVolume) {
        let mut inner = self.lock();
        let pod = inner.pods.entry(uid.to_string()).or_default();
        pod.synced.insert(name.to_string(), Instant::now());
        pod.failures.remove(name);
        pod.mounted.insert(name.to_string(), volume);
        drop(inner);
        self.changed();
    }

    /// Records a failed set-up; returns the failure (with its backoff).
    pub fn failed(&self, uid: &str, name: &str, message: String) -> Failure {
        let now = Instant::now();
        let mut inner = self.lock();
        let pod = inner.pods.entry(uid.to_string()).or_default();
        let attempts = pod.failures.get(name).map_or(0, |f| f.attempts) + 1;
        let delay = INITIAL_BACKOFF
            .saturating_mul(1u32 << (attempts - 1).min(20))
            .min(MAX_BACKOFF);
        let failure = Failure {
            message,
            at: now,
            retry_at: now + delay,
            attempts,
        };
        pod.failures.insert(name.to_string(), failure.clone());
        drop(inner);
        self.changed();
        failure
    }

    /// A worker waits for `uid`: its failed volumes are retried at once.
    pub fn request_retry(&self, uid: &str) {
        self.lock().pods.entry(uid.to_string()).or_default().retry_now = true;
    }

    /// Takes the worker's retry request of `uid`.
    pub fn take_retry(&self, uid: &str) -> bool {
        self.lock()
            .pods
            .get_mut(uid)
            .is_some_and(|p| std::mem::take(&mut p.retry_now))
    }

    /// Forgets `uid` (its volumes are torn down).
    pub fn remove(&self, uid: &str) {
        self.lock().pods.remove(uid);
        self.changed();
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::volumes::plugin::Plugin;

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_exponentially_and_success_clears_them() {
        let s = VolumeStore::new();
        let delays: Vec<Duration> = (0..10)
            .map(|_| {
                let f = s.failed("u", "v", "boom".into());
                f.retry_at - f.at
            })
            .collect();
        assert_eq!(delays[0], Duration::from_millis(500));
        assert_eq!(delays[1], Duration::from_secs(1));
        assert_eq!(delays[9], MAX_BACKOFF);
        let vol = MountedVolume {
            plugin: Plugin::EmptyDir,
            host_path: PathBuf::from("/x"),
            read_only: false,
        };
        s.mounted("u", "v", vol);
        let pod = s.pod("u").unwrap();
        assert!(pod.failures.is_empty() && pod.mounted.contains_key("v"));
    }

    #[tokio::test]
    async fn a_retry_request_is_taken_once() {
        let s = VolumeStore::new();
        assert!(!s.take_retry("u"));
        s.request_retry("u");
        assert!(s.take_retry("u"));
        assert!(!s.take_retry("u"));
    }
}
