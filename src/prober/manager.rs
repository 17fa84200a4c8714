//! [`ProberManager`]: keeps one [`ProbeWorker`] per probe of every running
//! container (upstream `prober_manager`: `AddPod`, `RemovePod`,
//! `StopLivenessAndStartup`, `CleanupPods`).
//!
//! Every second it compares what should be probed with the children of the
//! `probe-workers` supervisor (the supervision tree is the registry, so a
//! restarted manager knows its workers):
//! - a worker is started once its container runs (it has an id and a
//!   `running` state) in a pod that is not `Succeeded`/`Failed`;
//! - an existing worker stays while its pod is desired and not terminal and
//!   its probe is still in the spec — it handles the container's restarts;
//! - liveness and startup workers are stopped when the pod is being deleted
//!   (upstream `StopLivenessAndStartup`);
//! - a stopped worker's progress and results are dropped from the store, and
//!   so is everything of pods no longer desired.
//!
//! Regular containers and restartable init containers (sidecars) are probed.

use std::collections::HashSet;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{Pod, PodStatus};

use super::worker::{ProbeWorker, ProberDeps, container_status, probe_of};
use crate::actors::supervisor::{
    ChildRef, ChildSpec, RestartPolicy, StartChild, StopChild, SupervisionTree, Supervisor,
};
use crate::messages::PodUid;
use crate::messages::probe::ProbeKind;
use crate::pod_manager::pod_uid;

/// How often the manager reconciles.
pub const RECONCILE_PERIOD: Duration = Duration::from_secs(1);

/// Mailbox of a probe worker (it takes no messages).
const WORKER_MAILBOX: usize = 4;

/// One probe worker's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkerKey {
    /// The pod.
    pub uid: PodUid,
    /// The container.
    pub container: String,
    /// The probe.
    pub kind: ProbeKind,
}

fn kind_tag(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::Liveness => "liveness",
        ProbeKind::Readiness => "readiness",
        ProbeKind::Startup => "startup",
    }
}

impl WorkerKey {
    /// The supervised child's name: `probe-<kind>-<container>.<uid>`
    /// (container names hold no dot).
    ///
    /// ```
    /// use actlet::messages::probe::ProbeKind;
    /// use actlet::prober::manager::WorkerKey;
    /// let k = WorkerKey { uid: "u-1".into(), container: "app".into(), kind: ProbeKind::Readiness };
    /// assert_eq!(k.child_name(), "probe-readiness-app.u-1");
    /// assert_eq!(WorkerKey::parse(&k.child_name()), Some(k));
    /// ```
    pub fn child_name(&self) -> String {
        format!("probe-{}-{}.{}", kind_tag(self.kind), self.container, self.uid)
    }

    /// The key of a child name made by [`child_name`](Self::child_name).
    pub fn parse(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("probe-")?;
        let (tag, rest) = rest.split_once('-')?;
        let kind = [ProbeKind::Liveness, ProbeKind::Readiness, ProbeKind::Startup]
            .into_iter()
            .find(|k| kind_tag(*k) == tag)?;
        let (container, uid) = rest.split_once('.')?;
        Some(Self {
            uid: PodUid::new(uid),
            container: container.to_string(),
            kind,
        })
    }
}

const KINDS: [ProbeKind; 3] = [ProbeKind::Startup, ProbeKind::Readiness, ProbeKind::Liveness];

/// The containers of `pod` that can be probed: the regular ones and the
/// restartable init containers (sidecars).
fn probed_containers(pod: &Pod) -> impl Iterator<Item = &k8s_openapi::api::core::v1::Container> {
    let spec = pod.spec.as_ref();
    let sidecars = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.map(|s| s.containers.as_slice())
        .unwrap_or_default()
        .iter()
        .chain(sidecars)
}

/// Whether any container of `pod` that can be probed has a probe: a pass
/// looks up the status of those pods only (at 10k pods without probes a
/// full pass read 10,000 statuses to start no worker).
pub fn has_probes(pod: &Pod) -> bool {
    probed_containers(pod).any(|c| KINDS.iter().any(|&kind| probe_of(c, kind).is_some()))
}

/// The workers that should exist, given the desired pods with their API
/// status and the workers that exist now. See the [module docs](self).
pub fn desired_workers<'a>(
    pods: impl IntoIterator<Item = (&'a Pod, Option<&'a PodStatus>)>,
    existing: &HashSet<WorkerKey>,
) -> HashSet<WorkerKey> {
    let mut out = HashSet::new();
    for (pod, status) in pods {
        let Some(status) = status else { continue };
        if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
            continue;
        }
        let uid = pod_uid(pod);
        let deleting = pod.metadata.deletion_timestamp.is_some();
        for container in probed_containers(pod) {
            let running = container_status(status, &container.name)
                .and_then(|s| s.state.as_ref())
                .is_some_and(|s| s.running.is_some());
            for kind in KINDS {
                if probe_of(container, kind).is_none() || (deleting && kind != ProbeKind::Readiness) {
                    continue;
                }
                let key = WorkerKey {
                    uid: uid.clone(),
                    container: container.name.clone(),
                    kind,
                };
                if running || existing.contains(&key) {
                    out.insert(key);
                }
            }
        }
    }
    out
}

/// The prober manager actor; see the [module docs](self).
pub struct ProberManager {
    deps: ProberDeps,
    supervisor: ChildRef<Supervisor>,
    workers_path: String,
    tree: SupervisionTree,
    /// The pod and status generations the last pass saw, and when the last
    /// full pass ran (derived: a new instance starts with a full pass).
    seen: Option<(u64, u64)>,
    last_full: Option<tokio::time::Instant>,
}

/// A pass runs at least this often even when neither the pods nor their
/// statuses changed (workers that went away are started again).
pub const FULL_RECONCILE_PERIOD: std::time::Duration = std::time::Duration::from_secs(10);

impl ProberManager {
    /// A manager starting workers under `supervisor`, whose path in `tree`
    /// is `workers_path`.
    pub fn new(
        deps: ProberDeps,
        supervisor: ChildRef<Supervisor>,
        workers_path: String,
        tree: SupervisionTree,
    ) -> Self {
        Self {
            deps,
            supervisor,
            workers_path,
            tree,
            seen: None,
            last_full: None,
        }
    }

    fn existing(&self) -> HashSet<WorkerKey> {
        let prefix = format!("{}/", self.workers_path);
        self.tree
            .subtree(&self.workers_path)
            .into_iter()
            .filter(|c| c.path.strip_prefix(&prefix).is_some_and(|rest| !rest.contains('/')))
            .filter_map(|c| WorkerKey::parse(&c.name))
            .collect()
    }

    fn start_worker(&self, key: &WorkerKey) {
        let (deps, k) = (self.deps.clone(), key.clone());
        let spec = ChildSpec::new(key.child_name(), move || {
            ProbeWorker::new(k.uid.clone(), k.container.clone(), k.kind, deps.clone())
        })
        .restart(RestartPolicy::Transient)
        .mailbox_capacity(WORKER_MAILBOX);
        tracing::debug!(pod_uid = %key.uid, container = %key.container, probe = kind_tag(key.kind), "starting probe worker");
        if let Err(e) = self.supervisor.do_send(StartChild(spec.into())) {
            tracing::warn!(error = %e, "cannot start a probe worker; retrying at the next reconcile");
        }
    }

    fn reconcile(&mut self) {
        if self.deps.store.take_injected_panic() {
            panic!("injected panic in the prober manager");
        }
        // Nothing to do when neither the pods nor their statuses changed
        // (at 10k pods a pass walks every pod, status and worker).
        let generations = (self.deps.pods.generation(), self.deps.statuses.generation());
        let recent = self.last_full.is_some_and(|t| t.elapsed() < FULL_RECONCILE_PERIOD);
        if self.seen == Some(generations) && recent {
            return;
        }
        self.seen = Some(generations);
        self.last_full = Some(tokio::time::Instant::now());
        // Only the pods with probes are copied (pointers), not all 10k.
        let probed = self.deps.pods.pods_where(has_probes);
        let statuses: Vec<_> = probed.iter().map(|p| self.deps.statuses.status(&pod_uid(p))).collect();
        let existing = self.existing();
        let inputs = probed.iter().zip(&statuses).map(|(p, s)| (p.as_ref(), s.as_deref()));
        let desired = desired_workers(inputs, &existing);
        for key in desired.iter().filter(|k| !existing.contains(k)) {
            self.start_worker(key);
        }
        for key in existing.iter().filter(|k| !desired.contains(k)) {
            tracing::debug!(pod_uid = %key.uid, container = %key.container, probe = kind_tag(key.kind), "stopping probe worker");
            let _ = self.supervisor.do_send(StopChild(key.child_name()));
            self.deps.store.remove_worker(&key.uid, &key.container, key.kind);
        }
        let stored = self.deps.store.pods();
        if stored.is_empty() {
            return;
        }
        for uid in stored {
            if !self.deps.pods.contains(&uid) {
                self.deps.store.remove_pod(&uid);
            }
        }
    }
}

impl Actor for ProberManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(RECONCILE_PERIOD, |act, _| act.reconcile());
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
