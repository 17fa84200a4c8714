//! # actlet — a Kubernetes node agent built as a supervised actor system
//!
//! actlet is a kubelet written in Rust. Every long-lived part of it — pod
//! workers, managers, the PLEG relister — is an [actix](https://docs.rs/actix)
//! actor living under a [supervision tree](actors::supervisor); actors talk
//! through the typed messages in [`messages`], and the container runtime is
//! reached through the [`cri::Runtime`] interface (a tonic CRI client for
//! containerd, or the scriptable [mock](cri::mock)).
//!
//! Start with:
//! - [`cri`] — the CRI `runtime.v1` protocol, the runtime interface, the
//!   client and the mock runtime;
//! - [`actors::supervisor`] — OTP-style supervision for actix actors;
//! - [`messages`] — the contracts between actors.

pub mod actors;
pub mod admission;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod cri;
pub mod embed;
pub mod events;
pub mod kubelet;
pub mod kuberuntime;
pub mod messages;
pub mod pleg;
pub mod pod_manager;
pub mod pod_workers;
pub mod runtime_health;
pub mod server;
pub mod status;
pub mod sync_loop;
#[cfg(feature = "testing")]
pub mod testing;

pub use embed::{ActletBuilder, BuildError, PodSource, SourceError};
pub use kubelet::{Kubelet, KubeletConfig};
