//! Ordered graceful shutdown of a whole tree on a trigger or on SIGTERM/SIGINT.

use std::future::Future;
use std::time::Duration;

use super::messages::{ShutdownReport, SupervisorError};
use super::root::RootSupervisor;

/// Waits for `trigger`, then shuts the tree down (reverse start order,
/// within `deadline`) and waits for the root to exit.
///
/// # Errors
/// [`SupervisorError::Exited`] if the root exited before the trigger fired;
/// otherwise as [`RootSupervisor::shutdown`].
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
/// let trigger = tokio::time::sleep(Duration::from_secs(60)); // e.g. a maintenance window
/// let report = shutdown_when(&root, Duration::from_secs(5), trigger).await.unwrap();
/// assert_eq!(report.stopped, ["root/counter"]);
/// assert_eq!(root.exit_reason(), Some(ExitReason::Normal));
/// # });
/// ```
pub async fn shutdown_when(
    root: &RootSupervisor,
    deadline: Duration,
    trigger: impl Future<Output = ()>,
) -> Result<ShutdownReport, SupervisorError> {
    tokio::select! {
        () = trigger => {}
        reason = root.wait() => return Err(SupervisorError::Exited(reason)),
    }
    tracing::info!(root = %root.path(), ?deadline, "shutting down the supervision tree");
    let report = root.shutdown(deadline).await?;
    tracing::info!(stopped = ?report.stopped, killed = ?report.killed, "supervision tree stopped");
    Ok(report)
}

/// [`shutdown_when`] SIGTERM or SIGINT arrives.
///
/// # Errors
/// [`SupervisorError::Signal`] if the handlers cannot be installed; otherwise
/// as [`shutdown_when`].
///
/// # Examples
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// use nix::sys::signal::{Signal, kill};
/// use nix::unistd::Pid;
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// let handle = root.clone();
/// let stopped = actix::spawn(async move { shutdown_on_signals(&handle, Duration::from_secs(10)).await });
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// tokio::time::sleep(Duration::from_millis(10)).await; // the handlers are installed by now
/// kill(Pid::this(), Signal::SIGTERM).unwrap(); // what `kill -TERM` or the init system does
/// let report = stopped.await.unwrap().unwrap();
/// assert_eq!(report.stopped, ["root/counter"]);
/// # });
/// ```
#[cfg(unix)]
pub async fn shutdown_on_signals(root: &RootSupervisor, deadline: Duration) -> Result<ShutdownReport, SupervisorError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let signalled = async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM received"),
            _ = interrupt.recv() => tracing::info!("SIGINT received"),
        }
    };
    shutdown_when(root, deadline, signalled).await
}
