//! [`EvictionManager`]: the `eviction-manager` actor (upstream
//! `eviction.managerImpl.synchronize`, every `monitoringInterval`).
//!
//! Each round reads the node summary, steps the [`Tracker`](super::Tracker)
//! (node pressure conditions, grace periods), then
//!
//! - with `localStorageCapacityIsolation`, evicts every pod over its local
//!   storage limits ([`local_storage`]), without a
//!   `DisruptionTarget` condition, as upstream; if any was, the round ends;
//! - when a threshold is to be acted on, records `EvictionThresholdMet` on
//!   the node and evicts one pod: the first non-critical pod of the ranking,
//!   with a `DisruptionTarget` condition.
//!
//! An evicted pod is killed through the pod workers as `Failed`/`Evicted`
//! with upstream's message, and gets a Warning `Evicted` event carrying the
//! annotations upstream's `AnnotatedEventf` does. The next eviction waits
//! until those pods' workers have terminated (at most 30 s, upstream
//! `podCleanupTimeout`).
//!
//! With `kernelMemcgNotification`, the kernel's memcg threshold
//! notifications start a round at once (`actor_memcg.rs`).
//!
//! Fields: all derived (the round-in-flight flag, whether images have their
//! own filesystem, asked once per instance, the memcg notifiers). The tracker and the pods being
//! evicted are owned state in the [`EvictionHandle`], which survives a
//! restart; a round cut short by one only delays the next.

use std::time::Duration;

use actix::prelude::*;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

use std::collections::BTreeMap;

use super::local_storage;
use super::rank::{Candidate, Usage, message, rank};
use super::signals::observe;
use super::signals::{Observations, met};
use super::state::{EvictionHandle, REASON};
use super::thresholds::Pressure;
use super::{EvictionConfig, Reclaimer, SummarySource};
use crate::actors::supervisor::SupervisedRecipient;
use crate::events::EventRecorder;
use crate::kuberuntime::qos::is_critical_pod;
use crate::messages::PodUid;
use crate::messages::event::EventType;
use crate::messages::pod_work::{KillOptions, KillStatus, UpdatePod, WorkerState};
use crate::pod_manager::{PodManager, pod_uid};
use crate::pod_workers::PodSyncStatuses;
use crate::stats::types::Summary;

/// How long the next eviction waits for the last evicted pod to go
/// (upstream `podCleanupTimeout`).
pub const POD_CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Hard evictions kill with this grace period (upstream
/// `immediateEvictionGracePeriodSeconds`).
pub const IMMEDIATE_GRACE: Duration = Duration::from_secs(1);

/// What the eviction manager works with.
#[derive(Clone)]
pub struct EvictionDeps {
    /// Thresholds and periods.
    pub config: EvictionConfig,
    /// Where the node summary comes from.
    pub source: SummarySource,
    /// The desired pods.
    pub pods: PodManager,
    /// The pods' lifecycle records.
    pub pod_sync_statuses: PodSyncStatuses,
    /// The pod workers (kills go there).
    pub workers: SupervisedRecipient<UpdatePod>,
    /// Pod events.
    pub events: EventRecorder,
    /// The owned state.
    pub handle: EvictionHandle,
    /// Node allocatable memory (`allocatableMemory.available`).
    pub allocatable_memory: Option<i64>,
    /// `kubelet_evictions{eviction_signal}`.
    pub evictions: Option<Family<Vec<(String, String)>, Gauge>>,
    /// Node-level reclaim tried before evicting for a disk signal.
    pub reclaim: Option<Reclaimer>,
    /// The node (for `EvictionThresholdMet` events).
    pub node_name: String,
}

/// One eviction: what the pod is told and recorded.
struct Eviction {
    grace: Duration,
    message: String,
    annotations: BTreeMap<String, String>,
    /// A `DisruptionTarget` condition (threshold evictions only).
    disruption: bool,
    signal: String,
}

/// The `eviction-manager` actor. See the [module docs](self).
pub struct EvictionManager {
    pub(super) deps: EvictionDeps,
    running: bool,
    dedicated_image_fs: Option<bool>,
    /// The kernel memcg notifiers (`actor_memcg.rs`): derived, re-registered
    /// from the next summary by a new instance.
    pub(super) memcg: super::actor_memcg::MemcgWatches,
}

impl EvictionManager {
    /// A manager working from `deps`.
    pub fn new(deps: EvictionDeps) -> Self {
        Self {
            deps,
            running: false,
            dedicated_image_fs: None,
            memcg: Default::default(),
        }
    }

    pub(super) fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.deps.config.thresholds.is_empty() && !self.any_local_storage_limit() {
            // Nothing could be evicted: the summary (a walk of every pod's
            // files) is not read for nothing.
            return;
        }
        if std::mem::replace(&mut self.running, true) {
            return;
        }
        let source = self.deps.source.clone();
        // A summary slower than the interval is abandoned: it only reads.
        let deadline = self.deps.config.monitoring_interval.max(Duration::from_secs(1));
        let ask_fs = self.dedicated_image_fs.is_none();
        let fut = async move {
            let dedicated = match ask_fs {
                true => tokio::time::timeout(deadline, source.0.has_dedicated_image_fs())
                    .await
                    .ok(),
                false => None,
            };
            (dedicated, tokio::time::timeout(deadline, source.0.summary()).await)
        };
        ctx.spawn(fut.into_actor(self).map(move |(dedicated, res), act, ctx| {
            act.running = false;
            match dedicated {
                Some(Ok(d)) => act.dedicated_image_fs = Some(d),
                Some(Err(e)) => tracing::warn!(error = %e, "eviction manager: failed to get HasDedicatedImageFs"),
                None if ask_fs => tracing::warn!("eviction manager: HasDedicatedImageFs timed out"),
                None => {}
            }
            match res {
                Ok(Ok(summary)) => act.synchronize(&summary, ctx),
                Ok(Err(e)) => tracing::warn!(error = %e, "eviction manager: failed to get summary stats"),
                Err(_) => tracing::warn!(?deadline, "eviction manager: summary stats timed out"),
            }
        }));
    }

    /// Whether a desired pod sets a local storage limit.
    fn any_local_storage_limit(&self) -> bool {
        self.deps.config.local_storage_capacity_isolation
            && !self.deps.pods.pods_where(local_storage::has_limits).is_empty()
    }

    /// Active pods: desired, with a worker that is syncing them.
    fn active(&self, summary: &Summary) -> Vec<Candidate> {
        let states = self.deps.pod_sync_statuses.states();
        let stats: std::collections::HashMap<&str, _> =
            summary.pods.iter().map(|p| (p.pod_ref.uid.as_str(), p)).collect();
        self.deps
            .pods
            .pods()
            .into_iter()
            .filter(|d| states.get(&pod_uid(&d.pod)) == Some(&WorkerState::Syncing))
            .map(|d| {
                let uid = d.pod.metadata.uid.as_deref().unwrap_or_default();
                Candidate {
                    usage: stats.get(uid).map(|s| Usage::of(s)),
                    pod: d.pod.clone(),
                }
            })
            .collect()
    }

    /// Whether a pod evicted last is still going (and not for too long).
    fn waiting_for_cleanup(&self, now: Instant) -> bool {
        let mut state = self.deps.handle.lock();
        let Some((uids, since)) = state.evicting.clone() else {
            return false;
        };
        let going = |uid: &PodUid| {
            matches!(
                self.deps.pod_sync_statuses.state(uid),
                Some(WorkerState::Syncing | WorkerState::Terminating)
            )
        };
        let gone = !uids.iter().any(going);
        if gone || now.saturating_duration_since(since) >= POD_CLEANUP_TIMEOUT {
            if !gone {
                tracing::info!(pods = ?uids, "eviction manager: timed out waiting for the evicted pods to be cleaned up");
            }
            state.evicting = None;
            return false;
        }
        true
    }

    fn synchronize(&mut self, summary: &Summary, ctx: &mut Context<Self>) {
        self.update_memcg(summary, ctx);
        let cfg = &self.deps.config;
        let now = Instant::now();
        let observations = observe(summary, self.deps.allocatable_memory);
        let step = {
            let mut state = self.deps.handle.lock();
            let step = state
                .tracker
                .step(&cfg.thresholds, &observations, now, cfg.pressure_transition_period);
            if state.pressures != step.pressures {
                tracing::info!(pressures = ?step.pressures, "eviction manager: node pressure changed");
                state.pressures = step.pressures.clone();
            }
            step
        };
        if self.waiting_for_cleanup(now) {
            return;
        }
        if cfg.local_storage_capacity_isolation && self.local_storage_evictions(summary, now) {
            return;
        }
        let Some(&index) = step.act_on.first() else {
            return;
        };
        let threshold = &cfg.thresholds[index];
        let observed = observations.get(&threshold.signal);
        let resource = threshold.signal.resource();
        tracing::warn!(signal = %threshold.signal, ?observed, resource, "eviction manager: attempting to reclaim");
        self.deps.events.event(
            crate::events::node_ref(&self.deps.node_name),
            EventType::Warning,
            "EvictionThresholdMet",
            format!("Attempting to reclaim {resource}"),
        );
        if threshold.signal.pressure() == Pressure::Disk
            && let Some(reclaim) = self.deps.reclaim.clone()
        {
            self.reclaim_then_evict(index, reclaim, ctx);
            return;
        }
        self.evict(index, summary, &observations, now);
    }

    /// Upstream `reclaimNodeLevelResources`: GC first, then a fresh summary;
    /// a pod is evicted only if some threshold is still met. The round stays
    /// "running" meanwhile (no tick starts another).
    fn reclaim_then_evict(&mut self, index: usize, reclaim: Reclaimer, ctx: &mut Context<Self>) {
        self.running = true;
        let source = self.deps.source.clone();
        let deadline = self.deps.config.monitoring_interval.max(Duration::from_secs(1));
        let fut = async move {
            let done = reclaim.0.reclaim().await;
            let summary = tokio::time::timeout(deadline, source.0.summary()).await;
            (done, summary)
        };
        ctx.spawn(fut.into_actor(self).map(move |(done, summary), act, _| {
            act.running = false;
            match done {
                Ok(what) => tracing::info!(%what, "eviction manager: node-level reclaim done"),
                Err(e) => tracing::warn!(error = %e, "eviction manager: node-level reclaim failed"),
            }
            let Ok(Ok(summary)) = summary else {
                tracing::warn!("eviction manager: no summary after reclaim; the next round decides");
                return;
            };
            let observations = observe(&summary, act.deps.allocatable_memory);
            if met(&act.deps.config.thresholds, &observations, false).is_empty() {
                tracing::info!("eviction manager: able to reduce resource pressure without evicting pods");
                return;
            }
            act.evict(index, &summary, &observations, Instant::now());
        }));
    }

    /// Evicts the first pod of the ranking for threshold `index`.
    fn evict(&mut self, index: usize, summary: &Summary, observations: &Observations, now: Instant) {
        let cfg = &self.deps.config;
        let threshold = &cfg.thresholds[index];
        let observed = observations.get(&threshold.signal);
        let mut candidates = self.active(summary);
        if candidates.is_empty() {
            tracing::error!(signal = %threshold.signal, "eviction manager: no pods to evict");
            return;
        }
        rank(&mut candidates, threshold.signal);
        for c in candidates {
            let pod = &c.pod;
            let name = crate::pod_manager::format_pod(pod);
            if is_critical_pod(pod) {
                tracing::error!(pod = %name, "eviction manager: cannot evict a critical pod");
                continue;
            }
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let stats = summary.pods.iter().find(|p| p.pod_ref.uid == uid);
            let (message, annotations) = message(pod, stats, threshold, observed);
            let grace = if threshold.is_hard() {
                IMMEDIATE_GRACE
            } else {
                let own = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
                    .unwrap_or(30);
                Duration::from_secs(u64::try_from(own.min(cfg.max_pod_grace_period)).unwrap_or(0))
            };
            let eviction = Eviction {
                grace,
                message,
                annotations,
                disruption: true,
                signal: threshold.signal.to_string(),
            };
            if self.evict_pod(pod, eviction) {
                self.deps.handle.lock().evicting = Some((vec![PodUid::new(uid)], now));
            }
            return;
        }
        tracing::error!(signal = %threshold.signal, "eviction manager: unable to evict any pod from the node");
    }
}

impl EvictionManager {
    /// Upstream `localStorageEviction`: every active pod over its local
    /// storage limits is evicted; whether any was.
    fn local_storage_evictions(&self, summary: &Summary, now: Instant) -> bool {
        let dedicated = self.dedicated_image_fs.unwrap_or(false);
        let mut evicted = vec![];
        let stats: std::collections::HashMap<&str, _> =
            summary.pods.iter().map(|p| (p.pod_ref.uid.as_str(), p)).collect();
        for c in self.active(summary) {
            let uid = c.pod.metadata.uid.as_deref().unwrap_or_default();
            let Some(stats) = stats.get(uid) else {
                continue;
            };
            let Some(v) = local_storage::violation(&c.pod, stats, dedicated) else {
                continue;
            };
            if is_critical_pod(&c.pod) {
                tracing::error!(pod = %crate::pod_manager::format_pod(&c.pod), "eviction manager: cannot evict a critical pod");
                continue;
            }
            let eviction = Eviction {
                grace: IMMEDIATE_GRACE,
                message: v.message,
                annotations: BTreeMap::new(),
                disruption: false,
                signal: v.signal.to_string(),
            };
            if self.evict_pod(&c.pod, eviction) {
                evicted.push(PodUid::new(uid));
            }
        }
        if evicted.is_empty() {
            return false;
        }
        self.deps.handle.lock().evicting = Some((evicted, now));
        true
    }

    /// Upstream `evictPod` for a pod that is not critical: the Warning
    /// `Evicted` event with its annotations, the kill, the metric; false
    /// when the pod workers cannot be reached.
    fn evict_pod(&self, pod: &std::sync::Arc<k8s_openapi::api::core::v1::Pod>, e: Eviction) -> bool {
        let name = crate::pod_manager::format_pod(pod);
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        tracing::warn!(pod = %name, pod_uid = %uid, signal = %e.signal, annotations = ?e.annotations, grace = ?e.grace,
            message = %e.message, "eviction manager: evicting pod");
        let kill = KillOptions {
            grace_period_override: Some(e.grace),
            status: Some(KillStatus {
                phase: "Failed".into(),
                reason: REASON.into(),
                message: e.message.clone(),
                disruption: e.disruption,
            }),
        };
        if let Err(err) = self.deps.workers.do_send(UpdatePod::kill(pod.clone(), kill)) {
            tracing::warn!(pod = %name, error = %err, "eviction manager: pod workers unreachable; retrying next round");
            return false;
        }
        self.deps
            .events
            .annotated_pod_event(pod, e.annotations, EventType::Warning, REASON, e.message);
        if let Some(family) = &self.deps.evictions {
            family
                .get_or_create(&vec![("eviction_signal".to_string(), e.signal)])
                .inc();
        }
        true
    }
}

impl Actor for EvictionManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(
            thresholds = self.deps.config.thresholds.len(),
            "eviction manager started"
        );
        ctx.run_interval(self.deps.config.monitoring_interval, |act, ctx| act.tick(ctx));
        self.tick(ctx);
    }
}
