//! [`WorkerDeps`]: what every pod worker shares (runtime manager, caches,
//! the status manager's address). Built once, cloned into each worker's factory.

use std::sync::Arc;

use crate::actors::supervisor::SupervisedRecipient;
use crate::kuberuntime::RuntimeManager;
use crate::messages::status::UpdatePodStatus;
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;
use crate::status::StatusCache;

/// Collaborators of the pod workers.
#[derive(Clone)]
pub struct WorkerDeps {
    /// Runs pods on the CRI runtime.
    pub runtime: Arc<RuntimeManager>,
    /// Runtime status of every pod (written by the PLEG and by workers after their own syncs).
    pub cache: PodCache,
    /// Desired pods (a restarted worker resumes from here).
    pub pods: PodManager,
    /// The API statuses the status manager holds (the "previous" status).
    pub statuses: StatusCache,
    /// The status manager.
    pub status_manager: SupervisedRecipient<UpdatePodStatus>,
    /// This node's IP, reported as `hostIP`.
    pub host_ip: Option<String>,
    /// Prefix of container IDs in the API status (`containerd://…`).
    pub runtime_name: String,
    /// Wall clock for API timestamps.
    pub wall_clock: crate::clock::WallClock,
    /// Probe results (readiness, started, liveness/startup failures).
    pub probes: crate::prober::store::ProbeStore,
    /// The volume manager (waits for a pod's volumes before its sync).
    pub volumes: crate::volumes::VolumeHandle,
    /// The container manager (creates a pod's cgroup before its sandbox).
    pub cgroups: crate::cm::ContainerManager,
    /// Pods with a pending in-place resize: they run with their allocated
    /// resources, and their status says `PodResizePending`.
    pub allocations: crate::allocation::Allocations,
    /// `kubelet_pod_worker_duration_seconds` (none: not measured).
    pub metrics: Option<Arc<crate::server::pod_metrics::PodMetrics>>,
    /// The pods' lifecycle records: a restarted worker resumes the kill its
    /// predecessor was running from here.
    pub sync_statuses: super::PodSyncStatuses,
    /// The CRI mutations in flight per pod: a step starts once its pod's
    /// have been answered (a predecessor killed mid-call may have left one).
    pub in_flight: crate::cri::to_completion::InFlight,
    /// The bound on sync steps in their runtime work at once
    /// (`--max-concurrent-pod-syncs`), shared by every worker.
    pub sync_slots: super::SyncSlots,
}

impl std::fmt::Debug for WorkerDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerDeps")
            .field("host_ip", &self.host_ip)
            .finish_non_exhaustive()
    }
}
