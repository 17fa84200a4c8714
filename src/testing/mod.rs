//! Test kit: run the whole actlet system on the mock CRI under virtual time,
//! feed it pods, and assert on what happens — from your own crate's tests.
//!
//! - [`run_paused`] / [`TestSystem`]: an actix `System` on a current-thread
//!   tokio runtime with **paused** time (the clock jumps ahead whenever
//!   everything is idle: an hour-long `sleep` takes microseconds).
//! - [`TestNode`]: every actor of [`ActletBuilder`](crate::ActletBuilder) on
//!   a [`MockRuntime`](crate::cri::mock::MockRuntime), with a pod source you
//!   drive with [`TestNode::set_pods`], temporary directories, and recorders
//!   of PLEG events ([`EventLog`]) and status changes ([`StatusLog`]).
//! - [`PodBuilder`]: pods without YAML.
//! - [`wait_for_phase`], [`wait_for_restart_count`], [`wait_for_event`],
//!   [`wait_until`], [`wait_for`]: wait in (virtual) time, or fail with a
//!   [`WaitError`] that names the pod and what was seen last.
//! - [`HookedRuntime`]: wrap a runtime to run a hook (e.g. a panic) before calls.
//!
//! The mock itself (scripts, faults, outside events, observation) is
//! [`crate::cri::mock`].
//!
//! The module needs the `testing` feature (it turns on tokio's `test-util`
//! for paused time); in another crate:
//!
//! ```toml
//! [dev-dependencies]
//! actlet = { version = "0.1", features = ["testing"] }
//! ```
//!
//! ```
//! use std::time::Duration;
//! use actlet::cri::mock::Fault;
//! use actlet::testing::{PodBuilder, TestNode, run_paused};
//!
//! run_paused(async {
//!     let node = TestNode::start();
//!     // the first two RunPodSandbox calls fail; the pod worker retries
//!     node.mock().inject("RunPodSandbox", Fault::error(tonic::Code::Unknown, "boom").times(2));
//!     node.set_pods(vec![
//!         PodBuilder::new("web").container("c", "busybox:1.36", ["sh", "-c", "sleep 3600"]).build(),
//!     ]);
//!     node.wait_for_phase("default", "web", "Running", Duration::from_secs(120))
//!         .await
//!         .unwrap_or_else(|e| panic!("{e}"));
//!     assert_eq!(node.mock().call_count("RunPodSandbox"), 3);
//! });
//! ```
//!
//! Under paused time, every wait is bounded by virtual time; a test that
//! waits "60 s" for a pod finishes as soon as the system is idle.

#![warn(missing_docs)]

mod hook;
mod node;
mod pod;
mod record;
mod system;
mod wait;

#[doc(hidden)]
pub mod toy;

pub use hook::{Call, HookedRuntime};
pub use node::{TestNode, TestNodeBuilder};
pub use pod::PodBuilder;
pub use record::{EventLog, RecordedEvent, StatusChange, StatusLog};
pub use system::{TestSystem, run_paused};
pub use wait::{
    POLL_INTERVAL, Probe, WaitError, describe_status, uid_of, wait_for, wait_for_event, wait_for_phase,
    wait_for_restart_count, wait_until,
};
