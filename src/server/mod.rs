//! The kubelet's HTTP endpoints (actix-web): the read-only server
//! (`--read-only-port`: `/pods`, `/healthz`) and the healthz server
//! (`--healthz-port` on `--healthz-bind-address`: `/healthz`).
//!
//! Handlers read shared, read-mostly state (pod manager, status cache,
//! heartbeats) and never message an actor, so a busy actor cannot stall
//! a health check.

pub mod actor;
pub mod routes;

pub use actor::{HttpServer, ServerAddrs};
pub use routes::{HealthState, ServerState};
