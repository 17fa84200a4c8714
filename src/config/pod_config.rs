//! [`PodConfig`]: merges every source's snapshots into one stream of
//! [`PodUpdate`]s (upstream `PodConfig` + `podStorage` in incremental mode).
//!
//! # Expected flow
//! 1. A source sends a [`SourceSnapshot`]; the actor applies it to its
//!    [`PodStorage`] (see [`crate::config::merge`] for the rules), stamping
//!    `kubernetes.io/config.seen` with the current time on additions.
//! 2. It sends the non-empty batches in upstream's order: REMOVE, ADD,
//!    UPDATE, DELETE, RECONCILE.
//! 3. Once every expected source has sent a snapshot, it sends
//!    [`SourcesReady`], once (at start, if no source is expected).
//!
//! # Guarantees
//! - Per source, batches go out in the order snapshots arrived; a pod is
//!   never ADDed twice without a REMOVE between.
//! - [`GetManifestErrors`] answers the errors of each source's latest
//!   snapshot (sources in order file, http, api, custom), plus pods the merge
//!   dropped as duplicates (origin = the source name).
//!
//! # Caveats
//! Batches are sent with `do_send`, which does not wait for mailbox space:
//! the sync loop's mailbox absorbs bursts (sources send at most one snapshot
//! per re-read, so this is bounded by the number of sources).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::actors::supervisor::SupervisedRecipient;
use actix::{Actor, Context, Handler, MessageResult};
use k8s_openapi::jiff::Timestamp;

use crate::config::merge::PodStorage;
use crate::messages::pod_update::{ManifestError, PodSource, PodUpdate, SourceSnapshot, SourcesReady};

pub use crate::messages::pod_update::GetManifestErrors;

/// The latest manifest errors of every source, readable without a message
/// round trip (the HTTP server shows them at `/debug/manifest-errors`).
#[derive(Clone, Debug, Default)]
pub struct ManifestErrors(std::sync::Arc<std::sync::Mutex<Vec<ManifestError>>>);

impl ManifestErrors {
    /// The current errors (origin and reason of every rejected manifest).
    pub fn get(&self) -> Vec<ManifestError> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, errors: Vec<ManifestError>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = errors;
    }
}

/// The merge actor; see the module doc.
///
/// # State
/// Owned, in [`PodConfigState`] (survives a restart): the merged pods per
/// source, whether sources-ready was sent, the manifest errors. A restarted
/// instance therefore still knows every pod it announced, so a manifest
/// removed around the restart is REMOVEd on the next snapshot instead of
/// running until actlet restarts.
pub struct PodConfig {
    published: Option<ManifestErrors>,
    state: PodConfigState,
    expected: Vec<PodSource>,
    updates: SupervisedRecipient<PodUpdate>,
    ready: SupervisedRecipient<SourcesReady>,
}

/// The merge state of [`PodConfig`], shared so it outlives any instance.
///
/// ```
/// use actlet::config::PodConfigState;
/// let state = PodConfigState::default();
/// let kept = state.clone(); // handed to every instance by the factory
/// # let _ = kept;
/// ```
#[derive(Clone, Default)]
pub struct PodConfigState(Arc<Mutex<Merge>>);

impl std::fmt::Debug for PodConfigState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodConfigState").finish_non_exhaustive()
    }
}

struct Merge {
    storage: PodStorage,
    ready_sent: bool,
    errors: BTreeMap<PodSource, Vec<ManifestError>>,
}

impl Default for Merge {
    fn default() -> Self {
        Self {
            storage: PodStorage::new(),
            ready_sent: false,
            errors: BTreeMap::new(),
        }
    }
}

impl PodConfigState {
    fn lock(&self) -> MutexGuard<'_, Merge> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PodConfig {
    /// A merge waiting for `expected_sources` before it reports
    /// [`SourcesReady`] to `ready`; batches go to `updates`.
    pub fn new(
        expected_sources: impl IntoIterator<Item = PodSource>,
        updates: impl Into<SupervisedRecipient<PodUpdate>>,
        ready: impl Into<SupervisedRecipient<SourcesReady>>,
    ) -> Self {
        let (updates, ready) = (updates.into(), ready.into());
        Self {
            published: None,
            state: PodConfigState::default(),
            expected: expected_sources.into_iter().collect(),
            updates,
            ready,
        }
    }

    /// Keeps the merge state in `state`, which outlives this instance.
    pub fn with_state(mut self, state: PodConfigState) -> Self {
        self.state = state;
        self
    }

    /// Also publishes the manifest errors into `handle`.
    pub fn with_published_errors(mut self, handle: ManifestErrors) -> Self {
        self.published = Some(handle);
        self
    }

    fn check_ready(&mut self) {
        let mut merge = self.state.lock();
        if !merge.ready_sent && merge.storage.all_ready(&self.expected) {
            merge.ready_sent = true;
            tracing::info!(sources = ?self.expected, "all pod sources ready");
            if let Err(e) = self.ready.do_send(SourcesReady) {
                tracing::warn!(error = %e, "cannot report sources ready");
            }
        }
    }
}

impl Actor for PodConfig {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        self.check_ready();
    }
}

impl Handler<SourceSnapshot> for PodConfig {
    type Result = ();

    fn handle(&mut self, snapshot: SourceSnapshot, _: &mut Self::Context) {
        let SourceSnapshot {
            source,
            pods,
            mut errors,
        } = snapshot;
        let mut merge = self.state.lock();
        let result = merge.storage.apply_snapshot(&source, pods, now());
        for pod in &result.duplicates {
            let (namespace, name) = crate::config::last_good::full_name(pod);
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            let reason = format!("duplicate pod \"{namespace}/{name}\" (uid {uid}) from source {source:?}, ignoring");
            tracing::warn!(source = source.as_str(), reason, "pod failed validation");
            errors.push(ManifestError {
                origin: source.as_str().to_owned(),
                reason,
            });
        }
        merge.errors.insert(source.clone(), errors);
        if let Some(p) = &self.published {
            p.set(merge.errors.values().flatten().cloned().collect());
        }
        drop(merge);
        for update in result.into_updates(&source) {
            tracing::debug!(source = source.as_str(), op = ?update.op, pods = update.pods.len(), "pod config update");
            if let Err(e) = self.updates.do_send(update) {
                tracing::error!(error = %e, "cannot deliver pod update to the sync loop");
            }
        }
        self.check_ready();
    }
}

impl Handler<GetManifestErrors> for PodConfig {
    type Result = MessageResult<GetManifestErrors>;

    fn handle(&mut self, _: GetManifestErrors, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.state.lock().errors.values().flatten().cloned().collect())
    }
}

/// The wall clock as a [`Timestamp`] (for `config.seen`).
fn now() -> Timestamp {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    let nanos = i32::try_from(since_epoch.subsec_nanos()).unwrap_or(0);
    Timestamp::new(seconds, nanos).unwrap_or(Timestamp::UNIX_EPOCH)
}
