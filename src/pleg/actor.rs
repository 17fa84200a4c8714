//! [`Pleg`]: the relisting actor.
//!
//! # Guarantees
//! - One relist at a time; a relist slower than the period delays the next.
//! - When [`PlegEvents`] is sent, the pod cache already holds the status of
//!   every pod named in it, stamped with the relist's start time, and the
//!   cache's global timestamp says every other pod is unchanged as of then.
//! - A pod whose status could not be read is re-inspected on the next relist.
//! - Health: healthy while the last relist finished within 3 minutes
//!   (upstream `relistThreshold`); readable without a message via [`PlegHealthHandle`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use futures::StreamExt;
use tokio::time::Instant;

use super::cache::PodCache;
use super::events::{Observed, PlegState, Relist, compute_events};
use crate::actors::supervisor::SupervisedRecipient;
use crate::cri::v1;
use crate::cri::{CriResult, SharedRuntime};
use crate::kuberuntime::convert::get_pod_status;
use crate::kuberuntime::labels::{POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL};
use crate::messages::PodUid;
use crate::messages::pleg::PlegEvents;

/// Upstream's relist period.
pub const RELIST_PERIOD: Duration = Duration::from_secs(1);
/// Upstream's relist threshold: unhealthy when no relist finished for this long.
pub const RELIST_THRESHOLD: Duration = Duration::from_secs(180);
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
}

impl Default for PlegHealthHandle {
    fn default() -> Self {
        Self {
            last: Arc::default(),
            relist_seconds: crate::server::metrics::default_buckets(),
            relist_interval: crate::server::metrics::default_buckets(),
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
        if since > RELIST_THRESHOLD {
            Err(format!(
                "PLEG is not healthy: pleg was last seen active {since:?} ago; threshold is {RELIST_THRESHOLD:?}"
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
    old: Relist,
    reinspect: HashSet<PodUid>,
    relisting: bool,
    /// Relists failed in a row (logs are throttled while the runtime is away).
    failures: u64,
}

/// While relists keep failing, one warning per this many (one a minute at the 1 s period).
const FAILURE_LOG_EVERY: u64 = 60;

/// One relist's raw result.
struct Listed {
    relist: Relist,
    names: HashMap<PodUid, (String, String)>,
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
            old: Relist::new(),
            reinspect: HashSet::new(),
            relisting: false,
            failures: 0,
        }
    }

    /// Also sends every batch of events to `observer` (embedders, tests).
    pub fn with_observer(mut self, observer: SupervisedRecipient<PlegEvents>) -> Self {
        self.observers.push(observer);
        self
    }

    fn relist(&mut self, ctx: &mut Context<Self>) {
        if self.relisting {
            return;
        }
        self.relisting = true;
        let runtime = self.runtime.clone();
        let started = Instant::now();
        ctx.spawn(
            async move { list(&runtime).await }
                .into_actor(self)
                .then(move |listed, act, _| {
                    let runtime = act.runtime.clone();
                    let cache = act.cache.clone();
                    let (events, pods, new) = match listed {
                        Ok(l) => {
                            let events = compute_events(&act.old, &l.relist);
                            let mut pods: HashSet<PodUid> = events.iter().map(|e| e.uid.clone()).collect();
                            pods.extend(act.reinspect.drain());
                            let pods: Vec<_> = pods
                                .into_iter()
                                .map(|uid| {
                                    let (n, ns) = l.names.get(&uid).cloned().unwrap_or_default();
                                    (uid, n, ns)
                                })
                                .collect();
                            (events, pods, Some(l.relist))
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
                    .map(move |(events, failed, new), act, _| {
                        act.relisting = false;
                        let Some(new) = new else { return };
                        if act.failures > 0 {
                            tracing::info!(after_failures = act.failures, "PLEG relist works again");
                            act.failures = 0;
                        }
                        act.reinspect.extend(failed);
                        act.cache.update_time(started);
                        act.old = new;
                        let now = Instant::now();
                        act.health.record(now, now - started);
                        if events.is_empty() {
                            return;
                        }
                        for observer in &act.observers {
                            if let Err(e) = observer.do_send(PlegEvents(events.clone())) {
                                tracing::debug!(error = %e, "a PLEG observer missed a batch of events");
                            }
                        }
                        if let Err(e) = act.events.do_send(PlegEvents(events)) {
                            tracing::warn!(error = %e, "cannot deliver PLEG events; the next resync covers them");
                        }
                    })
                }),
        );
    }
}

async fn list(runtime: &SharedRuntime) -> CriResult<Listed> {
    let sandboxes = runtime
        .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
        .await?
        .items;
    let containers = runtime
        .list_containers(v1::ListContainersRequest { filter: None })
        .await?
        .containers;
    let mut relist = Relist::with_capacity(sandboxes.len() + containers.len());
    let mut names = HashMap::new();
    let mut observe = |id: &str, labels: &HashMap<String, String>, state: PlegState| {
        let Some(uid) = labels.get(POD_UID_LABEL).filter(|u| !u.is_empty()) else {
            return;
        };
        let uid = PodUid::new(uid.as_str());
        names.entry(uid.clone()).or_insert_with(|| {
            let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
            (get(POD_NAME_LABEL), get(POD_NAMESPACE_LABEL))
        });
        relist.insert(id.to_string(), Observed { pod: uid, state });
    };
    for s in &sandboxes {
        let state = match v1::PodSandboxState::try_from(s.state) {
            Ok(v1::PodSandboxState::SandboxReady) => PlegState::Running,
            _ => PlegState::Exited,
        };
        observe(&s.id, &s.labels, state);
    }
    for c in &containers {
        let state = match v1::ContainerState::try_from(c.state) {
            Ok(v1::ContainerState::ContainerRunning) => PlegState::Running,
            Ok(v1::ContainerState::ContainerExited) => PlegState::Exited,
            _ => PlegState::Unknown,
        };
        observe(&c.id, &c.labels, state);
    }
    Ok(Listed { relist, names })
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
        self.relist(ctx);
        ctx.run_interval(self.period, |act, ctx| act.relist(ctx));
    }
}
