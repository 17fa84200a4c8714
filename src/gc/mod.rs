//! Garbage collection of dead containers, sandboxes, pod logs and unused
//! images (upstream `kuberuntime_gc.go` and `images/image_gc_manager.go`).
//!
//! Two supervised actors, thin shells around pure decisions:
//! - `container-gc` ([`ContainerGc`], every 1 min): decisions in
//!   [`containers`] and [`cgroups`] (pod cgroups of removed pods), pod
//!   liveness in [`liveness`]; a round is skipped while none of its inputs
//!   moved since one that removed nothing ([`quiet`]);
//! - `image-gc` ([`ImageGc`], every 5 min): decisions in [`images`], disk
//!   usage from an [`ImageFsSource`] ([`image_fs`]).
//!
//! What must survive their restarts ([`GcState`]: image records, failure
//! streaks, round locks) is owned by the tree assembly, as are the pod
//! lifecycle records and sources-ready flag they read
//! ([`PodSyncStatuses`], [`SyncLoopState`]). Removals go through the [`Runtime`](crate::cri::Runtime) trait
//! in tasks of their own and are never cancelled ([`exec`]).

pub mod cgroups;
pub mod container_actor;
pub mod containers;
pub mod error;
pub mod exec;
pub mod image_actor;
pub mod image_fs;
pub mod images;
pub mod liveness;
pub mod policy;
pub mod quiet;
pub mod reclaim;
pub mod state;

use std::time::Duration;

use crate::actors::supervisor::{AnyChildSpec, ChildSpec};
use crate::cri::SharedRuntime;
use crate::events::EventRecorder;
use crate::kubelet::KubeletConfig;
use crate::pod_manager::PodManager;
use crate::pod_workers::PodSyncStatuses;
use crate::sync_loop::SyncLoopState;

pub use container_actor::{ContainerGc, ContainerGcDeps, ContainerRound};
pub use error::GcError;
pub use image_actor::{ImageGc, ImageGcDeps, ImageRound};
pub use image_fs::{CriStatfs, FixedCapacity, ImageFsSource, ImageFsStats};
pub use policy::{CONTAINER_GC_PERIOD, ContainerGcPolicy, IMAGE_GC_PERIOD, ImageGcPolicy};
pub use reclaim::GcReclaim;
pub use state::GcState;

/// What the tree assembly hands to [`children`].
pub struct GcInputs<'a> {
    /// The settings.
    pub config: &'a KubeletConfig,
    /// The runtime.
    pub runtime: SharedRuntime,
    /// The desired pods.
    pub pods: PodManager,
    /// The pods' lifecycle records (worker states).
    pub pod_sync_statuses: PodSyncStatuses,
    /// The sync loop's state (whether all sources are ready).
    pub sync_state: SyncLoopState,
    /// State outliving the actors.
    pub state: GcState,
    /// Node events.
    pub events: EventRecorder,
    /// systemd, when pod slices are its units.
    pub systemd_slices: Option<std::sync::Arc<crate::cm::systemd::SystemdSlices>>,
    /// The PLEG's pod cache (quiet container rounds are skipped; `None`: never).
    pub runtime_cache: Option<crate::pleg::PodCache>,
}

/// The `container-gc` and `image-gc` children (no `image-gc` when image
/// GC is disabled: high threshold 100 and no maximum age, as upstream), and
/// the same GC as the eviction manager's node-level reclaim.
pub fn children(i: GcInputs<'_>) -> (Vec<AnyChildSpec>, GcReclaim) {
    let c = i.config;
    let container = ContainerGcDeps {
        runtime: i.runtime.clone(),
        pods: i.pods,
        pod_sync_statuses: i.pod_sync_statuses,
        sync_state: i.sync_state,
        policy: c.container_gc_policy,
        period: CONTAINER_GC_PERIOD,
        pod_logs_dir: c.pod_logs_dir.clone(),
        container_logs_dir: c.container_logs_dir.clone(),
        cgroup_mount: Some(cgroups::CGROUP_MOUNT.into()),
        state: i.state.clone(),
        events: i.events.clone(),
        node_name: c.node_name.clone(),
        wall_clock: c.wall_clock.clone(),
        systemd_slices: i.systemd_slices.clone(),
        runtime_cache: i.runtime_cache,
    };
    let mut reclaim = GcReclaim {
        container: container.clone(),
        image: None,
    };
    let mut out: Vec<AnyChildSpec> = vec![
        ChildSpec::new("container-gc", move || ContainerGc::new(container.clone()))
            .shutdown_timeout(Duration::from_secs(5))
            .into(),
    ];
    let policy = c.image_gc_policy();
    if policy.disabled() {
        tracing::info!("imageGCHighThresholdPercent is 100 and imageMaximumGCAge is 0: image GC disabled");
        return (out, reclaim);
    }
    let image = ImageGcDeps {
        runtime: i.runtime,
        policy,
        period: IMAGE_GC_PERIOD,
        image_fs: c.image_fs.clone(),
        state: i.state,
        events: i.events,
        node_name: c.node_name.clone(),
    };
    reclaim.image = Some(image.clone());
    out.push(
        ChildSpec::new("image-gc", move || ImageGc::new(image.clone()))
            .shutdown_timeout(Duration::from_secs(5))
            .into(),
    );
    (out, reclaim)
}
