//! The root of a tree: [`RootSupervisor`], and what happens when the root
//! itself gives up ([`RootFailure`]).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use actix::System;
use tokio::sync::watch;

use super::actor::Supervisor;
use super::child_ref::ChildRef;
use super::exit::ExitReason;
use super::instance::{ExitNotifier, InstanceControl};
use super::messages::{Shutdown, ShutdownReport, StartChild, StopChild, SupervisorError};
use super::spec::{AnyChildSpec, ChildContext, ChildSpec, ErasedSpec};
use super::tree::{ChildInfo, ChildState, Failure, SupervisionTree};

/// Called when the root supervisor exits abnormally (escalation or panic).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use actlet::actors::supervisor::{ExitReason, RootFailure, RootFailureHook};
///
/// let failures = Arc::new(AtomicU32::new(0));
/// let counted = failures.clone();
/// let hook: RootFailureHook = Arc::new(move |failure: &RootFailure| {
///     counted.fetch_add(1, Ordering::SeqCst);
///     eprintln!("{failure}");
/// });
/// hook(&RootFailure { supervisor: "root".into(), reason: ExitReason::Killed });
/// assert_eq!(failures.load(Ordering::SeqCst), 1);
/// ```
pub type RootFailureHook = Arc<dyn Fn(&RootFailure) + Send + Sync>;

/// The root supervisor gave up.
///
/// ```
/// # use actlet::actors::supervisor::{ExitReason, RootFailure};
/// let failure = RootFailure {
///     supervisor: "root".into(),
///     reason: ExitReason::Failed("child root/pleg failed: runtime down".into()),
/// };
/// assert_eq!(failure.to_string(), "root supervisor root failed: child root/pleg failed: runtime down");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootFailure {
    /// Path (name) of the root supervisor.
    pub supervisor: String,
    /// How it ended; for an escalation, the message names the child and its
    /// last failure, down the chain of supervisors that escalated.
    pub reason: ExitReason,
}

impl fmt::Display for RootFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "root supervisor {} {}", self.supervisor, self.reason)
    }
}

/// The default root-failure hook: logs the failure at error level and stops
/// the actix `System` with exit code 1.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// let system = actix::System::new();
/// system.block_on(async {
///     let counter = ChildSpec::new("counter", || Counter(0));
///     let counter_ref = counter.child_ref();
///     // No `on_root_failure`: this hook is the default.
///     SupervisorSpec::new("root").intensity(0, Duration::from_secs(5)).child(counter).start_root();
///     counter_ref.do_send(Crash).unwrap(); // the root gives up at once
/// });
/// assert_eq!(system.run_with_code().unwrap(), 1, "the System stopped with exit code 1");
/// ```
pub fn stop_system_on_root_failure(failure: &RootFailure) {
    tracing::error!(
        supervisor = %failure.supervisor,
        reason = %failure.reason,
        "root supervisor failed; stopping the actor system with exit code 1"
    );
    if let Some(system) = System::try_current() {
        system.stop_with_code(1);
    }
}

/// Handle on a running root supervisor. Cheap to clone; dropping it does not
/// stop the tree.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root: RootSupervisor = SupervisorSpec::new("root").child(counter).start_root();
/// let waiter = root.clone();
/// let exited = actix::spawn(async move { waiter.wait().await });
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// assert_eq!(root.exit_reason(), None, "still running");
/// root.shutdown(Duration::from_secs(5)).await.unwrap();
/// assert_eq!(exited.await.unwrap(), ExitReason::Normal);
/// # });
/// ```
#[derive(Clone)]
pub struct RootSupervisor {
    path: String,
    addr: ChildRef<Supervisor>,
    tree: SupervisionTree,
    exit: watch::Receiver<Option<ExitReason>>,
}

impl fmt::Debug for RootSupervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RootSupervisor")
            .field("path", &self.path)
            .field("exit", &*self.exit.borrow())
            .finish_non_exhaustive()
    }
}

impl RootSupervisor {
    pub(crate) fn start(spec: ChildSpec<Supervisor>, hook: Option<RootFailureHook>, tree: SupervisionTree) -> Self {
        let path = spec.name().to_owned();
        let addr = spec.child_ref();
        let spec: Arc<dyn ErasedSpec> = Arc::new(spec);
        tree.insert(ChildInfo::new(path.clone(), path.clone(), spec.kind(), spec.policy()));
        tree.watch_mailbox(&path, spec.mailbox_gauge());
        let (exit_tx, exit) = watch::channel(None);
        // The root's control lives until it exits: dropping handles never kills it.
        let control: Arc<std::sync::Mutex<Option<InstanceControl>>> = Arc::default();
        let notify: ExitNotifier = {
            let (tree, path, spec, control) = (tree.clone(), path.clone(), spec.clone(), control.clone());
            Box::new(move |reason: ExitReason| {
                drop(control.lock().unwrap_or_else(|e| e.into_inner()).take());
                let abnormal = reason.is_abnormal();
                tree.update(&path, |info| {
                    info.state = if abnormal {
                        ChildState::Failed
                    } else {
                        ChildState::Stopped
                    };
                    if abnormal {
                        info.last_failure = Some(Failure {
                            reason: reason.clone(),
                            at: SystemTime::now(),
                        });
                    }
                });
                tree.mark_descendants_stopped(&path);
                spec.close();
                if matches!(reason, ExitReason::Failed(_) | ExitReason::Panicked(_)) {
                    let failure = RootFailure {
                        supervisor: path.clone(),
                        reason: reason.clone(),
                    };
                    match &hook {
                        Some(hook) => hook(&failure),
                        None => stop_system_on_root_failure(&failure),
                    }
                }
                exit_tx.send_replace(Some(reason));
            })
        };
        let cx = ChildContext {
            path: path.clone(),
            name: path.clone(),
            generation: 1,
            tree: tree.clone(),
        };
        let started = spec
            .start(cx, notify)
            .expect("building a Supervisor value cannot panic");
        *control.lock().unwrap_or_else(|e| e.into_inner()) = Some(started);
        tree.update(&path, |info| {
            info.state = ChildState::Running;
            info.generation = 1;
            info.started_at = Some(SystemTime::now());
        });
        Self { path, addr, tree, exit }
    }

    /// Path (name) of the root.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("kubelet").start_root();
    /// assert_eq!(root.path(), "kubelet");
    /// # });
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stable address of the root supervisor (for [`GetTree`](super::GetTree) & co).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").start_root();
    /// let tree = root.addr().send(GetTree).await.unwrap();
    /// assert_eq!(tree[0].path, "root");
    /// # });
    /// ```
    pub fn addr(&self) -> &ChildRef<Supervisor> {
        &self.addr
    }

    /// The live tree.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// assert_eq!(root.tree().get("root/counter").unwrap().state, ChildState::Running);
    /// # });
    /// ```
    pub fn tree(&self) -> &SupervisionTree {
        &self.tree
    }

    /// Adds a dynamic child to the root.
    ///
    /// # Errors
    /// See [`StartChild`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").start_root();
    /// let pod = ChildSpec::new("pod-1", || Counter(0));
    /// let pod_ref = pod.child_ref();
    /// assert_eq!(root.start_child(pod).await.unwrap(), "root/pod-1");
    /// assert_eq!(pod_ref.send(Add(2)).await, Ok(2));
    /// # });
    /// ```
    pub async fn start_child(&self, spec: impl Into<AnyChildSpec>) -> Result<String, SupervisorError> {
        self.addr.send(StartChild(spec.into())).await?
    }

    /// Stops and retires a child of the root.
    ///
    /// # Errors
    /// See [`StopChild`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").start_root();
    /// root.start_child(ChildSpec::new("pod-1", || Counter(0))).await.unwrap();
    /// assert_eq!(root.stop_child("pod-1").await.unwrap(), ExitReason::Normal);
    /// assert!(root.tree().get("root/pod-1").is_none(), "a stopped dynamic child is forgotten");
    /// # });
    /// ```
    pub async fn stop_child(&self, name: impl Into<String>) -> Result<ExitReason, SupervisorError> {
        self.addr.send(StopChild(name.into())).await?
    }

    /// Stops the whole tree in reverse start order within `deadline` and
    /// waits until the root has exited.
    ///
    /// # Errors
    /// [`SupervisorError::Unreachable`] or [`SupervisorError::ShuttingDown`]
    /// if the root is gone or already shutting down.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root")
    ///     .child(ChildSpec::new("first", || Counter(0)))
    ///     .child(ChildSpec::new("second", || Counter(0)))
    ///     .start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// let report = root.shutdown(Duration::from_secs(5)).await.unwrap();
    /// assert_eq!(report.stopped, ["root/second", "root/first"], "reverse start order");
    /// assert_eq!(root.exit_reason(), Some(ExitReason::Normal));
    /// # });
    /// ```
    pub async fn shutdown(&self, deadline: Duration) -> Result<ShutdownReport, SupervisorError> {
        let report = self.addr.send(Shutdown { deadline }).await??;
        self.wait().await;
        Ok(report)
    }

    /// Waits until the root exits and returns how.
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
    ///     .intensity(0, Duration::from_secs(5))
    ///     .child(counter)
    ///     .on_root_failure(|_| {}) // keep the System running
    ///     .start_root();
    /// counter_ref.do_send(Crash).unwrap();
    /// let reason = root.wait().await;
    /// assert!(reason.to_string().contains("crashed on purpose"), "{reason}");
    /// # });
    /// ```
    pub async fn wait(&self) -> ExitReason {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or(ExitReason::Killed),
            Err(_) => ExitReason::Killed,
        }
    }

    /// How the root exited, if it has.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").start_root();
    /// assert_eq!(root.exit_reason(), None);
    /// root.shutdown(Duration::from_secs(1)).await.unwrap();
    /// assert_eq!(root.exit_reason(), Some(ExitReason::Normal));
    /// # });
    /// ```
    pub fn exit_reason(&self) -> Option<ExitReason> {
        self.exit.borrow().clone()
    }
}
