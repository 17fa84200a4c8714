//! The sync loop's part of in-place resize (upstream
//! `handlePodResourcesResize` and `retryPendingResizes`): a changed spec of
//! an admitted pod is allocated when it fits, else left pending with
//! [`crate::allocation`]'s verdict; pending resizes are retried on
//! housekeeping and when pods go.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::SyncLoop;
use crate::allocation::{INFEASIBLE, PendingResize, resize_event_message, resize_verdict, resources_differ};
use crate::messages::event::EventType;
use crate::messages::pod_work::{SyncKind, UpdatePod};
use crate::pod_manager::pod_uid;

impl SyncLoop {
    /// Allocates `pod`'s resources if they changed and fit; whether a
    /// resize was allocated now.
    pub(super) fn resize(&mut self, pod: &Arc<Pod>) -> bool {
        let Some((node, _)) = &self.admission else {
            return false;
        };
        let uid = pod_uid(pod);
        let mut book = self.state.lock();
        let Some(old) = book.admitted.get(&uid).cloned() else {
            return false;
        };
        if Arc::ptr_eq(&old, pod) || !resources_differ(&old, pod) {
            drop(book);
            self.allocations.clear(&uid);
            return false;
        }
        let mut others = self.usage.clone();
        others.remove(&old);
        match resize_verdict(pod, &others, node) {
            Ok(()) => {
                others.add(pod);
                self.usage = others;
                book.admitted.insert(uid.clone(), pod.clone());
                drop(book);
                self.allocations.clear(&uid);
                tracing::info!(pod = %crate::pod_manager::format_pod(pod), "pod resize allocated");
                let msg = resize_event_message("Pod resize started", pod, None);
                self.events
                    .pod_event(pod, None, EventType::Normal, "ResizeStarted", msg);
                true
            }
            Err((reason, message)) => {
                drop(book);
                let pending = PendingResize {
                    allocated: old,
                    reason: reason.clone(),
                    message: message.clone(),
                };
                if self.allocations.set(uid, pending) {
                    tracing::info!(pod = %crate::pod_manager::format_pod(pod), %reason, %message, "pod resize pending");
                    let kind = if reason == INFEASIBLE {
                        "ResizeInfeasible"
                    } else {
                        "ResizeDeferred"
                    };
                    let msg = resize_event_message(&format!("Pod resize {reason}"), pod, Some(&message));
                    self.events.pod_event(pod, None, EventType::Warning, kind, msg);
                }
                false
            }
        }
    }

    /// Tries every pending resize again; an allocated one is synced at once.
    pub(super) fn retry_pending_resizes(&mut self) {
        for uid in self.allocations.pending_uids() {
            match self.pods.get(&uid) {
                Some(d) => {
                    if self.resize(&d.pod) {
                        self.send(UpdatePod::sync(SyncKind::Update, d.pod));
                    }
                }
                None => {
                    self.allocations.clear(&uid);
                }
            }
        }
    }
}
