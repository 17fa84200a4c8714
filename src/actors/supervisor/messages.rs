//! Messages a supervisor understands, and its errors.

use std::time::Duration;

use actix::Message;

use super::child_ref::SendError;
use super::exit::ExitReason;
use super::spec::AnyChildSpec;
use super::tree::ChildInfo;

/// Reads the supervisor's subtree (itself and everything below it).
#[derive(Debug, Clone, Copy, Default)]
pub struct GetTree;

impl Message for GetTree {
    type Result = Vec<ChildInfo>;
}

/// Adds and starts a dynamic child; replies with its path. Dynamic children
/// are forgotten when they are retired or when the supervisor restarts.
#[derive(Debug)]
pub struct StartChild(pub AnyChildSpec);

impl Message for StartChild {
    type Result = Result<String, SupervisorError>;
}

/// Stops a child on purpose (orderly, bounded by its shutdown timeout) and
/// retires it; this is not a failure and does not count against intensity.
/// Replies with how its instance ended.
#[derive(Debug, Clone)]
pub struct StopChild(pub String);

impl Message for StopChild {
    type Result = Result<ExitReason, SupervisorError>;
}

/// Stops every child in reverse start order within `deadline`, then stops
/// the supervisor itself (normally).
#[derive(Debug, Clone, Copy)]
pub struct Shutdown {
    /// Time budget for the whole subtree; what is left after it is dropped.
    pub deadline: Duration,
}

impl Message for Shutdown {
    type Result = Result<ShutdownReport, SupervisorError>;
}

/// What a shutdown did to the supervisor's direct children, in stop order
/// (nested supervisors report on their own subtree in the logs only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Children that stopped in order before their deadline.
    pub stopped: Vec<String>,
    /// Children dropped because their deadline passed.
    pub killed: Vec<String>,
}

/// Errors of supervisor requests.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// No child with this name.
    #[error("no child named {0:?}")]
    NotFound(String),
    /// A child with this name already exists.
    #[error("a child named {0:?} already exists")]
    AlreadyExists(String),
    /// The child exists but is not running.
    #[error("child {0:?} is not running")]
    NotRunning(String),
    /// The child's factory panicked.
    #[error("child {name:?} failed to start: {reason}")]
    StartFailed {
        /// The child's name.
        name: String,
        /// Why.
        reason: ExitReason,
    },
    /// The root supervisor already exited.
    #[error("the root supervisor already exited: {0}")]
    Exited(ExitReason),
    /// The supervisor is shutting down or gone.
    #[error("the supervisor is shutting down")]
    ShuttingDown,
    /// The request could not reach the supervisor.
    #[error("could not reach the supervisor: {0}")]
    Unreachable(#[from] SendError),
    /// Installing the signal handlers failed.
    #[error("cannot listen for signals: {0}")]
    Signal(#[from] std::io::Error),
}
