//! Pure: what a merged [`PodUpdate`] asks of the pod manager and the workers
//! (upstream `HandlePodAdditions`, `HandlePodUpdates`, `HandlePodRemoves`,
//! `HandlePodReconcile`), and which PLEG events are worth a sync.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::messages::PodUid;
use crate::messages::pleg::{PlegEventType, PodLifecycleEvent};
use crate::messages::pod_update::{PodOperation, PodUpdate};
use crate::messages::pod_work::{KillOptions, SyncKind, UpdatePod};

/// A change to the desired pods.
#[derive(Clone, Debug)]
pub enum Desired {
    /// Add or replace this pod.
    Upsert(Arc<Pod>),
    /// Remove the pod with this UID.
    Remove(PodUid),
}

/// What one update does: changes to the pod manager, then work for workers.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Pod manager changes, applied first.
    pub desired: Vec<Desired>,
    /// Work for the pod workers, in order.
    pub work: Vec<UpdatePod>,
}

fn creation_key(p: &Pod) -> (Option<i64>, String) {
    let ts = p.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second());
    (ts, p.metadata.uid.clone().unwrap_or_default())
}

/// Plans one merged update.
pub fn plan(update: &PodUpdate) -> Plan {
    let mut pods: Vec<Arc<Pod>> = update.pods.clone();
    let mut out = Plan::default();
    match update.op {
        PodOperation::Add => {
            // Upstream: sort by creation time so older pods are admitted first.
            pods.sort_by_key(|p| creation_key(p));
            for p in &pods {
                out.desired.push(Desired::Upsert(p.clone()));
                out.work.push(UpdatePod::sync(SyncKind::Create, p.clone()));
            }
        }
        PodOperation::Update | PodOperation::Delete => {
            for p in &pods {
                out.desired.push(Desired::Upsert(p.clone()));
                out.work.push(UpdatePod::sync(SyncKind::Update, p.clone()));
            }
        }
        PodOperation::Remove => {
            for p in &pods {
                out.desired
                    .push(Desired::Remove(PodUid::new(p.metadata.uid.clone().unwrap_or_default())));
                let grace = p
                    .metadata
                    .deletion_grace_period_seconds
                    .map(|s| Duration::from_secs(s.max(0) as u64));
                let kill = KillOptions {
                    grace_period_override: grace,
                    status: None,
                };
                out.work.push(UpdatePod::kill(p.clone(), kill));
            }
        }
        PodOperation::Reconcile => {
            for p in &pods {
                out.desired.push(Desired::Upsert(p.clone()));
            }
        }
    }
    out
}

/// Pods worth a sync after a batch of PLEG events (upstream `isSyncPodWorthy`:
/// every event but `ContainerRemoved`), each once, in a stable order.
pub fn pods_to_sync(events: &[PodLifecycleEvent]) -> Vec<PodUid> {
    events
        .iter()
        .filter(|e| e.kind != PlegEventType::ContainerRemoved)
        .map(|e| e.uid.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::messages::pod_update::PodSource;
    use crate::messages::pod_work::PodWork;

    fn pod(uid: &str, created: i64) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.creation_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::from_second(created).unwrap()));
        Arc::new(p)
    }

    fn update(op: PodOperation, pods: Vec<Arc<Pod>>) -> PodUpdate {
        PodUpdate {
            op,
            source: PodSource::File,
            pods,
        }
    }

    fn kinds(p: &Plan) -> Vec<(String, PodWork)> {
        p.work
            .iter()
            .map(|w| (w.pod.metadata.uid.clone().unwrap(), w.work.clone()))
            .collect()
    }

    #[test]
    fn additions_are_created_oldest_first() {
        let p = plan(&update(PodOperation::Add, vec![pod("new", 20), pod("old", 10)]));
        assert_eq!(
            kinds(&p),
            vec![
                ("old".into(), PodWork::Sync(SyncKind::Create)),
                ("new".into(), PodWork::Sync(SyncKind::Create))
            ]
        );
        assert_eq!(p.desired.len(), 2);
    }

    #[test]
    fn removes_kill_with_the_deletion_grace_period() {
        let mut doomed = (*pod("a", 1)).clone();
        doomed.metadata.deletion_grace_period_seconds = Some(7);
        let p = plan(&update(PodOperation::Remove, vec![Arc::new(doomed)]));
        assert!(matches!(&p.desired[0], Desired::Remove(u) if u.as_str() == "a"));
        assert_eq!(
            p.work[0].work.kill_options().unwrap().grace_period_override,
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn updates_and_deletes_dispatch_update_reconcile_only_stores() {
        let p = plan(&update(PodOperation::Delete, vec![pod("a", 1)]));
        assert_eq!(kinds(&p), vec![("a".into(), PodWork::Sync(SyncKind::Update))]);
        let p = plan(&update(PodOperation::Reconcile, vec![pod("a", 1)]));
        assert!(p.work.is_empty());
        assert_eq!(p.desired.len(), 1);
    }

    #[test]
    fn removed_container_events_are_not_worth_a_sync() {
        let ev = |u: &str, kind| PodLifecycleEvent {
            uid: u.into(),
            kind,
            id: "c".into(),
        };
        let events = vec![
            ev("b", PlegEventType::ContainerDied),
            ev("a", PlegEventType::ContainerRemoved),
            ev("b", PlegEventType::ContainerStarted),
            ev("c", PlegEventType::ContainerChanged),
        ];
        assert_eq!(pods_to_sync(&events), vec![PodUid::from("b"), PodUid::from("c")]);
    }
}
