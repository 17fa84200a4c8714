//! One running child instance: its context future, wrapped so that a panic,
//! a stop or a kill always ends in exactly one exit report.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use actix::dev::ContextFut;
use actix::{Actor, Context};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::exit::{ExitReason, FailureSlot, panic_message, with_failure_slot};

/// Called once with the exit reason when an instance ends.
pub(crate) type ExitNotifier = Box<dyn FnOnce(ExitReason) + Send>;

/// The supervisor's grip on a running instance. Dropping it kills the
/// instance (so the children of a vanished supervisor never linger).
#[derive(Debug, Default)]
pub(crate) struct InstanceControl {
    stop: Option<oneshot::Sender<Instant>>,
    kill: Option<oneshot::Sender<()>>,
}

impl InstanceControl {
    /// Asks for an orderly stop that should be over by `deadline`.
    pub(crate) fn request_stop(&mut self, deadline: Instant) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(deadline);
        }
    }

    /// Drops the instance at its next poll.
    pub(crate) fn kill(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
    }
}

/// Spawns `fut` on the current arbiter, contained: returns the control and
/// the receiver the instance must watch for stop requests.
pub(crate) fn spawn_contained<A>(
    fut: ContextFut<A, Context<A>>,
    stop_tx: oneshot::Sender<Instant>,
    notify: ExitNotifier,
) -> InstanceControl
where
    A: Actor<Context = Context<A>>,
{
    let (kill_tx, kill_rx) = oneshot::channel();
    run_contained(fut, kill_rx, notify);
    InstanceControl {
        stop: Some(stop_tx),
        kill: Some(kill_tx),
    }
}

/// A control whose instance is started elsewhere (on another arbiter) with
/// the receiving ends: `(control, stop receiver, kill receiver)`.
pub(crate) fn remote_control() -> (InstanceControl, oneshot::Receiver<Instant>, oneshot::Receiver<()>) {
    let (stop_tx, stop_rx) = oneshot::channel();
    let (kill_tx, kill_rx) = oneshot::channel();
    let control = InstanceControl {
        stop: Some(stop_tx),
        kill: Some(kill_tx),
    };
    (control, stop_rx, kill_rx)
}

/// Spawns `fut` on the current arbiter, contained, ended early by `kill`.
pub(crate) fn run_contained<A>(fut: ContextFut<A, Context<A>>, kill: oneshot::Receiver<()>, notify: ExitNotifier)
where
    A: Actor<Context = Context<A>>,
{
    actix_rt::spawn(Contained {
        fut: Some(Box::pin(fut)),
        kill,
        failure: FailureSlot::default(),
        notify: Some(notify),
    });
}

type BoxedContextFut<A> = Pin<Box<ContextFut<A, Context<A>>>>;

/// Polls a context future inside `catch_unwind`; reports how it ended.
struct Contained<A: Actor<Context = Context<A>>> {
    fut: Option<BoxedContextFut<A>>,
    kill: oneshot::Receiver<()>,
    failure: FailureSlot,
    notify: Option<ExitNotifier>,
}

impl<A: Actor<Context = Context<A>>> Contained<A> {
    /// Drops the context future (itself contained: dropping polls it once,
    /// running `stopping`/`stopped` on the old value), then reports.
    fn finish(&mut self, reason: ExitReason) {
        if let Some(fut) = self.fut.take() {
            with_failure_slot(&self.failure, || {
                if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(fut))) {
                    tracing::warn!(panic = %panic_message(&*payload), "supervised actor panicked while being dropped");
                }
            });
        }
        if let Some(notify) = self.notify.take() {
            notify(reason);
        }
    }
}

impl<A: Actor<Context = Context<A>>> Future for Contained<A> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let this = &mut *self;
        let Some(fut) = this.fut.as_mut() else {
            return Poll::Ready(());
        };
        // A kill or a vanished supervisor (sender dropped) both end the instance.
        if Pin::new(&mut this.kill).poll(cx).is_ready() {
            this.finish(ExitReason::Killed);
            return Poll::Ready(());
        }
        let polled = with_failure_slot(&this.failure, || {
            catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx)))
        });
        let reason = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(())) => match this.failure.borrow_mut().take() {
                Some(reason) => ExitReason::Failed(reason),
                None => ExitReason::Normal,
            },
            Err(payload) => ExitReason::Panicked(panic_message(&*payload)),
        };
        this.finish(reason);
        Poll::Ready(())
    }
}

impl<A: Actor<Context = Context<A>>> Drop for Contained<A> {
    fn drop(&mut self) {
        // Dropped before finishing (runtime shutdown, task cancelled): still report.
        if self.notify.is_some() {
            self.finish(ExitReason::Killed);
        }
    }
}
