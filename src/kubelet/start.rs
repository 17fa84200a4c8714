//! [`start`]: creates the shared handles ([`Shared`](super::shared::Shared)),
//! declares the supervision tree ([`super::tree`]) and starts it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::config::KubeletConfig;
use super::extensions::Extensions;
use super::handle::Kubelet;
use super::shared::Shared;
use crate::actors::supervisor::RestartBackoff;
use crate::config::HttpSourceError;
use crate::cri::SharedRuntime;
use crate::events::EventRecorder;

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
    for sub in ["", "pods", "plugins", "pod-resources"] {
        make_dir(&config.root_dir.join(sub))?;
    }
    make_dir(&config.pod_logs_dir)?;
    if let Some(dir) = &config.container_logs_dir {
        make_dir(dir)?;
    }
    // every CRI call is counted and timed for /metrics
    let metrics = crate::server::metrics::KubeletMetrics::new(crate::server::metrics::default_buckets());
    // every mutation runs to the runtime's answer, whoever stops waiting
    // (a force-stopped or panicking pod worker): `cri::to_completion`
    let in_flight = crate::cri::to_completion::InFlight::default();
    let runtime: SharedRuntime = Arc::new(crate::cri::to_completion::ToCompletion::new(
        metrics.instrument(runtime),
        in_flight.clone(),
    ));
    let (s, with_handles) = Shared::new(&config, runtime, metrics, in_flight, &ext);
    let tree = super::tree::declare(&config, &s, with_handles, ext)?;
    let tables = super::tables::Tables {
        pods: s.pods.clone(),
        statuses: s.statuses.clone(),
        lifecycle: s.pod_sync_statuses.clone(),
        cache: s.cache.clone(),
        probes: s.probes.clone(),
        tree: s.tree.clone(),
        manager: s.manager.clone(),
        volumes: s.volume_store.clone(),
        sync_state: s.sync_state.clone(),
        allocations: s.allocations.clone(),
    };
    s.metrics.attach(&config.node_name, s.cache.clone(), s.tree.clone());
    let scraped = tables.clone();
    s.metrics.attach_pod_tables(move || scraped.sizes());
    report_exhausted_children(&s.tree, &s.events, &config.node_name);
    let root = tree.root.start_root_in(s.tree.clone());
    tracing::info!(node = %config.node_name, sources = ?tree.sources.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "actlet started");
    Ok(Kubelet {
        root,
        pods: s.pods,
        statuses: s.statuses,
        cache: s.cache,
        runtime_health: s.runtime_health,
        read_only_addrs: tree.bound.read_only,
        healthz_addrs: tree.bound.healthz,
        api_addrs: tree.bound.api,
        health: tree.health,
        pod_config: tree.peers.pod_config.recipient(),
        manifest_errors: s.manifest_errors,
        mirror_pods: s.mirror_pods,
        events: s.events,
        node: s.node,
        pod_sync_statuses: s.pod_sync_statuses,
        probes: s.probes,
        eviction: s.eviction,
        node_shutdown: s.shutdown,
        shutdown_manager: tree.shutdown_manager,
        tables,
    })
}

/// The reason of the node Warning event recorded when a non-critical actor
/// (an HTTP server, the event recorder, …) exceeds its restart intensity.
pub const ACTOR_EXHAUSTED: &str = "ActorExhausted";

/// One Warning event on the node per exhausted episode of a non-critical
/// child, naming it and its last failure (besides the log line, the
/// `actlet_actor_exhausted` gauge and `/debug/actors`).
fn report_exhausted_children(tree: &crate::actors::supervisor::SupervisionTree, events: &EventRecorder, node: &str) {
    let (events, node) = (events.clone(), node.to_owned());
    tree.on_exhausted(move |info| {
        let failure = info
            .last_failure
            .as_ref()
            .map_or_else(|| "no failure recorded".to_owned(), |f| f.reason.to_string());
        events.event(
            crate::events::node_ref(&node),
            crate::messages::event::EventType::Warning,
            ACTOR_EXHAUSTED,
            format!(
                "{} failed {} times ({failure}); it is retried every 5 s while the rest of the node agent keeps running",
                info.path, info.restarts
            ),
        );
    });
}
