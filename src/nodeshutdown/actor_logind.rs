//! The `node-shutdown-manager`'s watch of systemd-logind (upstream
//! `managerImpl.start`): connect, make logind's maximum delay cover the
//! grace period, take the delay lock, then turn `PrepareForShutdown` into
//! shutdown events; a cancelled shutdown takes the lock again. A lost or
//! refused connection is tried again (5 s doubling to 5 min): a node agent
//! that lost logind must not lose graceful shutdown for good.
//!
//! The D-Bus side runs in its own tokio task, which the actor only hears
//! from through a channel: the task ends when the actor (its receiver) is
//! gone, and no D-Bus object is ever dropped outside the runtime.

use std::time::Duration;

use actix::prelude::*;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::ShutdownHandle;
use super::actor::NodeShutdownManager;
use super::groups::period_requested;
use super::logind::{InhibitLock, Logind, LogindError, LogindTarget};

const FIRST_RETRY: Duration = Duration::from_secs(5);
const MAX_RETRY: Duration = Duration::from_secs(300);

/// `PrepareForShutdown(start)`, forwarded by the watch task.
pub(super) struct LogindSignal(pub(super) bool);

impl Message for LogindSignal {
    type Result = ();
}

impl NodeShutdownManager {
    /// Starts the watch task; its signals arrive as [`LogindSignal`]s.
    pub(super) fn watch_logind(&mut self, ctx: &mut Context<Self>, target: LogindTarget) {
        let (tx, rx) = mpsc::channel(16);
        let watch = Watch {
            target,
            requested: period_requested(&self.deps.config.periods),
            lock: self.deps.inhibit.clone(),
            handle: self.deps.handle.clone(),
            signals: tx,
        };
        tokio::spawn(watch.run());
        ctx.add_stream(tokio_stream::wrappers::ReceiverStream::new(rx).map(LogindSignal));
    }
}

impl StreamHandler<LogindSignal> for NodeShutdownManager {
    fn handle(&mut self, LogindSignal(start): LogindSignal, ctx: &mut Context<Self>) {
        self.on_event(start, ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        // The task only ends when the actor is gone; the actor lives on.
    }
}

/// The D-Bus side of the watch.
struct Watch {
    target: LogindTarget,
    requested: Duration,
    lock: InhibitLock,
    handle: ShutdownHandle,
    signals: mpsc::Sender<bool>,
}

impl Watch {
    async fn run(self) {
        let mut failures: u32 = 0;
        loop {
            let outcome = tokio::select! {
                r = self.watch_once() => r,
                () = self.signals.closed() => return, // the manager is gone
            };
            match outcome {
                Ok(()) => {
                    failures = 0;
                    tracing::warn!("ended watching systemd-logind for shutdown events; reconnecting");
                }
                Err(e) => {
                    failures += 1;
                    if failures == 1 {
                        tracing::warn!(error = %e, "cannot watch systemd-logind: graceful node shutdown only on SIGUSR1 until it can");
                    } else {
                        tracing::debug!(error = %e, attempts = failures, "systemd-logind still unreachable");
                    }
                }
            }
            let retry = FIRST_RETRY
                .saturating_mul(1 << failures.saturating_sub(1).min(6))
                .min(MAX_RETRY);
            tokio::select! {
                () = tokio::time::sleep(retry) => {}
                () = self.signals.closed() => return,
            }
        }
    }

    /// One connection: until it ends (`Ok`) or fails.
    async fn watch_once(&self) -> Result<(), LogindError> {
        let logind = Logind::connect(&self.target).await?;
        // Subscribed first: a shutdown announced once the lock is held is
        // never missed.
        let mut signals = logind.shutdown_events().await?;
        if let Err(e) = logind.ensure_inhibit_delay(self.requested, &self.target.conf_dir).await {
            // Upstream stops here; the lock still buys logind's own maximum.
            tracing::error!(error = %e, "logind's InhibitDelayMaxSec is shorter than the shutdown grace period");
        }
        if !self.lock.held() && !self.handle.shutting_down() {
            self.lock.hold(logind.inhibit_shutdown().await?);
        }
        tracing::info!(
            inhibit_lock = self.lock.held(),
            "watching systemd-logind for node shutdown"
        );
        while let Some(start) = signals.next().await {
            if self.signals.send(start).await.is_err() {
                return Ok(()); // the manager is gone; `run` ends
            }
            if !start && !self.lock.held() {
                // Cancelled: the lock again, for the next shutdown.
                self.lock.hold(logind.inhibit_shutdown().await?);
                tracing::info!("took the shutdown inhibitor lock again");
            }
        }
        Ok(())
    }
}
