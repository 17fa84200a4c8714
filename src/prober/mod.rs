//! The prober: startup, liveness and readiness probes (upstream
//! `pkg/kubelet/prober`).
//!
//! - [`store::ProbeStore`] — results and worker progress, shared, owned by
//!   the tree assembly (survives every probe actor);
//! - [`logic`] — one worker turn as plain functions (thresholds, holds,
//!   gating, initial values);
//! - [`handlers`] — exec (CRI `ExecSync`), httpGet, tcpSocket, grpc;
//! - [`worker::ProbeWorker`] — one supervised actor per (pod, container, kind);
//! - [`manager::ProberManager`] — starts a worker when a container with a
//!   probe runs, stops it when the pod or the probe goes;
//! - [`metrics`] — `prober_probe_total` and `prober_probe_duration_seconds`.
//!
//! Results feed the sync loop ([`ProbeResult`](crate::messages::probe::ProbeResult)):
//! a readiness change or a startup result republishes the pod status, a
//! liveness or startup failure makes the next sync kill and restart the
//! container (`computePodActions`).

pub mod handlers;
pub mod logic;
pub mod manager;
pub mod metrics;
pub mod store;
pub mod worker;

use std::time::Duration;

use crate::actors::supervisor::{AnyChildSpec, ChildSpec, Strategy, SupervisorSpec};

/// Name of the supervisor of the probe workers (a child of the root).
pub const WORKERS_SUPERVISOR: &str = "probe-workers";

/// The two children the tree assembly adds, in start order: the
/// `probe-workers` supervisor (one-for-one; workers are restarted on abnormal
/// exit) and the `prober` manager.
pub fn tree_children(deps: worker::ProberDeps) -> (AnyChildSpec, AnyChildSpec) {
    let workers = SupervisorSpec::new(WORKERS_SUPERVISOR)
        .strategy(Strategy::OneForOne)
        .intensity(1000, Duration::from_secs(60))
        .into_child_spec();
    let workers_ref = workers.child_ref();
    let prober = ChildSpec::with_context("prober", move |cx| {
        let parent = cx.path().rsplit_once('/').map_or("", |(p, _)| p);
        let path = format!("{parent}/{WORKERS_SUPERVISOR}");
        manager::ProberManager::new(deps.clone(), workers_ref.clone(), path, cx.tree().clone())
    });
    (workers.into(), prober.into())
}
