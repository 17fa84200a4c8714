//! [`EventRecorderActor`]: turns [`RecordEvent`]s into core/v1 Events on the
//! API server.
//!
//! Each event is built ([`make_event`]), correlated ([`EventCorrelator`]:
//! aggregation, repeats, spam filter) and queued in the [`Outbox`]; writes
//! run as spawned futures (never on the actor thread), at most one per Event
//! object and [`MAX_IN_FLIGHT`](super::outbox::MAX_IN_FLIGHT) in all.
//!
//! # Failures
//! A write that cannot reach the API server (transport error, 429, 5xx) is
//! retried per [`RetryPolicy`] — upstream tries 12 times, 10 s apart, the
//! first wait randomized — then dropped with a warning. Upstream does not
//! retry a 5xx; we do, since an overloaded API server is the usual case. A
//! write the API server rejects (other 4xx) is dropped with a warning (debug
//! for AlreadyExists). Meanwhile the actor keeps taking events: an API server
//! that is down loses events, nothing else.

use crate::clock::WallClock;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, SpawnHandle, WrapFuture};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use tokio::time::Instant;

use super::correlator::{Correlation, CorrelatorConfig, EventCorrelator};
use super::event_object::make_event;
use super::outbox::{Outbox, Pushed, Write};
use super::sink::{SendError, send};
use crate::messages::event::RecordEvent;

/// How failed writes are retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per write, the first included (upstream `maxTriesPerEvent`: 12).
    pub max_tries: u32,
    /// The wait between attempts (upstream `defaultSleepDuration`: 10 s); the
    /// first wait is a random part of it, so nodes do not retry in step.
    pub interval: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_tries: 12,
            interval: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `failed + 1`, after `failed` failures.
    pub fn delay(&self, failed: u32) -> Duration {
        if failed <= 1 {
            self.interval.mul_f64(rand::random::<f64>())
        } else {
            self.interval
        }
    }
}

/// Records events on the API server; see the [module docs](self).
pub struct EventRecorderActor {
    client: Client,
    node_name: String,
    clock: WallClock,
    correlator: EventCorrelator,
    outbox: Outbox,
    retry: RetryPolicy,
    last_nanos: i128,
    wakeup: Option<(Instant, SpawnHandle)>,
}

impl std::fmt::Debug for EventRecorderActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorderActor")
            .field("node_name", &self.node_name)
            .field("outbox", &self.outbox)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl EventRecorderActor {
    /// A recorder writing through `client` as the kubelet of `node_name`
    /// (the events' `source.host` and `reportingInstance`), with upstream's
    /// correlation and retry settings and the system clock.
    pub fn new(client: Client, node_name: String) -> Self {
        Self {
            client,
            node_name,
            clock: WallClock::system(),
            correlator: EventCorrelator::default(),
            outbox: Outbox::default(),
            retry: RetryPolicy::default(),
            last_nanos: 0,
            wakeup: None,
        }
    }

    /// Stamps events with `clock` instead of the system clock (tests).
    pub fn with_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.clock = WallClock::from_fn(clock);
        self
    }

    /// Retries failed writes per `retry`.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Correlates with `config` (aggregation window, spam filter).
    pub fn with_correlator(mut self, config: CorrelatorConfig) -> Self {
        self.correlator = EventCorrelator::new(config);
        self
    }

    /// Unix nanoseconds for a new Event's name: `now`'s, moved past the last
    /// one so two events of one object never share a name.
    fn unique_nanos(&mut self, now: Timestamp) -> i128 {
        self.last_nanos = now.as_nanosecond().max(self.last_nanos + 1);
        self.last_nanos
    }

    fn push(&mut self, write: Write) {
        if let Pushed::Dropped(w) = self.outbox.push(write) {
            tracing::warn!(
                event = w.event.metadata.name.as_deref().unwrap_or_default(),
                reason = w.event.reason.as_deref().unwrap_or_default(),
                queued = self.outbox.queued(),
                "too many events waiting for the API server; event dropped"
            );
        }
    }

    /// Sends what is due, and wakes up when the next held-back write is.
    fn dispatch(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        while let Some(write) = self.outbox.next_ready(now) {
            let client = self.client.clone();
            let fut = async move {
                let result = send(client, &write).await;
                (write, result)
            };
            ctx.spawn(
                fut.into_actor(self)
                    .map(|(write, result), act, ctx| act.written(write, result, ctx)),
            );
        }
        let Some(due) = self.outbox.next_due_after(now) else {
            return;
        };
        if self.wakeup.as_ref().is_some_and(|(at, _)| *at <= due) {
            return;
        }
        if let Some((_, handle)) = self.wakeup.take() {
            ctx.cancel_future(handle);
        }
        let handle = ctx.run_later(due - now, |act, ctx| {
            act.wakeup = None;
            act.dispatch(ctx);
        });
        self.wakeup = Some((due, handle));
    }

    fn written(
        &mut self,
        mut write: Write,
        result: Result<k8s_openapi::api::core::v1::Event, SendError>,
        ctx: &mut Context<Self>,
    ) {
        self.outbox.done(&write.key());
        match result {
            Ok(stored) => self.correlator.update_state(&stored),
            Err(e) if e.is_already_exists() => tracing::debug!(error = %e, "event exists already; not retried"),
            Err(e) if !e.is_retryable() => tracing::warn!(error = %e, "event rejected; not retried"),
            Err(e) => {
                write.tries += 1;
                if write.tries >= self.retry.max_tries {
                    tracing::warn!(error = %e, tries = write.tries, "unable to write event; retry limit exceeded, dropped");
                } else {
                    tracing::debug!(error = %e, tries = write.tries, "unable to write event; will retry");
                    write.not_before = Some(Instant::now() + self.retry.delay(write.tries));
                    self.push(write);
                }
            }
        }
        self.dispatch(ctx);
    }
}

impl Actor for EventRecorderActor {
    type Context = Context<Self>;
}

impl Handler<RecordEvent> for EventRecorderActor {
    type Result = ();

    fn handle(&mut self, msg: RecordEvent, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        let nanos = self.unique_nanos(now);
        let event = make_event(&msg, &self.node_name, now, nanos);
        match self.correlator.correlate(event, now) {
            Correlation::Skip => tracing::debug!(
                object = msg.involved.name.as_deref().unwrap_or_default(),
                reason = %msg.reason,
                message = %msg.message,
                "event dropped by the spam filter"
            ),
            Correlation::Send(event) => {
                self.push(Write::new(*event));
                self.dispatch(ctx);
            }
        }
    }
}
