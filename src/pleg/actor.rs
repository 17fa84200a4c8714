//! [`Pleg`]: the relisting actor.
//!
//! # Guarantees
//! - One relist at a time, global or targeted; a global relist slower than
//!   the period delays the next; a due global relist runs before targeted ones.
//! - When [`PlegEvents`] is sent, the pod cache already holds the status of
//!   every pod named in it, stamped with the relist's start time; after a
//!   global relist the cache's global timestamp says every other pod is
//!   unchanged as of then.
//! - A targeted relist ([`PodCache::request_relist`]: a pod worker whose
//!   entry is older than its last step, or a container event) reads only the
//!   pods asked for and compares each with what the last relists saw of it
//!   ([`Records::replace_pod`]): the same events a global relist would send.
//! - A request for a pod whose worker is in a runtime step waits for the
//!   step's end (at most [`super::requests::MAX_PARK`]): the step's own read
//!   after its changes then answers it without another read.
//! - A pod whose status could not be read is re-inspected on the next relist.
//! - With [`Pleg::with_container_events`] (`EventedPLEG`) the runtime's event
//!   stream is watched ([`super::watch`]): events only ask for targeted
//!   relists, never become state; while the stream is up the global relist
//!   runs every [`EVENTED_RELIST_PERIOD`]; when it breaks, the PLEG relists
//!   at once and every period again, and reconnects with backoff; every
//!   (re)connection is followed by a global relist, and once that finished
//!   the cache is marked fed by events ([`PodCache::events_live`]) until the
//!   stream breaks or the PLEG restarts.
//! - Health: healthy while the last global relist finished within 3 minutes
//!   (upstream `relistThreshold`; 10 minutes while the event stream is up);
//!   readable without a message via [`PlegHealthHandle`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures::StreamExt;
use tokio::time::Instant;

use super::cache::{PodCache, RelistRequest};
use super::events::compute_events;
use super::list::{Names, build, inspect, list, read};
use super::records::{Records, observed_in};
use super::watch::{ReconnectBackoff, event_pod};
use crate::actors::supervisor::SupervisedRecipient;
use crate::cri::v1;
use crate::cri::{CriResult, SharedRuntime};
use crate::kuberuntime::pod_status::RuntimePodStatus;
use crate::messages::PodUid;
use crate::messages::pleg::{PlegEvents, PodLifecycleEvent};

pub use super::health::{EventedPlegMetrics, PlegHealthHandle};

/// Upstream's relist period.
pub const RELIST_PERIOD: Duration = Duration::from_secs(1);
/// Upstream's relist threshold: unhealthy when no relist finished for this long.
pub const RELIST_THRESHOLD: Duration = Duration::from_secs(180);
/// The global relist period while the runtime's container event stream is
/// up (upstream's `eventedPlegRelistPeriod`): a safety net, events do the rest.
pub const EVENTED_RELIST_PERIOD: Duration = Duration::from_secs(300);
/// The health threshold while the stream is up (upstream `eventedPlegRelistThreshold`).
pub const EVENTED_RELIST_THRESHOLD: Duration = Duration::from_secs(600);
/// How long a targeted relist waits for more requests before it starts.
pub const TARGETED_RELIST_DELAY: Duration = Duration::from_millis(1);

/// The PLEG actor.
pub struct Pleg {
    runtime: SharedRuntime,
    cache: PodCache,
    events: SupervisedRecipient<PlegEvents>,
    observers: Vec<SupervisedRecipient<PlegEvents>>,
    health: PlegHealthHandle,
    period: Duration,
    /// What the last relists saw, by id and by pod.
    old: Records,
    /// The last relist's pods' names (reused by the next one: no fresh
    /// strings per pod and relist).
    names: Names,
    reinspect: HashSet<PodUid>,
    /// A global or targeted relist is running (one at a time).
    busy: bool,
    /// A global relist is due (it runs before any targeted one).
    global_due: bool,
    /// When the last global relist started.
    last_global: Option<Instant>,
    /// Relists failed in a row (logs are throttled while the runtime is away).
    failures: u64,
    /// Watch the runtime's container events (`EventedPLEG`).
    evented: bool,
    stream: StreamState,
}

/// The container event stream's connection.
#[derive(Debug, Default)]
struct StreamState {
    /// Bumped on every connection attempt and loss: items of an older
    /// stream are ignored.
    generation: u64,
    /// Since when the current stream is up.
    up_since: Option<Instant>,
    backoff: ReconnectBackoff,
    /// "Not served" was logged (once: containerd 1.6 never serves it).
    told_unimplemented: bool,
    /// Failed attempts in a row (logged the first time, then once an hour).
    failures: u64,
}

/// One item of the runtime's event stream (`None`: the stream ended).
struct RuntimeEvent {
    generation: u64,
    item: Option<CriResult<v1::ContainerEventResponse>>,
}

impl Message for RuntimeEvent {
    type Result = ();
}

/// Someone asked for a targeted relist ([`PodCache::request_relist`]).
struct RelistRequested;

impl Message for RelistRequested {
    type Result = ();
}

/// While relists keep failing, one warning per this many (one a minute at the 1 s period).
const FAILURE_LOG_EVERY: u64 = 60;

impl Pleg {
    /// A PLEG relisting `runtime` every `period`, writing `cache` and sending events to `events`.
    pub fn new(
        runtime: SharedRuntime,
        cache: PodCache,
        events: SupervisedRecipient<PlegEvents>,
        health: PlegHealthHandle,
        period: Duration,
    ) -> Self {
        Self {
            runtime,
            cache,
            events,
            observers: vec![],
            health,
            period,
            old: Records::default(),
            names: Names::new(),
            reinspect: HashSet::new(),
            busy: false,
            global_due: true,
            last_global: None,
            failures: 0,
            evented: false,
            stream: StreamState::default(),
        }
    }

    /// Also sends every batch of events to `observer` (embedders, tests).
    pub fn with_observer(mut self, observer: SupervisedRecipient<PlegEvents>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Watches the runtime's container events (`EventedPLEG`): each event
    /// asks for a targeted relist of its pod, and while the stream is up the
    /// global relist runs every [`EVENTED_RELIST_PERIOD`] instead of every
    /// period. Without a stream (runtime without it, or down) nothing changes.
    pub fn with_container_events(mut self, on: bool) -> Self {
        self.evented = on;
        self
    }

    fn stream_up(&self) -> bool {
        self.stream.up_since.is_some()
    }

    /// Every period: a global relist when one is due (every period, or every
    /// [`EVENTED_RELIST_PERIOD`] while the event stream is up); pods whose
    /// read failed are read again.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return; // a relist slower than the period delays the next
        }
        let due = match (self.last_global, self.stream_up()) {
            (None, _) | (_, false) => true,
            (Some(last), true) => last.elapsed() + self.period >= EVENTED_RELIST_PERIOD,
        };
        if due {
            self.global_due = true;
        } else if !self.reinspect.is_empty() {
            for uid in std::mem::take(&mut self.reinspect) {
                let (name, ns) = self.names.get(&uid).map(|n| (**n).clone()).unwrap_or_default();
                self.cache.request_relist(&uid, &name, &ns);
            }
        }
        self.dispatch(ctx);
    }

    /// Starts the next relist when none runs: a due global one first, else
    /// a targeted one of every pod asked for.
    fn dispatch(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        if self.global_due {
            self.global_due = false;
            // Whatever was asked before the global relist lists is covered by it.
            let _ = self.cache.take_relist_requests();
            self.relist(ctx);
            return;
        }
        if !self.cache.has_relist_requests() {
            return;
        }
        // A short pause gathers a burst of requests into one targeted relist
        // and stamps it strictly after whatever asked for it (the waiter's
        // "newer than" holds even on a paused test clock).
        self.busy = true;
        ctx.run_later(TARGETED_RELIST_DELAY, |act, ctx| {
            let wanted = act.cache.take_relist_requests();
            if wanted.is_empty() {
                act.done(ctx);
            } else {
                act.relist_pods(ctx, wanted);
            }
        });
    }

    fn done(&mut self, ctx: &mut Context<Self>) {
        self.busy = false;
        self.dispatch(ctx);
    }

    fn publish(&self, events: Vec<PodLifecycleEvent>) {
        if events.is_empty() {
            return;
        }
        for observer in &self.observers {
            if let Err(e) = observer.do_send(PlegEvents(events.clone())) {
                tracing::debug!(error = %e, "a PLEG observer missed a batch of events");
            }
        }
        if let Err(e) = self.events.do_send(PlegEvents(events)) {
            tracing::warn!(error = %e, "cannot deliver PLEG events; the next resync covers them");
        }
    }

    /// A global relist: list everything, diff, read the pods that changed.
    fn relist(&mut self, ctx: &mut Context<Self>) {
        self.busy = true;
        let runtime = self.runtime.clone();
        let started = Instant::now();
        self.last_global = Some(started);
        ctx.spawn(
            async move { list(&runtime).await }
                .into_actor(self)
                .then(move |listed, act, _| {
                    let runtime = act.runtime.clone();
                    let cache = act.cache.clone();
                    let (events, pods, new) = match listed.map(|(s, c)| build(&act.names, s, c)) {
                        Ok(l) => {
                            let events = compute_events(act.old.relist(), &l.relist);
                            let mut pods: HashSet<PodUid> = events.iter().map(|e| e.uid.clone()).collect();
                            pods.extend(act.reinspect.drain());
                            let pods: Vec<_> = pods
                                .into_iter()
                                .map(|uid| {
                                    let (n, ns) = l.names.get(&uid).map(|n| (**n).clone()).unwrap_or_default();
                                    (uid, n, ns)
                                })
                                .collect();
                            (events, pods, Some(l))
                        }
                        Err(e) => {
                            act.failures += 1;
                            // The first failure, then once a minute while it lasts.
                            if act.failures == 1 || act.failures % FAILURE_LOG_EVERY == 0 {
                                tracing::warn!(error = %e, consecutive_failures = act.failures, "PLEG relist failed");
                            }
                            (vec![], vec![], None)
                        }
                    };
                    async move {
                        let failed = inspect(&runtime, &cache, pods, started).await;
                        (events, failed, new)
                    }
                    .into_actor(act)
                    .map(move |(events, failed, new), act, ctx| {
                        if new.is_none() {
                            // Failed: the next tick relists again, whatever the period
                            // (requests it covered were dropped, waiters need it).
                            act.last_global = None;
                        }
                        if let Some(new) = new {
                            if act.failures > 0 {
                                tracing::info!(after_failures = act.failures, "PLEG relist works again");
                                act.failures = 0;
                            }
                            act.reinspect.extend(failed);
                            act.cache.update_time(started);
                            act.cache.prune_covered(started);
                            // The recovery boundary after a (re)connection is
                            // read: from now on the events keep the cache current.
                            if act.stream.up_since.is_some_and(|up| up <= started) {
                                act.cache.set_events_live(true);
                            }
                            act.old = Records::from_relist(new.relist);
                            act.names = new.names;
                            let now = Instant::now();
                            act.health.record(now, now - started);
                            act.publish(events);
                        }
                        act.done(ctx);
                    })
                }),
        );
    }

    /// The names a later relist needs for `uid` (forgotten when nothing of
    /// it is left in the runtime).
    fn remember_name(&mut self, uid: &PodUid, s: &RuntimePodStatus) {
        if s.sandboxes.is_empty() && s.containers.is_empty() {
            self.names.remove(uid);
        } else if !self.names.contains_key(uid) {
            self.names
                .insert(uid.clone(), Arc::new((s.name.clone(), s.namespace.clone())));
        }
    }

    /// A targeted relist: read only `wanted` (uid → name, namespace), store
    /// their statuses and send their events, compared with what the last
    /// relists saw of them.
    fn relist_pods(&mut self, ctx: &mut Context<Self>, wanted: HashMap<PodUid, RelistRequest>) {
        self.busy = true;
        let started = Instant::now();
        // A pod read strictly after its latest request (a pod worker's read
        // after its own sync, usually) is not read again: that entry already
        // holds what the requests were about. At 10k pod starts this spares
        // one pod-status read (3–4 CRI calls) of the 4 each pod cost.
        let mut fresh = Vec::new();
        let mut pods = Vec::with_capacity(wanted.len());
        for (uid, request) in wanted {
            if let Some(status) = self.cache.read_after(&uid, request.at) {
                fresh.push((uid, status));
                continue;
            }
            let RelistRequest {
                name, namespace: ns, ..
            } = request;
            let known = (name.is_empty() && ns.is_empty())
                .then(|| self.names.get(&uid).map(|n| (**n).clone()))
                .flatten();
            let (name, ns) = known.unwrap_or((name, ns));
            pods.push((uid, name, ns));
        }
        let runtime = self.runtime.clone();
        ctx.spawn(
            async move { read(&runtime, pods).await }
                .into_actor(self)
                .map(move |read, act, ctx| {
                    let mut events = Vec::new();
                    for (uid, status) in fresh {
                        events.extend(act.old.replace_pod(&uid, observed_in(&status)));
                        act.remember_name(&uid, &status);
                    }
                    for (uid, status) in read {
                        match status {
                            Ok(s) => {
                                events.extend(act.old.replace_pod(&uid, observed_in(&s)));
                                act.remember_name(&uid, &s);
                                act.cache.set(uid, Some(Arc::new(s)), None, started);
                            }
                            Err(e) => {
                                tracing::warn!(pod_uid = %uid, error = %e, "PLEG: cannot read pod status; will retry");
                                act.cache.set(uid.clone(), None, Some(e.to_string()), started);
                                act.reinspect.insert(uid);
                            }
                        }
                    }
                    act.health.observe_pod_relist(started.elapsed());
                    act.publish(events);
                    act.done(ctx);
                }),
        );
    }

    /// Opens the runtime's container event stream (once now, again after a
    /// failure or the stream's end, with [`ReconnectBackoff`]).
    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.stream.generation += 1;
        let generation = self.stream.generation;
        let runtime = self.runtime.clone();
        ctx.spawn(
            async move { runtime.get_container_events(v1::GetEventsRequest {}).await }
                .into_actor(self)
                .map(move |opened, act, ctx| {
                    if generation != act.stream.generation {
                        return;
                    }
                    match opened {
                        Ok(stream) => {
                            act.stream.up_since = Some(Instant::now());
                            act.stream.failures = 0;
                            act.health.stream_connected();
                            tracing::info!(
                                relist_period = ?EVENTED_RELIST_PERIOD,
                                "PLEG: watching the runtime's container events"
                            );
                            let end = futures::stream::once(async move { RuntimeEvent { generation, item: None } });
                            ctx.add_stream(
                                stream
                                    .map(move |item| RuntimeEvent {
                                        generation,
                                        item: Some(item),
                                    })
                                    .chain(end),
                            );
                            // The recovery boundary: whatever happened while
                            // no stream was up is read now.
                            act.global_due = true;
                            act.dispatch(ctx);
                        }
                        Err(e) => {
                            act.health.stream_failed();
                            let unimplemented = e.code == tonic::Code::Unimplemented;
                            act.stream.failures += 1;
                            if unimplemented {
                                if !act.stream.told_unimplemented {
                                    act.stream.told_unimplemented = true;
                                    tracing::info!(error = %e, "PLEG: the runtime serves no container events; relisting every period");
                                }
                            } else if act.stream.failures == 1 || act.stream.failures % 60 == 0 {
                                tracing::warn!(error = %e, attempts = act.stream.failures, "PLEG: cannot watch the runtime's container events; relisting every period");
                            }
                            let delay = act.stream.backoff.after_failure(unimplemented);
                            ctx.run_later(delay, |act, ctx| act.connect(ctx));
                        }
                    }
                }),
        );
    }

    /// The stream broke or ended: back to relisting every period at once,
    /// and reconnect.
    fn disconnected(&mut self, ctx: &mut Context<Self>, why: &str) {
        let Some(since) = self.stream.up_since.take() else {
            return;
        };
        self.cache.set_events_live(false);
        self.stream.generation += 1;
        self.health.stream_disconnected();
        tracing::warn!(
            reason = why,
            "PLEG: the container event stream ended; relisting every period until it is back"
        );
        self.global_due = true;
        self.dispatch(ctx);
        let delay = self.stream.backoff.after_disconnect(since.elapsed());
        ctx.run_later(delay, |act, ctx| act.connect(ctx));
    }
}

impl StreamHandler<RuntimeEvent> for Pleg {
    fn handle(&mut self, event: RuntimeEvent, ctx: &mut Context<Self>) {
        if event.generation != self.stream.generation {
            return;
        }
        match event.item {
            Some(Ok(e)) => {
                self.health.observe_event_latency(e.created_at);
                if let Some((uid, name, ns)) = event_pod(&e) {
                    self.cache.request_relist(&uid, &name, &ns);
                    self.dispatch(ctx);
                } else {
                    tracing::debug!(container_id = %e.container_id, "PLEG: container event without a pod UID ignored");
                }
            }
            Some(Err(e)) => self.disconnected(ctx, &e.to_string()),
            None => self.disconnected(ctx, "the runtime closed the stream"),
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        // The end marker (`item: None`) already handled it; the actor lives on.
    }
}

impl StreamHandler<RelistRequested> for Pleg {
    fn handle(&mut self, _: RelistRequested, ctx: &mut Context<Self>) {
        self.dispatch(ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl Actor for Pleg {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // A PLEG restarted while the stream was up left the flag set; this
        // instance has no stream yet.
        self.cache.set_events_live(false);
        let requests = futures::stream::unfold(self.cache.clone(), |cache| async move {
            cache.relist_requested().await;
            Some((RelistRequested, cache))
        });
        ctx.add_stream(requests);
        self.dispatch(ctx);
        ctx.run_interval(self.period, |act, ctx| act.tick(ctx));
        if self.evented {
            self.connect(ctx);
        }
    }
}
