//! Assembling the kubelet: the supervision tree of actors that runs pods.
//!
//! [`KubeletConfig`] says what to run (node identity, sources, timing,
//! servers); [`start`] builds the tree inside the current actix `System`
//! and returns a [`Kubelet`] handle to query and stop it.

mod api_server;
mod children;
mod cluster;
mod config;
mod config_flags;
mod extensions;
mod handle;
mod node_facts;
mod pod_core;
mod servers;
mod shared;
mod start;
mod tables;
mod tree;

pub use config::{ConfigError, KubeletConfig, WallClock};
pub use extensions::{Extensions, SourceSpecFactory};
pub use handle::{Kubelet, node_shutdown};
pub use node_facts::{MachineInfo, NodeFacts, detect_node_ip};
pub use start::{StartError, go_arch, start, start_with};
pub use tables::PodTableSizes;
