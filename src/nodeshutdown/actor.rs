//! [`NodeShutdownManager`]: the `node-shutdown-manager` actor (upstream
//! `nodeshutdown.managerImpl.processShutdownEvent`).
//!
//! On [`NodeShutdownEvent`]`(true)` it marks the node shutting down (the
//! [`ShutdownHandle`]: NotReady, no admission), then kills the active pods
//! group by group, lowest priority first: every pod of a group at once with
//! the group's grace period (or its own, when shorter), `Failed`/`Terminated`
//! with a `DisruptionTarget` condition, and waits until the group's workers
//! have terminated or the group's period is over. `false` cancels: the node
//! admits pods again.
//!
//! Fields: all derived (the round in flight). The shutting-down flag is owned
//! state in the handle: a manager rebuilt during a shutdown resumes it, killing
//! whatever is still active.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;

use super::groups::{group_by_priority, pod_grace};
use super::state::{self, ShutdownState};
use super::{MESSAGE, REASON, ShutdownConfig, ShutdownHandle};
use crate::actors::supervisor::SupervisedRecipient;
use crate::events::{EventRecorder, node_ref};
use crate::messages::event::EventType;
use crate::messages::pod_work::{KillOptions, KillStatus, UpdatePod, WorkerState};
use crate::pod_manager::{PodManager, format_pod, pod_uid};
use crate::pod_workers::PodSyncStatuses;

/// How often a group's workers are checked while it terminates.
const POLL: Duration = Duration::from_millis(200);

pub use crate::messages::node_shutdown::NodeShutdownEvent;

/// What the manager works with.
#[derive(Clone)]
pub struct ShutdownDeps {
    /// The priority groups.
    pub config: ShutdownConfig,
    /// The desired pods.
    pub pods: PodManager,
    /// The pods' lifecycle records (which are active, which have terminated).
    pub pod_sync_statuses: PodSyncStatuses,
    /// The pod workers (kills go there).
    pub workers: SupervisedRecipient<UpdatePod>,
    /// Node events.
    pub events: EventRecorder,
    /// The node's name (events).
    pub node_name: String,
    /// The owned state.
    pub handle: ShutdownHandle,
    /// `<root-dir>/graceful_node_shutdown_state` (`None`: not kept).
    pub state_file: Option<std::path::PathBuf>,
    /// The start/end time gauges.
    pub gauges: super::ShutdownGauges,
    /// logind's delay lock, while held (outlives the actor).
    pub inhibit: super::logind::InhibitLock,
}

/// The `node-shutdown-manager` actor. See the [module docs](self).
pub struct NodeShutdownManager {
    pub(super) deps: ShutdownDeps,
    running: bool,
}

impl NodeShutdownManager {
    /// A manager working from `deps`.
    pub fn new(deps: ShutdownDeps) -> Self {
        Self { deps, running: false }
    }

    /// Pods whose worker is running or stopping them (a resumed shutdown
    /// waits for the ones a previous instance already killed).
    fn active(&self) -> Vec<Arc<Pod>> {
        let states = self.deps.pod_sync_statuses.states();
        self.deps
            .pods
            .pods()
            .into_iter()
            .map(|d| d.pod)
            .filter(|p| {
                matches!(
                    states.get(&pod_uid(p)),
                    Some(WorkerState::Syncing | WorkerState::Terminating)
                )
            })
            .collect()
    }

    fn process(&mut self, ctx: &mut Context<Self>) {
        if std::mem::replace(&mut self.running, true) {
            return;
        }
        let recorded = self.record_start();
        let groups = group_by_priority(&self.deps.config.periods, self.active());
        tracing::info!(
            pods = groups.iter().map(|(_, p)| p.len()).sum::<usize>(),
            "shutdown manager processing shutdown event"
        );
        let deps = self.deps.clone();
        let work = async move {
            for (group, pods) in groups {
                if pods.is_empty() {
                    continue;
                }
                if !deps.handle.shutting_down() {
                    tracing::info!("shutdown cancelled; the remaining groups keep running");
                    return;
                }
                for pod in &pods {
                    if deps.pod_sync_statuses.state(&pod_uid(pod)) != Some(WorkerState::Syncing) {
                        continue; // already being killed
                    }
                    let grace = pod_grace(&group, pod);
                    tracing::info!(pod = %format_pod(pod), ?grace, priority = group.priority, "shutdown manager killing pod");
                    let kill = KillOptions {
                        grace_period_override: Some(grace),
                        status: Some(KillStatus {
                            phase: "Failed".into(),
                            reason: REASON.into(),
                            message: MESSAGE.into(),
                            disruption: true,
                        }),
                    };
                    if let Err(e) = deps.workers.do_send(UpdatePod::kill(pod.clone(), kill)) {
                        tracing::warn!(pod = %format_pod(pod), error = %e, "shutdown manager failed killing pod");
                    }
                }
                let deadline = Instant::now() + group.grace_period;
                loop {
                    let done = pods.iter().all(|p| {
                        !matches!(
                            deps.pod_sync_statuses.state(&pod_uid(p)),
                            Some(WorkerState::Syncing | WorkerState::Terminating)
                        )
                    });
                    if done {
                        tracing::info!(
                            priority = group.priority,
                            "done waiting for all pods in group to terminate"
                        );
                        break;
                    }
                    if Instant::now() >= deadline {
                        tracing::info!(priority = group.priority, grace = ?group.grace_period, "shutdown manager pod killing time out");
                        break;
                    }
                    tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
                }
            }
        };
        ctx.spawn(work.into_actor(self).map(move |_, act, _| {
            act.running = false;
            if let Some(started) = &recorded {
                act.record(&started.ended(k8s_openapi::jiff::Timestamp::now()));
            }
            if act.deps.inhibit.release() {
                tracing::info!("released the shutdown inhibitor lock");
            }
            tracing::info!("shutdown manager completed processing shutdown event, node will shutdown shortly");
        }));
    }

    /// A shutdown starts: its start is stored and shown (a manager resuming
    /// one keeps the recorded start).
    fn record_start(&self) -> Option<ShutdownState> {
        self.deps.state_file.as_ref()?;
        let resumed = self
            .deps
            .state_file
            .as_deref()
            .and_then(state::load)
            .filter(|s| s.end_time == state::ZERO_TIME);
        let started = resumed.unwrap_or_else(|| ShutdownState::started(k8s_openapi::jiff::Timestamp::now()));
        self.record(&started);
        Some(started)
    }

    fn record(&self, s: &ShutdownState) {
        self.deps.gauges.show(s);
        if let Some(path) = &self.deps.state_file
            && let Err(e) = state::store(path, s)
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the node shutdown state");
        }
    }
}

impl Actor for NodeShutdownManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let periods = &self.deps.config.periods;
        tracing::info!(?periods, "node shutdown manager started");
        if let Some(s) = self.deps.state_file.as_deref().and_then(state::load) {
            self.deps.gauges.show(&s);
        }
        if self.deps.handle.shutting_down() {
            tracing::info!("restarted during a node shutdown: resuming it");
            self.process(ctx);
        }
        if let Some(target) = self.deps.config.logind.clone() {
            self.watch_logind(ctx, target);
        }
    }
}

impl Handler<NodeShutdownEvent> for NodeShutdownManager {
    type Result = ();

    fn handle(&mut self, NodeShutdownEvent(shutting_down): NodeShutdownEvent, ctx: &mut Self::Context) {
        self.on_event(shutting_down, ctx);
    }
}

impl NodeShutdownManager {
    /// A shutdown (`true`) or its cancellation, from any trigger.
    pub(super) fn on_event(&mut self, shutting_down: bool, ctx: &mut Context<Self>) {
        let message = if shutting_down {
            "Shutdown manager detected shutdown event"
        } else {
            "Shutdown manager detected shutdown cancellation"
        };
        tracing::info!(shutting_down, "{message}");
        self.deps.events.event(
            node_ref(&self.deps.node_name),
            EventType::Normal,
            "NodeShutdown",
            message,
        );
        self.deps.handle.set(shutting_down);
        if shutting_down {
            self.process(ctx);
        }
    }
}
