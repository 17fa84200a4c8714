//! [`NodeActor`]: registers the Node and keeps its status, one sync at a time.
//!
//! A sync runs every `update_frequency` and at once when the runtime health
//! verdict changes; a tick that comes while one runs is remembered and run
//! after it (never two writes in flight). Registration failures are retried
//! with upstream's backoff (100 ms doubling to 7 s).

use std::time::Duration;

use actix::prelude::*;
use kube::Api;
use tokio::time::Instant;
use tokio_stream::wrappers::WatchStream;

use super::conditions::{Health, changed_conditions};
use super::status::StatusInputs;
use super::sync::{SyncInput, SyncOutput, sync};
use super::{NodeDeps, NodeError};
use crate::events::node_ref;
use crate::messages::event::EventType;
use crate::messages::runtime_health::RuntimeHealthChanged;

const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(7);

/// The node actor. See the [module docs](self).
pub struct NodeActor {
    deps: NodeDeps,
    registered: bool,
    backoff: Duration,
    runtime_version: Option<String>,
    syncing: bool,
    pending: bool,
    retry_scheduled: bool,
    last_report: Option<Instant>,
}

impl NodeActor {
    /// A node actor working from `deps`.
    pub fn new(deps: NodeDeps) -> Self {
        Self {
            registered: !deps.register_node,
            deps,
            backoff: BACKOFF_START,
            runtime_version: None,
            syncing: false,
            pending: false,
            retry_scheduled: false,
            last_report: None,
        }
    }

    fn inputs(&self) -> StatusInputs {
        let d = &self.deps;
        StatusInputs {
            node_name: d.node_name.clone(),
            node_ip: d.node_ip.clone(),
            facts: d.facts.clone(),
            machine: d.machine.clone(),
            max_pods: d.max_pods,
            reserved: d.reserved,
            runtime_version: self.runtime_version.clone(),
            kubelet_port: d.kubelet_port,
            images: None,
            features: d.runtime_health.borrow().features,
            hard_eviction: d.hard_eviction,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.syncing {
            self.pending = true;
            return;
        }
        self.syncing = true;
        let now = Instant::now();
        let runtime = self.deps.runtime_health.borrow().clone();
        let pleg = self.deps.pleg_health.check(now, self.deps.started);
        let input = SyncInput {
            api: Api::all(self.deps.client.clone()),
            inputs: self.inputs(),
            health: Health::from_checks(&runtime, &pleg)
                .with_error(self.deps.shutdown.status())
                .with_pressure(&self.deps.eviction.pressures()),
            now: self.deps.wall_clock.now(),
            register: (!self.registered).then(|| (self.deps.node_labels.clone(), self.deps.taints.clone())),
            report_due: self
                .last_report
                .is_none_or(|t| now.saturating_duration_since(t) >= self.deps.report_frequency),
            version_from: self.runtime_version.is_none().then(|| self.deps.runtime.clone()),
            images_from: self.deps.runtime.clone(),
        };
        ctx.spawn(sync(input).into_actor(self).map(move |out, act, ctx| {
            act.syncing = false;
            act.done(out, now, ctx);
            if std::mem::take(&mut act.pending) {
                act.tick(ctx);
            }
        }));
    }

    /// One retry at a time, besides the periodic ticks.
    fn retry_later(&mut self, wait: Duration, ctx: &mut Context<Self>) {
        if !std::mem::replace(&mut self.retry_scheduled, true) {
            ctx.run_later(wait, |act, ctx| {
                act.retry_scheduled = false;
                act.tick(ctx);
            });
        }
    }

    /// Upstream `recordNodeStatusEvent`.
    fn record(&self, reasons: &[&'static str]) {
        let name = &self.deps.node_name;
        for reason in reasons {
            self.deps.events.event(
                node_ref(name),
                EventType::Normal,
                reason,
                format!("Node {name} status is now: {reason}"),
            );
        }
    }

    fn done(&mut self, out: SyncOutput, started: Instant, ctx: &mut Context<Self>) {
        let name = self.deps.node_name.clone();
        if out.runtime_version.is_some() {
            self.runtime_version = out.runtime_version;
        }
        match out.registration {
            Some(Ok(r)) => {
                self.registered = true;
                self.backoff = BACKOFF_START;
                self.deps.handle.set_uid(r.uid);
                self.record(&r.events);
            }
            Some(Err(e)) => {
                let wait = self.backoff;
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                tracing::warn!(node = %name, error = %e, retry_in = ?wait, "unable to register node with API server");
                self.retry_later(wait, ctx);
                return;
            }
            None => {}
        }
        match out.status {
            Some(Ok(s)) => {
                self.deps.handle.set_uid(s.uid);
                self.deps.handle.set_object(s.object);
                if s.wrote {
                    self.last_report = Some(started);
                    self.record(&s.events);
                    tracing::debug!(node = %name, "node status written");
                }
                let before = self.deps.handle.view().conditions;
                for change in changed_conditions(&before, &s.conditions) {
                    tracing::info!(node = %name, condition = %change.type_, status = %change.status,
                        reason = %change.reason, message = %change.message, "node condition changed");
                    for o in &self.deps.observers {
                        if let Err(e) = o.do_send(change.clone()) {
                            tracing::warn!(node = %name, error = %e, "node condition observer unreachable");
                        }
                    }
                }
                self.deps.handle.set_conditions(s.conditions);
            }
            Some(Err(NodeError::NotRegistered(_))) if self.deps.register_node => {
                tracing::warn!(node = %name, "node not found on the API server; registering it again");
                self.registered = false;
                self.retry_later(self.backoff, ctx);
            }
            Some(Err(e)) => {
                tracing::warn!(node = %name, error = %e, "unable to update node status; retrying at the next sync")
            }
            None => {}
        }
    }
}

impl Actor for NodeActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let name = &self.deps.node_name;
        tracing::info!(node = %name, register = self.deps.register_node, "node status sync starting");
        self.deps
            .events
            .event(node_ref(name), EventType::Normal, "Starting", "Starting kubelet.");
        ctx.add_stream(WatchStream::from_changes(self.deps.runtime_health.clone()));
        ctx.run_interval(self.deps.update_frequency, |act, ctx| act.tick(ctx));
        self.tick(ctx);
    }
}

impl StreamHandler<RuntimeHealthChanged> for NodeActor {
    fn handle(&mut self, _verdict: RuntimeHealthChanged, ctx: &mut Self::Context) {
        // Report a runtime that went down (or came back) without waiting for the next tick,
        // also when it changed during the first sync (registration): that sync read the
        // old verdict, so sync again right after it (upstream `fastStatusUpdateOnce`).
        if self.registered || self.syncing {
            self.tick(ctx);
        }
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        // The runtime health actor is gone; the periodic sync still reads the last verdict.
    }
}
