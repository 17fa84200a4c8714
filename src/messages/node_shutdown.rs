//! The node-shutdown protocol: who tells the `node-shutdown-manager` that the
//! node is going down.

use actix::prelude::*;

/// The node is about to shut down (`true`) or the shutdown was cancelled.
///
/// Sent by systemd-logind's `PrepareForShutdown` watch, the SIGUSR1 handler
/// of the daemon, or an embedder's `Kubelet::node_shutdown`; received by the
/// `node-shutdown-manager` (`src/nodeshutdown/actor.rs`), which terminates
/// the pods by priority group and answers nothing (the outcome is in its
/// `ShutdownHandle`). Sending `true` twice starts one shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct NodeShutdownEvent(pub bool);
