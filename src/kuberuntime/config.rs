//! [`RuntimeManagerConfig`]: the node facts and kubelet settings the runtime
//! manager needs to turn pods into CRI configs. Defaults are upstream's.

use std::path::PathBuf;

use super::dns::HostDns;
use super::env::EnvContext;
use crate::quantity::ParsedQuantity;

/// Upstream's pod logs root (`podLogsDir`).
pub const DEFAULT_POD_LOGS_DIR: &str = "/var/log/pods";
/// Upstream's legacy container log symlink directory.
pub const DEFAULT_CONTAINER_LOGS_DIR: &str = "/var/log/containers";
/// Upstream's seccomp profile root (`<root-dir>/seccomp`).
pub const DEFAULT_SECCOMP_PROFILE_ROOT: &str = "/var/lib/kubelet/seccomp";

/// Settings of the runtime manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeManagerConfig {
    /// Root of pod log directories: `<root>/<ns>_<name>_<uid>/<container>/<n>.log`.
    pub pod_logs_dir: PathBuf,
    /// Where `<pod>_<ns>_<container>-<id>.log` symlinks go (`None`: none).
    pub container_logs_dir: Option<PathBuf>,
    /// `clusterDNS`: nameservers for ClusterFirst pods (none: fall back to Default).
    pub cluster_dns: Vec<String>,
    /// `clusterDomain`, e.g. `cluster.local` (empty: no cluster search paths).
    pub cluster_domain: String,
    /// The host's resolver settings (`resolvConf`); `None` when `resolvConf`
    /// is `""` (Default pods then get `127.0.0.1` and search `.`).
    pub host_dns: Option<HostDns>,
    /// This node's name.
    pub node_name: String,
    /// This node's IPs (`status.hostIP(s)`).
    pub node_ips: Vec<String>,
    /// Node memory capacity in bytes (Burstable `oom_score_adj`).
    pub memory_capacity: i64,
    /// Node allocatable cpu (downward API default for unset `limits.cpu`).
    pub allocatable_cpu: ParsedQuantity,
    /// Node allocatable memory (downward API default for unset `limits.memory`).
    pub allocatable_memory: ParsedQuantity,
    /// `cpuCFSQuota`: enforce cpu limits with CFS quota (default true).
    pub cpu_cfs_quota: bool,
    /// Seccomp `Localhost` profiles are relative to this directory.
    pub seccomp_profile_root: PathBuf,
    /// `seccompDefault`: RuntimeDefault instead of Unconfined when a pod
    /// names no profile (default false).
    pub seccomp_default: bool,
    /// `serializeImagePulls`: one image pull at a time (default true).
    pub serialize_image_pulls: bool,
    /// `maxParallelImagePulls`: most pulls at once when not serialized
    /// (`None`: unbounded, as upstream).
    pub max_parallel_image_pulls: Option<usize>,
    /// The CRI runtime handler for `RunPodSandbox` (`""`: the default).
    pub runtime_handler: String,
    /// `spec.runtimeClassName` → CRI handler (an unnamed class uses `runtime_handler`).
    pub runtime_classes: crate::runtime_class::RuntimeClasses,
    /// How pod cgroup parents are named (`cgroupRoot`, `cgroupsPerQOS`, `cgroupDriver`).
    pub cgroup_naming: crate::cm::CgroupNaming,
    /// `<root-dir>/pods`: where per-container termination message files
    /// go (`None`: no termination message files are mounted).
    pub pods_dir: Option<PathBuf>,
}

impl Default for RuntimeManagerConfig {
    fn default() -> Self {
        Self {
            pod_logs_dir: PathBuf::from(DEFAULT_POD_LOGS_DIR),
            container_logs_dir: Some(PathBuf::from(DEFAULT_CONTAINER_LOGS_DIR)),
            cluster_dns: Vec::new(),
            cluster_domain: String::new(),
            host_dns: Some(HostDns::default()),
            node_name: String::new(),
            node_ips: Vec::new(),
            memory_capacity: 1 << 30,
            allocatable_cpu: ParsedQuantity::from_units(1),
            allocatable_memory: ParsedQuantity::from_units(1 << 30),
            cpu_cfs_quota: true,
            seccomp_profile_root: PathBuf::from(DEFAULT_SECCOMP_PROFILE_ROOT),
            seccomp_default: false,
            serialize_image_pulls: true,
            max_parallel_image_pulls: None,
            runtime_handler: String::new(),
            runtime_classes: crate::runtime_class::RuntimeClasses::new(),
            cgroup_naming: crate::cm::CgroupNaming::default(),
            pods_dir: None,
        }
    }
}

impl RuntimeManagerConfig {
    /// The downward API context for a pod with `pod_ips`.
    pub fn env_context(&self, pod_ips: &[String]) -> EnvContext {
        EnvContext {
            host_ips: self.node_ips.clone(),
            pod_ips: pod_ips.to_vec(),
            allocatable_cpu: self.allocatable_cpu,
            allocatable_memory: self.allocatable_memory,
            objects: Default::default(),
        }
    }
}
