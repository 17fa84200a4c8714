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
    /// The last relist's pods' names (reused by the next one: no fresh
    /// strings per pod and relist).
    names: Names,
    reinspect: HashSet<PodUid>,
    relisting: bool,
    /// Relists failed in a row (logs are throttled while the runtime is away).
    failures: u64,
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
            old: Relist::new(),
            names: Names::new(),
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
                    let (events, pods, new) = match listed.map(|(s, c)| build(&act.names, s, c)) {
                        Ok(l) => {
                            let events = compute_events(&act.old, &l.relist);
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
                    .map(move |(events, failed, new), act, _| {
                        act.relisting = false;
                        let Some(new) = new else { return };
                        if act.failures > 0 {
                            tracing::info!(after_failures = act.failures, "PLEG relist works again");
                            act.failures = 0;
                        }
                        act.reinspect.extend(failed);
                        act.cache.update_time(started);
                        act.old = new.relist;
                        act.names = new.names;
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
        self.relist(ctx);
        ctx.run_interval(self.period, |act, ctx| act.relist(ctx));
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
