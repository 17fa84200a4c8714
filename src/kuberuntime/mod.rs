//! The runtime manager (upstream `kuberuntime`): how a pod spec becomes CRI
//! calls, and how the runtime's state reads back as a pod status.
//!
//! Start with [`RuntimeManager`]: [`sync_pod`](RuntimeManager::sync_pod),
//! [`kill_pod`](RuntimeManager::kill_pod) and
//! [`get_pod_status`](RuntimeManager::get_pod_status).
//!
//! Pure decisions live in plain modules, each tested on its own:
//! - [`actions`]: `computePodActions` — what a sync must do;
//! - [`sandbox_config`], [`container_config`], [`dns`], [`env`](mod@env),
//!   [`expansion`], [`security_context`], [`qos`]: pod and
//!   container → CRI configs;
//! - [`labels`], [`hash`]: what the kubelet writes on CRI objects and reads back;
//! - [`convert`], [`pod_status`]: CRI answers → the runtime's view of a pod;
//! - [`backoff`]: restart and image pull backoff;
//! - [`sync_result`]: what a sync did, step by step.
//!
//! The async executor is split by verb: [`manager`] (the struct), [`sync_pod`],
//! [`start`], [`kill`], [`hooks`], [`image`].

#![warn(missing_docs)]

pub mod actions;
pub mod backoff;
pub mod config;
pub mod container_config;
pub mod container_files;
pub mod convert;
pub mod dns;
pub mod env;
pub mod ephemeral;
pub mod etc_hosts;
pub mod expansion;
pub mod hash;
pub mod hooks;
pub mod image;
pub mod kill;
pub mod labels;
pub mod manager;
pub mod pod_status;
pub mod qos;
pub mod resize;
pub mod resize_apply;
pub mod restart_rules;
pub mod sandbox_config;
pub mod security_context;
pub mod sidecars;
pub mod start;
pub mod sync_pod;
pub mod sync_result;
pub mod termination_message;

pub use actions::{PodActions, ProbeView, compute_pod_actions};
pub use config::RuntimeManagerConfig;
pub use manager::RuntimeManager;
pub use sync_pod::SyncPodOptions;
pub use sync_result::{PodSyncResult, SyncAction, SyncError, SyncErrorReason, SyncResult};

#[cfg(test)]
pub(crate) mod test_support;
