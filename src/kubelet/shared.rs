//! [`Shared`]: every handle of one kubelet that outlives its actors — the
//! state-ownership rule of [`crate::actors`] made concrete. Created once,
//! before any actor starts; each child's factory gets clones of what it
//! reads or owns, so a restarted actor finds the same state.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;

use super::cluster;
use super::config::KubeletConfig;
use super::extensions::Extensions;
use super::node_facts::{NodeFacts, detect_node_ip};
use crate::actors::supervisor::{AnyChildSpec, SupervisionTree};
use crate::cluster::{MirrorPods, NodeHandle};
use crate::config::{ManifestErrors, PodConfigState};
use crate::cri::SharedRuntime;
use crate::events::EventRecorder;
use crate::kuberuntime::dns::HostDns;
use crate::kuberuntime::{RuntimeManager, RuntimeManagerConfig};
use crate::messages::runtime_health::RuntimeHealthChanged;
use crate::pleg::{PlegHealthHandle, PodCache};
use crate::pod_manager::PodManager;
use crate::pod_workers::{PodSyncStatuses, WorkerDeps};
use crate::quantity::ParsedQuantity;
use crate::runtime_health::RuntimeHealth;
use crate::server::metrics::KubeletMetrics;
use crate::status::StatusCache;
use crate::sync_loop::{SyncLoopHeartbeat, SyncLoopState};

/// The shared handles (cheap clones of one state each).
pub(super) struct Shared {
    /// The runtime, every call counted and timed for `/metrics`.
    pub runtime: SharedRuntime,
    /// `/metrics`.
    pub metrics: Arc<KubeletMetrics>,
    /// CPUs, memory, OS of the node.
    pub facts: NodeFacts,
    /// `--node-ip`, else the detected one.
    pub node_ip: Option<String>,
    /// When the kubelet started (health, probes' initial delays).
    pub started: Instant,
    /// The runtime manager (sync and kill steps), shared by the pod workers.
    pub manager: Arc<RuntimeManager>,
    /// Desired pods.
    pub pods: PodManager,
    /// API statuses (status manager).
    pub statuses: StatusCache,
    /// Runtime statuses (PLEG).
    pub cache: PodCache,
    /// Per-pod lifecycle records (pod-workers manager; read by housekeeping, GC, volumes).
    pub pod_sync_statuses: PodSyncStatuses,
    /// CRI mutations in flight per pod (`cri::to_completion`): a pod worker
    /// waits for its pod's before it reads the runtime.
    pub in_flight: crate::cri::to_completion::InFlight,
    /// The turns of the pod sync steps (`--max-concurrent-pod-syncs`): one
    /// semaphore for every pod worker, kept across their restarts.
    pub sync_slots: crate::pod_workers::SyncSlots,
    /// Mirror pods (cluster mode).
    pub mirror_pods: MirrorPods,
    /// Probe results.
    pub probes: crate::prober::store::ProbeStore,
    /// Events for pods and the node.
    pub events: EventRecorder,
    /// The sync loop's heartbeat (`/healthz`).
    pub heartbeat: SyncLoopHeartbeat,
    /// The sync loop's sources-ready flag and admission totals.
    pub sync_state: SyncLoopState,
    /// PLEG health and relist metrics (`/healthz`, node Ready).
    pub pleg_health: PlegHealthHandle,
    /// The runtime health checker's output and its input end.
    pub runtime_health: watch::Receiver<RuntimeHealthChanged>,
    /// The sender the `runtime-health` child writes to.
    pub runtime_health_tx: watch::Sender<RuntimeHealthChanged>,
    /// Node pressure and the eviction tracker.
    pub eviction: crate::eviction::EvictionHandle,
    /// Whether the node is shutting down.
    pub shutdown: crate::nodeshutdown::ShutdownHandle,
    /// Pending in-place resizes (sync loop writes, pod workers read).
    pub allocations: crate::allocation::Allocations,
    /// The node object as last read (admission) and written.
    pub node: NodeHandle,
    /// The merge of the pod sources.
    pub merge_state: PodConfigState,
    /// Manifests the sources could not use.
    pub manifest_errors: ManifestErrors,
    /// RuntimeClass name → handler.
    pub runtime_classes: crate::runtime_class::RuntimeClasses,
    /// Mounted volumes, per pod.
    pub volumes: crate::volumes::VolumeHandle,
    /// The volume store (its sources-ready flag).
    pub volume_store: crate::volumes::VolumeStore,
    /// QoS and pod cgroups.
    pub cgroups: crate::cm::ContainerManager,
    /// Node and pod stats (10250, read-only port, eviction).
    pub stats: crate::stats::StatsProvider,
    /// The live supervision tree, before the root starts.
    pub tree: SupervisionTree,
}

/// Children assembled together with their handles in [`Shared::new`].
pub(super) struct WithHandles {
    /// `events`, `status-syncer` (cluster mode) and the status sink.
    pub cluster: cluster::Early,
    /// `volume-manager`.
    pub volume_manager: AnyChildSpec,
    /// `container-manager`, `oom-watcher`.
    pub cgroups: Vec<AnyChildSpec>,
}

impl Shared {
    /// Creates every shared handle for `config` on `runtime` (already
    /// instrumented by `metrics`).
    pub(super) fn new(
        config: &KubeletConfig,
        runtime: SharedRuntime,
        metrics: Arc<KubeletMetrics>,
        in_flight: crate::cri::to_completion::InFlight,
        ext: &Extensions,
    ) -> (Self, WithHandles) {
        let started = Instant::now();
        let facts = NodeFacts::detect();
        let node_ip = config
            .node_ip
            .clone()
            .or_else(|| detect_node_ip().map(|ip| ip.to_string()));
        // The embedder's RuntimeClasses, else (cluster mode) a table the
        // `runtime-classes` child fills from the API server, else an empty one.
        let runtime_classes = match (&ext.runtime_classes, &ext.api_client) {
            (Some(classes), _) => classes.clone(),
            (None, Some(_)) => crate::runtime_class::RuntimeClasses::unsynced(),
            (None, None) => crate::runtime_class::RuntimeClasses::new(),
        };
        let (pods, statuses, cache, mirror_pods) = (
            PodManager::new(),
            StatusCache::new(),
            PodCache::new(),
            MirrorPods::new(),
        );
        let early = cluster::early(ext.api_client.as_ref(), config, &pods, &statuses, &cache, &mirror_pods);
        let events = match (&ext.event_sink, ext.api_client.is_none()) {
            (Some(sink), true) => EventRecorder::new(sink.clone()),
            _ => early.events.clone(),
        };
        let manager = Arc::new(runtime_manager(
            config,
            &runtime,
            &facts,
            &node_ip,
            &runtime_classes,
            &events,
        ));
        let pod_sync_statuses = PodSyncStatuses::default();
        let volumes = crate::volumes::assemble(crate::volumes::VolumeInputs {
            root_dir: config.root_dir.clone(),
            objects: match &ext.api_client {
                Some(c) => Arc::new(crate::volumes::objects::ApiObjects::new(c.clone())),
                None => Arc::new(crate::volumes::objects::Standalone),
            },
            pods: pods.clone(),
            cache: cache.clone(),
            events: events.clone(),
            env: manager.config().env_context(&[]),
            resync: config.sync.sync_frequency,
            period: crate::volumes::actor::RECONCILE_PERIOD,
            terminated: Some(pod_sync_statuses.clone()),
        });
        let cm = crate::cm::assemble(crate::cm::CmInputs {
            config,
            runtime: runtime.clone(),
            pods: pods.clone(),
            cpus: facts.cpus,
            memory_bytes: facts.memory_bytes,
            cpu_cfs_quota: manager.config().cpu_cfs_quota,
            events: events.clone(),
        });
        // The stats provider (and its CPU sample cache) outlives restarts of
        // its readers: the read-only port, 10250 and the eviction manager.
        let stats = super::servers::stats_provider(config, runtime.clone(), pods.clone(), cm.handle.clone());
        let pleg_health = PlegHealthHandle::default()
            .with_relist_histogram(metrics.pleg_relist())
            .with_relist_interval_histogram(metrics.pleg_relist_interval())
            .with_evented_metrics(metrics.evented_pleg());
        let (runtime_health_tx, runtime_health) = RuntimeHealth::channel();
        let shared = Self {
            runtime,
            metrics,
            facts,
            node_ip,
            started,
            manager,
            pods,
            statuses,
            cache,
            pod_sync_statuses,
            in_flight,
            sync_slots: crate::pod_workers::SyncSlots::new(config.max_concurrent_pod_syncs),
            mirror_pods,
            probes: crate::prober::store::ProbeStore::default(),
            events,
            heartbeat: SyncLoopHeartbeat::default(),
            sync_state: SyncLoopState::default(),
            pleg_health,
            runtime_health,
            runtime_health_tx,
            eviction: crate::eviction::EvictionHandle::default(),
            shutdown: crate::nodeshutdown::ShutdownHandle::default(),
            allocations: crate::allocation::Allocations::load(config.root_dir.join(crate::allocation::CHECKPOINT)),
            node: NodeHandle::default(),
            merge_state: PodConfigState::default(),
            manifest_errors: ManifestErrors::default(),
            runtime_classes,
            volumes: volumes.handle,
            volume_store: volumes.store,
            cgroups: cm.handle,
            stats,
            tree: SupervisionTree::new(),
        };
        let with_handles = WithHandles {
            cluster: early,
            volume_manager: volumes.spec.into(),
            cgroups: cm.children,
        };
        (shared, with_handles)
    }

    /// What every pod worker is built from.
    pub(super) fn worker_deps(
        &self,
        config: &KubeletConfig,
        status_manager: crate::actors::supervisor::SupervisedRecipient<crate::messages::status::UpdatePodStatus>,
    ) -> WorkerDeps {
        WorkerDeps {
            runtime: self.manager.clone(),
            cache: self.cache.clone(),
            pods: self.pods.clone(),
            statuses: self.statuses.clone(),
            status_manager,
            host_ip: self.node_ip.clone(),
            runtime_name: config.runtime_name.clone(),
            wall_clock: config.wall_clock.clone(),
            probes: self.probes.clone(),
            volumes: self.volumes.clone(),
            cgroups: self.cgroups.clone(),
            allocations: self.allocations.clone(),
            metrics: Some(self.metrics.pods().clone()),
            sync_statuses: self.pod_sync_statuses.clone(),
            in_flight: self.in_flight.clone(),
            sync_slots: self.sync_slots.clone(),
        }
    }
}

/// The runtime manager's settings from the kubelet's.
fn runtime_manager(
    config: &KubeletConfig,
    runtime: &SharedRuntime,
    facts: &NodeFacts,
    node_ip: &Option<String>,
    runtime_classes: &crate::runtime_class::RuntimeClasses,
    events: &EventRecorder,
) -> RuntimeManager {
    let host_dns = std::fs::read_to_string("/etc/resolv.conf")
        .ok()
        .map(|s| HostDns::parse(&s));
    let rm_config = RuntimeManagerConfig {
        runtime_classes: runtime_classes.clone(),
        pod_logs_dir: config.pod_logs_dir.clone(),
        container_logs_dir: config.container_logs_dir.clone(),
        host_dns,
        node_name: config.node_name.clone(),
        node_ips: node_ip.iter().cloned().collect(),
        memory_capacity: facts.memory_bytes,
        allocatable_cpu: ParsedQuantity::from_units(facts.cpus),
        allocatable_memory: ParsedQuantity::from_units(facts.memory_bytes),
        cluster_dns: config.cluster_dns.clone(),
        cluster_domain: config.cluster_domain.clone(),
        cgroup_naming: config.cgroups.naming.clone(),
        pods_dir: Some(config.root_dir.join("pods")),
        serialize_image_pulls: config.serialize_image_pulls,
        max_parallel_image_pulls: config.max_parallel_image_pulls,
        ..RuntimeManagerConfig::default()
    };
    let clock = config.wall_clock.clone();
    RuntimeManager::new(runtime.clone(), rm_config)
        .with_wall_clock(move || clock.now())
        .with_events(events.clone())
}
