//! [`StatusSyncSink`]: the status manager's [`StatusSink`] that hands changes
//! to the [`StatusSyncer`](super::StatusSyncer) without blocking.

use crate::actors::supervisor::SupervisedRecipient;
use crate::messages::PodUid;
use crate::status::{StatusSink, VersionedStatus};

use super::actor::StatusSyncEvent;

/// Forwards "this pod's status changed" to the syncer's mailbox. Never
/// blocks: when the mailbox is full the note is dropped, and the syncer's
/// periodic resync finds the pod by its version.
#[derive(Clone, Debug)]
pub struct StatusSyncSink {
    syncer: SupervisedRecipient<StatusSyncEvent>,
}

impl StatusSyncSink {
    /// A sink sending to `syncer` (e.g. `child_ref.recipient()` of the syncer).
    pub fn new(syncer: impl Into<SupervisedRecipient<StatusSyncEvent>>) -> Self {
        Self { syncer: syncer.into() }
    }
}

impl StatusSink for StatusSyncSink {
    fn status_changed(&mut self, uid: &PodUid, status: &VersionedStatus) {
        if let Err(e) = self.syncer.do_send(StatusSyncEvent::Changed(uid.clone())) {
            tracing::debug!(%uid, version = status.version, error = %e, "status syncer busy: left to the resync");
        }
    }

    fn forgotten(&mut self, uid: &PodUid) {
        if let Err(e) = self.syncer.do_send(StatusSyncEvent::Forgotten(uid.clone())) {
            tracing::debug!(%uid, error = %e, "status syncer busy: forgotten pod left to the resync");
        }
    }
}
