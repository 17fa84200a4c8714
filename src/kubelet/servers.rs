//! The HTTP children [`start_with`](super::start_with) adds: `healthz`,
//! `read-only` and the authenticated `kubelet-api` (10250), each when its
//! address is configured, with the stats provider they share.

use std::net::SocketAddr;
use std::sync::Arc;

use super::config::KubeletConfig;
use super::node_facts::NodeFacts;
use super::start::SERVER_RETRY;
use crate::actors::supervisor::{ChildSpec, Criticality, RestartPolicy, SupervisionTree, SupervisorSpec};
use crate::cri::SharedRuntime;
use crate::pleg::PodCache;
use crate::server::actor::{PreviousStop, Routes};
use crate::server::metrics::KubeletMetrics;
use crate::server::secure::ApiServerError;
use crate::server::{HttpServer, ReadOnlyStats, ServerAddrs, ServerState};
use crate::stats::StatsProvider;

/// What the servers read.
pub(super) struct ServerInputs {
    /// `/pods` and `/healthz`.
    pub state: ServerState,
    /// The container runtime.
    pub runtime: SharedRuntime,
    /// Runtime pod statuses.
    pub cache: PodCache,
    /// `/metrics`.
    pub metrics: Arc<KubeletMetrics>,
    /// The tree, once started (`/debug/actors`, actor metrics).
    pub tree: SupervisionTree,
    /// The node's IP (serving certificate).
    pub node_ip: Option<String>,
    /// TokenReview and SubjectAccessReview client (cluster mode).
    pub api_client: Option<kube::Client>,
    /// The stats provider (shared with the eviction manager).
    pub stats: StatsProvider,
}

/// The addresses each server bound (empty until bound, or when off).
pub(super) struct BoundServers {
    /// `--healthz-port`.
    pub healthz: ServerAddrs,
    /// `--read-only-port`.
    pub read_only: ServerAddrs,
    /// `--port` (10250).
    pub api: ServerAddrs,
}

/// The node's stats provider (one per kubelet: its CPU samples are shared by
/// every reader).
pub(super) fn stats_provider(
    config: &KubeletConfig,
    runtime: SharedRuntime,
    pods: crate::pod_manager::PodManager,
    cgroups: crate::cm::ContainerManager,
) -> StatsProvider {
    StatsProvider::new(
        crate::stats::StatsSettings {
            node_name: config.node_name.clone(),
            root_dir: config.root_dir.clone(),
            pod_logs_dir: config.pod_logs_dir.clone(),
            proc_root: "/proc".into(),
            cgroup_mount: config.cgroups.cgroup_mount.clone(),
        },
        runtime,
        pods,
        Some(cgroups),
        crate::stats::CpuUsageCache::default(),
    )
}

/// Adds the configured servers to `root`; fails when the 10250 server's
/// certificate or auth settings are unusable.
pub(super) fn add_servers(
    mut root: SupervisorSpec,
    config: &KubeletConfig,
    facts: &NodeFacts,
    inputs: ServerInputs,
) -> Result<(SupervisorSpec, BoundServers), ApiServerError> {
    let bound = BoundServers {
        healthz: ServerAddrs::default(),
        read_only: ServerAddrs::default(),
        api: ServerAddrs::default(),
    };
    // The stats provider (and its CPU sample cache) outlives restarts of
    // the servers: the read-only port and 10250 share it.
    let stats = inputs.stats.clone();
    let server = |name: &'static str, addr: SocketAddr, routes: Routes, b: &ServerAddrs| {
        let (st, b) = (inputs.state.clone(), b.clone());
        let extras = (routes == Routes::ReadOnly).then(|| ReadOnlyStats {
            stats: stats.clone(),
            metrics: inputs.metrics.clone(),
        });
        // Owned: the stop of the last instance's server (a restart binds after it).
        let previous = PreviousStop::default();
        ChildSpec::new(name, move || {
            let server =
                HttpServer::new(name, addr, routes, st.clone(), b.clone()).with_previous_stop(previous.clone());
            match &extras {
                Some(extras) => server.with_stats(extras.clone()),
                None => server,
            }
        })
        .criticality(Criticality::NonCritical)
        .backoff(SERVER_RETRY)
    };
    if let Some(addr) = config.healthz_addr {
        root = root.child(server("healthz", addr, Routes::Healthz, &bound.healthz).restart(RestartPolicy::Permanent));
    }
    if let Some(addr) = config.read_only_addr {
        root = root.child(server("read-only", addr, Routes::ReadOnly, &bound.read_only));
    }
    if let Some(addr) = config.server_addr {
        let (server, cert_manager) = super::api_server::children(
            addr,
            config,
            inputs.node_ip,
            facts,
            (
                inputs.state,
                inputs.runtime,
                inputs.cache,
                inputs.tree,
                inputs.metrics,
                stats,
            ),
            inputs.api_client,
            bound.api.clone(),
        )?;
        if let Some(manager) = cert_manager {
            root = root.child(manager);
        }
        root = root.child(server);
    }
    Ok((root, bound))
}
