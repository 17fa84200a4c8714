//! [`StatusManager`]: the actor that owns pod statuses (upstream
//! `status.Manager`). A thin shell around [`StatusStore`]: it applies the
//! merge rules, publishes into the shared [`StatusCache`], tells subscribers,
//! and hands changes to an optional [`StatusSink`] — the seam where the API
//! syncer (patch `pods/status`, 10s resync) will plug in. Without a sink it
//! runs standalone: statuses are kept and served, never sent anywhere.

use crate::clock::WallClock;
use std::fmt;
use std::sync::Arc;

use actix::{Actor, Context, Handler};

use crate::actors::supervisor::SupervisedRecipient;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::jiff::Timestamp;

use super::cache::{StatusCache, VersionedStatus};
use super::phase::Phase;
use super::store::{ApplyOutcome, StatusStore};
use crate::messages::PodUid;
use crate::messages::status::{ForgetPodStatus, SetPodStatus};
use crate::messages::status::{GetPodStatus, PodStatusChanged, SubscribeStatus, UpdatePodStatus};

/// Where accepted status changes go beyond the cache: the API syncer.
pub trait StatusSink: Send + 'static {
    /// `uid`'s status changed; `status` is what is cached now.
    fn status_changed(&mut self, uid: &PodUid, status: &VersionedStatus);

    /// `uid` was forgotten.
    fn forgotten(&mut self, _uid: &PodUid) {}
}

/// The status manager actor. See the [module docs](self).
pub struct StatusManager {
    store: StatusStore,
    subscribers: Vec<SupervisedRecipient<PodStatusChanged>>,
    sink: Option<Box<dyn StatusSink>>,
    clock: WallClock,
}

impl fmt::Debug for StatusManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatusManager")
            .field("pods", &self.store.cache().len())
            .field("subscribers", &self.subscribers.len())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

impl Default for StatusManager {
    fn default() -> Self {
        Self::new()
    }
}

impl StatusManager {
    /// A standalone manager with a fresh cache and the wall clock.
    pub fn new() -> Self {
        Self::with_cache(StatusCache::new())
    }

    /// A manager writing into `cache` (pass the same cache to a restarted
    /// manager and it resumes with the same statuses and versions).
    pub fn with_cache(cache: StatusCache) -> Self {
        Self {
            store: StatusStore::new(cache),
            subscribers: Vec::new(),
            sink: None,
            clock: WallClock::system(),
        }
    }

    /// Notifies `subscriber` of every change from the start (unlike
    /// [`SubscribeStatus`], a subscriber given here survives restarts when
    /// the manager is built by a supervisor's factory).
    pub fn with_subscriber(mut self, subscriber: impl Into<SupervisedRecipient<PodStatusChanged>>) -> Self {
        self.subscribers.push(subscriber.into());
        self
    }

    /// Sends accepted changes to `sink` too.
    pub fn with_sink(mut self, sink: impl StatusSink) -> Self {
        self.sink = Some(Box::new(sink));
        self
    }

    /// Uses `clock` for start times and condition transitions.
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = WallClock::from_fn(clock);
        self
    }

    /// The shared cache (clone it before starting the actor).
    pub fn cache(&self) -> StatusCache {
        self.store.cache().clone()
    }

    fn apply(&mut self, uid: PodUid, status: PodStatus) {
        let now = self.clock.now();
        match self.store.apply(&uid, status, now) {
            ApplyOutcome::Unchanged => tracing::trace!(%uid, "ignoring same status"),
            ApplyOutcome::Rejected(err) => tracing::warn!(%uid, error = %err, "status update aborted"),
            ApplyOutcome::Changed { old_phase, current } => self.publish(uid, old_phase, current),
        }
    }

    fn publish(&mut self, uid: PodUid, old_phase: Option<Phase>, current: VersionedStatus) {
        let new_phase = Phase::parse(current.status.phase.as_deref());
        tracing::debug!(%uid, version = current.version, ?old_phase, ?new_phase, "pod status changed");
        if let Some(sink) = &mut self.sink {
            sink.status_changed(&uid, &current);
        }
        self.subscribers.retain(|s| s.is_open());
        for s in &self.subscribers {
            let _ = s.do_send(PodStatusChanged {
                uid: uid.clone(),
                old_phase,
                new_phase,
                version: current.version,
                status: Arc::clone(&current.status),
            });
        }
    }
}

impl Actor for StatusManager {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        if self.sink.is_none() {
            tracing::info!("no API client: pod statuses are kept locally and not synced");
        }
    }
}

impl Handler<SetPodStatus> for StatusManager {
    type Result = ();

    fn handle(&mut self, msg: SetPodStatus, _ctx: &mut Self::Context) {
        self.apply(msg.uid, msg.status);
    }
}

impl Handler<UpdatePodStatus> for StatusManager {
    type Result = ();

    fn handle(&mut self, msg: UpdatePodStatus, _ctx: &mut Self::Context) {
        let pod: &Pod = &msg.pod;
        let Some(uid) = pod.metadata.uid.as_deref().filter(|u| !u.is_empty()).map(PodUid::from) else {
            tracing::warn!(pod = ?pod.metadata.name, "status of a pod without UID ignored");
            return;
        };
        self.store.track(&uid, pod);
        self.apply(uid, msg.status);
    }
}

impl Handler<ForgetPodStatus> for StatusManager {
    type Result = ();

    fn handle(&mut self, msg: ForgetPodStatus, _ctx: &mut Self::Context) {
        if self.store.forget(&msg.uid).is_some() {
            tracing::debug!(uid = %msg.uid, "pod status forgotten");
        }
        if let Some(sink) = &mut self.sink {
            sink.forgotten(&msg.uid);
        }
    }
}

impl Handler<GetPodStatus> for StatusManager {
    type Result = Option<PodStatus>;

    fn handle(&mut self, msg: GetPodStatus, _ctx: &mut Self::Context) -> Option<PodStatus> {
        self.store.get(&msg.uid).map(|v| PodStatus::clone(&v.status))
    }
}

impl Handler<SubscribeStatus> for StatusManager {
    type Result = ();

    fn handle(&mut self, msg: SubscribeStatus, _ctx: &mut Self::Context) {
        self.subscribers.push(msg.subscriber.into());
    }
}
