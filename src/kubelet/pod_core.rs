//! The pod core's children, one function each: what every child is built
//! from ([`Shared`] handles, its peers' addresses, settings) and how it is
//! supervised. [`super::tree`] puts them in order.

use std::time::Duration;

use super::config::KubeletConfig;
use super::extensions::Extensions;
use super::shared::Shared;
use crate::actors::supervisor::{
    AnyChildSpec, ChildRef, ChildSpec, Criticality, DeclaredChild, Strategy, SupervisedRecipient, Supervisor,
    SupervisorSpec,
};
use crate::config::PodConfig;
use crate::messages::pod_update::PodSource;
use crate::pleg::Pleg;
use crate::pod_workers::PodWorkers;
use crate::runtime_health::RuntimeHealth;
use crate::status::StatusManager;
use crate::sync_loop::SyncLoop;

/// Status-manager mailbox slots per allowed pod.
const STATUS_MAILBOX_PER_POD: usize = 4;
/// Mailbox of the pod-workers manager and of the sync loop.
const CORE_MAILBOX: usize = 16 * 1024;

/// The pod core's addresses, declared before any spec: the sync loop and
/// the pod-workers manager send to each other (and the manager to itself),
/// the sources send to pod-config.
#[derive(Clone)]
pub(super) struct Peers {
    pub status_manager: ChildRef<StatusManager>,
    pub pod_workers: ChildRef<Supervisor>,
    pub pod_workers_manager: ChildRef<PodWorkers>,
    pub sync_loop: ChildRef<SyncLoop>,
    pub pod_config: ChildRef<PodConfig>,
}

/// The declared children behind [`Peers`], each turned into its spec once.
pub(super) struct Declared {
    pub status_manager: DeclaredChild<StatusManager>,
    pub pod_workers: ChildSpec<Supervisor>,
    pub pod_workers_manager: DeclaredChild<PodWorkers>,
    pub sync_loop: DeclaredChild<SyncLoop>,
    pub pod_config: DeclaredChild<PodConfig>,
}

/// The addresses, mailboxes sized for `config.max_pods`.
pub(super) fn declare(config: &KubeletConfig) -> (Declared, Peers) {
    let declared = Declared {
        // Every pod worker publishes into this mailbox; size it so a burst
        // of maxPods workers finishing at once is not dropped (bench P2
        // finding).
        status_manager: DeclaredChild::new(
            "status-manager",
            STATUS_MAILBOX_PER_POD * config.max_pods.max(1) as usize + 1024,
        ),
        pod_workers: SupervisorSpec::new("pod-workers")
            .strategy(Strategy::OneForOne)
            .intensity(1000, Duration::from_secs(60))
            .into_child_spec(),
        pod_workers_manager: DeclaredChild::new("pod-workers-manager", CORE_MAILBOX),
        sync_loop: DeclaredChild::new("sync-loop", CORE_MAILBOX),
        pod_config: DeclaredChild::new("pod-config", crate::actors::supervisor::DEFAULT_MAILBOX_CAPACITY),
    };
    let peers = Peers {
        status_manager: declared.status_manager.child_ref(),
        pod_workers: declared.pod_workers.child_ref(),
        pod_workers_manager: declared.pod_workers_manager.child_ref(),
        sync_loop: declared.sync_loop.child_ref(),
        pod_config: declared.pod_config.child_ref(),
    };
    (declared, peers)
}

/// `runtime-health`: CRI `Status` every `runtimeHealthPeriod`.
pub(super) fn runtime_health(config: &KubeletConfig, s: &Shared) -> ChildSpec<RuntimeHealth> {
    let (rt, period, tx) = (
        s.runtime.clone(),
        config.runtime_health_period,
        s.runtime_health_tx.clone(),
    );
    ChildSpec::new("runtime-health", move || {
        RuntimeHealth::new(rt.clone(), period, tx.clone())
    })
}

/// `status-manager`: the versioned API status cache, its subscribers and
/// (cluster mode) the status syncer's sink.
pub(super) fn status_manager(
    config: &KubeletConfig,
    s: &Shared,
    declared: DeclaredChild<StatusManager>,
    ext: &mut Extensions,
    sink: Option<crate::cluster::StatusSyncSink>,
) -> ChildSpec<StatusManager> {
    let (cache, clock) = (s.statuses.clone(), config.wall_clock.clone());
    let observers = std::mem::take(&mut ext.status_observers);
    let pod_start = s
        .metrics
        .pods()
        .status_observer(s.pods.clone(), config.wall_clock.clone());
    declared.spec(move || {
        let clock = clock.clone();
        let mut m = StatusManager::with_cache(cache.clone()).with_clock(move || clock.now());
        for o in &observers {
            m = m.with_subscriber(o.clone());
        }
        m = m.with_subscriber(pod_start.clone());
        if let Some(sink) = &sink {
            m = m.with_sink(sink.clone());
        }
        m
    })
}

/// `pod-workers-manager`: routes updates to the `pod-<uid>` workers it
/// starts under `pod-workers`; owns [`crate::pod_workers::PodSyncStatuses`].
pub(super) fn pod_workers_manager(
    config: &KubeletConfig,
    s: &Shared,
    peers: &Peers,
    declared: DeclaredChild<PodWorkers>,
) -> ChildSpec<PodWorkers> {
    let deps = s.worker_deps(config, peers.status_manager.recipient());
    let supervisor = peers.pod_workers.clone();
    // Outlives every manager instance, as the records do.
    let finished = crate::pod_workers::finished::FinishedSteps::default();
    let sync_loop = peers.sync_loop.recipient();
    let records = s.pod_sync_statuses.clone();
    let arbiters: Vec<_> = (0..config.pod_worker_threads)
        .map(|_| actix::Arbiter::new().handle())
        .collect();
    declared.spec(move || {
        PodWorkers::new(
            deps.clone(),
            supervisor.clone(),
            finished.clone(),
            Some(sync_loop.clone()),
            records.clone(),
        )
        .with_arbiters(arbiters.clone())
    })
}

/// `sync-loop`: pod updates, PLEG events, housekeeping, admission.
pub(super) fn sync_loop(
    config: &KubeletConfig,
    s: &Shared,
    peers: &Peers,
    declared: DeclaredChild<SyncLoop>,
) -> ChildSpec<SyncLoop> {
    let (pods, cache, health, heartbeat, sync) = (
        s.pods.clone(),
        s.cache.clone(),
        s.runtime_health.clone(),
        s.heartbeat.clone(),
        config.sync.clone(),
    );
    let workers = peers.pod_workers_manager.clone();
    let allocatable = super::node_facts::node_allocatable(config, &s.facts);
    let sysctls = config.sysctls.clone();
    let (statuses, events, eviction, shutdown) = (
        s.statuses.clone(),
        s.events.clone(),
        s.eviction.clone(),
        s.shutdown.clone(),
    );
    let (node, allocations) = (s.node.clone(), s.allocations.clone());
    let (state, records) = (s.sync_state.clone(), s.pod_sync_statuses.clone());
    let forget = peers.status_manager.recipient();
    declared.spec(move || {
        SyncLoop::new(
            sync.clone(),
            pods.clone(),
            cache.clone(),
            workers.clone(),
            health.clone(),
            heartbeat.clone(),
        )
        .with_admission(allocatable.clone(), statuses.clone())
        .with_eviction(eviction.clone())
        .with_shutdown(shutdown.clone())
        .with_sysctls(sysctls.clone())
        .with_node_object(node.clone())
        .with_allocations(allocations.clone())
        .with_events(events.clone())
        .with_state(state.clone(), records.clone())
        .with_status_forgetting(forget.clone())
    })
}

/// `probe-workers` and `prober` (results in the shared probe store, sent to
/// the sync loop).
pub(super) fn probers(config: &KubeletConfig, s: &Shared, peers: &Peers) -> [AnyChildSpec; 2] {
    let (workers, prober) = crate::prober::tree_children(crate::prober::worker::ProberDeps {
        store: s.probes.clone(),
        statuses: s.statuses.clone(),
        pods: s.pods.clone(),
        runtime: s.runtime.clone(),
        events: s.events.clone(),
        results: Some(peers.sync_loop.recipient()),
        wall_clock: config.wall_clock.clone(),
        started: s.started,
    });
    [workers, prober]
}

/// `pleg`: relists (and, with `EventedPLEG`, the CRI event stream) into the
/// pod cache; events to the sync loop and the embedder's observers.
pub(super) fn pleg(config: &KubeletConfig, s: &Shared, peers: &Peers, ext: &mut Extensions) -> ChildSpec<Pleg> {
    let (rt, cache, events, health) = (
        s.runtime.clone(),
        s.cache.clone(),
        peers.sync_loop.recipient(),
        s.pleg_health.clone(),
    );
    let (relist, evented) = (config.relist_period, config.evented_pleg);
    let observers = std::mem::take(&mut ext.pleg_observers);
    ChildSpec::new("pleg", move || {
        let pleg =
            Pleg::new(rt.clone(), cache.clone(), events.clone(), health.clone(), relist).with_container_events(evented);
        observers.iter().fold(pleg, |p, o| p.with_observer(o.clone()))
    })
}

/// The sources pod-config waits for before housekeeping may delete pods.
pub(super) fn expected_sources(config: &KubeletConfig, cluster: bool) -> Vec<PodSource> {
    let mut expected = vec![];
    if config.static_pod_path.is_some() {
        expected.push(PodSource::File);
    }
    if config.static_pod_url.is_some() {
        expected.push(PodSource::Http);
    }
    if cluster {
        expected.push(PodSource::Api);
    }
    expected.extend(config.custom_sources.iter().cloned().map(PodSource::Custom));
    expected
}

/// `pod-config`: merges the sources into pod updates for the sync loop.
pub(super) fn pod_config(
    s: &Shared,
    peers: &Peers,
    declared: DeclaredChild<PodConfig>,
    expected: Vec<PodSource>,
) -> ChildSpec<PodConfig> {
    let updates = peers.sync_loop.recipient();
    let ready = crate::volumes::sources_ready_tap(&s.volume_store, peers.sync_loop.recipient());
    let (errors, merge) = (s.manifest_errors.clone(), s.merge_state.clone());
    declared.spec(move || {
        PodConfig::new(expected.clone(), updates.clone(), ready.clone())
            .with_published_errors(errors.clone())
            .with_state(merge.clone())
    })
}

/// `container-log-manager`: rotation of container logs (not critical).
pub(super) fn container_log_manager(config: &KubeletConfig, s: &Shared) -> AnyChildSpec {
    let deps = crate::logrotate::LogManagerDeps {
        wall_clock: config.wall_clock.clone(),
        cache: Some(s.cache.clone()),
        ..crate::logrotate::LogManagerDeps::new(s.runtime.clone(), config.container_log_policy)
    };
    ChildSpec::new("container-log-manager", move || {
        crate::logrotate::ContainerLogManager::new(deps.clone())
    })
    .criticality(Criticality::NonCritical)
    .into()
}

/// The embedders' pod sources (`source-<name>` …), sending to pod-config.
pub(super) fn custom_sources(config: &KubeletConfig, peers: &Peers, ext: &mut Extensions) -> Vec<AnyChildSpec> {
    let pod_config: SupervisedRecipient<_> = peers.pod_config.recipient();
    std::mem::take(&mut ext.sources)
        .into_iter()
        .map(|(name, factory)| {
            let spec = factory(pod_config.clone(), config.node_name.clone());
            tracing::debug!(source = %name, child = spec.name(), "adding custom pod source");
            spec
        })
        .collect()
}
