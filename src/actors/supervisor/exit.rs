//! Why a child instance ended, and how an actor reports a failure without
//! panicking ([`fail`]).

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use actix::ActorContext;

/// Why a child instance ended.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// let reason = root.stop_child("counter").await.unwrap();
/// assert_eq!(reason, ExitReason::Normal);
/// assert_eq!(reason.to_string(), "stopped normally");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitReason {
    /// The actor stopped by itself (`ctx.stop()`, or all its work is done).
    Normal,
    /// The actor stopped through [`fail`] with this reason.
    Failed(String),
    /// A handler, a lifecycle hook or the factory panicked with this message.
    Panicked(String),
    /// The instance was dropped without stopping on its own: its supervisor
    /// disappeared, a stop deadline passed, or the runtime shut down.
    Killed,
}

impl ExitReason {
    /// Everything but [`ExitReason::Normal`] is abnormal.
    ///
    /// ```
    /// # use actlet::actors::supervisor::ExitReason;
    /// assert!(!ExitReason::Normal.is_abnormal());
    /// assert!(ExitReason::Failed("disk full".into()).is_abnormal());
    /// assert!(ExitReason::Panicked("index out of bounds".into()).is_abnormal());
    /// assert!(ExitReason::Killed.is_abnormal());
    /// ```
    pub fn is_abnormal(&self) -> bool {
        !matches!(self, Self::Normal)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Normal => f.write_str("stopped normally"),
            Self::Failed(reason) => write!(f, "failed: {reason}"),
            Self::Panicked(message) => write!(f, "panicked: {message}"),
            Self::Killed => f.write_str("killed"),
        }
    }
}

/// Where [`fail`] records a reason for the instance being polled.
pub(crate) type FailureSlot = Rc<RefCell<Option<String>>>;

thread_local! {
    static CURRENT_SLOT: RefCell<Option<FailureSlot>> = const { RefCell::new(None) };
}

/// Stops the actor and makes its supervisor see an abnormal exit
/// ([`ExitReason::Failed`]) instead of a normal one, without panicking.
///
/// Call it from a handler or lifecycle hook of a supervised actor. Outside a
/// supervised instance it only stops the actor (and logs a warning).
///
/// ```
/// # use std::time::Duration;
/// use actix::{Actor, Context, Handler, Message};
/// use actlet::actors::supervisor::{ChildSpec, ExitReason, SupervisorSpec, fail};
///
/// struct Probe;
/// impl Actor for Probe {
///     type Context = Context<Self>;
/// }
/// struct Check(bool);
/// impl Message for Check {
///     type Result = ();
/// }
/// impl Handler<Check> for Probe {
///     type Result = ();
///     fn handle(&mut self, Check(ok): Check, ctx: &mut Context<Self>) {
///         if !ok {
///             fail(ctx, "runtime unreachable");
///         }
///     }
/// }
///
/// actlet::testing::run_paused(async {
///     let probe = ChildSpec::new("probe", || Probe);
///     let probe_ref = probe.child_ref();
///     let root = SupervisorSpec::new("root").child(probe).start_root();
///     probe_ref.send(Check(false)).await.unwrap();
///     probe_ref.send(Check(true)).await.unwrap(); // handled by the restarted instance
///     let info = root.tree().get("root/probe").unwrap();
///     assert_eq!(info.restarts, 1);
///     assert_eq!(info.last_failure.unwrap().reason, ExitReason::Failed("runtime unreachable".into()));
/// });
/// ```
pub fn fail<C: ActorContext>(ctx: &mut C, reason: impl Into<String>) {
    let reason = reason.into();
    let recorded = CURRENT_SLOT.with(|current| match &*current.borrow() {
        Some(slot) => {
            *slot.borrow_mut() = Some(reason.clone());
            true
        }
        None => false,
    });
    if !recorded {
        tracing::warn!(%reason, "fail() called outside a supervised actor; stopping it normally");
    }
    ctx.stop();
}

/// Runs `f` (which must not unwind) with `slot` as the target of [`fail`].
pub(crate) fn with_failure_slot<R>(slot: &FailureSlot, f: impl FnOnce() -> R) -> R {
    let previous = CURRENT_SLOT.with(|current| current.replace(Some(slot.clone())));
    let out = f();
    CURRENT_SLOT.with(|current| *current.borrow_mut() = previous);
    out
}

/// The message of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
