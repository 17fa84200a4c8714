//! [`SyncLoopState`]: what the sync loop must not lose when it is restarted —
//! whether all sources have been seen (housekeeping depends on it; pod-config
//! says it once) and the admission book (admitted pods count toward the
//! node's capacity). Everything else the sync loop holds is derived: its work
//! queue is rebuilt from the pod manager on start, the runtime gate from the
//! health watch.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Pod;

use crate::messages::PodUid;

/// The owned part of the sync loop's state.
#[derive(Debug, Default)]
pub struct Book {
    /// Every expected source has delivered its first snapshot.
    pub sources_ready: bool,
    /// Pods admitted and not yet removed (their requests count as used).
    pub admitted: HashMap<PodUid, Arc<Pod>>,
    /// Pods admission refused.
    pub rejected: HashSet<PodUid>,
}

/// Shared handle on [`Book`], created by the tree assembly and handed to
/// every sync-loop instance.
///
/// ```
/// use actlet::sync_loop::SyncLoopState;
/// let state = SyncLoopState::default();
/// state.lock().sources_ready = true;
/// assert!(state.clone().sources_ready(), "what a restarted instance sees");
/// ```
#[derive(Clone, Debug, Default)]
pub struct SyncLoopState(Arc<Mutex<Book>>);

impl SyncLoopState {
    /// The book, locked (never held across an `.await`).
    pub fn lock(&self) -> MutexGuard<'_, Book> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether all sources are ready.
    pub fn sources_ready(&self) -> bool {
        self.lock().sources_ready
    }
}
