//! [`VolumeManager`]: the reconciler actor — a thin shell that runs
//! [`reconcile_once`] every period and whenever a pod worker asks
//! ([`Reconcile`]), one pass at a time (a request during a pass runs
//! another pass right after it).
//!
//! Everything it knows lives in shared handles ([`ReconcileDeps`]): the
//! volume store, the token cache and the object watches outlive the
//! instance, so a panic mid-pass costs one pass — the supervisor's new
//! instance picks up from the store.

use std::time::Duration;

use actix::prelude::*;

use super::reconcile::{ReconcileDeps, reconcile_once};

/// Default period between passes.
pub const RECONCILE_PERIOD: Duration = Duration::from_secs(1);

pub use crate::messages::volumes::Reconcile;

/// The volume reconciler actor.
#[derive(Debug)]
pub struct VolumeManager {
    deps: ReconcileDeps,
    period: Duration,
    running: bool,
    again: bool,
}

impl VolumeManager {
    /// A reconciler over `deps`, passing every `period`.
    pub fn new(deps: ReconcileDeps, period: Duration) -> Self {
        Self {
            deps,
            period,
            running: false,
            again: false,
        }
    }

    fn kick(&mut self, ctx: &mut Context<Self>) {
        if self.running {
            self.again = true;
            return;
        }
        self.running = true;
        let deps = self.deps.clone();
        let span = tracing::debug_span!("volume_reconcile");
        ctx.spawn(
            tracing::Instrument::instrument(async move { reconcile_once(&deps).await }, span)
                .into_actor(self)
                .map(|(), act, ctx| {
                    act.running = false;
                    if std::mem::take(&mut act.again) {
                        act.kick(ctx);
                    }
                }),
        );
    }
}

impl Actor for VolumeManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.kick(ctx);
        ctx.run_interval(self.period, |act, ctx| act.kick(ctx));
    }
}

impl Handler<Reconcile> for VolumeManager {
    type Result = ();

    fn handle(&mut self, _: Reconcile, ctx: &mut Self::Context) {
        self.kick(ctx);
    }
}

#[cfg(test)]
#[path = "actor_tests.rs"]
mod tests;
