//! The kubelet's HTTP endpoints (actix-web): the authenticated API server
//! (`--port`, 10250, HTTPS: [`secure`], [`auth`], [`tls`]), the read-only
//! server (`--read-only-port`: `/pods`, `/healthz`, `/spec/`) and the healthz
//! server (`--healthz-port` on `--healthz-bind-address`: `/healthz`).
//!
//! Handlers read shared, read-mostly state (pod manager, status cache,
//! heartbeats, the runtime) and never message an actor, so a busy actor
//! cannot stall a health check.

pub mod actor;
pub mod api;
pub mod auth;
pub mod logs;
pub mod metrics;
pub mod node_logs;
pub mod pod_metrics;
pub mod pod_table_metrics;
pub mod routes;
pub mod secure;
pub mod stats;
pub mod streaming;
pub mod tls;

pub use actor::{HttpServer, ServerAddrs};
pub use api::ApiState;
pub use routes::{HealthState, ReadOnlyStats, ServerState};
