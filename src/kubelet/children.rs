//! Children [`start_with`](super::start_with) adds around the pod core: the
//! static pod sources (`file-source`, `http-source`) and the node-level
//! managers — container and image GC, the `eviction-manager` (when
//! thresholds are configured; the GC is its node-level reclaim) and the
//! `node-shutdown-manager` (when a shutdown grace period is configured).

use std::time::Duration;

use super::config::KubeletConfig;
use super::node_facts::NodeFacts;
use crate::actors::supervisor::{AnyChildSpec, ChildSpec, SupervisedRecipient};
use crate::events::EventRecorder;
use crate::messages::pod_work::UpdatePod;
use crate::nodeshutdown::NodeShutdownEvent;
use crate::pod_manager::PodManager;
use crate::pod_workers::PodSyncStatuses;
use crate::sync_loop::SyncLoopState;

/// What the managers share with the rest of the tree.
pub(super) struct ManagerInputs<'a> {
    pub config: &'a KubeletConfig,
    pub facts: &'a NodeFacts,
    pub runtime: crate::cri::SharedRuntime,
    pub pods: PodManager,
    pub pod_sync_statuses: PodSyncStatuses,
    pub sync_state: SyncLoopState,
    pub workers: SupervisedRecipient<UpdatePod>,
    pub events: EventRecorder,
    pub stats: crate::stats::StatsProvider,
    pub eviction: crate::eviction::EvictionHandle,
    pub shutdown: crate::nodeshutdown::ShutdownHandle,
    pub evictions:
        prometheus_client::metrics::family::Family<Vec<(String, String)>, prometheus_client::metrics::gauge::Gauge>,
    pub shutdown_gauges: crate::nodeshutdown::ShutdownGauges,
    /// systemd, when pod slices are its units (the GC stops them).
    pub systemd_slices: Option<std::sync::Arc<crate::cm::systemd::SystemdSlices>>,
    /// The PLEG's pod cache (the container GC skips quiet rounds by it).
    pub runtime_cache: crate::pleg::PodCache,
}

/// The managers' children, and where shutdown events go (`None`: graceful
/// shutdown off).
pub(super) fn node_managers(
    i: ManagerInputs<'_>,
) -> (Vec<AnyChildSpec>, Option<SupervisedRecipient<NodeShutdownEvent>>) {
    let config = i.config;
    let (mut children, gc_reclaim) = crate::gc::children(crate::gc::GcInputs {
        config,
        runtime: i.runtime,
        pods: i.pods.clone(),
        pod_sync_statuses: i.pod_sync_statuses.clone(),
        sync_state: i.sync_state,
        state: crate::gc::GcState::new(),
        events: i.events.clone(),
        systemd_slices: i.systemd_slices.clone(),
        runtime_cache: Some(i.runtime_cache),
    });
    if config.eviction.thresholds.is_empty() && !config.eviction.local_storage_capacity_isolation {
        tracing::info!("no eviction thresholds and localStorageCapacityIsolation off: eviction manager off");
    } else {
        let mut eviction = config.eviction.clone();
        // The notifiers watch the node allocatable cgroup as the driver names it.
        let naming = &config.cgroups.naming;
        eviction.pods_cgroup = naming.kubepods().to_driver(naming.driver);
        eviction.memory_cgroup_mount = config.cgroups.cgroup_mount.join("memory");
        let deps = crate::eviction::EvictionDeps {
            config: eviction,
            source: config
                .eviction
                .summary
                .clone()
                .unwrap_or_else(|| crate::eviction::SummarySource::new(i.stats)),
            pods: i.pods.clone(),
            pod_sync_statuses: i.pod_sync_statuses.clone(),
            workers: i.workers.clone(),
            events: i.events.clone(),
            handle: i.eviction,
            allocatable_memory: Some(super::node_facts::allocatable_memory(config, i.facts)),
            evictions: Some(i.evictions),
            reclaim: Some(crate::eviction::Reclaimer::new(gc_reclaim)),
            node_name: config.node_name.clone(),
        };
        children.push(
            ChildSpec::new("eviction-manager", move || {
                crate::eviction::EvictionManager::new(deps.clone())
            })
            .shutdown_timeout(Duration::from_secs(5))
            .into(),
        );
    }
    if !config.shutdown.enabled() {
        tracing::info!("no graceful shutdown configuration: node shutdown will be immediate");
        return (children, None);
    }
    let deps = crate::nodeshutdown::ShutdownDeps {
        config: config.shutdown.clone(),
        pods: i.pods,
        pod_sync_statuses: i.pod_sync_statuses,
        workers: i.workers,
        events: i.events,
        node_name: config.node_name.clone(),
        handle: i.shutdown,
        state_file: Some(config.root_dir.join(crate::nodeshutdown::state::STATE_FILE)),
        gauges: i.shutdown_gauges,
        inhibit: crate::nodeshutdown::logind::InhibitLock::default(),
    };
    let spec = ChildSpec::new("node-shutdown-manager", move || {
        crate::nodeshutdown::NodeShutdownManager::new(deps.clone())
    });
    let trigger = spec.child_ref().recipient();
    children.push(spec.into());
    (children, Some(trigger))
}

/// The `file-source` and `http-source` children the configuration asks for,
/// feeding `out`; a bad `--manifest-url` fails here, at start.
pub(super) fn static_sources(
    config: &KubeletConfig,
    out: SupervisedRecipient<crate::messages::pod_update::SourceSnapshot>,
) -> Result<Vec<AnyChildSpec>, crate::config::HttpSourceError> {
    use crate::config::{FileSource, FileSourceConfig, HttpSource, HttpSourceConfig, SharedLastGood};
    let mut children: Vec<AnyChildSpec> = vec![];
    if let Some(path) = &config.static_pod_path {
        let mut fc = FileSourceConfig::new(path.clone(), config.node_name.clone());
        fc.check_frequency = config.file_check_frequency;
        let out = out.clone();
        // Owned state: one per source, outliving its instances.
        let last_good = SharedLastGood::default();
        children.push(
            ChildSpec::new("file-source", move || {
                FileSource::new(fc.clone(), out.clone()).with_last_good(last_good.clone())
            })
            .into(),
        );
    }
    if let Some(url) = &config.static_pod_url {
        let mut hc = HttpSourceConfig::new(url.clone(), config.node_name.clone());
        hc.headers = config.static_pod_url_headers.clone();
        hc.check_frequency = config.http_check_frequency;
        // Validate once up front, so the factory cannot fail later.
        HttpSource::new(hc.clone(), out.clone())?;
        let last_good = SharedLastGood::default();
        children.push(
            ChildSpec::new("http-source", move || {
                HttpSource::new(hc.clone(), out.clone())
                    .unwrap_or_else(|e| unreachable!("validated at start: {e}"))
                    .with_last_good(last_good.clone())
            })
            .into(),
        );
    }
    Ok(children)
}
