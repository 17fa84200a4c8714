//! [`ProbeWorker`]: probes one container with one probe (upstream `worker`).
//!
//! A thin actor over [`logic`](super::logic): every `periodSeconds` (the
//! first turn jittered within the period while the kubelet is young) it
//! reads the pod's API status, decides, and — when a probe is due — spawns
//! the handler as a future of its context, so the actor never waits on it;
//! a tick that comes while a probe runs is skipped (a Go ticker drops it).
//! Its progress and results live in the shared [`ProbeStore`](super::store::ProbeStore),
//! so a restarted instance carries on where the previous one was.
//!
//! Events (upstream's, about the container): `Unhealthy` — `<Kind> probe
//! failed: <output>` or `<Kind> probe errored and resulted in unknown state:
//! <error>`; `ProbeWarning` — `<Kind> probe warning: <output>`.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodStatus, Probe};
use tokio::time::Instant;

use super::handlers::{self, Answer, Raw, Target};
use super::logic::{Observed, ProbeTiming, StoreOp, Turn, after_probe, before_probe};
use super::metrics::{Labels, ResultLabel};
use super::store::{ProbeStore, bare_id};
use crate::actors::supervisor::SupervisedRecipient;
use crate::container_restart::container_should_restart;
use crate::cri::SharedRuntime;
use crate::events::{EventRecorder, container_field_path};
use crate::messages::PodUid;
use crate::messages::event::EventType;
use crate::messages::probe::{ProbeKind, ProbeOutcome, ProbeResult};
use crate::pod_manager::PodManager;
use crate::status::StatusCache;

/// What every probe actor shares.
#[derive(Clone)]
pub struct ProberDeps {
    /// Results and worker progress (outlives the actors).
    pub store: ProbeStore,
    /// The pods' API statuses (container ids, states, pod IP).
    pub statuses: StatusCache,
    /// The desired pods (specs).
    pub pods: PodManager,
    /// The runtime (exec probes).
    pub runtime: SharedRuntime,
    /// Events.
    pub events: EventRecorder,
    /// Where result changes go (the sync loop).
    pub results: Option<SupervisedRecipient<ProbeResult>>,
    /// Wall clock (container start times are wall-clock timestamps).
    pub wall_clock: crate::clock::WallClock,
    /// When the kubelet started (first probes are jittered while it is young).
    pub started: Instant,
}

impl std::fmt::Debug for ProberDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProberDeps").finish_non_exhaustive()
    }
}

/// The probe of `kind` in `container`, if it has one.
pub fn probe_of(container: &Container, kind: ProbeKind) -> Option<&Probe> {
    match kind {
        ProbeKind::Liveness => container.liveness_probe.as_ref(),
        ProbeKind::Readiness => container.readiness_probe.as_ref(),
        ProbeKind::Startup => container.startup_probe.as_ref(),
    }
}

/// Upstream's name of a probe type in messages.
pub fn kind_name(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::Liveness => "Liveness",
        ProbeKind::Readiness => "Readiness",
        ProbeKind::Startup => "Startup",
    }
}

/// A container of the pod (regular or init) by name.
pub fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    let all = spec.containers.iter().chain(spec.init_containers.iter().flatten());
    all.into_iter().find(|c| c.name == name)
}

/// The status of container `name` with an id: regular first, then init.
pub fn container_status<'a>(status: &'a PodStatus, name: &str) -> Option<&'a ContainerStatus> {
    let with_id = |s: &&ContainerStatus| s.name == name && s.container_id.as_deref().is_some_and(|id| !id.is_empty());
    status
        .container_statuses
        .iter()
        .flatten()
        .find(with_id)
        .or_else(|| status.init_container_statuses.iter().flatten().find(with_id))
}

/// One probe worker; see the [module docs](self).
pub struct ProbeWorker {
    uid: PodUid,
    container: String,
    kind: ProbeKind,
    deps: ProberDeps,
    in_flight: bool,
}

impl ProbeWorker {
    /// The worker of probe `kind` of `container` in pod `uid`.
    pub fn new(uid: PodUid, container: String, kind: ProbeKind, deps: ProberDeps) -> Self {
        Self {
            uid,
            container,
            kind,
            deps,
            in_flight: false,
        }
    }

    fn spec(&self) -> Option<(Arc<Pod>, Container, Probe)> {
        let pod = self.deps.pods.get(&self.uid)?.pod;
        let container = find_container(&pod, &self.container)?.clone();
        let probe = probe_of(&container, self.kind)?.clone();
        Some((pod, container, probe))
    }

    fn observe(&self, pod: &Pod, container: &Container, status: &PodStatus) -> Observed {
        let terminal = matches!(status.phase.as_deref(), Some("Succeeded" | "Failed"));
        let cs = container_status(status, &self.container);
        let id = cs
            .and_then(|c| c.container_id.as_deref())
            .map(|id| bare_id(id).to_string());
        let state = cs.and_then(|c| c.state.as_ref());
        let running_for = state.and_then(|s| s.running.as_ref()).map(|r| {
            let now = self.deps.wall_clock.now();
            r.started_at
                .as_ref()
                .map_or(0, |t| now.duration_since(t.0).as_secs().max(0))
        });
        // Terminated for good: its exit code against its own or the pod's
        // restart policy and rules (a sidecar's own `Always` restarts it).
        let exit_code = state.and_then(|s| s.terminated.as_ref()).map(|t| t.exit_code);
        let never = match (exit_code, pod.spec.as_ref()) {
            (Some(code), Some(spec)) => !container_should_restart(container, spec, code),
            _ => false,
        };
        let started = container.startup_probe.is_none()
            || id.as_deref().is_some_and(|id| {
                self.deps.store.get(&self.uid, ProbeKind::Startup, id) == Some(ProbeOutcome::Success)
            });
        Observed {
            pod_terminal: terminal,
            pod_deleting: pod.metadata.deletion_timestamp.is_some(),
            container_id: id,
            running_for,
            terminated: state.is_some_and(|s| s.terminated.is_some()),
            never_restarted: never,
            started,
        }
    }

    /// Applies a store change; a changed result goes to the sync loop.
    fn apply(&self, op: StoreOp) {
        let store = &self.deps.store;
        let (id, outcome) = match op {
            StoreOp::Remove(id) => return store.remove(&self.uid, self.kind, &id),
            StoreOp::Init(id, _) if store.get(&self.uid, self.kind, &id).is_some() => return,
            StoreOp::Init(id, o) | StoreOp::Set(id, o) => (id, o),
        };
        if store.set(&self.uid, self.kind, &id, outcome)
            && let Some(results) = &self.deps.results
        {
            let msg = ProbeResult {
                uid: self.uid.clone(),
                container_id: id,
                kind: self.kind,
                outcome,
            };
            if let Err(e) = results.do_send(msg) {
                tracing::warn!(error = %e, "cannot report a probe result; the next resync picks it up");
            }
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.in_flight {
            return;
        }
        let Some((pod, container, probe)) = self.spec() else {
            return; // the manager stops workers whose pod or probe is gone
        };
        let Some(status) = self.deps.statuses.status(&self.uid) else {
            return;
        };
        let timing = ProbeTiming::of(&probe);
        let seen = self.observe(&pod, &container, &status);
        let store = self.deps.store.clone();
        let mut progress = store.progress(&self.uid, &self.container, self.kind);
        let (turn, ops) = before_probe(self.kind, &timing, &mut progress, &seen);
        store.save_progress(&self.uid, &self.container, self.kind, progress);
        for op in ops {
            self.apply(op);
        }
        match turn {
            Turn::Wait => {}
            Turn::Stop => {
                tracing::debug!("probe worker done");
                store.remove_worker(&self.uid, &self.container, self.kind);
                ctx.stop();
            }
            Turn::Probe(id) => self.spawn_probe(ctx, pod, container, probe, timing, id, status.pod_ip.clone()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn spawn_probe(
        &mut self,
        ctx: &mut Context<Self>,
        pod: Arc<Pod>,
        container: Container,
        probe: Probe,
        timing: ProbeTiming,
        id: String,
        pod_ip: Option<String>,
    ) {
        self.in_flight = true;
        let runtime = self.deps.runtime.clone();
        let pod_name = format!(
            "{}_{}({})",
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            self.uid
        );
        let timeout = Duration::from_secs(timing.timeout.unsigned_abs());
        let (c, p, cid) = (container.clone(), probe, id.clone());
        let run = async move {
            let target = Target {
                pod_ip: pod_ip.as_deref(),
                container: &c,
                container_id: &cid,
                runtime: &runtime,
                pod_name: &pod_name,
            };
            handlers::run_with_retries(&p, target, timeout).await
        };
        let began = Instant::now();
        ctx.spawn(run.into_actor(self).map(move |answer, act, _ctx| {
            act.in_flight = false;
            act.count(&pod, &answer, began.elapsed());
            act.record(&pod, &container, &timing, &id, answer);
        }));
    }

    /// The metrics of one probe run (a probe that could not run is not
    /// counted, as upstream).
    fn count(&self, pod: &Pod, answer: &Result<Answer, String>, took: Duration) {
        let result = match answer {
            Err(_) => return,
            Ok(a) => match a.result {
                Raw::Success | Raw::Warning => ResultLabel::Successful,
                Raw::Failure => ResultLabel::Failed,
                Raw::Unknown => ResultLabel::Unknown,
            },
        };
        let labels = Labels {
            probe_type: kind_name(self.kind).to_string(),
            container: self.container.clone(),
            pod: pod.metadata.name.clone().unwrap_or_default(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            pod_uid: self.uid.to_string(),
        };
        self.deps.store.metrics().observe(&labels, result, took);
    }

    /// Upstream `prober.probe` (events) and the end of `doProbe`.
    fn record(
        &mut self,
        pod: &Pod,
        container: &Container,
        timing: &ProbeTiming,
        id: &str,
        answer: Result<Answer, String>,
    ) {
        let kind = kind_name(self.kind);
        let event = |type_, reason: &str, message: String| {
            let path = container_field_path(pod, &container.name);
            self.deps.events.pod_event(pod, path, type_, reason, message);
        };
        let outcome = match answer {
            Err(e) => {
                tracing::debug!(probe = kind, error = %e, "probe errored");
                event(
                    EventType::Warning,
                    "Unhealthy",
                    format!("{kind} probe errored and resulted in unknown state: {e}"),
                );
                return; // a probe that could not run is thrown away
            }
            Ok(Answer {
                result: Raw::Success, ..
            }) => ProbeOutcome::Success,
            Ok(Answer {
                result: Raw::Warning,
                output,
            }) => {
                event(
                    EventType::Warning,
                    "ProbeWarning",
                    format!("{kind} probe warning: {output}"),
                );
                ProbeOutcome::Success
            }
            Ok(Answer {
                result: Raw::Failure,
                output,
            }) => {
                tracing::info!(probe = kind, %output, "probe failed");
                event(
                    EventType::Warning,
                    "Unhealthy",
                    format!("{kind} probe failed: {output}"),
                );
                ProbeOutcome::Failure
            }
            Ok(Answer {
                result: Raw::Unknown, ..
            }) => ProbeOutcome::Failure,
        };
        let store = self.deps.store.clone();
        let mut progress = store.progress(&self.uid, &self.container, self.kind);
        let op = after_probe(self.kind, timing, &mut progress, id, outcome);
        store.save_progress(&self.uid, &self.container, self.kind, progress);
        if let Some(op) = op {
            self.apply(op);
        }
    }
}

impl Actor for ProbeWorker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let period = self
            .spec()
            .map_or(10, |(_, _, p)| ProbeTiming::of(&p).period)
            .unsigned_abs();
        let period = Duration::from_secs(period);
        // Upstream: while the kubelet is younger than the period, wait a
        // random part of it first, so probes of adopted pods spread out.
        let delay = if period > self.deps.started.elapsed() {
            period.mul_f64(rand::random::<f64>())
        } else {
            Duration::ZERO
        };
        ctx.run_later(delay, move |act, ctx| {
            act.tick(ctx);
            ctx.run_interval(period, |act, ctx| act.tick(ctx));
        });
    }
}
