//! Container log rotation (upstream `pkg/kubelet/logs`): the
//! `container-log-manager` actor ([`manager`]) and the file operations it
//! runs ([`rotate`]).

pub mod manager;
pub mod rotate;

pub use manager::{ContainerLogManager, LogManagerDeps, LogRotatePolicy, LogRotationState};
