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
