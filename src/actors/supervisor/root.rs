//! The root of a tree: [`RootSupervisor`], and what happens when the root
//! itself gives up ([`RootFailure`]).

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
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
pub type RootFailureHook = Arc<dyn Fn(&RootFailure) + Send + Sync>;

/// The root supervisor gave up.
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
    pub(crate) fn start(spec: ChildSpec<Supervisor>, hook: Option<RootFailureHook>) -> Self {
        let tree = SupervisionTree::new();
        let path = spec.name().to_owned();
        let addr = spec.child_ref();
        let spec: Arc<dyn ErasedSpec> = Arc::new(spec);
        tree.insert(ChildInfo::new(path.clone(), path.clone(), spec.kind(), spec.policy()));
        let (exit_tx, exit) = watch::channel(None);
        // The root's control lives until it exits: dropping handles never kills it.
        let control: Rc<RefCell<Option<InstanceControl>>> = Rc::default();
        let notify: ExitNotifier = {
            let (tree, path, spec, control) = (tree.clone(), path.clone(), spec.clone(), control.clone());
            Box::new(move |reason: ExitReason| {
                drop(control.borrow_mut().take());
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
        *control.borrow_mut() = Some(started);
        tree.update(&path, |info| {
            info.state = ChildState::Running;
            info.generation = 1;
            info.started_at = Some(SystemTime::now());
        });
        Self { path, addr, tree, exit }
    }

    /// Path (name) of the root.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stable address of the root supervisor (for [`GetTree`](super::GetTree) & co).
    pub fn addr(&self) -> &ChildRef<Supervisor> {
        &self.addr
    }

    /// The live tree.
    pub fn tree(&self) -> &SupervisionTree {
        &self.tree
    }

    /// Adds a dynamic child to the root.
    ///
    /// # Errors
    /// See [`StartChild`].
    pub async fn start_child(&self, spec: impl Into<AnyChildSpec>) -> Result<String, SupervisorError> {
        self.addr.send(StartChild(spec.into())).await?
    }

    /// Stops and retires a child of the root.
    ///
    /// # Errors
    /// See [`StopChild`].
    pub async fn stop_child(&self, name: impl Into<String>) -> Result<ExitReason, SupervisorError> {
        self.addr.send(StopChild(name.into())).await?
    }

    /// Stops the whole tree in reverse start order within `deadline` and
    /// waits until the root has exited.
    ///
    /// # Errors
    /// [`SupervisorError::Unreachable`] or [`SupervisorError::ShuttingDown`]
    /// if the root is gone or already shutting down.
    pub async fn shutdown(&self, deadline: Duration) -> Result<ShutdownReport, SupervisorError> {
        let report = self.addr.send(Shutdown { deadline }).await??;
        self.wait().await;
        Ok(report)
    }

    /// Waits until the root exits and returns how.
    pub async fn wait(&self) -> ExitReason {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or(ExitReason::Killed),
            Err(_) => ExitReason::Killed,
        }
    }

    /// How the root exited, if it has.
    pub fn exit_reason(&self) -> Option<ExitReason> {
        self.exit.borrow().clone()
    }
}
