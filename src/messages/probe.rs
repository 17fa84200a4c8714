//! ProbeWorker → SyncLoop / StatusManager: probe results.

use actix::Message;

use super::PodUid;

/// The three probe kinds.
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
