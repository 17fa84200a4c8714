//! [`ContainerManager`]: the shared handle that owns the node's cgroups
//! (upstream `containerManagerImpl` with its `qosContainerManager` and
//! `podContainerManager`).
//!
//! - **Start** (once, on first use or from the `container-manager` actor):
//!   decides whether cgroups are managed at all, then creates `kubepods`
//!   with node allocatable (`enforceNodeAllocatable` holding `pods`:
//!   capacity − kube/system reserved), `kubepods/burstable` and
//!   `kubepods/besteffort` (cpu shares 2).
//! - **Pods**: before a pod's sandbox is created, its cgroup is created
//!   with [`resource_config_for_pod`] when it does not exist yet, after the
//!   QoS cgroups are updated (upstream `podContainerManager.EnsureExists`
//!   in `SyncPod`).
//! - **QoS update**: the Burstable cgroup's shares follow the sum of the
//!   Burstable pods' cpu requests (every minute and before each new pod).
//!
//! Off (one log line says why) without `cgroupsPerQOS`, with
//! [`CmMode::Off`], when the runtime is the mock, or when cgroupfs is not
//! writable (no root, read-only `/sys`); pods then run as before, under the
//! cgroup parent the runtime creates. All file IO runs on the blocking pool.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use super::fs::{CgroupError, CgroupFs, CgroupVersion, Cgroupfs};
use super::names::{CgroupDriver, CgroupNaming};
use super::resources::{
    NodeResources, ResourceConfig, besteffort_qos_config, burstable_qos_config, node_allocatable_config,
    resource_config_for_pod,
};
use crate::cri::{SharedRuntime, v1};
use crate::kuberuntime::qos::{QosClass, pod_qos};
use crate::pod_manager::PodManager;

/// Upstream `periodicQOSCgroupUpdateInterval`.
pub const QOS_UPDATE_PERIOD: Duration = Duration::from_secs(60);
/// Deadline of the `Version` call that tells the mock runtime apart.
const VERSION_DEADLINE: Duration = Duration::from_secs(5);

/// Whether the kubelet manages cgroups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CmMode {
    /// When `cgroupsPerQOS`, the runtime is not the mock and cgroupfs is writable.
    #[default]
    Auto,
    /// Never (the runtime creates pod cgroups from the parent it is given).
    Off,
}

/// The container manager's settings (`cgroupRoot`, `cgroupsPerQOS`,
/// `cgroupDriver`, `podPidsLimit`, `enforceNodeAllocatable`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmConfig {
    /// Cgroup names (root, per-QoS, driver).
    pub naming: CgroupNaming,
    /// `podPidsLimit` (-1: unlimited).
    pub pod_pids_limit: i64,
    /// `enforceNodeAllocatable` (`["pods"]`).
    pub enforce_node_allocatable: Vec<String>,
    /// Whether cgroups are managed at all.
    pub mode: CmMode,
    /// Where cgroupfs is mounted (`/sys/fs/cgroup`).
    pub cgroup_mount: PathBuf,
    /// The D-Bus address of systemd for the systemd driver (`None`: the
    /// system bus).
    pub systemd_bus: Option<String>,
}

impl Default for CmConfig {
    fn default() -> Self {
        Self {
            naming: CgroupNaming::default(),
            pod_pids_limit: -1,
            enforce_node_allocatable: vec!["pods".into()],
            mode: CmMode::Auto,
            cgroup_mount: PathBuf::from(crate::gc::cgroups::CGROUP_MOUNT),
            systemd_bus: None,
        }
    }
}

/// Node facts the manager needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCapacity {
    /// Capacity.
    pub capacity: NodeResources,
    /// kube + system reserved.
    pub reserved: NodeResources,
    /// `cpuCFSQuota`.
    pub cpu_cfs_quota: bool,
}

struct Inner {
    config: CmConfig,
    fs: Arc<dyn CgroupFs>,
    runtime: Option<SharedRuntime>,
    pods: PodManager,
    node: NodeCapacity,
    /// The on/off decision, once made.
    active: std::sync::OnceLock<bool>,
    /// Held while deciding (one decision at a time).
    deciding: tokio::sync::Mutex<()>,
    /// systemd, for the systemd driver on a host.
    slices: Option<Arc<super::systemd::SystemdSlices>>,
}

/// The shared container manager handle (cheap to clone; restart-safe: it
/// is not an actor).
#[derive(Clone)]
pub struct ContainerManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ContainerManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerManager")
            .field("config", &self.inner.config)
            .field("active", &self.inner.active.get())
            .finish_non_exhaustive()
    }
}

/// The cgroup name of the pod's cgroup as written under the mount.
fn driver_path(naming: &CgroupNaming, class: QosClass, uid: &str) -> String {
    naming.pod(class, uid).to_driver(naming.driver)
}

impl ContainerManager {
    /// A manager over `fs`; `runtime` is asked its name once (the mock is
    /// never given cgroups).
    pub fn new(
        config: CmConfig,
        fs: Arc<dyn CgroupFs>,
        runtime: Option<SharedRuntime>,
        pods: PodManager,
        node: NodeCapacity,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                fs,
                runtime,
                pods,
                node,
                active: std::sync::OnceLock::new(),
                deciding: tokio::sync::Mutex::new(()),
                slices: None,
            }),
        }
    }

    /// systemd (the systemd driver on a host), for stopping pod slices.
    pub fn systemd_slices(&self) -> Option<Arc<super::systemd::SystemdSlices>> {
        self.inner.slices.clone()
    }

    /// A manager on the host's cgroupfs (`config.cgroup_mount`, version detected).
    /// With the systemd driver the slices are also declared to systemd over
    /// D-Bus ([`super::systemd`]).
    pub fn on_host(config: CmConfig, runtime: SharedRuntime, pods: PodManager, node: NodeCapacity) -> Self {
        let cgroupfs = Cgroupfs::detect(&config.cgroup_mount);
        let handle = tokio::runtime::Handle::try_current().ok();
        match handle.filter(|_| config.naming.driver == CgroupDriver::Systemd) {
            Some(handle) => {
                let slices = Arc::new(super::systemd::SystemdSlices::new(handle, config.systemd_bus.clone()));
                let fs = Arc::new(super::systemd::SystemdCgroupfs::new(cgroupfs, slices.clone()));
                let mut m = Self::new(config, fs, Some(runtime), pods, node);
                if let Some(inner) = Arc::get_mut(&mut m.inner) {
                    inner.slices = Some(slices);
                }
                m
            }
            None => Self::new(config, Arc::new(cgroupfs), Some(runtime), pods, node),
        }
    }

    /// A manager that manages nothing (tests, embedders without cgroups).
    pub fn disabled() -> Self {
        let config = CmConfig {
            mode: CmMode::Off,
            ..CmConfig::default()
        };
        let fs = Arc::new(Cgroupfs::new("/nonexistent", CgroupVersion::V1));
        Self::new(config, fs, None, PodManager::new(), NodeCapacity::default())
    }

    /// The settings.
    pub fn config(&self) -> &CmConfig {
        &self.inner.config
    }

    /// Whether the manager is on (`None` before [`start`](Self::start) finished).
    pub fn is_active(&self) -> Option<bool> {
        self.inner.active.get().copied()
    }

    /// Decides once whether cgroups are managed and creates the QoS
    /// hierarchy; later calls return the decision. While the runtime does
    /// not answer `Version` nothing is decided (false now, asked again on
    /// the next call): a mock that is down must not get host cgroups.
    pub async fn start(&self) -> bool {
        if let Some(active) = self.inner.active.get() {
            return *active;
        }
        let _deciding = self.inner.deciding.lock().await;
        if let Some(active) = self.inner.active.get() {
            return *active;
        }
        match self.decide_and_setup().await {
            Some(active) => *self.inner.active.get_or_init(|| active),
            None => false,
        }
    }

    async fn decide_and_setup(&self) -> Option<bool> {
        self.decide().await?;
        Some(self.setup().await)
    }

    /// `Some(())` when cgroups should be managed, `None` when undecided;
    /// a definitive "off" is stored here.
    async fn decide(&self) -> Option<()> {
        let off = |why: &str| {
            tracing::info!("container manager off: {why}");
            let _ = self.inner.active.set(false);
            None
        };
        let c = &self.inner.config;
        if c.mode == CmMode::Off {
            return off("cgroups are left to the runtime");
        }
        if !c.naming.cgroups_per_qos {
            return off("cgroupsPerQOS is false, pods get no kubelet cgroup");
        }
        if let Some(rt) = &self.inner.runtime {
            let version = tokio::time::timeout(VERSION_DEADLINE, rt.version(v1::VersionRequest::default())).await;
            match version {
                Ok(Ok(v)) if v.runtime_name == crate::cri::mock::RUNTIME_NAME => {
                    return off("the runtime is the mock, it runs no cgroups");
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "container manager undecided: the runtime did not answer Version");
                    return None;
                }
                Err(_) => {
                    tracing::debug!("container manager undecided: Version timed out");
                    return None;
                }
            }
        }
        Some(())
    }

    async fn setup(&self) -> bool {
        let c = &self.inner.config;
        let me = self.clone();
        let setup = tokio::task::spawn_blocking(move || me.setup_qos_hierarchy()).await;
        match setup {
            Ok(Ok(())) => {
                tracing::info!(
                    mount = %c.cgroup_mount.display(),
                    kubepods = %c.naming.kubepods().to_driver(c.naming.driver),
                    driver = c.naming.driver.as_str(),
                    "container manager on: QoS cgroups created, node allocatable enforced on kubepods"
                );
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "container manager off: cgroupfs is not writable; cgroups are left to the runtime");
                false
            }
            Err(e) => {
                tracing::error!(error = %e, "container manager off: cgroup setup panicked");
                false
            }
        }
    }

    /// `kubepods` (node allocatable), `burstable`, `besteffort` (blocking).
    fn setup_qos_hierarchy(&self) -> Result<(), CgroupError> {
        let (c, n) = (&self.inner.config, &self.inner.node);
        let enforce = c.enforce_node_allocatable.iter().any(|e| e == "pods");
        let kubepods = node_allocatable_config(n.capacity, n.reserved, enforce);
        let name = |cg: super::names::CgroupName| cg.to_driver(c.naming.driver);
        self.inner.fs.create(&name(c.naming.kubepods()), &kubepods)?;
        self.inner
            .fs
            .create(&name(c.naming.qos(QosClass::Burstable)), &ResourceConfig::default())?;
        self.inner
            .fs
            .create(&name(c.naming.qos(QosClass::BestEffort)), &besteffort_qos_config())?;
        self.update_qos_blocking()
    }

    /// Updates the Burstable and BestEffort cgroups from the active pods (blocking).
    fn update_qos_blocking(&self) -> Result<(), CgroupError> {
        let c = &self.inner.config;
        let pods: Vec<Arc<Pod>> = self
            .inner
            .pods
            .pods()
            .into_iter()
            .map(|d| d.pod)
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .collect();
        let name = |class| c.naming.qos(class).to_driver(c.naming.driver);
        self.inner.fs.update(
            &name(QosClass::Burstable),
            &burstable_qos_config(pods.iter().map(|p| &**p)),
        )?;
        self.inner
            .fs
            .update(&name(QosClass::BestEffort), &besteffort_qos_config())
    }

    /// Updates the QoS cgroups (upstream `UpdateQOSCgroups`); a no-op when off.
    pub async fn update_qos(&self) -> Result<(), CgroupError> {
        if !self.start().await {
            return Ok(());
        }
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.update_qos_blocking())
            .await
            .unwrap_or(Ok(()))
    }

    /// The pod's cgroup path as the driver spells it.
    pub fn pod_cgroup(&self, pod: &Pod) -> String {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        driver_path(&self.inner.config.naming, pod_qos(pod), uid)
    }

    /// Writes the pod's current limits to its existing cgroup (after an
    /// in-place resize of its containers; upstream `doPodResizeAction`
    /// updates the pod cgroup too). A no-op when the manager is off or the
    /// cgroup does not exist.
    pub async fn update_pod(&self, pod: &Pod) -> Result<(), CgroupError> {
        if !self.start().await {
            return Ok(());
        }
        let path = self.pod_cgroup(pod);
        let res = resource_config_for_pod(pod, self.inner.node.cpu_cfs_quota, self.inner.config.pod_pids_limit);
        let me = self.clone();
        let p = path.clone();
        let task = tokio::task::spawn_blocking(move || {
            if !me.inner.fs.exists(&p) {
                return Ok(());
            }
            me.inner.fs.update(&p, &res)
        });
        task.await.unwrap_or_else(|join| {
            Err(CgroupError {
                op: "pod cgroup task failed for".into(),
                path: path.into(),
                source: std::io::Error::other(join.to_string()),
            })
        })
    }

    /// Creates the pod's cgroup with its limits when it does not exist
    /// (upstream `EnsureExists`), after updating the QoS cgroups. A no-op
    /// when the manager is off.
    pub async fn ensure_pod(&self, pod: &Pod) -> Result<(), CgroupError> {
        if !self.start().await {
            return Ok(());
        }
        let path = self.pod_cgroup(pod);
        let res = resource_config_for_pod(pod, self.inner.node.cpu_cfs_quota, self.inner.config.pod_pids_limit);
        let me = self.clone();
        let task = tokio::task::spawn_blocking(move || {
            if me.inner.fs.exists(&path) {
                return Ok(false);
            }
            if let Err(e) = me.update_qos_blocking() {
                tracing::warn!(error = %e, "failed to update QoS cgroups while syncing pod");
            }
            me.inner.fs.create(&path, &res).map(|()| true)
        });
        match task.await {
            Ok(Ok(created)) => {
                if created {
                    tracing::debug!(path = %self.pod_cgroup(pod), "created pod cgroup");
                }
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(join) => Err(CgroupError {
                op: "pod cgroup task failed for".into(),
                path: self.pod_cgroup(pod).into(),
                source: std::io::Error::other(join.to_string()),
            }),
        }
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
