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
pub mod api_util;
pub mod client;
pub mod events;
pub mod lease;
pub mod mirror_index;
pub mod mirror_pods;
pub mod node;
pub mod rate_limit;
pub mod status_sync;

pub use api_source::ApiSource;
pub use client::{ClientError, client_from_config, client_from_kubeconfig};
pub use events::EventRecorderActor;
pub use lease::{LeaseActor, LeaseDeps};
pub use mirror_index::{MirrorPods, is_mirror_pod};
pub use mirror_pods::{MirrorPodDeps, MirrorPodManager, SyncMirrorPods};
pub use node::{NodeActor, NodeDeps, NodeHandle};
pub use rate_limit::Qps;
pub use status_sync::{StatusSyncDeps, StatusSyncSink, StatusSyncer};
