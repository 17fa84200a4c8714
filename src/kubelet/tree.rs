//! The supervision tree, declared: [`declare`] lists the root's children in
//! start order, each built by one function from the [`Shared`] handles and
//! its peers' addresses ([`pod_core`](super::pod_core), `cluster`,
//! `children`, `servers`).
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
//! ├── probe-workers / prober   probe-<pod>-<container>-<kind> workers and their manager
//! ├── pod-config            merges the sources
//! ├── container-manager / oom-watcher   QoS and pod cgroups; kernel OOM kills
//! ├── container-log-manager rotation of container logs
//! ├── container-gc / image-gc / eviction-manager / node-shutdown-manager
//! ├── file-source / http-source
//! ├── node / node-lease / api-source / mirror-pods / runtime-classes   (cluster; see [`crate::cluster`])
//! ├── node-conditions       (standalone) node conditions for observers
//! ├── source-<name> …       embedders' sources
//! └── healthz / read-only / kubelet-api   HTTP servers
//! ```
//! Peers hold each other's stable [`ChildRef`](crate::actors::supervisor::ChildRef)s,
//! declared before any spec ([`pod_core::declare`]), so start order only
//! matters for shutdown (reverse order: servers and sources first, the
//! runtime health checker last). Stopping the tree never stops containers:
//! pods keep running and are adopted on the next start.

use std::time::Duration;

use super::children::{ManagerInputs, node_managers, static_sources};
use super::cluster;
use super::config::KubeletConfig;
use super::extensions::Extensions;
use super::pod_core::{self, Peers};
use super::servers::{BoundServers, ServerInputs, add_servers};
use super::shared::{Shared, WithHandles};
use super::start::StartError;
use crate::actors::supervisor::{AnyChildSpec, ChildSpec, Criticality, Strategy, SupervisedRecipient, SupervisorSpec};
use crate::messages::pod_update::PodSource;
use crate::nodeshutdown::NodeShutdownEvent;
use crate::server::routes::sync_loop_threshold;
use crate::server::{HealthState, ServerState};

/// The declared tree and what the [`Kubelet`](super::Kubelet) handle needs of it.
pub(super) struct Tree {
    /// The root, not started.
    pub root: SupervisorSpec,
    /// The pod core's addresses.
    pub peers: Peers,
    /// The sources pod-config waits for.
    pub sources: Vec<PodSource>,
    /// What `/healthz` reads.
    pub health: HealthState,
    /// The servers' addresses, once bound.
    pub bound: BoundServers,
    /// Where shutdown events go (`None`: graceful shutdown off).
    pub shutdown_manager: Option<SupervisedRecipient<NodeShutdownEvent>>,
}

/// The root's children in start order.
pub(super) fn declare(
    config: &KubeletConfig,
    s: &Shared,
    with_handles: WithHandles,
    mut ext: Extensions,
) -> Result<Tree, StartError> {
    let (declared, peers) = pod_core::declare(config);
    let cluster = with_handles.cluster;
    let sources = pod_core::expected_sources(config, ext.api_client.is_some());
    let (managers, shutdown_manager) = node_managers(ManagerInputs {
        config,
        facts: &s.facts,
        runtime: s.runtime.clone(),
        pods: s.pods.clone(),
        pod_sync_statuses: s.pod_sync_statuses.clone(),
        sync_state: s.sync_state.clone(),
        workers: peers.pod_workers_manager.recipient(),
        events: s.events.clone(),
        stats: s.stats.clone(),
        eviction: s.eviction.clone(),
        shutdown: s.shutdown.clone(),
        evictions: s.metrics.evictions(),
        shutdown_gauges: s.metrics.shutdown(),
        systemd_slices: s.cgroups.systemd_slices(),
        runtime_cache: s.cache.clone(),
    });

    let root = SupervisorSpec::new("root")
        .strategy(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .children(cluster.events_spec)
        .child(pod_core::runtime_health(config, s))
        .children(cluster.status_syncer)
        .child(pod_core::status_manager(
            config,
            s,
            declared.status_manager,
            &mut ext,
            cluster.status_sink,
        ))
        .child(with_handles.volume_manager)
        .child(declared.pod_workers)
        .child(pod_core::pod_workers_manager(
            config,
            s,
            &peers,
            declared.pod_workers_manager,
        ))
        .child(pod_core::pleg(config, s, &peers, &mut ext))
        .child(pod_core::sync_loop(config, s, &peers, declared.sync_loop))
        .children(pod_core::probers(config, s, &peers))
        .child(pod_core::pod_config(s, &peers, declared.pod_config, sources.clone()))
        .children(with_handles.cgroups)
        .child(pod_core::container_log_manager(config, s))
        .children(managers)
        .children(static_sources(config, peers.pod_config.recipient())?)
        .children(node_children(config, s, &peers, &ext))
        .children(pod_core::custom_sources(config, &peers, &mut ext));

    let health = HealthState {
        sync_loop: s.heartbeat.clone(),
        pleg: s.pleg_health.clone(),
        started: s.started,
        sync_loop_threshold: sync_loop_threshold(config.sync.sync_frequency),
    };
    let inputs = ServerInputs {
        state: ServerState {
            pods: s.pods.clone(),
            statuses: s.statuses.clone(),
            health: health.clone(),
            manifest_errors: s.manifest_errors.clone(),
        },
        runtime: s.runtime.clone(),
        cache: s.cache.clone(),
        metrics: s.metrics.clone(),
        tree: s.tree.clone(),
        node_ip: s.node_ip.clone(),
        api_client: ext.api_client.clone(),
        stats: s.stats.clone(),
    };
    let (root, bound) = add_servers(root, config, &s.facts, inputs)?;
    Ok(Tree {
        root,
        peers,
        sources,
        health,
        bound,
        shutdown_manager,
    })
}

/// Cluster mode: `node`, `node-lease`, `api-source`, `mirror-pods`, the
/// client certificate manager and `runtime-classes`; standalone:
/// `node-conditions`.
fn node_children(config: &KubeletConfig, s: &Shared, peers: &Peers, ext: &Extensions) -> Vec<AnyChildSpec> {
    let node_inputs = cluster::NodeInputs {
        node_ip: s.node_ip.clone(),
        facts: s.facts.clone(),
        runtime: s.runtime.clone(),
        runtime_health: s.runtime_health.clone(),
        pleg_health: s.pleg_health.clone(),
        started: s.started,
        observers: ext.node_observers.clone(),
        handle: s.node.clone(),
        events: s.events.clone(),
        eviction: s.eviction.clone(),
        shutdown: s.shutdown.clone(),
    };
    let Some(client) = &ext.api_client else {
        return vec![cluster::local_node_conditions(config, node_inputs)];
    };
    let clients = cluster::Clients {
        bulk: client,
        heartbeat: ext.heartbeat_client.as_ref().unwrap_or(client),
    };
    let mut children = cluster::late(
        clients,
        config,
        node_inputs,
        peers.pod_config.recipient(),
        &s.pods,
        &s.cache,
        &s.mirror_pods,
    );
    if let Some(rotation) = ext.client_rotation.clone() {
        children.push(cluster::client_cert_manager(rotation, client.clone()));
    }
    if ext.runtime_classes.is_none() {
        let (client, classes) = (client.clone(), s.runtime_classes.clone());
        children.push(
            ChildSpec::new("runtime-classes", move || {
                crate::runtime_class::RuntimeClassWatch::new(client.clone(), classes.clone())
            })
            .criticality(Criticality::NonCritical)
            .into(),
        );
    }
    children
}
