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
//!   probe runs, stops it when the pod or the probe goes.
//!
//! Results feed the sync loop ([`ProbeResult`](crate::messages::probe::ProbeResult)):
//! a readiness change or a startup result republishes the pod status, a
//! liveness or startup failure makes the next sync kill and restart the
//! container (`computePodActions`).

pub mod handlers;
pub mod logic;
pub mod store;
