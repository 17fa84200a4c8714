//! Graceful node shutdown (upstream `pkg/kubelet/nodeshutdown`): when the
//! node is about to shut down, pods are terminated by priority group within
//! `shutdownGracePeriod` (`shutdownGracePeriodCriticalPods` kept for the
//! critical ones, or `shutdownGracePeriodByPodPriority`), each `Failed` with
//! reason `Terminated`, the node reports NotReady ("node is shutting down")
//! and admits no new pod (`NodeShutdown`).
//!
//! The trigger is systemd-logind's `PrepareForShutdown` signal over D-Bus
//! ([`logind`]: the daemon holds a delay inhibitor lock on shutdown, raising
//! logind's `InhibitDelayMaxSec` when it is shorter than the grace period, and
//! releases it once every group is done), SIGUSR1 to the daemon where there is
//! no logind (as upstream's kubelet also accepts), or
//! [`Kubelet::node_shutdown`](crate::Kubelet::node_shutdown) for embedders.
//! Each shutdown is recorded in `<root-dir>/graceful_node_shutdown_state`
//! and `kubelet_graceful_shutdown_{start,end}_time_seconds`.
//!
//! - [`groups`]: budgets per priority group (pure);
//! - [`ShutdownHandle`]: the owned state (shutting down or not) and admission;
//! - [`state`]: the state file (`graceful_node_shutdown_state`) behind the
//!   start/end time gauges;
//! - [`logind`]: the D-Bus client of systemd-logind and the lock's owner;
//! - [`actor`]: the `node-shutdown-manager` actor (its logind watch in
//!   `actor_logind.rs`).

pub mod actor;
mod actor_logind;
pub mod groups;
pub mod logind;
pub mod state;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::Pod;

pub use actor::{NodeShutdownEvent, NodeShutdownManager, ShutdownDeps};
pub use groups::PriorityPeriod;

use crate::admission::Rejection;

/// `kubelet_graceful_shutdown_start_time_seconds` and `…_end_time_seconds`
/// (Unix seconds; 0: none / not done).
#[derive(Clone, Debug, Default)]
pub struct ShutdownGauges {
    /// When the last shutdown started.
    pub start: prometheus_client::metrics::gauge::Gauge<f64, std::sync::atomic::AtomicU64>,
    /// When it was done.
    pub end: prometheus_client::metrics::gauge::Gauge<f64, std::sync::atomic::AtomicU64>,
}

impl ShutdownGauges {
    /// Shows `state`'s times.
    ///
    /// ```
    /// use actlet::nodeshutdown::{ShutdownGauges, state::ShutdownState};
    /// let g = ShutdownGauges::default();
    /// let started = ShutdownState::started("2026-11-28T10:00:00Z".parse().unwrap());
    /// g.show(&started);
    /// assert_eq!((g.start.get(), g.end.get()), (1_795_860_000.0, 0.0)); // not done yet
    /// g.show(&started.ended("2026-11-28T10:00:20Z".parse().unwrap()));
    /// assert_eq!(g.end.get(), 1_795_860_020.0);
    /// ```
    pub fn show(&self, state: &state::ShutdownState) {
        let (start, end) = state.seconds();
        self.start.set(start);
        self.end.set(end);
    }
}

/// Status reason of pods terminated for the shutdown.
pub const REASON: &str = "Terminated";
/// Status message of pods terminated for the shutdown.
pub const MESSAGE: &str = "Pod was terminated in response to imminent node shutdown.";
/// Admission rejection reason while shutting down.
pub const NOT_ADMITTED_REASON: &str = "NodeShutdown";
/// Admission rejection message while shutting down.
pub const NOT_ADMITTED_MESSAGE: &str = "Pod was rejected as the node is shutting down.";
/// The Ready condition's cause while shutting down.
pub const SHUTTING_DOWN: &str = "node is shutting down";

/// Whether the node is shutting down: owned by nobody that can crash, read
/// by the node status, admission and the manager after a restart.
#[derive(Clone, Debug, Default)]
pub struct ShutdownHandle(Arc<AtomicBool>);

impl ShutdownHandle {
    /// Whether a shutdown is in progress.
    pub fn shutting_down(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Marks the shutdown started (`true`) or cancelled (`false`).
    pub fn set(&self, shutting_down: bool) {
        self.0.store(shutting_down, Ordering::Release);
    }

    /// Upstream `ShutdownStatus`: the Ready condition's cause, if any.
    pub fn status(&self) -> Result<(), String> {
        if self.shutting_down() {
            Err(SHUTTING_DOWN.to_string())
        } else {
            Ok(())
        }
    }

    /// Upstream shutdown `Admit`: no pod while shutting down.
    ///
    /// ```
    /// let h = actlet::nodeshutdown::ShutdownHandle::default();
    /// let pod = actlet::testing::PodBuilder::new("p").build();
    /// assert!(h.admit(&pod).is_ok());
    /// h.set(true);
    /// let r = h.admit(&pod).unwrap_err();
    /// assert_eq!((r.reason.as_str(), r.event_message()), ("NodeShutdown", "Pod was rejected as the node is shutting down."));
    /// ```
    pub fn admit(&self, _pod: &Pod) -> Result<(), Rejection> {
        if self.shutting_down() {
            return Err(Rejection::new(NOT_ADMITTED_REASON, NOT_ADMITTED_MESSAGE));
        }
        Ok(())
    }
}

/// The manager's settings (`KubeletConfig::shutdown`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownConfig {
    /// The groups, lowest priority first (empty: graceful shutdown off).
    pub periods: Vec<PriorityPeriod>,
    /// The systemd-logind to take the inhibitor lock from and watch for
    /// `PrepareForShutdown` (`None`: only the explicit trigger). The daemon
    /// sets the system bus's; embedders and tests opt in.
    pub logind: Option<logind::LogindTarget>,
}

impl ShutdownConfig {
    /// From `shutdownGracePeriod`/`shutdownGracePeriodCriticalPods`, or
    /// `shutdownGracePeriodByPodPriority` when that is set (upstream).
    pub fn new(total: std::time::Duration, critical: std::time::Duration, by_priority: Vec<PriorityPeriod>) -> Self {
        let periods = if by_priority.is_empty() {
            groups::migrate_config(total, critical)
        } else {
            by_priority
        };
        Self {
            periods: groups::sorted(periods),
            logind: None,
        }
    }

    /// Whether graceful shutdown is on.
    pub fn enabled(&self) -> bool {
        !self.periods.is_empty()
    }
}
