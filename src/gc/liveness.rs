//! Which pods' leftovers may go: the GC's view of pod lifecycle (upstream
//! `podStateProvider.ShouldPodContentBeRemoved`).
//!
//! Liveness is derived here, in one place, from what the node knows: the
//! desired pods ([`PodManager`](crate::pod_manager::PodManager)), the pod
//! workers' states ([`PodSyncStatuses`](crate::pod_workers::PodSyncStatuses))
//! and the runtime's own listing. A pod's content may be
//! removed only when all sources are ready and the pod is not desired (or is
//! desired but being deleted), no worker is still working on it, and nothing
//! of it runs any more.

use std::collections::{HashMap, HashSet};

use crate::cri::v1;
use crate::kuberuntime::labels::POD_UID_LABEL;
use crate::messages::PodUid;
use crate::messages::pod_work::WorkerState;

/// What the node knows about its pods at the start of a GC round.
#[derive(Clone, Debug, Default)]
pub struct PodLiveness {
    /// All pod sources have sent their first snapshot (upstream `allSourcesReady`).
    pub sources_ready: bool,
    /// Desired pods, with whether their deletion was requested (API `deletionTimestamp`).
    pub desired: HashMap<PodUid, bool>,
    /// The pod workers' states; `None` when they could not be asked.
    pub workers: Option<HashMap<PodUid, WorkerState>>,
    /// Pods with a running container or a ready sandbox in the runtime.
    pub active: HashSet<PodUid>,
}

impl PodLiveness {
    /// Marks as active every pod with a running container or a ready sandbox
    /// in these runtime listings (a container in unknown state is killed
    /// before removal, as upstream does, so it does not keep its pod alive).
    pub fn with_runtime(mut self, containers: &[v1::Container], sandboxes: &[v1::PodSandbox]) -> Self {
        use v1::{ContainerState as C, PodSandboxState as S};
        for c in containers {
            if c.state == C::ContainerRunning as i32 {
                self.active.insert(container_pod_uid(c));
            }
        }
        for s in sandboxes {
            if s.state == S::SandboxReady as i32 {
                self.active.insert(sandbox_pod_uid(s));
            }
        }
        self
    }

    /// Upstream `ShouldPodContentBeRemoved`: everything of the pod (dead
    /// containers, sandboxes, log directory) may be removed.
    pub fn should_pod_content_be_removed(&self, uid: &PodUid) -> bool {
        if !self.sources_ready || self.active.contains(uid) {
            return false;
        }
        let Some(workers) = &self.workers else {
            return false;
        };
        let worker_done = workers.get(uid).is_none_or(|s| *s == WorkerState::Terminated);
        match self.desired.get(uid) {
            None => worker_done,
            Some(deleting) => *deleting && workers.get(uid) == Some(&WorkerState::Terminated),
        }
    }
}

/// The pod UID label of a container (empty when missing).
pub fn container_pod_uid(c: &v1::Container) -> PodUid {
    PodUid::new(c.labels.get(POD_UID_LABEL).cloned().unwrap_or_default())
}

/// The pod UID of a sandbox (metadata first, then the label).
pub fn sandbox_pod_uid(s: &v1::PodSandbox) -> PodUid {
    let uid = s
        .metadata
        .as_ref()
        .map(|m| m.uid.clone())
        .filter(|u| !u.is_empty())
        .or_else(|| s.labels.get(POD_UID_LABEL).cloned())
        .unwrap_or_default();
    PodUid::new(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(desired: &[(&str, bool)], workers: &[(&str, WorkerState)], active: &[&str]) -> PodLiveness {
        PodLiveness {
            sources_ready: true,
            desired: desired.iter().map(|(u, d)| (PodUid::from(*u), *d)).collect(),
            workers: Some(workers.iter().map(|(u, s)| (PodUid::from(*u), *s)).collect()),
            active: active.iter().map(|u| PodUid::from(*u)).collect(),
        }
    }

    #[test]
    fn content_removal_table() {
        use WorkerState::*;
        // (case, liveness, uid, removable)
        let cases = [
            ("unknown pod, nothing runs", live(&[], &[], &[]), "gone", true),
            ("unknown pod, still running", live(&[], &[], &["gone"]), "gone", false),
            (
                "removed, worker terminating",
                live(&[], &[("gone", Terminating)], &[]),
                "gone",
                false,
            ),
            (
                "removed, worker syncing",
                live(&[], &[("gone", Syncing)], &[]),
                "gone",
                false,
            ),
            (
                "removed, worker terminated",
                live(&[], &[("gone", Terminated)], &[]),
                "gone",
                true,
            ),
            ("desired", live(&[("p", false)], &[], &[]), "p", false),
            (
                "desired, terminated, not deleted",
                live(&[("p", false)], &[("p", Terminated)], &[]),
                "p",
                false,
            ),
            (
                "desired, deleting, terminated",
                live(&[("p", true)], &[("p", Terminated)], &[]),
                "p",
                true,
            ),
            (
                "desired, deleting, terminating",
                live(&[("p", true)], &[("p", Terminating)], &[]),
                "p",
                false,
            ),
        ];
        for (case, l, uid, want) in cases {
            assert_eq!(l.should_pod_content_be_removed(&uid.into()), want, "{case}");
        }
    }

    #[test]
    fn nothing_goes_before_sources_are_ready_or_without_worker_states() {
        let mut l = live(&[], &[], &[]);
        l.sources_ready = false;
        assert!(!l.should_pod_content_be_removed(&"gone".into()));
        let mut l = live(&[], &[], &[]);
        l.workers = None;
        assert!(!l.should_pod_content_be_removed(&"gone".into()));
    }

    #[test]
    fn runtime_listing_marks_running_pods_active() {
        use std::collections::HashMap as M;
        let c = |uid: &str, state: v1::ContainerState| v1::Container {
            labels: M::from([(POD_UID_LABEL.to_string(), uid.to_string())]),
            state: state as i32,
            ..Default::default()
        };
        let s = |uid: &str, state: v1::PodSandboxState| v1::PodSandbox {
            metadata: Some(v1::PodSandboxMetadata {
                uid: uid.into(),
                ..Default::default()
            }),
            state: state as i32,
            ..Default::default()
        };
        let l = live(&[], &[], &[]).with_runtime(
            &[
                c("a", v1::ContainerState::ContainerRunning),
                c("b", v1::ContainerState::ContainerExited),
                c("u", v1::ContainerState::ContainerUnknown),
            ],
            &[
                s("b", v1::PodSandboxState::SandboxNotready),
                s("r", v1::PodSandboxState::SandboxReady),
            ],
        );
        let mut active: Vec<_> = l.active.iter().map(|u| u.as_str().to_string()).collect();
        active.sort();
        assert_eq!(active, ["a", "r"]);
        assert!(l.should_pod_content_be_removed(&"b".into()));
    }
}
