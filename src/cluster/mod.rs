//! Cluster mode: everything that talks to the API server.
//!
//! ```text
//! api-source     list+watch pods on this node ──SourceSnapshot──▶ pod-config
//!                (mirror pods go to MirrorPods, never run)
//! node           register the Node, status every 10 s
//! node-lease     kube-node-lease/<node>, renewed every 10 s
//! status-syncer  pods/status patches, 10 s resync, deletion finalization
//! mirror-pods    create/recreate/delete the mirror pods of static pods
//! events         core/v1 Events, aggregated and rate limited
//! ```
//!
//! Every actor here is a supervised child of the root; an API server that is
//! down makes them retry with backoff, never fail the tree.

pub mod api_source;
pub mod client;
pub mod client_metrics;
pub mod coalesce;
pub mod mirror_index;
pub mod rate_limit;
pub mod rotating_client;
pub mod strategic_merge;
pub mod watch_backoff;

// The actors' internals: public for actlet's own wiring and tests, not part
// of the documented embedding surface.
#[doc(hidden)]
pub mod api_util;
#[doc(hidden)]
pub mod events;
#[doc(hidden)]
pub mod lease;
#[doc(hidden)]
pub mod mirror_pods;
#[doc(hidden)]
pub mod node;
#[doc(hidden)]
pub mod status_sync;

pub use api_source::ApiSource;
pub use client::{
    BULK_READ_TIMEOUT, ClientError, client_from_config, client_from_kubeconfig, heartbeat_client_from_config,
    heartbeat_client_from_kubeconfig,
};
pub use client_metrics::{RequestMetricsLayer, RestClientMetrics, rest_client_metrics};
pub use mirror_index::{MirrorPods, is_mirror_pod};
pub use node::{NodeHandle, NodeObject, NodeView};
pub use rate_limit::Qps;
pub use watch_backoff::{ApiReachability, WatchBackoffPolicy};

#[doc(hidden)]
pub use events::EventRecorderActor;
#[doc(hidden)]
pub use lease::{LeaseActor, LeaseDeps};
#[doc(hidden)]
pub use mirror_pods::{MirrorPodDeps, MirrorPodManager, SyncMirrorPods};
#[doc(hidden)]
pub use node::{NodeActor, NodeDeps};
#[doc(hidden)]
pub use status_sync::{StatusSyncDeps, StatusSyncSink, StatusSyncer};
