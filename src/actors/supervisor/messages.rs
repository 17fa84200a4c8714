//! Messages a supervisor understands, and its errors.

use std::time::Duration;

use actix::Message;

use super::child_ref::SendError;
use super::exit::ExitReason;
use super::spec::AnyChildSpec;
use super::tree::ChildInfo;

/// Reads the supervisor's subtree (itself and everything below it).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let workers = SupervisorSpec::new("workers").child(ChildSpec::new("pod-1", || Counter(0))).into_child_spec();
/// let workers_ref = workers.child_ref();
/// let _root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).child(workers).start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// let subtree = workers_ref.send(GetTree).await.unwrap();
/// let paths: Vec<&str> = subtree.iter().map(|c| c.path.as_str()).collect();
/// assert_eq!(paths, ["root/workers", "root/workers/pod-1"]);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GetTree;

impl Message for GetTree {
    type Result = Vec<ChildInfo>;
}

/// Adds and starts a dynamic child; replies with its path. Dynamic children
/// are forgotten when they are retired or when the supervisor restarts.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let root = SupervisorSpec::new("root").start_root();
/// let pod = ChildSpec::new("pod-1", || Counter(0)).restart(RestartPolicy::Transient);
/// let pod_ref = pod.child_ref();
/// let path = root.addr().send(StartChild(pod.into())).await.unwrap().unwrap();
/// assert_eq!(path, "root/pod-1");
/// assert_eq!(pod_ref.send(Add(1)).await, Ok(1));
/// let again = root.addr().send(StartChild(ChildSpec::new("pod-1", || Counter(0)).into())).await.unwrap();
/// assert!(matches!(again, Err(SupervisorError::AlreadyExists(_))));
/// # });
/// ```
#[derive(Debug)]
pub struct StartChild(pub AnyChildSpec);

impl Message for StartChild {
    type Result = Result<String, SupervisorError>;
}

/// Stops a child on purpose (orderly, bounded by its shutdown timeout) and
/// retires it; this is not a failure and does not count against intensity.
/// Replies with how its instance ended.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// let reason = root.addr().send(StopChild("counter".into())).await.unwrap();
/// assert_eq!(reason.unwrap(), ExitReason::Normal);
/// assert_eq!(root.tree().get("root/counter").unwrap().restarts, 0, "not a failure");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct StopChild(pub String);

impl Message for StopChild {
    type Result = Result<ExitReason, SupervisorError>;
}

/// Fault injection: drops a child's running instance mid-flight, as a panic
/// would (whatever it was doing is abandoned, its state is lost), and lets
/// the supervisor handle the exit ([`ExitReason::Killed`]) by its policy:
/// restart, backoff, intensity. What chaos tests use to show that an actor's
/// crash goes unnoticed by the rest of the node.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// assert_eq!(counter_ref.send(Add(5)).await, Ok(5));
/// root.addr().send(KillChild("counter".into())).await.unwrap().unwrap();
/// tokio::time::sleep(Duration::from_millis(10)).await;
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1), "a fresh instance");
/// let info = root.tree().get("root/counter").unwrap();
/// assert_eq!((info.restarts, info.last_failure.unwrap().reason), (1, ExitReason::Killed));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct KillChild(pub String);

impl Message for KillChild {
    type Result = Result<(), SupervisorError>;
}

/// Stops every child in reverse start order within `deadline`, then stops
/// the supervisor itself (normally).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// let report = root.addr().send(Shutdown { deadline: Duration::from_secs(5) }).await.unwrap().unwrap();
/// assert_eq!(report.stopped, ["root/counter"]);
/// assert_eq!(root.wait().await, ExitReason::Normal);
/// # });
/// ```
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
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// use actix::Running;
///
/// /// Refuses to stop.
/// struct Stubborn;
/// impl Actor for Stubborn {
///     type Context = Context<Self>;
///     fn stopping(&mut self, _: &mut Context<Self>) -> Running {
///         Running::Continue
///     }
/// }
/// # actlet::testing::run_paused(async {
/// let root = SupervisorSpec::new("root")
///     .child(ChildSpec::new("polite", || Counter(0)))
///     .child(ChildSpec::new("stubborn", || Stubborn).shutdown_timeout(Duration::from_secs(1)))
///     .start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// let report = root.shutdown(Duration::from_secs(10)).await.unwrap();
/// let expected = ShutdownReport { stopped: vec!["root/polite".into()], killed: vec!["root/stubborn".into()] };
/// assert_eq!(report, expected);
/// # });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Children that stopped in order before their deadline.
    pub stopped: Vec<String>,
    /// Children dropped because their deadline passed.
    pub killed: Vec<String>,
}

/// Errors of supervisor requests.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
/// let err = root.stop_child("no-such-child").await.unwrap_err();
/// assert!(matches!(err, SupervisorError::NotFound(ref name) if name == "no-such-child"));
/// assert_eq!(err.to_string(), "no child named \"no-such-child\"");
/// # });
/// ```
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
