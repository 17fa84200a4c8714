//! [`CmActor`]: the `container-manager` actor. It starts the
//! [`ContainerManager`] (decision + QoS hierarchy) as soon as the tree is
//! up, then updates the QoS cgroups every minute (upstream's periodic
//! `UpdateCgroups`). It owns nothing: the manager is a shared handle, and a
//! restarted actor just resumes its timer.

use actix::prelude::*;

use super::manager::{ContainerManager, QOS_UPDATE_PERIOD};

/// The `container-manager` actor.
pub struct CmActor {
    cm: ContainerManager,
    period: std::time::Duration,
}

impl CmActor {
    /// An actor driving `cm`.
    pub fn new(cm: ContainerManager) -> Self {
        Self {
            cm,
            period: QOS_UPDATE_PERIOD,
        }
    }

    fn update(&mut self, ctx: &mut Context<Self>) {
        let cm = self.cm.clone();
        ctx.spawn(
            async move {
                if let Err(e) = cm.update_qos().await {
                    tracing::warn!(error = %e, "failed to update QoS cgroups");
                }
            }
            .into_actor(self),
        );
    }
}

impl Actor for CmActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let cm = self.cm.clone();
        ctx.spawn(
            async move {
                cm.start().await;
            }
            .into_actor(self),
        );
        ctx.run_interval(self.period, |act, ctx| act.update(ctx));
    }
}
