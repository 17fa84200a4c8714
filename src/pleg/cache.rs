//! [`PodCache`]: the latest runtime status of every pod, stamped with the
//! time it was read, shared by the PLEG (writer) and the pod workers (readers).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dashmap::DashMap;
use tokio::sync::watch;
use tokio::time::Instant;

use super::requests::RelistRequests;
pub use super::requests::{MAX_PENDING_RELISTS, RelistRequest, StepGuard};
use crate::kuberuntime::pod_status::RuntimePodStatus;
use crate::messages::PodUid;

/// One cached pod status.
///
/// ```
/// # use std::sync::Arc;
/// use actlet::kuberuntime::pod_status::RuntimePodStatus;
/// use actlet::pleg::PodCache;
/// use tokio::time::Instant;
/// let cache = PodCache::new();
/// let read_at = Instant::now();
/// cache.set("u1".into(), Some(Arc::new(RuntimePodStatus::empty("u1".into(), "web", "default"))), None, read_at);
/// let entry = cache.get(&"u1".into()).unwrap();
/// assert!(entry.status.is_some() && entry.error.is_none());
/// assert_eq!(entry.modified, read_at);
/// ```
#[derive(Clone, Debug)]
pub struct CacheEntry {
    /// The runtime status (`None` when the pod has nothing in the runtime).
    pub status: Option<Arc<RuntimePodStatus>>,
    /// The error of the last attempt to read it, if it failed.
    pub error: Option<String>,
    /// When the status was read (relist start time).
    pub modified: Instant,
}

impl CacheEntry {
    /// Whether the pod may still have running containers: by its status
    /// ([`RuntimePodStatus::could_have_running_containers`]), or, when its
    /// status could not be read, yes.
    pub fn could_have_running_containers(&self) -> bool {
        match &self.status {
            Some(s) => s.could_have_running_containers(),
            None => self.error.is_some(),
        }
    }
}

/// The pod cache: `uid → (status, time read)`, plus a global timestamp meaning
/// "every pod not in the map had nothing in the runtime as of this time".
///
/// Cheap to clone; all clones share the same cache. Reads never block the
/// writer (dashmap shards); [`PodCache::get_newer_than`] waits without
/// holding a lock.
///
/// ```
/// # use std::sync::Arc;
/// # use actlet::kuberuntime::pod_status::RuntimePodStatus;
/// use actlet::pleg::PodCache;
/// use tokio::time::Instant;
/// let writer = PodCache::new();
/// let reader = writer.clone(); // shares the cache
/// writer.set("u1".into(), Some(Arc::new(RuntimePodStatus::empty("u1".into(), "web", "default"))), None, Instant::now());
/// assert_eq!(reader.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct PodCache {
    pods: Arc<DashMap<PodUid, CacheEntry>>,
    global: Arc<watch::Sender<Option<Instant>>>,
    requests: Arc<RelistRequests>,
    /// The runtime's container events keep the cache current ([`PodCache::events_live`]).
    events_live: Arc<AtomicBool>,
    /// Bumped whenever an entry is stored or removed ([`PodCache::generation`]).
    generation: Arc<AtomicU64>,
}

impl Default for PodCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PodCache {
    /// An empty cache with no global timestamp yet.
    ///
    /// ```
    /// let cache = actlet::pleg::PodCache::new();
    /// assert!(cache.is_empty() && cache.global_time().is_none());
    /// ```
    pub fn new() -> Self {
        let (tx, _rx) = watch::channel(None);
        Self {
            pods: Arc::new(DashMap::new()),
            global: Arc::new(tx),
            requests: Arc::default(),
            events_live: Arc::default(),
            generation: Arc::default(),
        }
    }

    /// Asks the PLEG to read `uid` from the runtime again soon (a targeted
    /// relist: its cache entry refreshed, its lifecycle events sent), instead
    /// of at the next global relist. Coalesced per pod; bounded by
    /// [`MAX_PENDING_RELISTS`].
    ///
    /// ```
    /// use actlet::messages::PodUid;
    /// let cache = actlet::pleg::PodCache::new();
    /// let uid = PodUid::from("u1");
    /// cache.request_relist(&uid, "web", "default");
    /// cache.request_relist(&uid, "web", "default"); // coalesced
    /// let wanted = cache.take_relist_requests();
    /// assert_eq!(wanted.len(), 1);
    /// assert_eq!((wanted[&uid].name.as_str(), wanted[&uid].namespace.as_str()), ("web", "default"));
    /// assert!(cache.take_relist_requests().is_empty());
    /// ```
    pub fn request_relist(&self, uid: &PodUid, name: &str, namespace: &str) {
        self.requests.request(uid, name, namespace);
    }

    /// Marks a pod worker's runtime step of `uid` in flight until the guard
    /// is dropped: relist requests for the pod made meanwhile are parked and
    /// then handed to the PLEG with their time, so the step's own read after
    /// its changes answers them (see [`super::requests`]).
    ///
    /// ```
    /// let cache = actlet::pleg::PodCache::new();
    /// let step = cache.begin_step(&"u1".into());
    /// cache.request_relist(&"u1".into(), "web", "default");
    /// assert!(cache.take_relist_requests().is_empty(), "parked during the step");
    /// drop(step);
    /// assert_eq!(cache.take_relist_requests().len(), 1);
    /// ```
    pub fn begin_step(&self, uid: &PodUid) -> StepGuard {
        StepGuard::new(self.requests.clone(), uid.clone())
    }

    /// Whether a pod worker's runtime step of `uid` is in flight.
    pub fn in_step(&self, uid: &PodUid) -> bool {
        self.requests.in_step(uid)
    }

    /// The status of `uid` if its entry was read strictly after `at` and
    /// holds no error: what a targeted relist asked for at `at` would read
    /// (the PLEG then uses it instead of reading the runtime again).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use tokio::time::Instant;
    /// # use actlet::kuberuntime::pod_status::RuntimePodStatus;
    /// let cache = actlet::pleg::PodCache::new();
    /// let asked = Instant::now();
    /// let status = Arc::new(RuntimePodStatus::empty("u1".into(), "web", "default"));
    /// cache.set("u1".into(), Some(status.clone()), None, asked);
    /// assert!(cache.read_after(&"u1".into(), asked).is_none(), "read at the same instant: maybe before the change");
    /// cache.set("u1".into(), Some(status), None, asked + Duration::from_millis(1));
    /// assert!(cache.read_after(&"u1".into(), asked).is_some());
    /// ```
    pub fn read_after(&self, uid: &PodUid, at: Instant) -> Option<Arc<RuntimePodStatus>> {
        let entry = self.pods.get(uid)?;
        (entry.modified > at && entry.error.is_none())
            .then(|| entry.status.clone())
            .flatten()
    }

    /// Takes every pending relist request.
    pub fn take_relist_requests(&self) -> HashMap<PodUid, RelistRequest> {
        self.requests.take()
    }

    /// Whether any relist request is pending.
    pub fn has_relist_requests(&self) -> bool {
        self.requests.any_pending()
    }

    /// Resolves once a relist was requested since the last call (what the
    /// PLEG waits on).
    pub async fn relist_requested(&self) {
        self.requests.requested().await;
    }

    /// Whether a targeted relist of `uid` is waiting to start (or parked
    /// until its pod's step ends).
    ///
    /// ```
    /// let cache = actlet::pleg::PodCache::new();
    /// cache.request_relist(&"u1".into(), "web", "default");
    /// assert!(cache.relist_pending(&"u1".into()) && !cache.relist_pending(&"u2".into()));
    /// ```
    pub fn relist_pending(&self, uid: &PodUid) -> bool {
        self.requests.is_pending(uid)
    }

    /// Whether the runtime's container event stream keeps this cache
    /// current: set by the PLEG (`EventedPLEG`) once a global relist finished
    /// after the stream (re)connected, cleared when the stream breaks and
    /// when a PLEG starts. While it holds, every change in the runtime asks
    /// for a targeted relist of its pod, so an entry with no relist pending
    /// is the pod's state but for an event still on its way: a periodic
    /// resync may use it without a read of its own (upstream instead moves
    /// the global timestamp every 2 s, `globalCacheUpdatePeriod`, which can
    /// also answer a worker that waits for its own last change).
    ///
    /// ```
    /// let cache = actlet::pleg::PodCache::new();
    /// assert!(!cache.events_live(), "relisting until the PLEG says otherwise");
    /// cache.set_events_live(true);
    /// assert!(cache.clone().events_live());
    /// ```
    pub fn events_live(&self) -> bool {
        self.events_live.load(Ordering::Acquire)
    }

    /// Sets [`events_live`](Self::events_live) (the PLEG's to call).
    pub fn set_events_live(&self, live: bool) {
        self.events_live.store(live, Ordering::Release);
    }

    /// Requests dropped because [`MAX_PENDING_RELISTS`] were waiting.
    pub fn dropped_relist_requests(&self) -> u64 {
        self.requests.dropped()
    }

    /// The cached entry for `uid`, if any.
    ///
    /// ```
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// cache.set("u1".into(), None, Some("ListContainers failed".into()), Instant::now());
    /// assert_eq!(cache.get(&"u1".into()).unwrap().error.as_deref(), Some("ListContainers failed"));
    /// assert!(cache.get(&"u2".into()).is_none());
    /// ```
    pub fn get(&self, uid: &PodUid) -> Option<CacheEntry> {
        self.pods.get(uid).map(|e| e.clone())
    }

    /// Stores the status of `uid` read at `modified`; wakes waiters.
    /// An older write never replaces a newer one.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// let t0 = Instant::now();
    /// let t1 = t0 + Duration::from_secs(1);
    /// cache.set("u1".into(), None, None, t1);
    /// cache.set("u1".into(), None, Some("stale".into()), t0); // older: ignored
    /// assert_eq!(cache.get(&"u1".into()).unwrap().modified, t1);
    /// ```
    pub fn set(&self, uid: PodUid, status: Option<Arc<RuntimePodStatus>>, error: Option<String>, modified: Instant) {
        let mut entry = self.pods.entry(uid).or_insert_with(|| CacheEntry {
            status: None,
            error: None,
            modified,
        });
        if entry.modified <= modified {
            *entry = CacheEntry {
                status,
                error,
                modified,
            };
        }
        drop(entry);
        self.generation.fetch_add(1, Ordering::Release);
        self.global.send_modify(|_| {});
    }

    /// Forgets `uid`.
    ///
    /// ```
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// cache.set("u1".into(), None, None, Instant::now());
    /// cache.delete(&"u1".into());
    /// assert!(cache.get(&"u1".into()).is_none());
    /// ```
    pub fn delete(&self, uid: &PodUid) {
        if self.pods.remove(uid).is_some() {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// A number that changes whenever an entry is stored or removed (the
    /// sync loop's housekeeping skips a pass when none of its inputs moved).
    ///
    /// ```
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// let g = cache.generation();
    /// cache.set("u1".into(), None, None, Instant::now());
    /// assert_ne!(cache.generation(), g);
    /// ```
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Drops the entries that say "nothing in the runtime" (no sandbox, no
    /// container, no read error) and are no newer than `global`, the
    /// timestamp of a global relist already recorded with
    /// [`update_time`](Self::update_time): for them a missing entry answers
    /// the same. Upstream's PLEG deletes a pod from its cache when the pod
    /// is gone from the relist; without this every pod the node ever ran
    /// kept an entry (found by the churn soak, `bench churn`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// use actlet::kuberuntime::pod_status::RuntimePodStatus;
    /// use actlet::pleg::PodCache;
    /// use tokio::time::Instant;
    /// let cache = PodCache::new();
    /// let t0 = Instant::now();
    /// cache.set("gone".into(), Some(Arc::new(RuntimePodStatus::empty("gone".into(), "web", "default"))), None, t0);
    /// cache.set("failed".into(), None, Some("ListContainers failed".into()), t0);
    /// cache.update_time(t0);
    /// cache.prune_covered(t0);
    /// assert!(cache.get(&"gone".into()).is_none(), "the global timestamp answers for it");
    /// assert!(cache.get(&"failed".into()).is_some(), "a failed read is kept");
    /// ```
    pub fn prune_covered(&self, global: Instant) {
        if self.global_time().is_none_or(|g| g < global) {
            return;
        }
        let before = self.pods.len();
        self.pods.retain(|_, e| {
            let nothing = e.error.is_none()
                && e.status
                    .as_ref()
                    .is_none_or(|s| s.sandboxes.is_empty() && s.containers.is_empty());
            !(nothing && e.modified <= global)
        });
        if self.pods.len() != before {
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// Declares that, as of `t`, every pod's entry is current (set after a
    /// successful relist); wakes waiters.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// let t = Instant::now();
    /// cache.update_time(t + Duration::from_secs(1));
    /// cache.update_time(t); // never goes back
    /// assert_eq!(cache.global_time(), Some(t + Duration::from_secs(1)));
    /// ```
    pub fn update_time(&self, t: Instant) {
        self.global.send_modify(|g| {
            if g.is_none_or(|old| old < t) {
                *g = Some(t);
            }
        });
    }

    /// The global timestamp.
    ///
    /// ```
    /// let cache = actlet::pleg::PodCache::new();
    /// assert_eq!(cache.global_time(), None); // no relist finished yet
    /// let now = tokio::time::Instant::now();
    /// cache.update_time(now);
    /// assert_eq!(cache.global_time(), Some(now));
    /// ```
    pub fn global_time(&self) -> Option<Instant> {
        *self.global.borrow()
    }

    /// Whether `uid` may still have running containers: yes until the
    /// runtime was listed once, then as its entry says
    /// ([`CacheEntry::could_have_running_containers`]); no entry means
    /// nothing of it is in the runtime.
    pub fn could_have_running_containers(&self, uid: &PodUid) -> bool {
        self.global_time().is_none() || self.get(uid).is_some_and(|e| e.could_have_running_containers())
    }

    /// Every cached runtime status (a snapshot; order unspecified).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use actlet::kuberuntime::pod_status::RuntimePodStatus;
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// cache.set("u1".into(), Some(Arc::new(RuntimePodStatus::empty("u1".into(), "web", "default"))), None, Instant::now());
    /// cache.set("u2".into(), None, Some("failed".into()), Instant::now()); // no status: not listed
    /// assert_eq!(cache.statuses().len(), 1);
    /// ```
    pub fn statuses(&self) -> Vec<Arc<RuntimePodStatus>> {
        self.pods.iter().filter_map(|e| e.value().status.clone()).collect()
    }

    /// Number of cached pods.
    ///
    /// ```
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// cache.set("u1".into(), None, None, Instant::now());
    /// assert_eq!(cache.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// True when no pod is cached.
    ///
    /// ```
    /// let cache = actlet::pleg::PodCache::new();
    /// assert!(cache.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Whether [`get_newer_than`](Self::get_newer_than) would answer at
    /// once: the pod's entry, or the global timestamp, is newer than `min`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// let t0 = Instant::now();
    /// let t1 = t0 + Duration::from_secs(1);
    /// cache.set("u1".into(), None, None, t1);
    /// assert!(cache.is_newer_than(&"u1".into(), t0));
    /// assert!(!cache.is_newer_than(&"u2".into(), t0), "no entry, no relist yet");
    /// cache.update_time(t1);
    /// assert!(cache.is_newer_than(&"u2".into(), t0), "a relist after t0 answers for it");
    /// ```
    pub fn is_newer_than(&self, uid: &PodUid, min: Instant) -> bool {
        self.global_time().is_some_and(|g| g > min) || self.pods.get(uid).is_some_and(|e| e.modified > min)
    }

    /// The entry for `uid` as it stands, without waiting: its own entry, or
    /// "nothing in the runtime" as of the global timestamp; `None` before
    /// the first relist.
    ///
    /// ```
    /// # use tokio::time::Instant;
    /// let cache = actlet::pleg::PodCache::new();
    /// assert!(cache.current(&"u1".into()).is_none(), "no relist yet");
    /// let t = Instant::now();
    /// cache.update_time(t);
    /// let e = cache.current(&"u1".into()).unwrap();
    /// assert!(e.status.is_none() && e.error.is_none() && e.modified == t);
    /// ```
    pub fn current(&self, uid: &PodUid) -> Option<CacheEntry> {
        self.get(uid).or_else(|| {
            self.global_time().map(|g| CacheEntry {
                status: None,
                error: None,
                modified: g,
            })
        })
    }

    /// The entry for `uid` once the PLEG has relisted at least once
    /// (upstream `GetNewerThan` with a zero time): a pod the cache has no
    /// entry for has nothing in the runtime as of that relist, so a brand-new
    /// pod's first sync needs no runtime read of its own. Waits only until
    /// the first relist finishes.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use actlet::pleg::PodCache;
    /// use tokio::time::Instant;
    ///
    /// actlet::testing::run_paused(async {
    ///     let cache = PodCache::new();
    ///     let relist = cache.clone();
    ///     actix::spawn(async move {
    ///         tokio::time::sleep(Duration::from_secs(1)).await;
    ///         relist.update_time(Instant::now());
    ///     });
    ///     let entry = cache.get_relisted(&"new".into()).await; // waits for the relist
    ///     assert!(entry.status.is_none() && entry.error.is_none());
    /// });
    /// ```
    pub async fn get_relisted(&self, uid: &PodUid) -> CacheEntry {
        self.wait(uid, None).await
    }

    /// Waits until the cache holds a status of `uid` newer than `min`: either
    /// the pod's own entry was read after `min`, or a whole relist finished
    /// after `min` (then a missing entry means "nothing in the runtime").
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::pleg::PodCache;
    /// use tokio::time::Instant;
    ///
    /// actlet::testing::run_paused(async {
    ///     let cache = PodCache::new();
    ///     let min = Instant::now();
    ///     let relist = cache.clone();
    ///     actix::spawn(async move {
    ///         tokio::time::sleep(Duration::from_secs(1)).await;
    ///         relist.update_time(Instant::now()); // a relist finished: "u1" has nothing in the runtime
    ///     });
    ///     let entry = cache.get_newer_than(&"u1".into(), min).await;
    ///     assert!(entry.status.is_none() && entry.modified > min);
    /// });
    /// ```
    pub async fn get_newer_than(&self, uid: &PodUid, min: Instant) -> CacheEntry {
        self.wait(uid, Some(min)).await
    }

    /// Waits until `uid`'s entry, or the global timestamp, is newer than
    /// `min` (`None`: any entry, or any relist at all).
    async fn wait(&self, uid: &PodUid, min: Option<Instant>) -> CacheEntry {
        let newer = |t: Instant| min.is_none_or(|m| t > m);
        let mut rx = self.global.subscribe();
        loop {
            let global = *rx.borrow_and_update();
            match self.get(uid) {
                Some(e) if newer(e.modified) => return e,
                Some(e) if global.is_some_and(newer) => {
                    return CacheEntry {
                        modified: global.unwrap_or(e.modified),
                        ..e
                    };
                }
                None => {
                    if let Some(g) = global.filter(|g| newer(*g)) {
                        return CacheEntry {
                            status: None,
                            error: None,
                            modified: g,
                        };
                    }
                }
                Some(_) => {}
            }
            if rx.changed().await.is_err() {
                // The writer is gone; answer with what we have.
                return self.get(uid).unwrap_or(CacheEntry {
                    status: None,
                    error: None,
                    modified: min.unwrap_or_else(Instant::now),
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
