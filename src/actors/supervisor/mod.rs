//! OTP-style supervision trees for actix actors.
//!
//! A [`SupervisorSpec`] names a supervisor, its [`Strategy`], its restart
//! [`Intensity`] and its children, in start order. A child is a
//! [`ChildSpec`]: a name, a factory called for every (re)start, a
//! [`RestartPolicy`], a shutdown timeout and a bounded mailbox; or a nested
//! [`SupervisorSpec`]. [`SupervisorSpec::start_root`] starts the tree on the
//! current arbiter and returns a [`RootSupervisor`] handle.
//!
//! Peers talk to children through [`ChildRef`]s (or type-erased
//! [`SupervisedRecipient`]s) taken from the specs, before or after the start:
//! they stay valid across restarts. Supervisors answer [`GetTree`],
//! [`StartChild`], [`StopChild`] and [`Shutdown`]; the live
//! [`SupervisionTree`] (names, states, restart counts, last failures) is also
//! readable directly, e.g. by a future `/debug` endpoint or metrics.
//!
//! ```
//! use std::time::Duration;
//! use actix::prelude::*;
//! use actlet::actors::supervisor::{
//!     ChildSpec, ChildState, RestartPolicy, StartChild, Strategy, SupervisorSpec,
//! };
//!
//! struct Counter(u32);
//! impl Actor for Counter {
//!     type Context = Context<Self>;
//! }
//! struct Add(u32);
//! impl Message for Add {
//!     type Result = u32;
//! }
//! impl Handler<Add> for Counter {
//!     type Result = u32;
//!     fn handle(&mut self, Add(n): Add, _: &mut Context<Self>) -> u32 {
//!         self.0 += n;
//!         self.0
//!     }
//! }
//!
//! System::new().block_on(async {
//!     let counter = ChildSpec::new("counter", || Counter(0));
//!     let counter_ref = counter.child_ref(); // stable: survives restarts
//!     let workers = SupervisorSpec::new("pod-workers").into_child_spec();
//!     let workers_ref = workers.child_ref();
//!     let root = SupervisorSpec::new("root")
//!         .strategy(Strategy::OneForOne)
//!         .intensity(3, Duration::from_secs(5))
//!         .child(counter)
//!         .child(workers)
//!         .start_root();
//!
//!     assert_eq!(counter_ref.send(Add(2)).await, Ok(2));
//!     let pod = ChildSpec::new("pod-1", || Counter(0)).restart(RestartPolicy::Transient);
//!     let path = workers_ref.send(StartChild(pod.into())).await.unwrap().unwrap();
//!     assert_eq!(path, "root/pod-workers/pod-1");
//!     assert_eq!(root.tree().get(&path).unwrap().state, ChildState::Running);
//!
//!     // What `shutdown_on_signals` does on SIGTERM/SIGINT:
//!     let report = root.shutdown(Duration::from_secs(10)).await.unwrap();
//!     assert_eq!(report.stopped, ["root/pod-workers", "root/counter"]);
//! });
//! ```
//!
//! # Guarantees
//!
//! - **Fresh state.** Every start and restart calls the child's factory; the
//!   failed value is dropped (its `stopping`/`stopped` run once as it goes),
//!   never reused. A restarted supervisor is fresh too: its children are
//!   rebuilt, its counters restart at zero, its dynamic children are gone.
//! - **Panic containment.** Each instance runs as its own task on the
//!   supervisor's arbiter, its context future polled inside `catch_unwind`.
//!   A panic in a handler, a lifecycle hook, an actor future or the factory
//!   becomes an exit report ([`ExitReason::Panicked`]) and a restart; the
//!   arbiter, the `System` and the siblings carry on.
//! - **Exactly one exit report per instance**, however it ends: normal stop,
//!   [`fail`], panic, kill, or its task being dropped.
//! - **Strategies.** [`Strategy::OneForOne`] restarts the child alone;
//!   [`Strategy::OneForAll`] stops the other running children in reverse start
//!   order, then restarts all in start order; [`Strategy::RestForOne`] does
//!   the same for the children started after it. Each stop waits for the exit
//!   report (bounded by the child's shutdown timeout, then the instance is
//!   dropped) before the next step. Temporary siblings are not restarted.
//! - **Intensity.** More than `max_restarts` restarts within the sliding
//!   window `within` (tokio time, one per restart decision): the supervisor
//!   stops all its children in reverse start order and exits with
//!   [`ExitReason::Failed`], whose message names the supervisor, the child and
//!   its last failure. Its parent sees a failed child and applies its own
//!   policy, strategy and intensity (escalation). When the root gives up, the
//!   [`RootFailureHook`] runs; the default, [`stop_system_on_root_failure`],
//!   logs the error and stops the `System` with exit code 1.
//! - **Stable addresses.** The mailbox belongs to the spec and outlives every
//!   instance; [`ChildRef`]s work before the first start, across restarts of
//!   the child and of its enclosing supervisors.
//! - **Stopping on purpose is not failing.** [`StopChild`], stops made by a
//!   strategy and [`Shutdown`] never count against intensity.
//! - **Ordered shutdown.** [`Shutdown`] (or [`RootSupervisor::shutdown`],
//!   [`shutdown_on_signals`], [`shutdown_when`]) stops children in reverse
//!   start order, each within `min(its shutdown timeout, what is left of the
//!   deadline)`; nested supervisors do the same with the deadline they get;
//!   whatever is still alive at its deadline is dropped ([`ShutdownReport`]).
//!
//! # Message delivery and loss
//!
//! - A mailbox is FIFO and bounded. [`ChildRef::send`] waits for room and
//!   for the reply; [`ChildRef::do_send`] and [`ChildRef::try_send`] never
//!   block and fail with `Full` (backpressure).
//! - Messages queued when an instance dies stay queued and are handled, in
//!   order, by the next instance. Messages sent while no instance runs wait.
//! - The message being handled when the instance panicked is lost: its
//!   sender gets [`SendError::Lost`]. So are the replies the dead instance
//!   still owed (`ResponseFuture`s, actor futures) and everything it had sent
//!   to itself (`ctx.notify`, timers, its own actix `Addr`).
//! - A retired child (a transient one stopped normally, a temporary one, one
//!   stopped with [`StopChild`], everything after a shutdown or a root
//!   failure) has its mailbox closed: queued messages are dropped (their
//!   senders get [`SendError::Lost`]) and new sends fail with
//!   [`SendError::Closed`].
//!
//! # Assumptions
//!
//! - `panic = "unwind"` (the default); with `abort`, any panic ends the process.
//! - A tree lives on one arbiter: start the root there; children are spawned
//!   next to their supervisor. Addresses are `Send` and usable from anywhere.
//! - Actors use `actix::Context`; factories are `Send + Sync` (the actor
//!   values themselves need not be `Send`).
//! - Sibling names are unique and contain no `/`.
//! - Handlers never block the thread: a blocked handler stalls the whole
//!   arbiter, supervisors included, and nothing here can preempt it.
//!
//! # Caveats
//!
//! - Do not hand out an instance's own `ctx.address()`: it dies with the
//!   instance. Hand out [`ChildRef`]s.
//! - Starting a child does not wait for it to be ready. Siblings run their
//!   `started` in start order, but a nested supervisor starts its children
//!   when it first runs, after its later siblings were spawned.
//! - While a supervisor stops children for a restart or a shutdown, its
//!   [`StartChild`]/[`StopChild`] requests wait; [`GetTree`] does not.
//! - A dropped (killed) instance still runs `stopping`/`stopped` once, but
//!   its pending futures are cancelled where they stand.
//! - [`ChildSpec::mailbox_capacity`] replaces the mailbox: call it before
//!   taking addresses. A spec runs one instance at a time: started twice
//!   (under two supervisors), the second instance waits for the mailbox.
//! - [`ChildInfo::restarts_in_window`] is as of the last restart; failure
//!   times are wall-clock, intensity uses tokio's monotonic (pausable) clock.
//!
//! # Errors
//!
//! Sends fail with [`SendError`] / [`TrySendError`]; supervisor requests with
//! [`SupervisorError`]; how an instance ended is an [`ExitReason`], and a root
//! that gave up is reported as a [`RootFailure`].
//!
//! # How this improves on `actix::Supervisor`
//!
//! - **Fresh instance.** `actix::Supervisor` keeps the same actor value and
//!   calls `Supervised::restarting` on it, poisoned state included; here the
//!   factory builds a new value every time.
//! - **Intensity and escalation.** `actix::Supervisor` restarts forever;
//!   here R restarts in T are tolerated, then the failure travels up the tree
//!   and, at the root, stops the process with a clear error.
//! - **Panics.** `actix::Supervisor` never sees a panic: the unwinding task
//!   is dropped at the task boundary (with actix-rt 2 the arbiter survives;
//!   older actix-rt, `panic = "abort"` or a runtime that shuts down on
//!   unhandled panics lose the arbiter), `restarting` is not called and its
//!   address is dead for good. Here `catch_unwind` around the context future
//!   turns the panic into an exit report and a restart.
//! - **Stable addresses.** An actix `Addr` is tied to one mailbox that dies
//!   with the actor; here the mailbox outlives instances, so queued messages
//!   are delivered to the next one and peers never need a new address.
//! - **Trees.** Strategies across siblings, nesting, dynamic children,
//!   ordered shutdown with deadlines and a readable live tree.
//!
//! # Layout
//!
//! `strategy` (strategies, policies, intensity), `spec` (child specs and
//! factories), `context` (what a factory knows), `child_ref` (stable addresses), `declared` (addresses
//! declared before their specs), `mailbox` (the mailbox that
//! outlives instances), `instance` (the contained runner), `exit` (exit
//! reasons, [`fail`]), `actor` (the [`Supervisor`] actor and its builder),
//! `engine` (its restart/stop logic), `tree` (the live tree), `messages`,
//! `root` (root handle and failure hook), `shutdown` (signals).

mod actor;
mod backoff;
mod child_ref;
mod context;
mod declared;
mod engine;
mod exit;
mod instance;
mod mailbox;
mod messages;
mod root;
mod shutdown;
mod spec;
mod strategy;
mod tree;

#[cfg(test)]
mod tests;

pub use actor::{SUPERVISOR_SHUTDOWN_TIMEOUT, Supervisor, SupervisorSpec};
pub use backoff::{Criticality, RestartBackoff};
pub use child_ref::{ChildRef, SendError, SupervisedRecipient, TrySendError};
pub use declared::DeclaredChild;
pub use exit::{ExitReason, fail};
pub use mailbox::CloseCount;
pub use messages::{GetTree, KillChild, Shutdown, ShutdownReport, StartChild, StopChild, SupervisorError};
pub use root::{RootFailure, RootFailureHook, RootSupervisor, stop_system_on_root_failure};
#[cfg(unix)]
pub use shutdown::shutdown_on_signals;
pub use shutdown::shutdown_when;
pub use spec::{AnyChildSpec, ChildContext, ChildSpec, DEFAULT_MAILBOX_CAPACITY, DEFAULT_SHUTDOWN_TIMEOUT};
pub use strategy::{Intensity, RestartPolicy, Strategy};
pub use tree::{ChildInfo, ChildState, Failure, MailboxDepth, SupervisionTree};
