//! The runtime's view of a pod (upstream `kubecontainer.PodStatus`): what the
//! CRI reports for one pod UID, as the PLEG caches it and the pod workers,
//! `computePodActions` and status generation read it.

use k8s_openapi::jiff::Timestamp;

use crate::messages::PodUid;

/// Everything the runtime knows about one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimePodStatus {
    /// The pod's UID (from the `io.kubernetes.pod.uid` label).
    pub uid: PodUid,
    /// Pod name (`io.kubernetes.pod.name`).
    pub name: String,
    /// Pod namespace (`io.kubernetes.pod.namespace`).
    pub namespace: String,
    /// Pod IPs of the newest ready sandbox (empty for hostNetwork or none).
    pub ips: Vec<String>,
    /// Sandboxes of the pod, newest first.
    pub sandboxes: Vec<SandboxStatus>,
    /// Containers of the pod (all attempts, init and regular), newest first.
    pub containers: Vec<ContainerStatus>,
}

impl RuntimePodStatus {
    /// An empty status: nothing exists in the runtime for `uid`.
    pub fn empty(uid: PodUid, name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            uid,
            name: name.into(),
            namespace: namespace.into(),
            ips: vec![],
            sandboxes: vec![],
            containers: vec![],
        }
    }

    /// The newest status of the container named `name`, if any.
    pub fn find_container(&self, name: &str) -> Option<&ContainerStatus> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// Containers that are running now.
    pub fn running_containers(&self) -> impl Iterator<Item = &ContainerStatus> {
        self.containers.iter().filter(|c| c.state == ContainerState::Running)
    }

    /// Whether anything of the pod may still run: a running container or a
    /// ready sandbox (upstream `PodCouldHaveRunningContainers` on the runtime's
    /// view). The one predicate housekeeping, status sync, mirror pods and
    /// volume teardown read, through [`PodCache::could_have_running_containers`]
    /// and [`CacheEntry::could_have_running_containers`] where they read the cache.
    ///
    /// [`PodCache::could_have_running_containers`]: crate::pleg::PodCache::could_have_running_containers
    /// [`CacheEntry::could_have_running_containers`]: crate::pleg::cache::CacheEntry::could_have_running_containers
    pub fn could_have_running_containers(&self) -> bool {
        self.running_containers().next().is_some() || self.sandboxes.iter().any(|s| s.state == SandboxState::Ready)
    }
}

/// Sandbox state (CRI `PodSandboxState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SandboxState {
    /// `SANDBOX_READY`.
    Ready,
    /// `SANDBOX_NOTREADY`.
    NotReady,
}

/// One pod sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxStatus {
    /// CRI sandbox id.
    pub id: String,
    /// Ready or not.
    pub state: SandboxState,
    /// Creation time.
    pub created_at: Timestamp,
    /// `metadata.attempt`: how many sandboxes were created before this one.
    pub attempt: u32,
    /// Primary IP then additional IPs; `[""]` when the runtime reports no IP
    /// (a non-hostNetwork sandbox like that is recreated), empty when the
    /// network status is unknown (built from a list answer, not
    /// `PodSandboxStatus`).
    pub ips: Vec<String>,
    /// The sandbox uses the host network namespace.
    pub host_network: bool,
}

/// Container state (CRI `ContainerState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContainerState {
    /// `CONTAINER_CREATED`: created, not started.
    Created,
    /// `CONTAINER_RUNNING`.
    Running,
    /// `CONTAINER_EXITED`.
    Exited,
    /// `CONTAINER_UNKNOWN`.
    Unknown,
}

/// One container (one attempt of a container of the pod spec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerStatus {
    /// CRI container id.
    pub id: String,
    /// Container name (`io.kubernetes.container.name`).
    pub name: String,
    /// State.
    pub state: ContainerState,
    /// Creation time.
    pub created_at: Timestamp,
    /// Start time, when started.
    pub started_at: Option<Timestamp>,
    /// Finish time, when exited.
    pub finished_at: Option<Timestamp>,
    /// Exit code (meaningful when exited).
    pub exit_code: i32,
    /// The image as the spec named it.
    pub image: String,
    /// The image reference the runtime resolved (digest or id).
    pub image_ref: String,
    /// The image id.
    pub image_id: String,
    /// The container spec hash it was created from (`io.kubernetes.container.hash`).
    pub hash: String,
    /// Restart count (`io.kubernetes.container.restartCount`).
    pub restart_count: u32,
    /// Runtime reason (`Completed`, `Error`, `OOMKilled`, …).
    pub reason: String,
    /// Runtime message (or the termination message).
    pub message: String,
    /// The sandbox the container belongs to.
    pub sandbox_id: String,
    /// The cgroup resources the runtime reports it runs with (CRI
    /// `ContainerStatus.resources`; `None` when the runtime does not say).
    pub resources: Option<ActualResources>,
    /// The identity its first process started with (CRI
    /// `ContainerStatus.user`; `None` when the runtime does not say).
    pub user: Option<ContainerUserIds>,
    /// Its log file (CRI `ContainerStatus.log_path`; empty when read from a
    /// list, or when the runtime keeps no log). The log manager rotates it.
    pub log_path: String,
}

/// uid, gid and supplemental groups of a container's first process (the
/// API's `containerStatuses[].user.linux`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerUserIds {
    /// Primary uid.
    pub uid: i64,
    /// Primary gid.
    pub gid: i64,
    /// Supplemental groups.
    pub supplemental_groups: Vec<i64>,
}

/// The resources a container runs with, as far as in-place resize compares
/// them (upstream `ContainerResources` from the runtime's status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActualResources {
    /// `cpu.shares` (v1) or its v2 equivalent.
    pub cpu_shares: i64,
    /// CFS quota in µs per period; 0 or less: no limit.
    pub cpu_quota: i64,
    /// CFS period in µs.
    pub cpu_period: i64,
    /// Memory limit in bytes; 0: no limit.
    pub memory_limit: i64,
}

impl ActualResources {
    /// The comparable part of CRI `LinuxContainerResources`.
    ///
    /// ```
    /// use actlet::cri::v1::LinuxContainerResources;
    /// use actlet::kuberuntime::pod_status::ActualResources;
    /// let r = LinuxContainerResources { cpu_shares: 512, cpu_quota: 50_000, cpu_period: 100_000, memory_limit_in_bytes: 1 << 20, ..Default::default() };
    /// assert_eq!(ActualResources::of(&r).memory_limit, 1 << 20);
    /// ```
    pub fn of(r: &crate::cri::v1::LinuxContainerResources) -> Self {
        Self {
            cpu_shares: r.cpu_shares,
            cpu_quota: r.cpu_quota,
            cpu_period: r.cpu_period,
            memory_limit: r.memory_limit_in_bytes,
        }
    }
}
