//! [`start`]: builds and starts the supervision tree.
//!
//! ```text
//! root (one-for-one)
//! ├── events                (cluster) core/v1 Events
//! ├── runtime-health        CRI Status every 5 s → watch channel
//! ├── status-syncer         (cluster) pods/status patches, deletion finalisation
//! ├── status-manager        versioned API status cache
//! ├── volume-manager        mounts pods' volumes before their containers start, cleans up after
//! ├── pod-workers           supervisor (one-for-one) of the per-pod workers
//! ├── pod-workers-manager   routes updates to pod-<uid> workers
//! ├── pleg                  relist every 1 s (300 s with EventedPLEG) + targeted relists → pod cache + events
//! ├── sync-loop             updates, events, ticks, housekeeping
//! ├── pod-config            merges the sources
//! ├── container-manager / oom-watcher   QoS and pod cgroups; kernel OOM kills
//! ├── container-gc / image-gc   dead containers, sandboxes, logs; unused images
//! ├── file-source / http-source
//! ├── node / node-lease / api-source / mirror-pods   (cluster; see [`crate::cluster`])
//! ├── node-conditions       (standalone) node conditions for observers
//! ├── source-<name> …       embedders' sources
//! └── healthz / read-only   HTTP servers
//! ```
//! Peers hold each other's stable [`ChildRef`]s, created before any actor
//! starts, so start order only matters for shutdown (reverse order: servers
//! and sources first, the runtime health checker last). Stopping the tree
//! never stops containers: pods keep running and are adopted on the next start.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::cluster;
use super::config::KubeletConfig;
use super::extensions::Extensions;
use super::handle::Kubelet;
use super::node_facts::{NodeFacts, detect_node_ip};
use crate::actors::supervisor::{
    ChildRef, ChildSpec, Criticality, RestartBackoff, Strategy, SupervisedRecipient, SupervisorSpec,
};
use crate::cluster::{MirrorPods, NodeHandle};
use crate::config::{HttpSourceError, ManifestErrors, PodConfig, PodConfigState};
use crate::cri::SharedRuntime;
use crate::kuberuntime::dns::HostDns;
use crate::kuberuntime::{RuntimeManager, RuntimeManagerConfig};
use crate::messages::pod_update::PodSource;
use crate::messages::pod_work::SyncFinished;
use crate::pleg::{Pleg, PlegHealthHandle, PodCache};
use crate::pod_manager::PodManager;
use crate::pod_workers::{PodSyncStatuses, PodWorkers, WorkerDeps};
use crate::quantity::ParsedQuantity;
use crate::runtime_health::RuntimeHealth;
use crate::server::routes::sync_loop_threshold;
use crate::server::{HealthState, ServerState};
use crate::status::{StatusCache, StatusManager};
use crate::sync_loop::{SyncLoop, SyncLoopHeartbeat, SyncLoopState};

/// The system could not be started.
///
/// ```
/// use std::sync::Arc;
/// use actlet::cri::mock::MockRuntime;
/// use actlet::kubelet::{StartError, start};
/// let tmp = tempfile::tempdir().unwrap();
/// std::fs::write(tmp.path().join("file"), "").unwrap();
/// let mut config = actlet::KubeletConfig::new("node-a");
/// config.root_dir = tmp.path().join("file/root"); // under a regular file: cannot be created
/// let err = start(config, Arc::new(MockRuntime::new())).err().unwrap();
/// assert!(matches!(err, StartError::Dir { .. }), "{err}");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A directory could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        /// The directory.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP source's settings are unusable.
    #[error(transparent)]
    HttpSource(#[from] HttpSourceError),
    /// A setting is unusable.
    #[error(transparent)]
    Config(#[from] super::config::ConfigError),
    /// The authenticated API server's TLS or auth settings are unusable.
    #[error(transparent)]
    ApiServer(#[from] crate::server::secure::ApiServerError),
}

/// HTTP servers are not critical: one that cannot listen (port taken) is
/// retried every 5 s, as upstream retries its listeners, while pods keep
/// being managed.
pub const SERVER_RETRY: RestartBackoff = RestartBackoff {
    initial: Duration::from_secs(5),
    max: Duration::from_secs(5),
    reset_after: Duration::from_secs(60),
};

/// Status-manager mailbox slots per allowed pod.
const STATUS_MAILBOX_PER_POD: usize = 4;

/// `GOARCH` naming of this machine (`amd64`, `arm64`).
///
/// ```
/// let arch = actlet::kubelet::go_arch();
/// if cfg!(target_arch = "x86_64") {
///     assert_eq!(arch, "amd64"); // the `kubernetes.io/arch` label's value
/// }
/// ```
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

fn make_dir(path: &Path) -> Result<(), StartError> {
    std::fs::create_dir_all(path).map_err(|source| StartError::Dir {
        path: path.into(),
        source,
    })
}

/// Builds and starts the kubelet on `runtime` inside the current actix System.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use actlet::cri::mock::MockRuntime;
///
/// actlet::testing::run_paused(async {
///     let tmp = tempfile::tempdir().unwrap();
///     let mut config = actlet::KubeletConfig::new("node-a");
///     config.root_dir = tmp.path().join("root");
///     config.pod_logs_dir = tmp.path().join("logs");
///     config.container_logs_dir = None;
///     let kubelet = actlet::kubelet::start(config, Arc::new(MockRuntime::new())).unwrap();
///     assert!(tmp.path().join("root/pods").is_dir());
///     kubelet.shutdown(Duration::from_secs(5)).await.unwrap(); // containers keep running
/// });
/// ```
pub fn start(config: KubeletConfig, runtime: SharedRuntime) -> Result<Kubelet, StartError> {
    start_with(config, runtime, Extensions::default())
}

/// [`start`] with an embedder's [`Extensions`].
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use actlet::actors::supervisor::SupervisedRecipient;
/// use actlet::kubelet::{Extensions, start_with};
/// use actlet::messages::pleg::PlegEvents;
///
/// actlet::testing::run_paused(async {
/// #   let tmp = tempfile::tempdir().unwrap();
///     let batches = Arc::new(Mutex::new(0));
///     let n = batches.clone();
///     let ext = Extensions { pleg_observers: vec![SupervisedRecipient::from_fn(move |_: PlegEvents| *n.lock().unwrap() += 1)], ..Default::default() };
///     let mut config = actlet::KubeletConfig::new("node-a");
/// #   (config.root_dir, config.pod_logs_dir, config.container_logs_dir) = (tmp.path().join("root"), tmp.path().join("logs"), None);
///     let kubelet = start_with(config, Arc::new(actlet::cri::mock::MockRuntime::new()), ext).unwrap();
///     actlet::testing::wait_until(|| kubelet.tree().get("root/pleg").is_some(), Duration::from_secs(1)).await.unwrap();
///     println!("{} PLEG batches so far", batches.lock().unwrap()); // none: no pods run
/// });
/// ```
pub fn start_with(mut config: KubeletConfig, runtime: SharedRuntime, ext: Extensions) -> Result<Kubelet, StartError> {
    config.custom_sources.extend(ext.sources.iter().map(|(n, _)| n.clone()));
    config.validate_gc()?;
    // every CRI call is counted and timed for /metrics
    let metrics = crate::server::metrics::KubeletMetrics::new(crate::server::metrics::default_buckets());
    let runtime = metrics.instrument(runtime);
    for sub in ["", "pods", "plugins", "pod-resources"] {
        make_dir(&config.root_dir.join(sub))?;
    }
    make_dir(&config.pod_logs_dir)?;
    if let Some(dir) = &config.container_logs_dir {
        make_dir(dir)?;
    }
    let started = Instant::now();
    let facts = NodeFacts::detect();
    let node_ip = config
        .node_ip
        .clone()
        .or_else(|| detect_node_ip().map(|ip| ip.to_string()));
    let host_dns = std::fs::read_to_string("/etc/resolv.conf")
        .ok()
        .map(|s| HostDns::parse(&s));
    // The embedder's RuntimeClasses, else (cluster mode) a table the
    // `runtime-classes` child fills from the API server, else an empty one.
    let runtime_classes = match (&ext.runtime_classes, &ext.api_client) {
        (Some(classes), _) => classes.clone(),
        (None, Some(_)) => crate::runtime_class::RuntimeClasses::unsynced(),
        (None, None) => crate::runtime_class::RuntimeClasses::new(),
    };
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
    let pods = PodManager::new();
    let statuses = StatusCache::new();
    let cache = PodCache::new();
    let mirror_pods = MirrorPods::new();
    let probe_store = crate::prober::store::ProbeStore::default();
    let early = cluster::early(ext.api_client.as_ref(), &config, &pods, &statuses, &cache, &mirror_pods);
    let events = match (&ext.event_sink, ext.api_client.is_none()) {
        (Some(sink), true) => crate::events::EventRecorder::new(sink.clone()),
        _ => early.events.clone(),
    };
    let clock = config.wall_clock.clone();
    let manager = Arc::new(
        RuntimeManager::new(runtime.clone(), rm_config)
            .with_wall_clock(move || clock.now())
            .with_events(events.clone()),
    );

    // Per-pod lifecycle records: owned by nobody that can crash.
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

    let heartbeat = SyncLoopHeartbeat::default();
    let pleg_health = PlegHealthHandle::default()
        .with_relist_histogram(metrics.pleg_relist())
        .with_relist_interval_histogram(metrics.pleg_relist_interval())
        .with_evented_metrics(metrics.evented_pleg());
    let (health_tx, health_rx) = RuntimeHealth::channel();

    // runtime-health
    let rt = runtime.clone();
    let period = config.runtime_health_period;
    let runtime_health = ChildSpec::new("runtime-health", move || {
        RuntimeHealth::new(rt.clone(), period, health_tx.clone())
    });

    // status-manager (its cache outlives restarts)
    let sc = statuses.clone();
    let clock = config.wall_clock.clone();
    let status_observers = ext.status_observers;
    let pod_start = metrics.pods().status_observer(pods.clone(), config.wall_clock.clone());
    let status_sink = early.status_sink;
    let status_manager = ChildSpec::new("status-manager", move || {
        let clock = clock.clone();
        let mut m = StatusManager::with_cache(sc.clone()).with_clock(move || clock.now());
        for o in &status_observers {
            m = m.with_subscriber(o.clone());
        }
        m = m.with_subscriber(pod_start.clone());
        if let Some(sink) = &status_sink {
            m = m.with_sink(sink.clone());
        }
        m
    })
    // Every pod worker publishes into this mailbox; size it so a burst of
    // maxPods workers finishing at once is not dropped (bench P2 finding).
    .mailbox_capacity(STATUS_MAILBOX_PER_POD * config.max_pods.max(1) as usize + 1024);
    let status_ref = status_manager.child_ref();

    // pod-workers supervisor + manager
    let workers_sup = SupervisorSpec::new("pod-workers")
        .strategy(Strategy::OneForOne)
        .intensity(1000, Duration::from_secs(60))
        .into_child_spec();
    let workers_sup_ref: ChildRef<_> = workers_sup.child_ref();
    let cm = crate::cm::assemble(crate::cm::CmInputs {
        config: &config,
        runtime: runtime.clone(),
        pods: pods.clone(),
        cpus: facts.cpus,
        memory_bytes: facts.memory_bytes,
        cpu_cfs_quota: manager.config().cpu_cfs_quota,
        events: events.clone(),
    });
    // The stats provider (and its CPU sample cache) outlives restarts of
    // its readers: the read-only port, 10250 and the eviction manager.
    let stats = super::servers::stats_provider(&config, runtime.clone(), pods.clone(), cm.handle.clone());
    // Node pressure and the eviction tracker: owned by nobody that can crash.
    let eviction = crate::eviction::EvictionHandle::default();
    // Whether the node is shutting down: likewise.
    let shutdown = crate::nodeshutdown::ShutdownHandle::default();
    // Pending in-place resizes: written by the sync loop, read by the pod workers.
    let allocations = crate::allocation::Allocations::load(config.root_dir.join(crate::allocation::CHECKPOINT));
    let deps = WorkerDeps {
        runtime: manager,
        cache: cache.clone(),
        pods: pods.clone(),
        statuses: statuses.clone(),
        status_manager: status_ref.recipient(),
        host_ip: node_ip.clone(),
        runtime_name: config.runtime_name.clone(),
        wall_clock: config.wall_clock.clone(),
        probes: probe_store.clone(),
        volumes: volumes.handle.clone(),
        cgroups: cm.handle.clone(),
        allocations: allocations.clone(),
        metrics: Some(metrics.pods().clone()),
    };
    let me_cell: Arc<OnceLock<SupervisedRecipient<SyncFinished>>> = Arc::default();
    let sync_cell: Arc<OnceLock<SupervisedRecipient<SyncFinished>>> = Arc::default();
    let (mc, scl) = (me_cell.clone(), sync_cell.clone());
    let pss = pod_sync_statuses.clone();
    let workers = ChildSpec::new("pod-workers-manager", move || {
        let me = mc
            .get()
            .cloned()
            .unwrap_or_else(|| SupervisedRecipient::from_fn(|_| {}));
        PodWorkers::new(
            deps.clone(),
            workers_sup_ref.clone(),
            me,
            scl.get().cloned(),
            pss.clone(),
        )
    })
    .mailbox_capacity(16 * 1024);
    let workers_ref = workers.child_ref();
    let _ = me_cell.set(workers_ref.recipient());

    // sync-loop
    let (p, c, w, h, hb, sync_cfg) = (
        pods.clone(),
        cache.clone(),
        workers_ref.clone(),
        health_rx.clone(),
        heartbeat.clone(),
        config.sync.clone(),
    );
    let allocatable = super::node_facts::node_allocatable(&config, &facts);
    let sysctls = config.sysctls.clone();
    let st = statuses.clone();
    let ev = events.clone();
    let (sync_state, pss) = (SyncLoopState::default(), pod_sync_statuses.clone());
    let gc_sync_state = sync_state.clone();
    let forget = status_ref.recipient();
    let (ev_admit, sd_admit) = (eviction.clone(), shutdown.clone());
    let node_handle = NodeHandle::default();
    let node_admit = node_handle.clone();
    let alloc_admit = allocations.clone();
    let sync_loop = ChildSpec::new("sync-loop", move || {
        SyncLoop::new(sync_cfg.clone(), p.clone(), c.clone(), w.clone(), h.clone(), hb.clone())
            .with_admission(allocatable.clone(), st.clone())
            .with_eviction(ev_admit.clone())
            .with_shutdown(sd_admit.clone())
            .with_sysctls(sysctls.clone())
            .with_node_object(node_admit.clone())
            .with_allocations(alloc_admit.clone())
            .with_events(ev.clone())
            .with_state(sync_state.clone(), pss.clone())
            .with_status_forgetting(forget.clone())
    })
    .mailbox_capacity(16 * 1024);
    let sync_ref = sync_loop.child_ref();
    let _ = sync_cell.set(sync_ref.recipient());

    // probe-workers + prober (probe results live in `probe_store`)
    let prober_deps = crate::prober::worker::ProberDeps {
        store: probe_store.clone(),
        statuses: statuses.clone(),
        pods: pods.clone(),
        runtime: runtime.clone(),
        events: events.clone(),
        results: Some(sync_ref.recipient()),
        wall_clock: config.wall_clock.clone(),
        started,
    };
    let (probe_workers, prober) = crate::prober::tree_children(prober_deps);

    // pleg
    let (rt, c, ev, ph, relist, evented) = (
        runtime.clone(),
        cache.clone(),
        sync_ref.recipient(),
        pleg_health.clone(),
        config.relist_period,
        config.evented_pleg,
    );
    let pleg_observers = ext.pleg_observers;
    let pleg = ChildSpec::new("pleg", move || {
        let pleg = Pleg::new(rt.clone(), c.clone(), ev.clone(), ph.clone(), relist).with_container_events(evented);
        pleg_observers.iter().fold(pleg, |p, o| p.with_observer(o.clone()))
    });

    // pod-config and sources
    let mut expected = vec![];
    if config.static_pod_path.is_some() {
        expected.push(PodSource::File);
    }
    if config.static_pod_url.is_some() {
        expected.push(PodSource::Http);
    }
    if ext.api_client.is_some() {
        expected.push(PodSource::Api);
    }
    expected.extend(config.custom_sources.iter().cloned().map(PodSource::Custom));
    let (updates, ready) = (
        sync_ref.recipient(),
        crate::volumes::sources_ready_tap(&volumes.store, sync_ref.recipient()),
    );
    let exp = expected.clone();
    let manifest_errors = ManifestErrors::default();
    let me = manifest_errors.clone();
    let merge_state = PodConfigState::default();
    let pod_config = ChildSpec::new("pod-config", move || {
        PodConfig::new(exp.clone(), updates.clone(), ready.clone())
            .with_published_errors(me.clone())
            .with_state(merge_state.clone())
    });
    let pc_ref = pod_config.child_ref();

    let mut root = SupervisorSpec::new("root")
        .strategy(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60));
    if let Some(spec) = early.events_spec {
        root = root.child(spec);
    }
    let mut root = root.child(runtime_health);
    if let Some(spec) = early.status_syncer {
        root = root.child(spec);
    }
    let mut root = root
        .child(status_manager)
        .child(volumes.spec)
        .child(workers_sup)
        .child(workers)
        .child(pleg)
        .child(sync_loop)
        .child(probe_workers)
        .child(prober)
        .child(pod_config);
    for spec in cm.children {
        root = root.child(spec);
    }
    let log_deps = crate::logrotate::LogManagerDeps {
        wall_clock: config.wall_clock.clone(),
        ..crate::logrotate::LogManagerDeps::new(runtime.clone(), config.container_log_policy)
    };
    root = root.child(
        ChildSpec::new("container-log-manager", move || {
            crate::logrotate::ContainerLogManager::new(log_deps.clone())
        })
        .criticality(Criticality::NonCritical),
    );
    let (managers, shutdown_manager) = super::children::node_managers(super::children::ManagerInputs {
        config: &config,
        facts: &facts,
        runtime: runtime.clone(),
        pods: pods.clone(),
        pod_sync_statuses: pod_sync_statuses.clone(),
        sync_state: gc_sync_state,
        workers: workers_ref.recipient(),
        events: events.clone(),
        stats: stats.clone(),
        eviction: eviction.clone(),
        shutdown: shutdown.clone(),
        evictions: metrics.evictions(),
        shutdown_gauges: metrics.shutdown(),
        systemd_slices: cm.handle.systemd_slices(),
    });
    for spec in managers {
        root = root.child(spec);
    }

    for spec in super::children::static_sources(&config, pc_ref.recipient())? {
        root = root.child(spec);
    }

    let node_inputs = cluster::NodeInputs {
        node_ip: node_ip.clone(),
        facts: facts.clone(),
        runtime: runtime.clone(),
        runtime_health: health_rx.clone(),
        pleg_health: pleg_health.clone(),
        started,
        observers: ext.node_observers.clone(),
        handle: node_handle.clone(),
        events: events.clone(),
        eviction: eviction.clone(),
        shutdown: shutdown.clone(),
    };
    match &ext.api_client {
        Some(client) => {
            let heartbeat = ext.heartbeat_client.as_ref().unwrap_or(client);
            let children = cluster::late(
                cluster::Clients {
                    bulk: client,
                    heartbeat,
                },
                &config,
                node_inputs,
                pc_ref.recipient(),
                &pods,
                &cache,
                &mirror_pods,
            );
            for spec in children {
                root = root.child(spec);
            }
            if let Some(rotation) = ext.client_rotation.clone() {
                root = root.child(cluster::client_cert_manager(rotation, client.clone()));
            }
            if ext.runtime_classes.is_none() {
                let (client, classes) = (client.clone(), runtime_classes.clone());
                root = root.child(
                    ChildSpec::new("runtime-classes", move || {
                        crate::runtime_class::RuntimeClassWatch::new(client.clone(), classes.clone())
                    })
                    .criticality(Criticality::NonCritical),
                );
            }
        }
        None => root = root.child(cluster::local_node_conditions(&config, node_inputs)),
    }

    for (name, factory) in ext.sources {
        let spec = factory(pc_ref.recipient(), config.node_name.clone());
        tracing::debug!(source = %name, child = spec.name(), "adding custom pod source");
        root = root.child(spec);
    }

    let health = HealthState {
        sync_loop: heartbeat,
        pleg: pleg_health,
        started,
        sync_loop_threshold: sync_loop_threshold(config.sync.sync_frequency),
    };
    let state = ServerState {
        pods: pods.clone(),
        statuses: statuses.clone(),
        health: health.clone(),
        manifest_errors: manifest_errors.clone(),
    };
    let tree_cell: Arc<OnceLock<crate::actors::supervisor::SupervisionTree>> = Arc::default();
    let inputs = super::servers::ServerInputs {
        state,
        runtime: runtime.clone(),
        cache: cache.clone(),
        metrics: metrics.clone(),
        tree: tree_cell.clone(),
        node_ip: node_ip.clone(),
        api_client: ext.api_client.clone(),
        stats,
    };
    let (root, bound) = super::servers::add_servers(root, &config, &facts, inputs)?;
    metrics.attach(&config.node_name, cache.clone(), tree_cell.clone());
    let root = root.start_root();
    let _ = tree_cell.set(root.tree().clone());
    tracing::info!(node = %config.node_name, sources = ?expected.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "actlet started");
    Ok(Kubelet {
        root,
        pods,
        statuses,
        cache,
        runtime_health: health_rx,
        read_only_addrs: bound.read_only,
        healthz_addrs: bound.healthz,
        api_addrs: bound.api,
        health,
        pod_config: pc_ref.recipient(),
        manifest_errors,
        mirror_pods,
        events,
        node: node_handle,
        pod_sync_statuses,
        probes: probe_store,
        eviction,
        node_shutdown: shutdown,
        shutdown_manager,
    })
}
