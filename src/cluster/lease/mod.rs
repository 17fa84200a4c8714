//! The node Lease `kube-node-lease/<node>`: the kubelet's heartbeat.
//!
//! ```text
//! LeaseActor  every 10 s: PUT the last Lease seen with a new renewTime
//!             fails → GET (404 → POST a new one), retried 200 ms … 7 s, then PUT again
//!             409 Conflict → GET the fresh Lease and PUT again (≤ 5 tries)
//! ```
//!
//! The owner reference to the Node is set as soon as the
//! [`NodeHandle`](crate::cluster::node::NodeHandle) knows its UID, also on a
//! Lease created before the Node was.

pub mod actor;
pub mod renew;

pub use actor::{LeaseActor, LeaseDeps};

/// A Lease API call failed; names the call and the lease.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The API server refused or could not be reached.
    #[error("{call} lease kube-node-lease/{node}: {source}")]
    Api {
        /// e.g. `PUT leases`.
        call: &'static str,
        /// The node (lease) name.
        node: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// Every renewal attempt failed.
    #[error("failed {0} attempts to update lease kube-node-lease/{1}")]
    RetriesExhausted(usize, String),
}
