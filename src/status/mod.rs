//! The status subsystem (upstream `pkg/kubelet/status` plus the status half of
//! `kubelet_pods.go`): how the runtime's view of a pod becomes its API
//! `PodStatus`, and how the status manager keeps those statuses.
//!
//! Pure logic lives in plain modules:
//! - [`generate`] — [`generate_api_pod_status`], upstream `generateAPIPodStatus`,
//!   built from [`phase`] (`getPhase`), [`conditions`] (`GeneratePod*Condition`)
//!   and [`container_statuses`] (`convertToAPIContainerStatuses` and the probe
//!   manager's `UpdatePodStatus`);
//! - [`merge`] — the status manager's rules (`checkContainerStateTransition`,
//!   `updateLastTransitionTime`, `normalizeStatus`, `isPodStatusByKubeletEqual`);
//! - [`api_merge`] — `mergePodStatus`, for the API syncer to come;
//! - [`store`] — the versioned status cache the actor drives.
//!
//! The only actor is [`manager::StatusManager`]; it publishes every status into
//! a [`StatusCache`] that readers (the HTTP server) use without a round trip.

#![warn(missing_docs)]

pub mod api_merge;
pub mod cache;
pub mod conditions;
pub mod container_statuses;
pub mod generate;
pub mod manager;
pub mod merge;
pub mod phase;
pub mod pod_predicates;
pub mod probe_results;
pub mod reasons;
pub mod resources;
pub mod store;

pub use cache::{StatusCache, VersionedStatus};
pub use generate::{StatusInput, TerminalOverride, generate_api_pod_status};
pub use manager::{StatusManager, StatusSink};
pub use merge::{TransitionError, TransitionRules, merge_status, status_equal_ignoring_time, validate_transition};
pub use phase::Phase;
