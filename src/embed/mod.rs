//! Embedding actlet: start the supervised actor system inside your own agent.
//!
//! [`ActletBuilder`] assembles the system from parts — node identity and
//! settings, a runtime (the CRI client, the mock, or your own
//! [`Runtime`](crate::cri::Runtime)), pod sources (file, HTTP, or your own
//! [`PodSource`]) and observers — and [`ActletBuilder::start`] returns a
//! [`Kubelet`](crate::kubelet::Kubelet) handle to query pods and the actor
//! tree and to stop it gracefully.
//!
//! Runnable programs: `examples/custom_agent.rs` (an in-code source on the
//! mock runtime) and `examples/own_runtime/` (a caller-written runtime whose
//! containers are host processes). For tests, the `testing` feature adds
//! `actlet::testing`: the whole system on the mock under paused time, pod
//! builders and wait-for-phase/restart/event helpers.
//!
//! ```
//! use std::sync::Arc;
//! use actlet::{ActletBuilder, PodSource, SourceError};
//! use actlet::cri::mock::MockRuntime;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! struct OnePod(bool);
//!
//! #[async_trait::async_trait]
//! impl PodSource for OnePod {
//!     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
//!         if std::mem::replace(&mut self.0, true) {
//!             std::future::pending::<()>().await; // nothing changes after the first snapshot
//!         }
//!         let pod = serde_json::from_value(serde_json::json!({
//!             "metadata": {"name": "hello"},
//!             "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
//!         })).map_err(|e| SourceError(e.to_string()))?;
//!         Ok(vec![pod])
//!     }
//! }
//!
//! actix_rt::System::new().block_on(async {
//!     let dir = tempfile::tempdir().unwrap();
//!     let kubelet = ActletBuilder::new("node-a")
//!         .runtime(MockRuntime::new())
//!         .configure(|c| { c.root_dir = dir.path().join("root"); c.pod_logs_dir = dir.path().join("logs"); c.container_logs_dir = None; })
//!         .source("mine", || OnePod(false))
//!         .on_pod_status(|c| println!("{} -> {:?}", c.uid, c.new_phase))
//!         .start()
//!         .unwrap();
//!     while kubelet.phase_of_named("default", "hello").as_deref() != Some("Running") {
//!         tokio::time::sleep(std::time::Duration::from_millis(20)).await;
//!     }
//!     kubelet.shutdown(std::time::Duration::from_secs(5)).await.unwrap();
//! });
//! ```

mod builder;
mod source;

pub use builder::{ActletBuilder, BuildError};
pub use source::{PodSource, SourceError, SourceRunner, default_source_pod};
