//! [`GcState`]: what the GC actors keep across their restarts, owned by the
//! tree assembly.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use tokio::time::Instant;

use super::images::ImageRecords;
use super::quiet::QuietRounds;

/// The GC actors' state that outlives their instances: the image records
/// (first detected / last used), when image GC began, whether the previous
/// round failed, the last quiet container round ([`QuietRounds`]), and one
/// lock per GC kind held by a round and by its
/// removals, so a restarted actor never starts a round while the removals
/// of its predecessor's are still in flight.
#[derive(Clone, Debug)]
pub struct GcState {
    images: Arc<Mutex<ImageRecords>>,
    /// When image GC began (upstream `beganGC`, for `imageMaximumGCAge`).
    pub began: Instant,
    pub(crate) container_failed: Arc<AtomicBool>,
    pub(crate) image_failed: Arc<AtomicBool>,
    container_round: Arc<AsyncMutex<()>>,
    image_round: Arc<AsyncMutex<()>>,
    container_quiet: Arc<Mutex<QuietRounds>>,
}

impl Default for GcState {
    fn default() -> Self {
        Self {
            images: Arc::default(),
            began: Instant::now(),
            container_failed: Arc::default(),
            image_failed: Arc::default(),
            container_round: Arc::default(),
            image_round: Arc::default(),
            container_quiet: Arc::default(),
        }
    }
}

impl GcState {
    /// Fresh state; image GC begins now.
    pub fn new() -> Self {
        Self::default()
    }

    /// The image records.
    pub fn images(&self) -> MutexGuard<'_, ImageRecords> {
        self.images.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The container GC's last quiet round.
    pub(crate) fn container_quiet(&self) -> MutexGuard<'_, QuietRounds> {
        self.container_quiet.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A closure forgetting a removed image in the records.
    pub(crate) fn forget_image(&self) -> impl Fn(&str) + 'static {
        let images = self.images.clone();
        move |id| {
            images.lock().unwrap_or_else(|e| e.into_inner()).0.remove(id);
        }
    }

    /// The container GC round lock, if no round (or its removals) runs.
    pub(crate) fn try_container_round(&self) -> Option<Arc<OwnedMutexGuard<()>>> {
        self.container_round.clone().try_lock_owned().ok().map(Arc::new)
    }

    /// The image GC round lock, if no round (or its removals) runs.
    pub(crate) fn try_image_round(&self) -> Option<Arc<OwnedMutexGuard<()>>> {
        self.image_round.clone().try_lock_owned().ok().map(Arc::new)
    }
}
