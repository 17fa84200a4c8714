//! The volume side of the kubelet (upstream `volumemanager`, the volume
//! plugins, the token and ConfigMap/Secret managers).
//!
//! ```text
//! pod manager ──desired──▶ VolumeManager actor ──set up / tear down──▶ <root>/pods/<uid>/volumes/<plugin>/<name>
//!                              │  (reconcile.rs, every 1 s and on request)
//!                              ▼
//!                         VolumeStore (actual state, shared, survives restarts)
//!                              ▲
//! pod worker ──prepare()──▶ VolumeHandle: waits (bounded) for the pod's volumes,
//!                           reads env objects → PodVolumeContext → SyncPodOptions
//! runtime manager: volumeMounts + PodVolumeContext → CRI mounts (mounts.rs)
//! ```
//!
//! - [`plugin`]: emptyDir (disk, or tmpfs for `medium: Memory` when root),
//!   hostPath with every `type` check, and the API data volumes (configMap,
//!   secret, downwardAPI, projected) written by the [`atomic_writer`] from
//!   a [`payload`];
//! - [`objects`] / [`watch_cache`]: ConfigMaps and Secrets (one watch per
//!   referenced object), [`token`]: service account tokens;
//! - [`paths`]: layout and path checks; [`refs`]: what a pod references;
//!   [`pull_secrets`]: imagePullSecrets → `PullImage` credentials;
//! - [`setup`], [`reconcile`], [`actor`], [`store`], [`handle`]: the manager.

pub mod actor;
pub mod atomic_writer;
pub mod context;
pub mod env_objects;
pub mod handle;
pub mod mounts;
pub mod objects;
pub mod paths;
pub mod payload;
pub mod plugin;
pub mod pull_secrets;
pub mod reconcile;
pub mod refs;
pub mod service_env;
pub mod setup;
pub mod store;
pub mod token;
pub mod watch_cache;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use actor::{Reconcile, VolumeManager};
pub use context::PodVolumeContext;
pub use handle::VolumeHandle;
pub use store::VolumeStore;

use crate::actors::supervisor::{ChildSpec, SupervisedRecipient};
use crate::events::EventRecorder;
use crate::kuberuntime::env::EnvContext;
use crate::messages::pod_update::SourcesReady;
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;
use objects::ObjectSource;
use reconcile::ReconcileDeps;
use setup::SetupDeps;
use token::TokenManager;

/// What the volume manager is built from.
#[derive(Clone)]
pub struct VolumeInputs {
    /// `--root-dir`.
    pub root_dir: PathBuf,
    /// ConfigMaps, Secrets and tokens ([`objects::Standalone`] without an API server).
    pub objects: Arc<dyn ObjectSource>,
    /// Desired pods.
    pub pods: PodManager,
    /// Runtime state (volumes stay while anything of the pod runs).
    pub cache: PodCache,
    /// Event recorder (`FailedMount`).
    pub events: EventRecorder,
    /// Node facts for the downward API (allocatable cpu and memory).
    pub env: EnvContext,
    /// API data volumes are rewritten this often (the sync frequency).
    pub resync: Duration,
    /// Pass period of the reconciler.
    pub period: Duration,
    /// The pods' lifecycle records: a pod whose worker has terminated it
    /// (evicted, completed, failed) has its volumes torn down although it
    /// is still desired, as upstream's populator drops terminated pods.
    pub terminated: Option<crate::pod_workers::PodSyncStatuses>,
}

/// The assembled volume manager: the workers' handle, the actor's spec and
/// the shared store.
pub struct VolumeSystem {
    /// For the pod workers.
    pub handle: VolumeHandle,
    /// The reconciler (add it to the tree).
    pub spec: ChildSpec<VolumeManager>,
    /// The actual state.
    pub store: VolumeStore,
}

impl std::fmt::Debug for VolumeSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VolumeSystem")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

/// Builds the volume manager (child name `volume-manager`).
pub fn assemble(inputs: VolumeInputs) -> VolumeSystem {
    let store = VolumeStore::new();
    let handle = VolumeHandle::new(
        store.clone(),
        inputs.objects.clone(),
        inputs.pods.clone(),
        inputs.events.clone(),
    );
    let deps = ReconcileDeps {
        setup: SetupDeps {
            root_dir: inputs.root_dir,
            objects: inputs.objects,
            tokens: TokenManager::default(),
            env: inputs.env,
        },
        store: store.clone(),
        pods: inputs.pods,
        cache: inputs.cache,
        events: inputs.events,
        resync: inputs.resync,
        terminated: inputs.terminated,
        refs_generation: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX)),
        with_volumes: reconcile::WithVolumes::default(),
    };
    let period = inputs.period;
    let spec = ChildSpec::new("volume-manager", move || VolumeManager::new(deps.clone(), period)).mailbox_capacity(64);
    handle.set_reconciler(spec.child_ref().recipient());
    VolumeSystem { handle, spec, store }
}

/// Passes [`SourcesReady`] on to `next`, telling `store` first (orphaned
/// volumes are judged only once every source has delivered its pods).
pub fn sources_ready_tap(
    store: &VolumeStore,
    next: SupervisedRecipient<SourcesReady>,
) -> SupervisedRecipient<SourcesReady> {
    let store = store.clone();
    SupervisedRecipient::from_fn(move |m: SourcesReady| {
        store.set_sources_ready();
        if let Err(e) = next.do_send(m) {
            tracing::warn!(error = %e, "cannot forward SourcesReady");
        }
    })
}
