//! Pure: housekeeping decisions (upstream `HandlePodCleanups`): which running
//! pods nobody wants must be killed, and which workers can be forgotten.

use std::borrow::Borrow;
use std::collections::HashMap;

use crate::kuberuntime::pod_status::RuntimePodStatus;
use crate::messages::PodUid;
use crate::messages::pod_work::WorkerState;

/// What housekeeping should do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Pods running in the runtime that no source wants (kill them).
    pub kill: Vec<PodUid>,
    /// Workers of pods no longer desired that have terminated (forget them).
    pub forget: Vec<PodUid>,
}

/// The versions of housekeeping's three inputs: the pod manager's pods, the
/// PLEG cache's entries and the workers' lifecycle records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// [`PodManager::generation`](crate::pod_manager::PodManager::generation).
    pub pods: u64,
    /// [`PodCache::generation`](crate::pleg::PodCache::generation).
    pub runtime: u64,
    /// [`PodSyncStatuses::generation`](crate::pod_workers::PodSyncStatuses::generation).
    pub workers: u64,
}

/// A pass over every pod at least this often, whatever the inputs say.
pub const FULL_PASS_PERIOD: std::time::Duration = std::time::Duration::from_secs(10);

/// When a housekeeping pass may be skipped: its inputs are the versions a
/// pass that found nothing to do saw, less than [`FULL_PASS_PERIOD`] ago.
/// The same inputs give the same plan, and that plan was empty. A pass that
/// found work is never the reason to skip the next (what it asked for may
/// not have happened). At 10k idle pods a pass built three maps of every pod
/// every 2 s: a tenth of the idle node's CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkipWhenUnchanged {
    quiet: Option<(Inputs, tokio::time::Instant)>,
}

impl SkipWhenUnchanged {
    /// Whether the pass at `now` with `inputs` may be skipped.
    pub fn may_skip(&self, inputs: Inputs, now: tokio::time::Instant) -> bool {
        self.quiet
            .is_some_and(|(seen, at)| seen == inputs && now.saturating_duration_since(at) < FULL_PASS_PERIOD)
    }

    /// Records a pass made at `now` over `inputs`, and whether it found
    /// nothing to do.
    pub fn ran(&mut self, inputs: Inputs, now: tokio::time::Instant, found_nothing: bool) {
        self.quiet = found_nothing.then_some((inputs, now));
    }
}

/// Decides the cleanup from which UIDs are desired, the runtime's pods, and
/// the workers' states. A pod already being terminated by its worker is not
/// killed again. `runtime` may hold the statuses or shared pointers to them
/// (the PLEG cache's `Arc`s: no copy of every pod's status per round);
/// `desired` answers from the pod manager (no set of every UID per round).
pub fn cleanup<S: Borrow<RuntimePodStatus>>(
    desired: impl Fn(&PodUid) -> bool,
    runtime: &[S],
    workers: &HashMap<PodUid, WorkerState>,
) -> Cleanup {
    let mut kill: Vec<PodUid> = runtime
        .iter()
        .map(Borrow::borrow)
        .filter(|s| !desired(&s.uid) && s.could_have_running_containers())
        .filter(|s| !matches!(workers.get(&s.uid), Some(WorkerState::Terminating)))
        .map(|s| s.uid.clone())
        .collect();
    kill.sort();
    let mut forget: Vec<PodUid> = workers
        .iter()
        .filter(|(uid, st)| !desired(uid) && **st == WorkerState::Terminated)
        .map(|(uid, _)| uid.clone())
        .collect();
    forget.sort();
    Cleanup { kill, forget }
}

impl Cleanup {
    /// Nothing to kill or forget.
    pub fn is_empty(&self) -> bool {
        self.kill.is_empty() && self.forget.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::kuberuntime::pod_status::{SandboxState, SandboxStatus};

    #[test]
    fn a_pass_is_skipped_only_after_a_quiet_pass_over_the_same_inputs_within_the_period() {
        let t0 = tokio::time::Instant::now();
        let inputs = Inputs {
            pods: 1,
            runtime: 2,
            workers: 3,
        };
        let mut skip = SkipWhenUnchanged::default();
        assert!(!skip.may_skip(inputs, t0), "no pass yet");
        skip.ran(inputs, t0, true);
        assert!(skip.may_skip(inputs, t0 + std::time::Duration::from_secs(2)));
        for changed in [
            Inputs { pods: 9, ..inputs },
            Inputs { runtime: 9, ..inputs },
            Inputs { workers: 9, ..inputs },
        ] {
            assert!(
                !skip.may_skip(changed, t0 + std::time::Duration::from_secs(2)),
                "{changed:?}"
            );
        }
        assert!(
            !skip.may_skip(inputs, t0 + FULL_PASS_PERIOD),
            "a full pass every period"
        );
        skip.ran(inputs, t0, false);
        assert!(!skip.may_skip(inputs, t0), "the last pass found work");
    }

    fn rt(uid: &str, ready: bool) -> RuntimePodStatus {
        let mut s = RuntimePodStatus::empty(uid.into(), "p", "ns");
        s.sandboxes.push(SandboxStatus {
            id: format!("sb-{uid}"),
            state: if ready {
                SandboxState::Ready
            } else {
                SandboxState::NotReady
            },
            created_at: Timestamp::UNIX_EPOCH,
            attempt: 0,
            ips: vec![],
            host_network: false,
        });
        s
    }

    #[test]
    fn unwanted_running_pods_are_killed_desired_ones_kept() {
        let desired: std::collections::HashSet<PodUid> = ["keep".into()].into();
        let runtime = vec![rt("keep", true), rt("orphan", true), rt("dead", false)];
        let c = cleanup(|u| desired.contains(u), &runtime, &HashMap::new());
        assert_eq!(c.kill, vec![PodUid::from("orphan")]);
    }

    #[test]
    fn terminating_workers_are_not_killed_twice_terminated_ones_forgotten() {
        let desired = std::collections::HashSet::<PodUid>::new();
        let runtime = vec![rt("a", true), rt("b", true)];
        let workers: HashMap<PodUid, WorkerState> = [
            ("a".into(), WorkerState::Terminating),
            ("c".into(), WorkerState::Terminated),
            ("d".into(), WorkerState::Syncing),
        ]
        .into();
        let c = cleanup(|u| desired.contains(u), &runtime, &workers);
        assert_eq!(c.kill, vec![PodUid::from("b")]);
        assert_eq!(c.forget, vec![PodUid::from("c")]);
    }
}
