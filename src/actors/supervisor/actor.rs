//! The [`Supervisor`] actor and its builder, [`SupervisorSpec`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, MessageResult, ResponseFuture, Running,
    WrapFuture,
};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::engine::{Command, Engine, EngineConfig, deadline_in};
use super::exit::fail;
use super::messages::{GetTree, KillChild, Shutdown, ShutdownReport, StartChild, StopChild, SupervisorError};
use super::root::{RootFailureHook, RootSupervisor};
use super::spec::{AnyChildSpec, ChildContext, ChildSpec};
use super::strategy::{Intensity, Strategy};
use super::tree::SupervisionTree;

/// How long a nested supervisor gets to stop, by default: as long as its
/// children's own shutdown timeouts need (OTP's `infinity`).
///
/// ```
/// # use actlet::actors::supervisor::*;
/// // A nested supervisor is never cut short by its parent: it takes as long as
/// // its own children's shutdown timeouts add up to.
/// assert!(SUPERVISOR_SHUTDOWN_TIMEOUT > DEFAULT_SHUTDOWN_TIMEOUT * 1_000_000);
/// ```
pub const SUPERVISOR_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);
/// A nested supervisor finishes its children this much before the deadline
/// its parent gave it, so that it can still report in time.
const STOP_MARGIN: Duration = Duration::from_millis(10);

/// Builder of a supervisor: name, strategy, intensity and static children
/// (started in order, stopped in reverse order).
///
/// ```
/// # use std::time::Duration;
/// use actix::{Actor, Context, Handler, Message};
/// use actlet::actors::supervisor::{ChildSpec, Strategy, SupervisorSpec};
///
/// struct Counter(u32);
/// impl Actor for Counter {
///     type Context = Context<Self>;
/// }
/// struct Add(u32);
/// impl Message for Add {
///     type Result = u32;
/// }
/// impl Handler<Add> for Counter {
///     type Result = u32;
///     fn handle(&mut self, Add(n): Add, _: &mut Context<Self>) -> u32 {
///         self.0 += n;
///         self.0
///     }
/// }
///
/// actlet::testing::run_paused(async {
///     let counter = ChildSpec::new("counter", || Counter(0));
///     let counter_ref = counter.child_ref();
///     let workers = SupervisorSpec::new("workers").strategy(Strategy::OneForAll).child(counter);
///     let root = SupervisorSpec::new("root").intensity(5, Duration::from_secs(10)).child(workers).start_root();
///     assert_eq!(counter_ref.send(Add(2)).await, Ok(2));
///     let paths: Vec<String> = root.tree().snapshot().into_iter().map(|c| c.path).collect();
///     assert_eq!(paths, ["root", "root/workers", "root/workers/counter"]);
/// });
/// ```
#[derive(Clone)]
pub struct SupervisorSpec {
    name: String,
    strategy: Strategy,
    intensity: Intensity,
    children: Vec<AnyChildSpec>,
    on_root_failure: Option<RootFailureHook>,
}

impl fmt::Debug for SupervisorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorSpec")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("intensity", &self.intensity)
            .field("children", &self.children)
            .finish_non_exhaustive()
    }
}

impl SupervisorSpec {
    /// A one-for-one supervisor with the default [`Intensity`] and no children.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").start_root();
    /// let info = root.tree().get("root").unwrap();
    /// assert_eq!((info.kind, info.state), ("Supervisor", ChildState::Running));
    /// # });
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            strategy: Strategy::default(),
            intensity: Intensity::default(),
            children: Vec::new(),
            on_root_failure: None,
        }
    }

    /// Sets the restart strategy.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let (a, b) = (ChildSpec::new("a", || Counter(0)), ChildSpec::new("b", || Counter(0)));
    /// let (a_ref, b_ref) = (a.child_ref(), b.child_ref());
    /// let _root = SupervisorSpec::new("root").strategy(Strategy::OneForAll).child(a).child(b).start_root();
    /// assert_eq!(b_ref.send(Add(5)).await, Ok(5));
    /// a_ref.do_send(Crash).unwrap(); // `a` fails: `b` is stopped, then both start afresh
    /// assert_eq!(a_ref.send(Add(1)).await, Ok(1));
    /// assert_eq!(b_ref.send(Add(1)).await, Ok(1), "b lost its state: it was restarted too");
    /// # });
    /// ```
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// At most `max_restarts` restarts within `within`, else escalate.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// let root = SupervisorSpec::new("root")
    ///     .intensity(1, Duration::from_secs(60)) // one restart a minute, no more
    ///     .child(counter)
    ///     .on_root_failure(|failure| println!("{failure}"))
    ///     .start_root();
    /// counter_ref.do_send(Crash).unwrap(); // restarted
    /// counter_ref.do_send(Crash).unwrap(); // a second restart within the minute: give up
    /// assert!(matches!(root.wait().await, ExitReason::Failed(_)));
    /// # });
    /// ```
    pub fn intensity(mut self, max_restarts: u32, within: Duration) -> Self {
        self.intensity = Intensity::new(max_restarts, within);
        self
    }

    /// Appends a static child (a [`ChildSpec`] or a nested [`SupervisorSpec`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root")
    ///     .child(ChildSpec::new("counter", || Counter(0)))
    ///     .child(SupervisorSpec::new("workers")) // a nested supervisor
    ///     .start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// let names: Vec<String> = root.tree().snapshot().into_iter().map(|c| c.name).collect();
    /// assert_eq!(names, ["root", "counter", "workers"]);
    /// # });
    /// ```
    pub fn child(mut self, spec: impl Into<AnyChildSpec>) -> Self {
        self.children.push(spec.into());
        self
    }

    /// Appends static children in order: a list another function built, or
    /// an optional child (`Option` is a list of at most one).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let cluster_mode = false;
    /// let root = SupervisorSpec::new("root")
    ///     .children(["a", "b"].map(|n| ChildSpec::new(n, || Counter(0))))
    ///     .children(cluster_mode.then(|| ChildSpec::new("node", || Counter(0))))
    ///     .start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// let names: Vec<String> = root.tree().snapshot().into_iter().map(|c| c.name).collect();
    /// assert_eq!(names, ["root", "a", "b"]);
    /// # });
    /// ```
    pub fn children<S: Into<AnyChildSpec>>(mut self, specs: impl IntoIterator<Item = S>) -> Self {
        self.children.extend(specs.into_iter().map(Into::into));
        self
    }

    /// What to do when this supervisor, started as the root, gives up
    /// (default: [`stop_system_on_root_failure`](super::stop_system_on_root_failure)).
    /// Ignored for nested supervisors, which escalate to their parent.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let root = SupervisorSpec::new("root")
    ///     .intensity(0, Duration::from_secs(5)) // give up on the first failure
    ///     .child(counter)
    ///     .on_root_failure(move |failure| tx.send(failure.clone()).unwrap())
    ///     .start_root();
    /// counter_ref.do_send(Crash).unwrap();
    /// root.wait().await;
    /// let failure = rx.recv().unwrap();
    /// assert_eq!(failure.supervisor, "root");
    /// println!("{failure}"); // names the child and its failure
    /// # });
    /// ```
    pub fn on_root_failure(mut self, hook: impl Fn(&super::RootFailure) + Send + Sync + 'static) -> Self {
        self.on_root_failure = Some(Arc::new(hook));
        self
    }

    /// This supervisor as a child of another one. Use the returned spec's
    /// [`child_ref`](ChildSpec::child_ref) to address it.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let workers = SupervisorSpec::new("workers").into_child_spec();
    /// let workers_ref = workers.child_ref(); // a ChildRef<Supervisor>
    /// let _root = SupervisorSpec::new("root").child(workers).start_root();
    /// let pod = ChildSpec::new("pod-1", || Counter(0));
    /// let path = workers_ref.send(StartChild(pod.into())).await.unwrap().unwrap();
    /// assert_eq!(path, "root/workers/pod-1");
    /// # });
    /// ```
    pub fn into_child_spec(self) -> ChildSpec<Supervisor> {
        let statics = self.children.iter().map(|c| c.inner.clone()).collect::<Vec<_>>();
        let config = Arc::new(EngineConfig {
            strategy: self.strategy,
            intensity: self.intensity,
            children: statics.clone(),
        });
        ChildSpec::with_context(self.name, move |cx| Supervisor::new(config.clone(), cx))
            .shutdown_timeout(SUPERVISOR_SHUTDOWN_TIMEOUT)
            .on_stop(|sup: &mut Supervisor, ctx, deadline| {
                let now = Instant::now();
                sup.stop_deadline = Some(deadline.checked_sub(STOP_MARGIN).unwrap_or(now).max(now));
                ctx.stop();
            })
            .closes_with(statics)
    }

    /// Starts this supervisor as the root of a tree on the current arbiter.
    ///
    /// # Panics
    /// Outside a running actix `System` (it spawns on the current arbiter).
    ///
    /// # Examples
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
    /// let report = root.shutdown(Duration::from_secs(5)).await.unwrap();
    /// assert_eq!(report.stopped, ["root/counter"]);
    /// # });
    /// ```
    pub fn start_root(self) -> RootSupervisor {
        self.start_root_in(SupervisionTree::new())
    }

    /// [`start_root`](Self::start_root) recording into `tree`, an empty
    /// [`SupervisionTree`] the caller made first, so children built before
    /// the start (a `/debug` endpoint, metrics) can already hold the live view.
    ///
    /// # Panics
    /// If `tree` is not empty (it belongs to another root).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let tree = SupervisionTree::new();
    /// let view = tree.clone(); // e.g. given to a server child
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// let _root = SupervisorSpec::new("root").child(counter).start_root_in(tree);
    /// counter_ref.send(Add(1)).await.unwrap();
    /// assert_eq!(view.get("root/counter").unwrap().state, ChildState::Running);
    /// # });
    /// ```
    pub fn start_root_in(self, tree: SupervisionTree) -> RootSupervisor {
        assert!(tree.is_empty(), "start_root_in needs an empty tree");
        let hook = self.on_root_failure.clone();
        RootSupervisor::start(self.into_child_spec(), hook, tree)
    }
}

impl From<SupervisorSpec> for AnyChildSpec {
    fn from(spec: SupervisorSpec) -> Self {
        spec.into_child_spec().into()
    }
}

/// A supervisor actor. Build it with [`SupervisorSpec`]; talk to it through
/// its [`ChildRef`](super::ChildRef) with [`GetTree`], [`StartChild`],
/// [`StopChild`] and [`Shutdown`].
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// let supervisor: &ChildRef<Supervisor> = root.addr();
/// let tree = supervisor.send(GetTree).await.unwrap();
/// assert_eq!(tree.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["root", "root/counter"]);
/// # });
/// ```
pub struct Supervisor {
    path: String,
    tree: SupervisionTree,
    commands: mpsc::UnboundedSender<Command>,
    engine: Option<Engine>,
    engine_done: bool,
    shutdown_requested: bool,
    stop_deadline: Option<Instant>,
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    fn new(config: Arc<EngineConfig>, cx: &ChildContext) -> Self {
        let (commands, rx) = mpsc::unbounded_channel();
        Self {
            path: cx.path.clone(),
            tree: cx.tree.clone(),
            commands,
            engine: Some(Engine::new(cx.path.clone(), cx.tree.clone(), config, rx)),
            engine_done: false,
            shutdown_requested: false,
            stop_deadline: None,
        }
    }

    /// Path of this supervisor in the tree.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// // Supervisors can be taught new messages:
    /// struct Where;
    /// impl Message for Where {
    ///     type Result = String;
    /// }
    /// impl Handler<Where> for Supervisor {
    ///     type Result = String;
    ///     fn handle(&mut self, _: Where, _: &mut Context<Self>) -> String {
    ///         self.path().to_owned()
    ///     }
    /// }
    /// # actlet::testing::run_paused(async {
    /// let workers = SupervisorSpec::new("workers").into_child_spec();
    /// let workers_ref = workers.child_ref();
    /// let _root = SupervisorSpec::new("root").child(workers).start_root();
    /// assert_eq!(workers_ref.send(Where).await.unwrap(), "root/workers");
    /// # });
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The live tree this supervisor belongs to.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// struct Census;
    /// impl Message for Census {
    ///     type Result = usize;
    /// }
    /// impl Handler<Census> for Supervisor {
    ///     type Result = usize;
    ///     fn handle(&mut self, _: Census, _: &mut Context<Self>) -> usize {
    ///         self.tree().len() // the whole tree, not only this supervisor's subtree
    ///     }
    /// }
    /// # actlet::testing::run_paused(async {
    /// let workers = SupervisorSpec::new("workers").child(ChildSpec::new("pod-1", || Counter(0))).into_child_spec();
    /// let workers_ref = workers.child_ref();
    /// let _root = SupervisorSpec::new("root").child(workers).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// assert_eq!(workers_ref.send(Census).await.unwrap(), 3);
    /// # });
    /// ```
    pub fn tree(&self) -> &SupervisionTree {
        &self.tree
    }

    fn request_shutdown(
        &mut self,
        deadline: Instant,
        reply: Option<oneshot::Sender<Result<ShutdownReport, SupervisorError>>>,
    ) {
        self.shutdown_requested = true;
        let _ = self.commands.send(Command::Shutdown { deadline, reply });
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(engine) = self.engine.take() {
            ctx.spawn(engine.run().into_actor(self).map(|outcome, sup: &mut Self, ctx| {
                sup.engine_done = true;
                match outcome {
                    Ok(()) => ctx.stop(),
                    Err(reason) => fail(ctx, reason),
                }
            }));
        }
    }

    fn stopping(&mut self, _: &mut Context<Self>) -> Running {
        // Done, or being dropped outside the runtime (nothing can be awaited).
        if self.engine_done || tokio::runtime::Handle::try_current().is_err() {
            return Running::Stop;
        }
        // Stop the children first; the engine stops the actor when done.
        if !self.shutdown_requested {
            let deadline = self
                .stop_deadline
                .unwrap_or_else(|| deadline_in(SUPERVISOR_SHUTDOWN_TIMEOUT));
            self.request_shutdown(deadline, None);
        }
        Running::Continue
    }
}

impl Handler<GetTree> for Supervisor {
    type Result = MessageResult<GetTree>;

    fn handle(&mut self, _: GetTree, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.tree.subtree(&self.path))
    }
}

/// Forwards a command to the engine and awaits its reply.
fn forward<T: 'static>(
    sup: &Supervisor,
    command: impl FnOnce(oneshot::Sender<Result<T, SupervisorError>>) -> Command,
) -> ResponseFuture<Result<T, SupervisorError>> {
    let (tx, rx) = oneshot::channel();
    let sent = !sup.shutdown_requested && sup.commands.send(command(tx)).is_ok();
    Box::pin(async move {
        if !sent {
            return Err(SupervisorError::ShuttingDown);
        }
        rx.await.unwrap_or(Err(SupervisorError::ShuttingDown))
    })
}

impl Handler<StartChild> for Supervisor {
    type Result = ResponseFuture<Result<String, SupervisorError>>;

    fn handle(&mut self, StartChild(spec): StartChild, _: &mut Context<Self>) -> Self::Result {
        forward(self, |reply| Command::Start(spec.inner, reply))
    }
}

impl Handler<StopChild> for Supervisor {
    type Result = ResponseFuture<Result<super::ExitReason, SupervisorError>>;

    fn handle(&mut self, StopChild(name): StopChild, _: &mut Context<Self>) -> Self::Result {
        forward(self, |reply| Command::Stop(name, reply))
    }
}

impl Handler<KillChild> for Supervisor {
    type Result = ResponseFuture<Result<(), SupervisorError>>;

    fn handle(&mut self, KillChild(name): KillChild, _: &mut Context<Self>) -> Self::Result {
        forward(self, |reply| Command::Kill(name, reply))
    }
}

impl Handler<Shutdown> for Supervisor {
    type Result = ResponseFuture<Result<ShutdownReport, SupervisorError>>;

    fn handle(&mut self, msg: Shutdown, _: &mut Context<Self>) -> Self::Result {
        let deadline = deadline_in(msg.deadline);
        let response = forward(self, |reply| Command::Shutdown {
            deadline,
            reply: Some(reply),
        });
        self.shutdown_requested = true;
        response
    }
}
