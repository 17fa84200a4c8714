//! Child specifications: how to build (and rebuild) a child, type-erased so a
//! supervisor can hold children of different actor types.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorContext, ActorFutureExt, AsyncContext, Context, WrapFuture};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::backoff::{Criticality, RestartBackoff};
use super::child_ref::ChildRef;
pub use super::context::ChildContext;
use super::exit::{ExitReason, panic_message};
use super::instance::{ExitNotifier, InstanceControl, remote_control, run_contained, spawn_contained};
use super::mailbox::{CloseCount, Mailbox, MailboxDrain, MailboxGauge};
use super::strategy::RestartPolicy;

/// Default mailbox capacity of a child.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// let counter_ref = ChildSpec::new("counter", || Counter(0)).child_ref();
/// assert_eq!(counter_ref.capacity(), DEFAULT_MAILBOX_CAPACITY);
/// ```
pub const DEFAULT_MAILBOX_CAPACITY: usize = 1024;
/// Default time a child gets to stop in order before it is dropped.
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
/// let root = SupervisorSpec::new("root").child(ChildSpec::new("stubborn", || Stubborn)).start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// let started = tokio::time::Instant::now(); // paused time: advances only as timers fire
/// let report = root.shutdown(Duration::from_secs(60)).await.unwrap();
/// assert_eq!(report.killed, ["root/stubborn"]);
/// assert!(started.elapsed() >= DEFAULT_SHUTDOWN_TIMEOUT, "it got the default 5 s");
/// # });
/// ```
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

type Factory<A> = Arc<dyn Fn(&ChildContext) -> A + Send + Sync>;
type StopHook<A> = Arc<dyn Fn(&mut A, &mut Context<A>, Instant) + Send + Sync>;

/// How to build a child of type `A`: its name, a factory called for every
/// (re)start, its restart policy, shutdown timeout and mailbox.
///
/// The mailbox is created with the spec, so [`child_ref`](Self::child_ref)
/// can hand out addresses before the child ever starts.
///
/// ```
/// # use std::time::Duration;
/// use actix::{Actor, Context, Handler, Message};
/// use actlet::actors::supervisor::{ChildSpec, RestartPolicy, SupervisorSpec};
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
///     let spec = ChildSpec::new("counter", || Counter(0))
///         .restart(RestartPolicy::Transient)
///         .shutdown_timeout(Duration::from_secs(2))
///         .mailbox_capacity(64);
///     let counter_ref = spec.child_ref();
///     let _root = SupervisorSpec::new("root").child(spec).start_root();
///     assert_eq!(counter_ref.send(Add(3)).await, Ok(3));
/// });
/// ```
pub struct ChildSpec<A: Actor<Context = Context<A>>> {
    name: Arc<str>,
    factory: Factory<A>,
    policy: RestartPolicy,
    shutdown_timeout: Duration,
    mailbox: Arc<Mailbox<A>>,
    on_stop: Option<StopHook<A>>,
    closes_with: Vec<Arc<dyn ErasedSpec>>,
    backoff: RestartBackoff,
    criticality: Criticality,
    arbiter: Option<actix::ArbiterHandle>,
}

impl<A: Actor<Context = Context<A>>> fmt::Debug for ChildSpec<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("kind", &short_type_name::<A>())
            .field("policy", &self.policy)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

impl<A: Actor<Context = Context<A>>> ChildSpec<A> {
    /// A permanent child built by `factory` (called again, for a fresh value,
    /// on every restart).
    ///
    /// # Panics
    /// If `name` is empty or contains `/`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let spec = ChildSpec::new("counter", || Counter(10)); // called again on every restart
    /// let counter_ref = spec.child_ref();
    /// let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// assert_eq!(counter_ref.send(Add(1)).await, Ok(11));
    /// counter_ref.do_send(Crash).unwrap();
    /// assert_eq!(counter_ref.send(Add(1)).await, Ok(11), "a fresh Counter(10)");
    /// # });
    /// ```
    pub fn new(name: impl Into<String>, factory: impl Fn() -> A + Send + Sync + 'static) -> Self {
        Self::with_context(name, move |_| factory())
    }

    /// Like [`new`](Self::new), the factory also gets the [`ChildContext`].
    ///
    /// # Panics
    /// If `name` is empty or contains `/`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let spec = ChildSpec::with_context("counter", |cx: &ChildContext| Counter(cx.path().len() as u32));
    /// let counter_ref = spec.child_ref();
    /// let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// assert_eq!(counter_ref.send(Add(0)).await, Ok("root/counter".len() as u32));
    /// # });
    /// ```
    pub fn with_context(name: impl Into<String>, factory: impl Fn(&ChildContext) -> A + Send + Sync + 'static) -> Self {
        let name: String = name.into();
        assert!(
            !name.is_empty() && !name.contains('/'),
            "child name {name:?} must be non-empty, without '/'"
        );
        Self::with_mailbox(name.into(), Mailbox::new(DEFAULT_MAILBOX_CAPACITY), factory)
    }

    /// A permanent child served from `mailbox` (a checked name).
    pub(crate) fn with_mailbox(
        name: Arc<str>,
        mailbox: Arc<Mailbox<A>>,
        factory: impl Fn(&ChildContext) -> A + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            factory: Arc::new(factory),
            policy: RestartPolicy::Permanent,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            mailbox,
            on_stop: None,
            closes_with: Vec::new(),
            backoff: RestartBackoff::default(),
            criticality: Criticality::Critical,
            arbiter: None,
        }
    }

    /// Sets the restart backoff (default [`RestartBackoff::default`]: the
    /// first restart is immediate, further consecutive ones wait 100 ms
    /// doubling up to 10 s).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let backoff = RestartBackoff { initial: Duration::from_secs(1), ..RestartBackoff::default() };
    /// let spec = ChildSpec::new("flaky", || Counter(0)).backoff(backoff);
    /// let flaky = spec.child_ref();
    /// let root = SupervisorSpec::new("root").intensity(10, Duration::from_secs(60)).child(spec).start_root();
    /// flaky.do_send(Crash).unwrap();
    /// flaky.do_send(Crash).unwrap(); // handled by the second instance
    /// tokio::time::sleep(Duration::from_millis(500)).await;
    /// assert_eq!(root.tree().get("root/flaky").unwrap().state, ChildState::Restarting, "waiting 1 s");
    /// tokio::time::sleep(Duration::from_secs(1)).await;
    /// assert_eq!(root.tree().get("root/flaky").unwrap().state, ChildState::Running);
    /// # });
    /// ```
    pub fn backoff(mut self, backoff: RestartBackoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets whether the child's repeated failures may escalate (default
    /// [`Criticality::Critical`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let server = ChildSpec::new("healthz", || Counter(0)).criticality(Criticality::NonCritical);
    /// let healthz = server.child_ref();
    /// let root = SupervisorSpec::new("root").intensity(2, Duration::from_secs(60)).child(server).start_root();
    /// for _ in 0..5 {
    ///     healthz.do_send(Crash).unwrap();
    /// }
    /// tokio::time::sleep(Duration::from_secs(40)).await; // retried every 10 s meanwhile
    /// let info = root.tree().get("root/healthz").unwrap();
    /// assert!(info.exhausted, "reported, retried later");
    /// assert_eq!(root.exit_reason(), None, "the root did not escalate");
    /// # });
    /// ```
    pub fn criticality(mut self, criticality: Criticality) -> Self {
        self.criticality = criticality;
        self
    }

    /// Runs every instance on `arbiter` (another thread with its own event
    /// loop) instead of the supervisor's: the factory is called there, the
    /// actor and its futures live there, its mailbox and exit reports cross
    /// threads. For many independent children whose work is CPU-bound (pod
    /// workers at 10,000 pods); a factory panic is then reported as the
    /// instance's exit rather than as a failed start.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, Arbiter, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// actix::System::new().block_on(async {
    ///     let other = Arbiter::new();
    ///     let (tx, rx) = std::sync::mpsc::channel();
    ///     let spec = ChildSpec::new("counter", move || {
    ///         tx.send(std::thread::current().id()).unwrap();
    ///         Counter(0)
    ///     })
    ///     .on_arbiter(other.handle());
    ///     let counter = spec.child_ref();
    ///     let root = SupervisorSpec::new("root").child(spec).start_root();
    ///     assert_eq!(counter.send(Add(2)).await, Ok(2));
    ///     assert_ne!(rx.recv().unwrap(), std::thread::current().id(), "built on the other arbiter");
    ///     counter.do_send(Crash).unwrap();
    ///     assert_eq!(counter.send(Add(1)).await, Ok(1), "restarted there");
    ///     root.shutdown(Duration::from_secs(5)).await.unwrap();
    ///     other.stop();
    /// });
    /// ```
    pub fn on_arbiter(mut self, arbiter: actix::ArbiterHandle) -> Self {
        self.arbiter = Some(arbiter);
        self
    }

    /// Sets the restart policy (default [`RestartPolicy::Permanent`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let spec = ChildSpec::new("job", || Counter(0)).restart(RestartPolicy::Transient);
    /// let job = spec.child_ref();
    /// let root = SupervisorSpec::new("root").child(spec).start_root();
    /// job.send(Quit).await.unwrap(); // a normal stop: the job is done, not restarted
    /// tokio::time::sleep(Duration::from_millis(10)).await;
    /// assert!(!job.is_open(), "retired");
    /// assert_eq!(root.tree().get("root/job").unwrap().restarts, 0);
    /// # });
    /// ```
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Time the child gets to stop in order before it is dropped
    /// (default [`DEFAULT_SHUTDOWN_TIMEOUT`]).
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
    /// let spec = ChildSpec::new("stubborn", || Stubborn).shutdown_timeout(Duration::from_millis(100));
    /// let root = SupervisorSpec::new("root").child(spec).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// let report = root.shutdown(Duration::from_secs(60)).await.unwrap();
    /// assert_eq!(report.killed, ["root/stubborn"], "dropped after 100 ms");
    /// # });
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Mailbox capacity (default [`DEFAULT_MAILBOX_CAPACITY`]). Replaces the
    /// mailbox: call it before [`child_ref`](Self::child_ref).
    ///
    /// # Panics
    /// If `capacity` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let spec = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(2);
    /// let counter_ref = spec.child_ref(); // after mailbox_capacity
    /// counter_ref.do_send(Add(1)).unwrap();
    /// counter_ref.do_send(Add(2)).unwrap();
    /// assert_eq!(counter_ref.do_send(Add(3)), Err(SendError::Full));
    /// ```
    pub fn mailbox_capacity(mut self, capacity: usize) -> Self {
        let mailbox = Mailbox::new(capacity);
        if let Some(closes) = self.mailbox.counted_closes() {
            mailbox.count_closes(closes);
        }
        self.mailbox = mailbox;
        self
    }

    /// Counts each close of this child's mailbox in `closes` (see [`CloseCount`]).
    pub fn count_closes(self, closes: CloseCount) -> Self {
        self.mailbox.count_closes(closes);
        self
    }

    /// How an orderly stop is carried out (default: `ctx.stop()`); the hook
    /// gets the deadline after which the instance will be dropped.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let spec = ChildSpec::new("counter", || Counter(0)).on_stop(move |counter, ctx, _deadline| {
    ///     tx.send(counter.0).unwrap(); // e.g. flush state before the deadline
    ///     ctx.stop();
    /// });
    /// let counter_ref = spec.child_ref();
    /// let root = SupervisorSpec::new("root").child(spec).start_root();
    /// assert_eq!(counter_ref.send(Add(7)).await, Ok(7));
    /// root.shutdown(Duration::from_secs(5)).await.unwrap();
    /// assert_eq!(rx.recv().unwrap(), 7);
    /// # });
    /// ```
    pub fn on_stop(mut self, hook: impl Fn(&mut A, &mut Context<A>, Instant) + Send + Sync + 'static) -> Self {
        self.on_stop = Some(Arc::new(hook));
        self
    }

    /// Specs whose mailboxes close when this child is retired (a nested
    /// supervisor's static children).
    pub(crate) fn closes_with(mut self, specs: Vec<Arc<dyn ErasedSpec>>) -> Self {
        self.closes_with = specs;
        self
    }

    /// The child's name.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// assert_eq!(ChildSpec::new("counter", || Counter(0)).name(), "counter");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A stable address of the child, valid before it starts and across restarts.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let spec = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = spec.child_ref();
    /// counter_ref.do_send(Add(1)).unwrap(); // queued before the child exists
    /// let _root = SupervisorSpec::new("root").child(spec).start_root();
    /// assert_eq!(counter_ref.send(Add(1)).await, Ok(2));
    /// # });
    /// ```
    pub fn child_ref(&self) -> ChildRef<A> {
        ChildRef::new(self.name.clone(), self.mailbox.clone())
    }
}

/// A child spec of any actor type, as held by supervisors and sent in
/// [`StartChild`](super::StartChild).
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let children: Vec<AnyChildSpec> = vec![
///     ChildSpec::new("counter", || Counter(0)).into(),
///     SupervisorSpec::new("workers").into(),
/// ];
/// let names: Vec<&str> = children.iter().map(AnyChildSpec::name).collect();
/// assert_eq!(names, ["counter", "workers"]);
/// let root = children.into_iter().fold(SupervisorSpec::new("root"), SupervisorSpec::child).start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// assert_eq!(root.tree().len(), 3);
/// # });
/// ```
#[derive(Clone)]
pub struct AnyChildSpec {
    pub(crate) inner: Arc<dyn ErasedSpec>,
}

impl AnyChildSpec {
    /// The child's name.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// let spec: AnyChildSpec = ChildSpec::new("counter", || Counter(0)).into();
    /// assert_eq!(spec.name(), "counter");
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }
}

impl fmt::Debug for AnyChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyChildSpec")
            .field("name", &self.inner.name())
            .field("kind", &self.inner.kind())
            .finish()
    }
}

impl<A: Actor<Context = Context<A>>> From<ChildSpec<A>> for AnyChildSpec {
    fn from(spec: ChildSpec<A>) -> Self {
        Self { inner: Arc::new(spec) }
    }
}

/// The type-erased face of a [`ChildSpec`] that supervisors work with.
pub(crate) trait ErasedSpec: Send + Sync {
    fn name(&self) -> &str;
    fn kind(&self) -> &'static str;
    fn policy(&self) -> RestartPolicy;
    fn shutdown_timeout(&self) -> Duration;
    fn backoff(&self) -> RestartBackoff;
    fn criticality(&self) -> Criticality;
    /// Builds a fresh instance and spawns it, contained, on the current
    /// arbiter; `Err` if the factory panicked (nothing was spawned).
    fn start(&self, cx: ChildContext, notify: ExitNotifier) -> Result<InstanceControl, ExitReason>;
    /// Retires the mailbox (and those of `closes_with`, recursively).
    fn close(&self);
    /// The mailbox's live depth.
    fn mailbox_gauge(&self) -> Arc<dyn MailboxGauge>;
}

impl<A: Actor<Context = Context<A>>> ErasedSpec for ChildSpec<A> {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        short_type_name::<A>()
    }

    fn policy(&self) -> RestartPolicy {
        self.policy
    }

    fn shutdown_timeout(&self) -> Duration {
        self.shutdown_timeout
    }

    fn backoff(&self) -> RestartBackoff {
        self.backoff
    }

    fn criticality(&self) -> Criticality {
        self.criticality
    }

    fn start(&self, cx: ChildContext, notify: ExitNotifier) -> Result<InstanceControl, ExitReason> {
        let rx = self.mailbox.open();
        if let Some(arbiter) = &self.arbiter {
            let (control, stop_rx, kill_rx) = remote_control();
            let (factory, on_stop) = (self.factory.clone(), self.on_stop.clone());
            let spawned = arbiter.spawn(async move {
                match catch_unwind(AssertUnwindSafe(|| factory(&cx))) {
                    Ok(actor) => run_contained(instance(actor, rx, stop_rx, on_stop), kill_rx, notify),
                    Err(payload) => notify(ExitReason::Panicked(panic_message(&*payload))),
                }
            });
            if !spawned {
                return Err(ExitReason::Failed(format!("the arbiter of {} has stopped", self.name)));
            }
            return Ok(control);
        }
        let factory = &self.factory;
        let actor = catch_unwind(AssertUnwindSafe(|| factory(&cx)))
            .map_err(|payload| ExitReason::Panicked(panic_message(&*payload)))?;
        let (stop_tx, stop_rx) = oneshot::channel::<Instant>();
        Ok(spawn_contained(
            instance(actor, rx, stop_rx, self.on_stop.clone()),
            stop_tx,
            notify,
        ))
    }

    fn close(&self) {
        self.mailbox.close();
        for spec in &self.closes_with {
            spec.close();
        }
    }

    fn mailbox_gauge(&self) -> Arc<dyn MailboxGauge> {
        self.mailbox.clone()
    }
}

/// The context future of one instance: `actor` draining `rx`, stopped
/// through `stop_rx` (by `on_stop`, else `ctx.stop()`).
fn instance<A: Actor<Context = Context<A>>>(
    actor: A,
    rx: super::mailbox::SharedReceiver<A>,
    stop_rx: oneshot::Receiver<Instant>,
    on_stop: Option<StopHook<A>>,
) -> actix::dev::ContextFut<A, Context<A>> {
    let mut ctx = Context::<A>::new();
    ctx.spawn(MailboxDrain::new(rx));
    ctx.spawn(
        stop_rx
            .into_actor(&actor)
            .map(move |request, act, ctx| match (request, on_stop) {
                (Ok(deadline), Some(hook)) => hook(act, ctx, deadline),
                _ => ctx.stop(),
            }),
    );
    ctx.into_future(actor)
}

/// `my_crate::actors::PodWorker<X>` → `PodWorker`.
pub(crate) fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}
