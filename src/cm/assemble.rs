//! The container manager's part of the tree: the shared handle the pod
//! workers use, and the `container-manager` and `oom-watcher` children.

use std::time::Duration;

use super::actor::CmActor;
use super::manager::{ContainerManager, NodeCapacity};
use super::oom_watcher::{OomState, OomWatcher, OomWatcherDeps, READ_PERIOD};
use super::resources::NodeResources;
use crate::actors::supervisor::{AnyChildSpec, ChildSpec, Criticality};
use crate::cri::SharedRuntime;
use crate::events::EventRecorder;
use crate::kubelet::KubeletConfig;
use crate::pod_manager::PodManager;

/// Where the OOM watcher reads kernel messages.
pub const KMSG: &str = "/dev/kmsg";

/// What the tree assembly hands to [`assemble`].
pub struct CmInputs<'a> {
    /// The settings.
    pub config: &'a KubeletConfig,
    /// The runtime (asked its name: the mock gets no cgroups).
    pub runtime: SharedRuntime,
    /// The desired pods (QoS cgroup sizes).
    pub pods: PodManager,
    /// Logical CPUs of the node.
    pub cpus: i64,
    /// Memory of the node in bytes.
    pub memory_bytes: i64,
    /// `cpuCFSQuota`.
    pub cpu_cfs_quota: bool,
    /// Node events.
    pub events: EventRecorder,
}

/// The handle and the children.
pub struct Assembled {
    /// The shared container manager.
    pub handle: ContainerManager,
    /// `container-manager` and `oom-watcher`.
    pub children: Vec<AnyChildSpec>,
}

/// Builds the container manager on the host's cgroupfs and its children.
pub fn assemble(i: CmInputs<'_>) -> Assembled {
    let c = i.config;
    let reserved = c.kube_reserved.plus(c.system_reserved);
    let node = NodeCapacity {
        capacity: NodeResources {
            cpu_milli: i.cpus.saturating_mul(1000),
            memory: i.memory_bytes,
        },
        reserved: NodeResources {
            cpu_milli: reserved.cpu_milli,
            memory: reserved.memory_bytes,
        },
        cpu_cfs_quota: i.cpu_cfs_quota,
    };
    let handle = ContainerManager::on_host(c.cgroups.clone(), i.runtime, i.pods, node);
    let cm = handle.clone();
    let oom = OomWatcherDeps {
        path: KMSG.into(),
        state: OomState::default(),
        events: i.events,
        node_name: c.node_name.clone(),
        period: READ_PERIOD,
    };
    let children = vec![
        ChildSpec::new("container-manager", move || CmActor::new(cm.clone()))
            .shutdown_timeout(Duration::from_secs(5))
            .into(),
        ChildSpec::new("oom-watcher", move || OomWatcher::new(oom.clone()))
            .criticality(Criticality::NonCritical)
            .shutdown_timeout(Duration::from_secs(5))
            .into(),
    ];
    Assembled { handle, children }
}
