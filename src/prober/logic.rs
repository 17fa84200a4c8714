//! The decisions of one probe worker turn (upstream `worker.doProbe`), as
//! plain functions over a [`WorkerProgress`].
//!
//! # Rules (upstream v1.36, legacy probe lifecycle)
//! - No status for the pod yet, or no container id: wait.
//! - Pod `Succeeded`/`Failed`: the worker stops.
//! - A new container instance: the old instance's result is dropped, the new
//!   one starts at the initial value (readiness `Failure`, liveness
//!   `Success`, startup `Unknown`) and probing resumes.
//! - On hold (after a liveness failure, or once the startup probe reached a
//!   threshold): wait for a new instance.
//! - Not running: the result becomes `Failure`; the worker stops if the
//!   container terminated and will not be restarted.
//! - Pod being deleted: liveness and startup report `Success` and stop.
//! - Within `initialDelaySeconds` of the container's start: wait.
//! - Startup probes run until the container has started; the others only
//!   after it has.
//! - A result changes the stored one only after `failureThreshold` (or
//!   `successThreshold`) equal results in a row; then a liveness failure or
//!   any startup result puts the worker on hold.

use k8s_openapi::api::core::v1::Probe;

use super::store::WorkerProgress;
use crate::messages::probe::{ProbeKind, ProbeOutcome};

/// The value a new container instance starts with (upstream `initialValue`).
///
/// ```
/// use actlet::messages::probe::{ProbeKind, ProbeOutcome};
/// use actlet::prober::logic::initial_value;
/// assert_eq!(initial_value(ProbeKind::Readiness), ProbeOutcome::Failure);
/// assert_eq!(initial_value(ProbeKind::Liveness), ProbeOutcome::Success);
/// ```
pub fn initial_value(kind: ProbeKind) -> ProbeOutcome {
    match kind {
        ProbeKind::Readiness => ProbeOutcome::Failure,
        ProbeKind::Liveness => ProbeOutcome::Success,
        ProbeKind::Startup => ProbeOutcome::Unknown,
    }
}

/// Upstream defaults and values of a probe spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeTiming {
    /// `initialDelaySeconds` (0).
    pub initial_delay: i64,
    /// `periodSeconds` (10; below 1 → 1).
    pub period: i64,
    /// `timeoutSeconds` (1; below 1 → 1).
    pub timeout: i64,
    /// `successThreshold` (1).
    pub success_threshold: u32,
    /// `failureThreshold` (3).
    pub failure_threshold: u32,
}

impl ProbeTiming {
    /// The timing of `probe`, defaults filled in as the API server does.
    ///
    /// ```
    /// use actlet::prober::logic::ProbeTiming;
    /// let t = ProbeTiming::of(&Default::default());
    /// assert_eq!((t.initial_delay, t.period, t.timeout, t.success_threshold, t.failure_threshold), (0, 10, 1, 1, 3));
    /// ```
    pub fn of(probe: &Probe) -> Self {
        let positive = |v: Option<i32>, default: i64| v.map_or(default, |v| i64::from(v).max(1));
        Self {
            initial_delay: probe.initial_delay_seconds.map_or(0, |v| i64::from(v).max(0)),
            period: positive(probe.period_seconds, 10),
            timeout: positive(probe.timeout_seconds, 1),
            success_threshold: positive(probe.success_threshold, 1) as u32,
            failure_threshold: positive(probe.failure_threshold, 3) as u32,
        }
    }
}

/// What the worker sees of its container this turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The pod reached `Succeeded` or `Failed`.
    pub pod_terminal: bool,
    /// The pod is being deleted.
    pub pod_deleting: bool,
    /// The container's bare id, if it has one.
    pub container_id: Option<String>,
    /// Seconds since the container started, when it runs.
    pub running_for: Option<i64>,
    /// The container terminated.
    pub terminated: bool,
    /// A terminated container will not be restarted (its exit code against
    /// its own or the pod's restart policy and rules).
    pub never_restarted: bool,
    /// The container has started (its startup probe passed, or it has none).
    pub started: bool,
}

/// A change to the stored results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreOp {
    /// Drop the result of an old container instance.
    Remove(String),
    /// Set the result of a container instance.
    Set(String, ProbeOutcome),
    /// Set the initial value unless a result is known already (a result
    /// seeded from the previous status after a kubelet restart wins).
    Init(String, ProbeOutcome),
}

/// The verdict of a turn before probing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Nothing to probe now.
    Wait,
    /// The worker is done for good.
    Stop,
    /// Run the probe against this container id.
    Probe(String),
}

/// Upstream `doProbe` up to running the probe: updates `progress`, returns
/// the store changes and the verdict.
pub fn before_probe(
    kind: ProbeKind,
    timing: &ProbeTiming,
    progress: &mut WorkerProgress,
    seen: &Observed,
) -> (Turn, Vec<StoreOp>) {
    let mut ops = Vec::new();
    if seen.pod_terminal {
        return (Turn::Stop, ops);
    }
    let Some(id) = seen.container_id.clone().filter(|id| !id.is_empty()) else {
        return (Turn::Wait, ops);
    };
    if progress.container_id.as_deref() != Some(id.as_str()) {
        if let Some(old) = progress.container_id.take() {
            ops.push(StoreOp::Remove(old));
        }
        progress.container_id = Some(id.clone());
        ops.push(StoreOp::Init(id.clone(), initial_value(kind)));
        progress.on_hold = false;
    }
    if progress.on_hold {
        return (Turn::Wait, ops);
    }
    let Some(running_for) = seen.running_for else {
        ops.push(StoreOp::Set(id, ProbeOutcome::Failure));
        let stop = seen.terminated && seen.never_restarted;
        return (if stop { Turn::Stop } else { Turn::Wait }, ops);
    };
    if seen.pod_deleting && matches!(kind, ProbeKind::Liveness | ProbeKind::Startup) {
        ops.push(StoreOp::Set(id, ProbeOutcome::Success));
        return (Turn::Stop, ops);
    }
    if running_for < timing.initial_delay {
        return (Turn::Wait, ops);
    }
    if seen.started == (kind == ProbeKind::Startup) {
        // A started container needs no startup probe; an unstarted one gets
        // no other probe.
        return (Turn::Wait, ops);
    }
    (Turn::Probe(id), ops)
}

/// Upstream `doProbe` after the probe returned `result` for container `id`:
/// the stored result to set, if the threshold is reached.
pub fn after_probe(
    kind: ProbeKind,
    timing: &ProbeTiming,
    progress: &mut WorkerProgress,
    id: &str,
    result: ProbeOutcome,
) -> Option<StoreOp> {
    if progress.container_id.as_deref() != Some(id) {
        return None; // the container changed while the probe ran
    }
    if progress.last_result == Some(result) {
        progress.result_run = progress.result_run.saturating_add(1);
    } else {
        progress.last_result = Some(result);
        progress.result_run = 1;
    }
    let below = match result {
        ProbeOutcome::Failure => progress.result_run < timing.failure_threshold,
        ProbeOutcome::Success => progress.result_run < timing.success_threshold,
        ProbeOutcome::Unknown => false,
    };
    if below {
        return None;
    }
    if (kind == ProbeKind::Liveness && result == ProbeOutcome::Failure) || kind == ProbeKind::Startup {
        progress.on_hold = true;
        progress.result_run = 0;
    }
    Some(StoreOp::Set(id.to_string(), result))
}

#[cfg(test)]
#[path = "logic_tests.rs"]
mod tests;
