//! Pure: housekeeping decisions (upstream `HandlePodCleanups`): which running
//! pods nobody wants must be killed, and which workers can be forgotten.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

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

/// Decides the cleanup from the desired UIDs, the runtime's pods, and the
/// workers' states. A pod already being terminated by its worker is not
/// killed again. `runtime` may hold the statuses or shared pointers to them
/// (the PLEG cache's `Arc`s: no copy of every pod's status per round).
pub fn cleanup<S: Borrow<RuntimePodStatus>>(
    desired: &HashSet<PodUid>,
    runtime: &[S],
    workers: &HashMap<PodUid, WorkerState>,
) -> Cleanup {
    let mut kill: Vec<PodUid> = runtime
        .iter()
        .map(Borrow::borrow)
        .filter(|s| !desired.contains(&s.uid) && s.could_have_running_containers())
        .filter(|s| !matches!(workers.get(&s.uid), Some(WorkerState::Terminating)))
        .map(|s| s.uid.clone())
        .collect();
    kill.sort();
    let mut forget: Vec<PodUid> = workers
        .iter()
        .filter(|(uid, st)| !desired.contains(*uid) && **st == WorkerState::Terminated)
        .map(|(uid, _)| uid.clone())
        .collect();
    forget.sort();
    Cleanup { kill, forget }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::kuberuntime::pod_status::{SandboxState, SandboxStatus};

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
        let desired: HashSet<PodUid> = ["keep".into()].into();
        let runtime = vec![rt("keep", true), rt("orphan", true), rt("dead", false)];
        let c = cleanup(&desired, &runtime, &HashMap::new());
        assert_eq!(c.kill, vec![PodUid::from("orphan")]);
    }

    #[test]
    fn terminating_workers_are_not_killed_twice_terminated_ones_forgotten() {
        let desired = HashSet::new();
        let runtime = vec![rt("a", true), rt("b", true)];
        let workers: HashMap<PodUid, WorkerState> = [
            ("a".into(), WorkerState::Terminating),
            ("c".into(), WorkerState::Terminated),
            ("d".into(), WorkerState::Syncing),
        ]
        .into();
        let c = cleanup(&desired, &runtime, &workers);
        assert_eq!(c.kill, vec![PodUid::from("b")]);
        assert_eq!(c.forget, vec![PodUid::from("c")]);
    }
}
