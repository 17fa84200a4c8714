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
//! - A pod whose status could not be read is re-inspected on the next relist.
//! - With [`Pleg::with_container_events`] (`EventedPLEG`) the runtime's event
//!   stream is watched ([`super::watch`]): events only ask for targeted
//!   relists, never become state; while the stream is up the global relist
//!   runs every [`EVENTED_RELIST_PERIOD`]; when it breaks, the PLEG relists
//!   at once and every period again, and reconnects with backoff; every
//!   (re)connection is followed by a global relist.
//! - Health: healthy while the last global relist finished within 3 minutes
//!   (upstream `relistThreshold`; 10 minutes while the event stream is up);
//!   readable without a message via [`PlegHealthHandle`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use futures::StreamExt;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use tokio::time::Instant;

use super::cache::PodCache;
use super::events::{Observed, PlegState, Relist, compute_events};
use super::records::{Records, observed_in};
use super::watch::{ReconnectBackoff, event_pod};
use crate::actors::supervisor::SupervisedRecipient;
use crate::cri::v1;
use crate::cri::{CriResult, SharedRuntime};
use crate::kuberuntime::convert::get_pod_status;
use crate::kuberuntime::labels::{POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL};
use crate::messages::PodUid;
use crate::messages::pleg::{PlegEvents, PodLifecycleEvent};

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
/// How many pods' statuses are read concurrently after one relist.
const INSPECT_CONCURRENCY: usize = 16;

/// Shared view of the PLEG's health.
#[derive(Clone, Debug)]
pub struct PlegHealthHandle {
    last: Arc<Mutex<Option<(Instant, Duration)>>>,
    /// `kubelet_pleg_relist_duration_seconds`.
    relist_seconds: prometheus_client::metrics::histogram::Histogram,
    /// `kubelet_pleg_relist_interval_seconds`: from one relist's start to the next's.
    relist_interval: prometheus_client::metrics::histogram::Histogram,
    /// The container event stream is up (the global relist is then slower).
    evented: Arc<AtomicBool>,
    stream: EventedPlegMetrics,
}

/// The metrics of the container event stream (upstream names).
#[derive(Clone, Debug)]
pub struct EventedPlegMetrics {
    /// `kubelet_evented_pleg_connection_success_count`.
    pub successes: Gauge,
    /// `kubelet_evented_pleg_connection_error_count`.
    pub errors: Gauge,
    /// `kubelet_evented_pleg_connection_latency_seconds`: from an event's
    /// creation in the runtime to its receipt.
    pub latency: Histogram,
    /// `kubelet_pleg_pod_relist_duration_seconds`: one targeted relist.
    pub pod_relist: Histogram,
}

impl Default for EventedPlegMetrics {
    fn default() -> Self {
        Self {
            successes: Gauge::default(),
            errors: Gauge::default(),
            latency: crate::server::metrics::default_buckets(),
            pod_relist: crate::server::metrics::default_buckets(),
        }
    }
}

impl Default for PlegHealthHandle {
    fn default() -> Self {
        Self {
            last: Arc::default(),
            relist_seconds: crate::server::metrics::default_buckets(),
            relist_interval: crate::server::metrics::default_buckets(),
            evented: Arc::default(),
            stream: EventedPlegMetrics::default(),
        }
    }
}

impl PlegHealthHandle {
    /// Observes relist durations into `histogram` (the metrics registry's).
    pub fn with_relist_histogram(mut self, histogram: prometheus_client::metrics::histogram::Histogram) -> Self {
        self.relist_seconds = histogram;
        self
    }

    /// Observes the intervals between relist starts into `histogram`.
    pub fn with_relist_interval_histogram(
        mut self,
        histogram: prometheus_client::metrics::histogram::Histogram,
    ) -> Self {
        self.relist_interval = histogram;
        self
    }

    /// Counts and times the container event stream into `metrics` (the registry's).
    pub fn with_evented_metrics(mut self, metrics: EventedPlegMetrics) -> Self {
        self.stream = metrics;
        self
    }

    /// Whether the runtime's container event stream is up (the global
    /// relist then runs every [`EVENTED_RELIST_PERIOD`]).
    pub fn is_evented(&self) -> bool {
        self.evented.load(Ordering::Relaxed)
    }

    fn stream_connected(&self) {
        self.stream.successes.inc();
        self.evented.store(true, Ordering::Relaxed);
    }

    fn stream_failed(&self) {
        self.stream.errors.inc();
    }

    fn stream_disconnected(&self) {
        self.stream.errors.inc();
        self.evented.store(false, Ordering::Relaxed);
    }

    fn observe_event_latency(&self, created_at_nanos: i64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let ago = now.saturating_sub(created_at_nanos).max(0);
        #[allow(clippy::cast_precision_loss)]
        self.stream.latency.observe(ago as f64 / 1e9);
    }

    fn observe_pod_relist(&self, took: Duration) {
        self.stream.pod_relist.observe(took.as_secs_f64());
    }

    /// When the last relist finished and how long it took.
    pub fn last_relist(&self) -> Option<(Instant, Duration)> {
        *self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, finished: Instant, took: Duration) {
        self.relist_seconds.observe(took.as_secs_f64());
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((prev_finished, prev_took)) = *last {
            let started = finished.checked_sub(took).unwrap_or(finished);
            let prev_started = prev_finished.checked_sub(prev_took).unwrap_or(prev_finished);
            let interval = started.saturating_duration_since(prev_started);
            self.relist_interval.observe(interval.as_secs_f64());
        }
        *last = Some((finished, took));
    }

    /// `Ok` while a relist finished within [`RELIST_THRESHOLD`] of `now`
    /// (or none has run yet but the PLEG started recently); otherwise the
    /// upstream message "PLEG is not healthy: pleg was last seen active …".
    pub fn check(&self, now: Instant, started: Instant) -> Result<(), String> {
        let last = self.last_relist().map_or(started, |(t, _)| t);
        let since = now.saturating_duration_since(last);
        let threshold = if self.is_evented() {
            EVENTED_RELIST_THRESHOLD
        } else {
            RELIST_THRESHOLD
        };
        if since > threshold {
            Err(format!(
                "PLEG is not healthy: pleg was last seen active {since:?} ago; threshold is {threshold:?}"
            ))
        } else {
            Ok(())
        }
    }
}

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

/// Pod UID → (name, namespace), from the CRI labels.
type Names = HashMap<PodUid, Arc<(String, String)>>;

/// One relist's result.
struct Listed {
    relist: Relist,
    names: Names,
}

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
                        if let Some(new) = new {
                            if act.failures > 0 {
                                tracing::info!(after_failures = act.failures, "PLEG relist works again");
                                act.failures = 0;
                            }
                            act.reinspect.extend(failed);
                            act.cache.update_time(started);
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

    /// A targeted relist: read only `wanted` (uid → name, namespace), store
    /// their statuses and send their events, compared with what the last
    /// relists saw of them.
    fn relist_pods(&mut self, ctx: &mut Context<Self>, wanted: HashMap<PodUid, (String, String)>) {
        self.busy = true;
        let started = Instant::now();
        let pods: Vec<_> = wanted
            .into_iter()
            .map(|(uid, (name, ns))| {
                let known = (name.is_empty() && ns.is_empty())
                    .then(|| self.names.get(&uid).map(|n| (**n).clone()))
                    .flatten();
                let (name, ns) = known.unwrap_or((name, ns));
                (uid, name, ns)
            })
            .collect();
        let runtime = self.runtime.clone();
        ctx.spawn(
            async move { read(&runtime, pods).await }
                .into_actor(self)
                .map(move |read, act, ctx| {
                    let mut events = Vec::new();
                    for (uid, status) in read {
                        match status {
                            Ok(s) => {
                                events.extend(act.old.replace_pod(&uid, observed_in(&s)));
                                if s.sandboxes.is_empty() && s.containers.is_empty() {
                                    act.names.remove(&uid);
                                } else if !act.names.contains_key(&uid) {
                                    act.names
                                        .insert(uid.clone(), Arc::new((s.name.clone(), s.namespace.clone())));
                                }
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

/// Reads each pod's status (concurrently, bounded).
async fn read(
    runtime: &SharedRuntime,
    pods: Vec<(PodUid, String, String)>,
) -> Vec<(PodUid, CriResult<crate::kuberuntime::pod_status::RuntimePodStatus>)> {
    futures::stream::iter(pods)
        .map(|(uid, name, ns)| async move {
            let status = get_pod_status(runtime.as_ref(), &uid, &name, &ns).await;
            (uid, status)
        })
        .buffer_unordered(INSPECT_CONCURRENCY)
        .collect()
        .await
}

/// The runtime's sandboxes and containers, unfiltered.
async fn list(runtime: &SharedRuntime) -> CriResult<(Vec<v1::PodSandbox>, Vec<v1::Container>)> {
    let sandboxes = runtime
        .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
        .await?
        .items;
    let containers = runtime
        .list_containers(v1::ListContainersRequest { filter: None })
        .await?
        .containers;
    Ok((sandboxes, containers))
}

/// One relist's view of the listed items. Ids are moved out of the
/// responses, and each pod's `PodUid` and names come from `prev` when the
/// last relist saw the pod: per item, one map lookup and no allocation.
fn build(prev: &Names, sandboxes: Vec<v1::PodSandbox>, containers: Vec<v1::Container>) -> Listed {
    let mut relist = Relist::with_capacity(sandboxes.len() + containers.len());
    let mut names = Names::with_capacity(prev.len());
    let mut observe = |id: String, labels: &HashMap<String, String>, state: PlegState| {
        let Some(uid) = labels.get(POD_UID_LABEL).filter(|u| !u.is_empty()) else {
            return;
        };
        let pod = if let Some((k, _)) = names.get_key_value(uid.as_str()) {
            k.clone()
        } else if let Some((k, v)) = prev.get_key_value(uid.as_str()) {
            names.insert(k.clone(), v.clone());
            k.clone()
        } else {
            let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
            let pod = PodUid::new(uid.as_str());
            names.insert(pod.clone(), Arc::new((get(POD_NAME_LABEL), get(POD_NAMESPACE_LABEL))));
            pod
        };
        relist.insert(id, Observed { pod, state });
    };
    for s in sandboxes {
        let state = match v1::PodSandboxState::try_from(s.state) {
            Ok(v1::PodSandboxState::SandboxReady) => PlegState::Running,
            _ => PlegState::Exited,
        };
        observe(s.id, &s.labels, state);
    }
    for c in containers {
        let state = match v1::ContainerState::try_from(c.state) {
            Ok(v1::ContainerState::ContainerRunning) => PlegState::Running,
            Ok(v1::ContainerState::ContainerExited) => PlegState::Exited,
            _ => PlegState::Unknown,
        };
        observe(c.id, &c.labels, state);
    }
    Listed { relist, names }
}

/// Reads and caches the status of each pod; returns the pods that failed.
async fn inspect(
    runtime: &SharedRuntime,
    cache: &PodCache,
    pods: Vec<(PodUid, String, String)>,
    started: Instant,
) -> Vec<PodUid> {
    futures::stream::iter(pods)
        .map(|(uid, name, ns)| async move {
            match get_pod_status(runtime.as_ref(), &uid, &name, &ns).await {
                Ok(s) => {
                    cache.set(uid, Some(Arc::new(s)), None, started);
                    None
                }
                Err(e) => {
                    tracing::warn!(pod_uid = %uid, error = %e, "PLEG: cannot read pod status; will retry");
                    cache.set(uid.clone(), None, Some(e.to_string()), started);
                    Some(uid)
                }
            }
        })
        .buffer_unordered(INSPECT_CONCURRENCY)
        .filter_map(|x| async move { x })
        .collect()
        .await
}

impl Actor for Pleg {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(uid: &str, name: &str) -> HashMap<String, String> {
        HashMap::from([
            (POD_UID_LABEL.to_string(), uid.to_string()),
            (POD_NAME_LABEL.to_string(), name.to_string()),
            (POD_NAMESPACE_LABEL.to_string(), "ns".to_string()),
        ])
    }

    fn sandbox(id: &str, uid: &str, ready: bool) -> v1::PodSandbox {
        let state = if ready {
            v1::PodSandboxState::SandboxReady
        } else {
            v1::PodSandboxState::SandboxNotready
        };
        v1::PodSandbox {
            id: id.into(),
            state: state as i32,
            labels: labels(uid, &format!("pod-{uid}")),
            ..Default::default()
        }
    }

    fn container(id: &str, uid: &str, state: v1::ContainerState) -> v1::Container {
        v1::Container {
            id: id.into(),
            state: state as i32,
            labels: labels(uid, &format!("pod-{uid}")),
            ..Default::default()
        }
    }

    #[test]
    fn build_maps_states_and_reuses_the_last_relists_names() {
        let first = build(
            &Names::new(),
            vec![
                sandbox("s1", "u1", true),
                sandbox("s2", "u2", false),
                sandbox("x", "", true),
            ],
            vec![
                container("c1", "u1", v1::ContainerState::ContainerRunning),
                container("c2", "u2", v1::ContainerState::ContainerExited),
                container("c3", "u2", v1::ContainerState::ContainerCreated),
            ],
        );
        let state = |l: &Listed, id: &str| l.relist.get(id).map(|o| (o.pod.to_string(), o.state));
        assert_eq!(state(&first, "s1"), Some(("u1".into(), PlegState::Running)));
        assert_eq!(state(&first, "s2"), Some(("u2".into(), PlegState::Exited)));
        assert_eq!(state(&first, "c1"), Some(("u1".into(), PlegState::Running)));
        assert_eq!(state(&first, "c2"), Some(("u2".into(), PlegState::Exited)));
        assert_eq!(state(&first, "c3"), Some(("u2".into(), PlegState::Unknown)));
        assert_eq!(state(&first, "x"), None, "items without a pod UID are not a pod's");
        assert_eq!(
            *first.names[&PodUid::from("u1")],
            ("pod-u1".to_string(), "ns".to_string())
        );

        // The next relist shares the names it already had; a gone pod's are dropped.
        let second = build(
            &first.names,
            vec![sandbox("s1", "u1", true), sandbox("s3", "u3", true)],
            vec![],
        );
        let u1 = PodUid::from("u1");
        assert!(Arc::ptr_eq(&first.names[&u1], &second.names[&u1]));
        assert!(!second.names.contains_key("u2"));
        assert_eq!(second.names["u3"].0, "pod-u3");
        let events = compute_events(&first.relist, &second.relist);
        assert!(events.iter().any(|e| e.id == "c1" && e.uid == u1));
        assert!(events.iter().any(|e| e.id == "s3" && e.uid == PodUid::from("u3")));
    }
}
