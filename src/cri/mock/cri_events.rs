//! The mock's CRI `GetContainerEvents` (what containerd >= 1.7 serves): one
//! event per sandbox and container transition, carrying the pod's sandbox
//! status (its metadata names the pod) and the container's own status.
//!
//! Like a real runtime's stream it ends, with `UNAVAILABLE`, when the runtime
//! goes down or restarts ([`CriEvents::disconnect`]), and a subscriber that
//! falls more than [`CAPACITY`] events behind gets an error and the end of
//! its stream instead of a silent gap: a PLEG relists after either.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};
use tonic::Code;

use super::state::State;
use crate::cri::v1::{self, ContainerEventType};
use crate::cri::{ContainerEventStream, CriError};

/// Events a subscriber may fall behind by before its stream is cut.
pub(crate) const CAPACITY: usize = 16384;

const METHOD: &str = "GetContainerEvents";

/// The subscribers and the "connection" epoch that ends their streams.
#[derive(Debug)]
pub(crate) struct CriEvents {
    tx: broadcast::Sender<Arc<v1::ContainerEventResponse>>,
    epoch: watch::Sender<u64>,
}

impl Default for CriEvents {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(CAPACITY).0,
            epoch: watch::channel(0).0,
        }
    }
}

impl CriEvents {
    /// Whether any stream is open (events are only built for listeners).
    pub(crate) fn listening(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// Publishes the event of `id` (a container's, or a sandbox's own) as of
    /// `st`; call it before the record is removed for `CONTAINER_DELETED_EVENT`.
    pub(crate) fn publish(&self, st: &State, id: &str, kind: ContainerEventType, now_nanos: i64) {
        if !self.listening() {
            return;
        }
        let (sandbox, containers) = match st.containers.get(id) {
            Some(c) => (st.sandboxes.get(&c.sandbox_id), vec![c.to_status(&st.images)]),
            None => (st.sandboxes.get(id), vec![]),
        };
        let Some(sandbox) = sandbox else { return };
        let _ = self.tx.send(Arc::new(v1::ContainerEventResponse {
            container_id: id.to_string(),
            container_event_type: kind as i32,
            created_at: now_nanos,
            pod_sandbox_status: Some(sandbox.to_status()),
            containers_statuses: containers,
        }));
    }

    /// Ends every open stream with `UNAVAILABLE` (the runtime went away).
    pub(crate) fn disconnect(&self) {
        self.epoch.send_modify(|e| *e += 1);
    }

    /// A new stream of the events published from now on.
    pub(crate) fn subscribe(&self) -> ContainerEventStream {
        let rx = self.tx.subscribe();
        let mut epoch = self.epoch.subscribe();
        epoch.borrow_and_update();
        futures::stream::unfold(Some((rx, epoch)), |open| async move {
            let (mut rx, mut epoch) = open?;
            tokio::select! {
                biased;
                _ = epoch.changed() => Some((
                    Err(CriError::new(METHOD, Code::Unavailable, "runtime went away: event stream closed")),
                    None,
                )),
                received = rx.recv() => match received {
                    Ok(event) => Some((Ok(Arc::unwrap_or_clone(event)), Some((rx, epoch)))),
                    Err(RecvError::Lagged(missed)) => Some((
                        Err(CriError::new(
                            METHOD,
                            Code::ResourceExhausted,
                            format!("subscriber fell behind: {missed} events dropped; stream closed"),
                        )),
                        None,
                    )),
                    Err(RecvError::Closed) => None,
                },
            }
        })
        .boxed()
    }
}
