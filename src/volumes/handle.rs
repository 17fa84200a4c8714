//! [`VolumeHandle`]: what a pod worker uses before it syncs a pod (upstream
//! `WaitForAttachAndMount` plus the env's object reads).
//!
//! [`VolumeHandle::prepare`] asks the reconciler for a pass (failed volumes
//! of the pod are retried at once) and waits until every volume of the pod
//! is set up — bounded:
//! - a set-up failure during the wait whose retry is more than
//!   [`RETRY_WAIT`] after the wait's start ends it at once with that failure
//!   (the reconciler already recorded the `FailedMount` event; the worker's
//!   sync fails and is retried); sooner retries are waited for;
//! - a pod that is removed or gets a deletion timestamp ends it at once (a
//!   kill never waits behind a mount);
//! - after [`MOUNT_TIMEOUT`] (upstream's 2 min) it ends with upstream's
//!   `FailedMount` event `Unable to attach or mount volumes: unmounted
//!   volumes=[…], unattached volumes=[…]: timed out waiting for the condition`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;

use super::actor::Reconcile;
use super::context::PodVolumeContext;
use super::env_objects::fetch_env_objects;
use super::objects::ObjectSource;
use super::pull_secrets::{RegistryCredential, parse_secret};
use super::store::VolumeStore;
use crate::actors::supervisor::SupervisedRecipient;
use crate::events::EventRecorder;
use crate::messages::event::EventType;
use crate::pod_manager::PodManager;

/// Upstream `podAttachAndMountTimeout`.
pub const MOUNT_TIMEOUT: Duration = Duration::from_secs(120);
/// A set-up failure whose retry comes within this much of the wait's start
/// does not end the wait: the reconciler's first retries (0.5 s, 1 s, 2 s
/// after it) are waited for. A transient failure — the API server's Node
/// authorizer not yet knowing a pod just bound to the node refuses its
/// TokenRequest — then costs the pod half a second instead of the sync
/// loop's error backoff (upstream waits through every retry up to
/// [`MOUNT_TIMEOUT`]).
pub const RETRY_WAIT: Duration = Duration::from_secs(4);

/// How often a waiting worker re-checks the pod manager.
const RECHECK: Duration = Duration::from_secs(1);

struct Inner {
    store: VolumeStore,
    objects: Arc<dyn ObjectSource>,
    pods: PodManager,
    events: EventRecorder,
    reconciler: OnceLock<SupervisedRecipient<Reconcile>>,
    timeout: Duration,
}

/// The pod workers' side of the volume manager. Cheap to clone.
#[derive(Clone, Default)]
pub struct VolumeHandle {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for VolumeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VolumeHandle")
            .field("enabled", &self.inner.is_some())
            .finish()
    }
}

impl VolumeHandle {
    /// No volume manager: [`prepare`](Self::prepare) returns `Ok(None)`.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let h = actlet::volumes::VolumeHandle::disabled();
    /// let pod = actlet::testing::PodBuilder::new("web").build();
    /// assert_eq!(h.prepare(&pod).await, Ok(None));
    /// # });
    /// ```
    pub fn disabled() -> Self {
        Self::default()
    }

    /// A handle over the shared state (the reconciler is attached with
    /// [`set_reconciler`](Self::set_reconciler)).
    pub fn new(store: VolumeStore, objects: Arc<dyn ObjectSource>, pods: PodManager, events: EventRecorder) -> Self {
        Self {
            inner: Some(Arc::new(Inner {
                store,
                objects,
                pods,
                events,
                reconciler: OnceLock::new(),
                timeout: MOUNT_TIMEOUT,
            })),
        }
    }

    /// Waits at most `timeout` for mounts (default [`MOUNT_TIMEOUT`]);
    /// call before cloning.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if let Some(inner) = self.inner.as_mut().and_then(Arc::get_mut) {
            inner.timeout = timeout;
        }
        self
    }

    /// Where "reconcile now" requests go.
    pub fn set_reconciler(&self, to: SupervisedRecipient<Reconcile>) {
        if let Some(inner) = &self.inner {
            let _ = inner.reconciler.set(to);
        }
    }

    /// Waits for `pod`'s volumes (see the module docs) and reads the
    /// objects its env references.
    pub async fn prepare(&self, pod: &Pod) -> Result<Option<PodVolumeContext>, String> {
        let Some(inner) = &self.inner else {
            return Ok(None);
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let names: Vec<String> = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .map(|v| v.name.clone())
            .collect();
        let start = Instant::now();
        let deadline = start + inner.timeout;
        let mut changes = inner.store.subscribe();
        if !names.is_empty() {
            inner.store.request_retry(&uid);
            if let Some(r) = inner.reconciler.get()
                && let Err(e) = r.do_send(Reconcile)
            {
                tracing::debug!(error = %e, "volume reconciler busy; its next pass will come");
            }
        }
        let volumes = loop {
            let state = inner.store.pod(&uid).unwrap_or_default();
            let missing: Vec<&String> = names.iter().filter(|n| !state.mounted.contains_key(*n)).collect();
            if missing.is_empty() {
                let mut v = state.mounted;
                v.retain(|k, _| names.contains(k));
                break v;
            }
            if let Some((name, f)) = state
                .failures
                .iter()
                .find(|(n, f)| missing.contains(n) && f.at >= start && f.retry_at > start + RETRY_WAIT)
            {
                return Err(format!("MountVolume.SetUp failed for volume {name:?} : {}", f.message));
            }
            let wanted = inner.pods.get(&uid.as_str().into());
            if wanted.is_none_or(|d| d.pod.metadata.deletion_timestamp.is_some()) {
                return Err("pod is being removed; not waiting for its volumes".into());
            }
            let now = Instant::now();
            if now >= deadline {
                let list = missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
                let message = format!(
                    "unmounted volumes=[{list}], unattached volumes=[{list}]: timed out waiting for the condition"
                );
                inner.events.pod_event(
                    pod,
                    None,
                    EventType::Warning,
                    "FailedMount",
                    format!("Unable to attach or mount volumes: {message}"),
                );
                return Err(message);
            }
            let wait = RECHECK.min(deadline - now);
            let _ = tokio::time::timeout(wait, changes.changed()).await;
        };
        let env = fetch_env_objects(inner.objects.as_ref(), pod).await;
        let pull_secrets = self.pull_secrets(inner, pod).await;
        Ok(Some(PodVolumeContext {
            volumes,
            env,
            pull_secrets,
        }))
    }

    /// The credentials of `pod`'s imagePullSecrets; a secret that cannot be
    /// read is upstream's `FailedToRetrieveImagePullSecret` event (the pull is
    /// still attempted).
    async fn pull_secrets(&self, inner: &Inner, pod: &Pod) -> Vec<RegistryCredential> {
        let names: Vec<&str> = pod
            .spec
            .iter()
            .flat_map(|s| s.image_pull_secrets.iter().flatten())
            .map(|r| r.name.as_str())
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() || !inner.objects.has_client() {
            return Vec::new();
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let (mut creds, mut failed) = (Vec::new(), Vec::new());
        for name in names {
            match inner.objects.secret(ns, name).await {
                Ok(secret) => creds.extend(parse_secret(&secret)),
                Err(e) => {
                    tracing::warn!(secret = %name, error = %e, "unable to retrieve pull secret");
                    failed.push(format!("{ns}/{name}"));
                }
            }
        }
        if !failed.is_empty() {
            inner.events.pod_event(
                pod,
                None,
                EventType::Warning,
                "FailedToRetrieveImagePullSecret",
                format!(
                    "Unable to retrieve some image pull secrets ({}); attempting to pull the image may not succeed.",
                    failed.join(", ")
                ),
            );
        }
        creds
    }
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
