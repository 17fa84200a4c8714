//! The children [`start_with`](super::start_with) adds for cluster mode (and
//! the node conditions it computes locally without an API server).
//!
//! ```text
//! events          first, so every actor can record
//! status-syncer   before the status manager, which hands it changes
//! node, node-lease, api-source, mirror-pods   after pod-config
//! ```

use kube::Client;
use tokio::sync::watch;

use super::config::KubeletConfig;
use super::node_facts::{MachineInfo, NodeFacts};
use crate::actors::supervisor::{AnyChildSpec, ChildSpec, Criticality, SupervisedRecipient};
use crate::cluster::node::LocalNodeConditions;
use crate::cluster::{
    ApiReachability, ApiSource, EventRecorderActor, LeaseActor, LeaseDeps, MirrorPodDeps, MirrorPodManager, MirrorPods,
    NodeActor, NodeDeps, NodeHandle, StatusSyncDeps, StatusSyncSink, StatusSyncer,
};
use crate::cri::SharedRuntime;
use crate::events::EventRecorder;
use crate::messages::node::NodeConditionChanged;
use crate::messages::pod_update::SourceSnapshot;
use crate::messages::runtime_health::RuntimeHealthChanged;
use crate::pleg::{PlegHealthHandle, PodCache};
use crate::pod_manager::PodManager;
use crate::status::StatusCache;

/// Events waiting for the event recorder (a full mailbox drops events, as
/// upstream's broadcaster does).
const EVENTS_MAILBOX: usize = 1000;

/// The kubelet's port the Node's daemonEndpoints report when the
/// authenticated server is off (upstream's default; else its own port).
const KUBELET_PORT: i32 = 10250;

/// What exists before the status manager is built.
pub(super) struct Early {
    /// The event recorder actor (cluster mode).
    pub events_spec: Option<AnyChildSpec>,
    /// The handle every actor records with.
    pub events: EventRecorder,
    /// The status syncer actor (cluster mode).
    pub status_syncer: Option<AnyChildSpec>,
    /// What the status manager hands changes to (cluster mode).
    pub status_sink: Option<StatusSyncSink>,
}

/// The event recorder and the status syncer, whose addresses other actors need.
pub(super) fn early(
    client: Option<&Client>,
    config: &KubeletConfig,
    pods: &PodManager,
    statuses: &StatusCache,
    cache: &PodCache,
    mirror_pods: &MirrorPods,
) -> Early {
    let Some(client) = client else {
        return Early {
            events_spec: None,
            events: EventRecorder::disabled(),
            status_syncer: None,
            status_sink: None,
        };
    };
    let (c, node) = (client.clone(), config.node_name.clone());
    // Events are best effort (upstream drops them when the API is away): a
    // failing recorder is retried, never a reason to stop managing pods.
    let events_spec = ChildSpec::new("events", move || EventRecorderActor::new(c.clone(), node.clone()))
        .mailbox_capacity(EVENTS_MAILBOX)
        .criticality(Criticality::NonCritical);
    let events = EventRecorder::new(events_spec.child_ref().recipient());

    let mut deps = StatusSyncDeps::new(
        client.clone(),
        pods.clone(),
        statuses.clone(),
        cache.clone(),
        mirror_pods.clone(),
    );
    deps.clock = config.wall_clock.clone();
    let syncer = ChildSpec::new("status-syncer", move || StatusSyncer::new(deps.clone()));
    let status_sink = StatusSyncSink::new(syncer.child_ref().recipient());
    Early {
        events_spec: Some(events_spec.into()),
        events,
        status_syncer: Some(syncer.into()),
        status_sink: Some(status_sink),
    }
}

/// What the node actors read.
pub(super) struct NodeInputs {
    pub node_ip: Option<String>,
    pub facts: NodeFacts,
    pub runtime: SharedRuntime,
    pub runtime_health: watch::Receiver<RuntimeHealthChanged>,
    pub pleg_health: PlegHealthHandle,
    pub started: tokio::time::Instant,
    pub observers: Vec<SupervisedRecipient<NodeConditionChanged>>,
    pub handle: NodeHandle,
    pub events: EventRecorder,
    pub eviction: crate::eviction::EvictionHandle,
    pub shutdown: crate::nodeshutdown::ShutdownHandle,
}

/// The two API clients: bulk (rate limited) and heartbeat (short timeout).
pub(super) struct Clients<'a> {
    pub bulk: &'a Client,
    pub heartbeat: &'a Client,
}

/// Node, lease, API source and mirror pods (cluster mode).
pub(super) fn late(
    Clients {
        bulk: client,
        heartbeat,
    }: Clients<'_>,
    config: &KubeletConfig,
    node: NodeInputs,
    pod_config: SupervisedRecipient<SourceSnapshot>,
    pods: &PodManager,
    cache: &PodCache,
    mirror_pods: &MirrorPods,
) -> Vec<AnyChildSpec> {
    // Node status and Lease go through the heartbeat client (no rate limit,
    // short timeout); everything else through the bulk one.
    let deps = NodeDeps {
        client: heartbeat.clone(),
        node_name: config.node_name.clone(),
        node_ip: node.node_ip,
        register_node: config.register_node,
        node_labels: config.node_labels.clone(),
        taints: config.register_with_taints.clone(),
        max_pods: config.max_pods,
        reserved: config.kube_reserved.plus(config.system_reserved),
        facts: node.facts.with_root_dir(&config.root_dir),
        machine: MachineInfo::detect(),
        runtime: node.runtime,
        runtime_health: node.runtime_health,
        pleg_health: node.pleg_health,
        started: node.started,
        events: node.events,
        observers: node.observers,
        kubelet_port: config.server_addr.map_or(KUBELET_PORT, |a| i32::from(a.port())),
        update_frequency: config.node_status_update_frequency,
        report_frequency: config.node_status_report_frequency,
        wall_clock: config.wall_clock.clone(),
        handle: node.handle.clone(),
        eviction: node.eviction.clone(),
        shutdown: node.shutdown.clone(),
        hard_eviction: crate::eviction::thresholds::HardReservation::of(&config.eviction.thresholds),
    };
    // The Lease tells the pod watch when the API server answers again.
    let reachability = ApiReachability::default();
    let mut lease = LeaseDeps::new(heartbeat.clone(), config.node_name.clone(), node.handle);
    lease.reachability = reachability.clone();
    let (c, name, mirrors) = (client.clone(), config.node_name.clone(), mirror_pods.clone());
    let backoff = config.api_watch_backoff;
    let mut mirror = MirrorPodDeps::new(
        client.clone(),
        config.node_name.clone(),
        pods.clone(),
        mirror_pods.clone(),
    );
    mirror.runtime = cache.clone();
    vec![
        ChildSpec::new("node", move || NodeActor::new(deps.clone())).into(),
        ChildSpec::new("node-lease", move || LeaseActor::new(lease.clone())).into(),
        ChildSpec::new("api-source", move || {
            ApiSource::new(c.clone(), name.clone(), pod_config.clone(), mirrors.clone())
                .with_watch_backoff(backoff)
                .with_reachability(reachability.clone())
        })
        .into(),
        ChildSpec::new("mirror-pods", move || MirrorPodManager::new(mirror.clone())).into(),
    ]
}

/// Node conditions computed locally (standalone mode).
pub(super) fn local_node_conditions(config: &KubeletConfig, node: NodeInputs) -> AnyChildSpec {
    let (period, clock) = (config.node_status_update_frequency, config.wall_clock.clone());
    ChildSpec::new("node-conditions", move || {
        LocalNodeConditions::new(
            node.runtime_health.clone(),
            node.pleg_health.clone(),
            node.started,
            node.observers.clone(),
            node.handle.clone(),
            period,
            clock.clone(),
        )
        .with_eviction(node.eviction.clone())
        .with_shutdown(node.shutdown.clone())
    })
    .into()
}

/// The `client-cert-manager` child (`rotateCertificates`): renews the client
/// certificate and swaps the clients `rotation` names; asks through `client`.
/// Not critical: a failing renewal is retried, pods are not affected.
pub(super) fn client_cert_manager(
    rotation: crate::certificate::client_manager::ClientRotation,
    client: Client,
) -> AnyChildSpec {
    use crate::certificate::client_manager::ClientCertManager;
    ChildSpec::new("client-cert-manager", move || {
        ClientCertManager::new(rotation.clone(), client.clone())
    })
    .criticality(Criticality::NonCritical)
    .backoff(super::start::SERVER_RETRY)
    .into()
}
