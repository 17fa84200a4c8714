//! [`LocalNodeConditions`]: the node conditions without an API server.
//!
//! In standalone mode there is no Node object to write, but embedders still
//! want to know when the node turns NotReady (runtime down, network not
//! ready, PLEG unhealthy). This actor computes the same four conditions as
//! the [`NodeActor`](super::NodeActor) every update period and whenever the
//! runtime health changes, keeps them in the [`NodeHandle`], and tells the
//! observers of every change.

use std::time::Duration;

use actix::{Actor, AsyncContext, Context, StreamHandler};
use tokio::sync::watch;
use tokio_stream::wrappers::WatchStream;

use super::NodeHandle;
use super::conditions::{Health, api_now, changed_conditions, update_conditions};
use crate::actors::supervisor::SupervisedRecipient;
use crate::clock::WallClock;
use crate::messages::node::NodeConditionChanged;
use crate::messages::runtime_health::RuntimeHealthChanged;
use crate::pleg::PlegHealthHandle;

/// Computes node conditions locally; see the [module docs](self).
pub struct LocalNodeConditions {
    runtime_health: watch::Receiver<RuntimeHealthChanged>,
    pleg_health: PlegHealthHandle,
    started: tokio::time::Instant,
    observers: Vec<SupervisedRecipient<NodeConditionChanged>>,
    handle: NodeHandle,
    period: Duration,
    wall_clock: WallClock,
    eviction: Option<crate::eviction::EvictionHandle>,
    shutdown: Option<crate::nodeshutdown::ShutdownHandle>,
}

impl LocalNodeConditions {
    /// Conditions from `runtime_health` and `pleg_health` every `period`.
    pub fn new(
        runtime_health: watch::Receiver<RuntimeHealthChanged>,
        pleg_health: PlegHealthHandle,
        started: tokio::time::Instant,
        observers: Vec<SupervisedRecipient<NodeConditionChanged>>,
        handle: NodeHandle,
        period: Duration,
        wall_clock: WallClock,
    ) -> Self {
        Self {
            runtime_health,
            pleg_health,
            started,
            observers,
            handle,
            period,
            wall_clock,
            eviction: None,
            shutdown: None,
        }
    }

    /// Reports NotReady while `shutdown` says the node is shutting down.
    pub fn with_shutdown(mut self, shutdown: crate::nodeshutdown::ShutdownHandle) -> Self {
        self.shutdown = Some(shutdown);
        self
    }

    /// Reports the pressure conditions `eviction` holds.
    pub fn with_eviction(mut self, eviction: crate::eviction::EvictionHandle) -> Self {
        self.eviction = Some(eviction);
        self
    }

    fn check(&mut self) {
        let runtime = self.runtime_health.borrow().clone();
        let pleg = self.pleg_health.check(tokio::time::Instant::now(), self.started);
        let mut health = Health::from_checks(&runtime, &pleg);
        if let Some(s) = &self.shutdown {
            health = health.with_error(s.status());
        }
        if let Some(e) = &self.eviction {
            health = health.with_pressure(&e.pressures());
        }
        let before = self.handle.view().conditions;
        let mut after = before.clone();
        update_conditions(&mut after, &health, api_now(self.wall_clock.now()));
        for change in changed_conditions(&before, &after) {
            tracing::info!(condition = %change.type_, status = %change.status, reason = %change.reason, message = %change.message, "node condition changed");
            for o in &self.observers {
                let _ = o.do_send(change.clone());
            }
        }
        self.handle.set_conditions(after);
    }
}

impl Actor for LocalNodeConditions {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.check();
        ctx.add_stream(WatchStream::from_changes(self.runtime_health.clone()));
        ctx.run_interval(self.period, |act, _| act.check());
    }
}

impl StreamHandler<RuntimeHealthChanged> for LocalNodeConditions {
    fn handle(&mut self, _item: RuntimeHealthChanged, _ctx: &mut Self::Context) {
        self.check();
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        // The runtime health checker is gone (shutdown): the interval carries on.
    }
}
