//! # actlet — a Kubernetes node agent built as a supervised actor system
//!
//! actlet is a kubelet written in Rust. Every long-lived part of it — pod
//! workers, managers, the PLEG relister — is an [actix](https://docs.rs/actix)
//! actor living under a [supervision tree](actors::supervisor); actors talk
//! through the typed messages in [`messages`], and the container runtime is
//! reached through the [`cri::Runtime`] interface (a tonic CRI client for
//! containerd, or the scriptable [mock](cri::mock)).
//!
//! # The public surface
//!
//! What embedders and test authors use (documented, each item with a
//! runnable example):
//! - [`ActletBuilder`] / [`embed`] — assemble and start the system from a
//!   runtime, pod sources and observers; [`Kubelet`] — the handle to query
//!   and stop it; [`KubeletConfig`] / [`kubelet`] — settings with upstream
//!   names; [`clock::WallClock`] — the one wall clock every timestamp is
//!   read against (swap it for a virtual one in tests);
//! - [`PodSource`] — your own pod source; [`cri::Runtime`] — your own
//!   runtime; [`cri::CriClient`](cri::client::CriClient) — containerd;
//!   [`cri::mock`] — the scriptable mock runtime;
//! - `testing` (feature `testing`) — virtual-time harness, pod builders,
//!   assertion helpers;
//! - [`messages`] — what observers receive and actors exchange;
//!   [`actors::supervisor`] — OTP-style supervision for your own actors;
//! - [`cluster`] — the API client (kubeconfig, QPS limit), the API pod
//!   source, mirror pods and the node handle; [`events`] — recording Events;
//! - the shared views on a running system: [`PodManager`], [`PodCache`],
//!   [`StatusCache`].
//!
//! The other modules are actlet's internals (sync loop, pod workers, the
//! runtime manager, status generation, sources, servers): public so the
//! `actlet` binary and the project's tests can reach them, hidden from these
//! docs, and free to change.

pub mod actors;
#[doc(hidden)]
pub mod admission;
pub mod allocation;
/// Client and serving certificates: TLS bootstrap, CSR, store, rotation.
pub mod certificate;
#[doc(hidden)]
pub mod cli;
pub mod clock;
pub mod cluster;
#[doc(hidden)]
pub mod cm;
#[doc(hidden)]
pub mod config;
pub mod container_restart;
pub mod cri;
pub mod embed;
pub mod events;
pub mod eviction;
#[doc(hidden)]
pub mod gc;
pub mod kubelet;
#[doc(hidden)]
pub mod kubelet_config_file;
#[doc(hidden)]
pub mod kuberuntime;
pub mod logrotate;
pub mod messages;
pub mod nodeshutdown;
#[doc(hidden)]
pub mod pleg;
#[doc(hidden)]
pub mod pod_fields;
#[doc(hidden)]
pub mod pod_manager;
#[doc(hidden)]
pub mod pod_workers;
#[doc(hidden)]
pub mod prober;
#[doc(hidden)]
pub mod process;
#[doc(hidden)]
pub mod quantity;
pub mod runtime_class;
#[doc(hidden)]
pub mod runtime_health;
#[doc(hidden)]
pub mod scheduling_predicates;
#[doc(hidden)]
pub mod server;
pub mod stats;
#[doc(hidden)]
pub mod status;
#[doc(hidden)]
pub mod sync_loop;
pub mod sysctl;
#[cfg(feature = "testing")]
pub mod testing;
#[doc(hidden)]
pub mod volumes;

pub use embed::{ActletBuilder, BuildError, PodSource, SourceError};
pub use kubelet::{Kubelet, KubeletConfig};
pub use pleg::PodCache;
pub use pod_manager::{DesiredPod, PodManager};
pub use status::{StatusCache, VersionedStatus};
