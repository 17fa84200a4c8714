//! The Summary API (`/stats/summary`) types, field for field upstream's
//! `k8s.io/kubelet/pkg/apis/stats/v1alpha1` (JSON names, optional fields
//! omitted when unset). Times are `metav1.Time` (RFC 3339, seconds).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

/// `Summary`: node and pod stats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Overall node stats.
    pub node: NodeStats,
    /// Per-pod stats.
    pub pods: Vec<PodStats>,
}

/// `NodeStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    /// The node's name.
    pub node_name: String,
    /// System daemons tracked as raw containers (`kubelet`, `runtime`, `pods`, `misc`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_containers: Vec<ContainerStats>,
    /// When node-level collection started (the boot time).
    pub start_time: Time,
    /// CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// Memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// Network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStats>,
    /// The filesystem of the kubelet's root directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsStats>,
    /// The runtime's image filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeStats>,
    /// PID limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlimit: Option<RlimitStats>,
}

/// `RlimitStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RlimitStats {
    /// When sampled.
    pub time: Time,
    /// min(`kernel.pid_max`, `kernel.threads-max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maxpid: Option<i64>,
    /// Tasks on the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curproc: Option<i64>,
}

/// `RuntimeStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    /// The filesystem holding images (bytes used by images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_fs: Option<FsStats>,
}

/// `ProcessStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessStats {
    /// Processes in the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_count: Option<u64>,
}

/// `PodStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    /// The pod.
    pub pod_ref: PodReference,
    /// When pod-level collection started (the sandbox's creation).
    pub start_time: Time,
    /// Its containers.
    pub containers: Vec<ContainerStats>,
    /// The pod cgroup's CPU (containers and overhead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// The pod cgroup's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// The pod's network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStats>,
    /// Volume usage.
    #[serde(rename = "volume", default, skip_serializing_if = "Vec::is_empty")]
    pub volume_stats: Vec<VolumeStats>,
    /// Containers' rootfs and logs plus emptyDir volumes.
    #[serde(rename = "ephemeral-storage", default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage: Option<FsStats>,
    /// Processes.
    #[serde(rename = "process_stats", default, skip_serializing_if = "Option::is_none")]
    pub process_stats: Option<ProcessStats>,
}

impl PodStats {
    /// A pod with nothing measured yet: its reference and start time only.
    pub fn empty(pod_ref: PodReference, start_time: Time) -> Self {
        Self {
            pod_ref,
            start_time,
            containers: Vec::new(),
            cpu: None,
            memory: None,
            network: None,
            volume_stats: Vec::new(),
            ephemeral_storage: None,
            process_stats: None,
        }
    }
}

/// `ContainerStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    /// The container's name.
    pub name: String,
    /// When collection for it started (its creation).
    pub start_time: Time,
    /// CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuStats>,
    /// Memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStats>,
    /// The writable layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rootfs: Option<FsStats>,
    /// The container's log files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<FsStats>,
}

/// `PodReference`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodReference {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
}

/// `PVCReference`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PvcReference {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
}

/// `InterfaceStats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceStats {
    /// Interface name.
    pub name: String,
    /// Bytes received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes: Option<u64>,
    /// Receive errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_errors: Option<u64>,
    /// Bytes sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes: Option<u64>,
    /// Transmit errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_errors: Option<u64>,
}

/// `NetworkStats`: the default interface (`eth0`) inline, and all of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkStats {
    /// When sampled.
    pub time: Time,
    /// The default interface.
    #[serde(flatten)]
    pub default: InterfaceStats,
    /// Every interface.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<InterfaceStats>,
}

/// `CPUStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    /// When sampled.
    pub time: Time,
    /// Average over the sample window, in core-nanoseconds per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_nano_cores: Option<u64>,
    /// Cumulative, in core-nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_core_nano_seconds: Option<u64>,
}

/// `MemoryStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    /// When sampled.
    pub time: Time,
    /// limit − working set (omitted without a limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// All memory in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_bytes: Option<u64>,
    /// The working set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_bytes: Option<u64>,
    /// Anonymous and swap cache memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Minor page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_faults: Option<u64>,
    /// Major page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_page_faults: Option<u64>,
}

/// `VolumeStats`: usage inline, the volume's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeStats {
    /// Usage.
    #[serde(flatten)]
    pub fs: FsStats,
    /// The pod's name for the volume.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The claim, for PVC volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc_ref: Option<PvcReference>,
}

/// `FsStats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FsStats {
    /// When sampled.
    pub time: Time,
    /// Free space for unprivileged users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// Size of the filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Bytes used by what is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    /// Free inodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_free: Option<u64>,
    /// All inodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes: Option<u64>,
    /// Inodes used by what is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inodes_used: Option<u64>,
}

impl FsStats {
    /// Nothing known yet but the time.
    pub fn at(time: Time) -> Self {
        Self {
            time,
            available_bytes: None,
            capacity_bytes: None,
            used_bytes: None,
            inodes_free: None,
            inodes: None,
            inodes_used: None,
        }
    }
}
