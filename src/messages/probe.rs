//! ProbeWorker → SyncLoop / StatusManager: probe results.

use actix::Message;

use super::PodUid;

/// The three probe kinds.
///
/// ```
/// use actlet::messages::probe::ProbeKind;
/// let restarts_container = |k| k == ProbeKind::Liveness;
/// assert!(restarts_container(ProbeKind::Liveness) && !restarts_container(ProbeKind::Readiness));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// Restarts the container on failure.
    Liveness,
    /// Drives the Ready condition.
    Readiness,
    /// Gates liveness and readiness until it succeeds.
    Startup,
}

/// A probe outcome.
///
/// ```
/// use actlet::messages::probe::ProbeOutcome;
/// let ready = |o| o == ProbeOutcome::Success;
/// assert!(!ready(ProbeOutcome::Unknown)); // not probed yet: not ready
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeOutcome {
    /// Passed.
    Success,
    /// Failed (after failureThreshold consecutive failures).
    Failure,
    /// Not run yet or could not run.
    Unknown,
}

/// ProbeWorker → SyncLoop: a probe result changed.
///
/// ```
/// use actlet::messages::probe::{ProbeKind, ProbeOutcome, ProbeResult};
/// let r = ProbeResult { uid: "u1".into(), container_id: "c1".into(), kind: ProbeKind::Readiness, outcome: ProbeOutcome::Failure };
/// assert_eq!((r.kind, r.outcome), (ProbeKind::Readiness, ProbeOutcome::Failure));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct ProbeResult {
    /// The pod.
    pub uid: PodUid,
    /// The container id probed.
    pub container_id: String,
    /// Which probe.
    pub kind: ProbeKind,
    /// The new outcome.
    pub outcome: ProbeOutcome,
}
