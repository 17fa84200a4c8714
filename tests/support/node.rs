//! Harness for `cluster_node` / `cluster_lease`: the node actor's
//! dependencies on the mock CRI (with a real runtime health checker) against
//! the test API server, and what the actor reported.
//!
//! Include after the API server and cluster support modules:
//! `#[path = "support/node.rs"] mod node;`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Addr};
use actlet::actors::supervisor::SupervisedRecipient;
use actlet::cluster::lease::{LeaseActor, LeaseDeps};
use actlet::cluster::node::flags::Reserved;
use actlet::cluster::node::{NodeDeps, NodeHandle};
use actlet::cri::mock::MockRuntime;
use actlet::events::EventRecorder;
use actlet::kubelet::{MachineInfo, NodeFacts, WallClock};
use actlet::messages::event::RecordEvent;
use actlet::messages::node::NodeConditionChanged;
use actlet::pleg::PlegHealthHandle;
use actlet::runtime_health::RuntimeHealth;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::jiff::Timestamp;
use tempfile::TempDir;

use crate::apiserver::{Identity, TestApiServer};
use crate::cluster::{self, NODE};

pub const T: Duration = Duration::from_secs(30);
pub const STATUS_PATH: &str = "/api/v1/nodes/test-node/status";
pub const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/test-node";

/// What the actors told the outside.
#[derive(Clone, Default)]
pub struct Seen {
    pub events: Arc<Mutex<Vec<RecordEvent>>>,
    pub changes: Arc<Mutex<Vec<NodeConditionChanged>>>,
}

impl Seen {
    pub fn reasons(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|e| e.reason.clone())
            .collect()
    }

    pub fn changes(&self) -> Vec<NodeConditionChanged> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A node under test: the mock runtime, its health checker, the node actor's
/// dependencies and what it reported.
pub struct Harness {
    pub mock: MockRuntime,
    pub deps: NodeDeps,
    pub seen: Seen,
    _dir: TempDir,
}

pub async fn harness(server: &TestApiServer) -> Harness {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let client = cluster::client(server, &Identity::node(NODE), &dir).await;
    let mock = MockRuntime::new();
    let (tx, rx) = RuntimeHealth::channel();
    RuntimeHealth::new(Arc::new(mock.clone()), Duration::from_millis(100), tx).start();
    let seen = Seen::default();
    let ev = seen.events.clone();
    let ch = seen.changes.clone();
    let deps = NodeDeps {
        client,
        node_name: NODE.into(),
        node_ip: Some("10.0.0.1".into()),
        register_node: true,
        node_labels: BTreeMap::from([("pool".to_string(), "blue".to_string())]),
        taints: vec![],
        max_pods: 110,
        reserved: Reserved {
            cpu_milli: 100,
            ..Reserved::default()
        },
        facts: NodeFacts {
            memory_bytes: 4 << 30,
            cpus: 2,
            ephemeral_storage_bytes: 100 << 30,
        },
        machine: MachineInfo {
            kernel_version: "6.1.0-test".into(),
            os_image: "Test Linux".into(),
            ..MachineInfo::default()
        },
        runtime: Arc::new(mock.clone()),
        runtime_health: rx,
        pleg_health: PlegHealthHandle::default(),
        started: tokio::time::Instant::now(),
        events: EventRecorder::new(SupervisedRecipient::from_fn(move |m: RecordEvent| {
            ev.lock().unwrap_or_else(|e| e.into_inner()).push(m)
        })),
        observers: vec![SupervisedRecipient::from_fn(move |m: NodeConditionChanged| {
            ch.lock().unwrap_or_else(|e| e.into_inner()).push(m)
        })],
        kubelet_port: 10250,
        update_frequency: Duration::from_millis(200),
        report_frequency: Duration::from_secs(3600),
        wall_clock: WallClock::system(),
        handle: NodeHandle::default(),
        eviction: actlet::eviction::EvictionHandle::default(),
        shutdown: actlet::nodeshutdown::ShutdownHandle::default(),
        hard_eviction: actlet::eviction::thresholds::HardReservation::upstream_default(),
    };
    Harness {
        mock,
        deps,
        seen,
        _dir: dir,
    }
}

pub fn lease_actor(h: &Harness) -> Addr<LeaseActor> {
    LeaseActor::new(LeaseDeps {
        client: h.deps.client.clone(),
        node_name: NODE.into(),
        node: h.deps.handle.clone(),
        duration_seconds: 40,
        renew_interval: Duration::from_millis(200),
        wall_clock: WallClock::system(),
        reachability: Default::default(),
    })
    .start()
}

pub fn condition(node: &Node, type_: &str) -> Option<NodeCondition> {
    cluster::node_condition(node, type_)
}

pub fn ready_is(server: &TestApiServer, status: &str) -> Option<NodeCondition> {
    let node = server.store().node(NODE)?;
    condition(&node, "Ready").filter(|c| c.status == status)
}

pub fn count(server: &TestApiServer, method: &str, path: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == method && r.path == path)
        .count()
}

pub fn renew_time(server: &TestApiServer) -> Option<Timestamp> {
    server.store().lease(NODE)?.spec?.renew_time.map(|t| t.0)
}
