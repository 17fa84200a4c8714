//! [`StatusStore`]: the status manager's state and its one decision — accept,
//! ignore or refuse a new status — kept out of the actor so it is plainly
//! testable.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::jiff::Timestamp;

use super::cache::{StatusCache, VersionedStatus};
use super::merge::{TransitionError, TransitionRules, merge_status, status_equal_ignoring_time};
use super::phase::Phase;
use crate::messages::PodUid;

/// What the store knows of a pod besides its status.
#[derive(Clone, Debug, Default, PartialEq)]
struct PodMeta {
    name: String,
    namespace: String,
    rules: TransitionRules,
}

/// The result of offering a status to the store.
#[derive(Clone, Debug, PartialEq)]
pub enum ApplyOutcome {
    /// Same as the cached status (ignoring condition times): nothing changed.
    Unchanged,
    /// Refused: it would break a transition rule. The cache is untouched.
    Rejected(TransitionError),
    /// Stored with a new version.
    Changed {
        /// The phase before (`None` for a new pod or an unset phase).
        old_phase: Option<Phase>,
        /// What is cached now.
        current: VersionedStatus,
    },
}

/// Versioned statuses by pod UID, published into a [`StatusCache`] (the
/// cache is the storage: a restarted manager given the same cache resumes
/// with the same statuses and versions).
#[derive(Debug)]
pub struct StatusStore {
    cache: StatusCache,
    pods: HashMap<PodUid, PodMeta>,
}

impl StatusStore {
    /// A store writing into `cache`.
    pub fn new(cache: StatusCache) -> Self {
        Self {
            cache,
            pods: HashMap::new(),
        }
    }

    /// The cache readers share.
    pub fn cache(&self) -> &StatusCache {
        &self.cache
    }

    /// Remembers `pod`'s name, namespace and transition rules for its UID.
    pub fn track(&mut self, uid: &PodUid, pod: &Pod) {
        let meta = PodMeta {
            name: pod.metadata.name.clone().unwrap_or_default(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            rules: TransitionRules::from_pod(pod),
        };
        self.pods.insert(uid.clone(), meta);
    }

    /// Offers a new status for `uid`: merged with the cached one under the
    /// pod's rules (permissive ones if the pod was never tracked), stored
    /// with a bumped version only if it differs.
    pub fn apply(&mut self, uid: &PodUid, status: PodStatus, now: Timestamp) -> ApplyOutcome {
        let meta = self.pods.get(uid).cloned().unwrap_or_default();
        let old = self.cache.get(uid);
        let merged = match merge_status(old.as_ref().map(|o| o.status.as_ref()), status, &meta.rules, now) {
            Ok(merged) => merged,
            Err(err) => return ApplyOutcome::Rejected(err),
        };
        if old
            .as_ref()
            .is_some_and(|o| status_equal_ignoring_time(&o.status, &merged))
        {
            return ApplyOutcome::Unchanged;
        }
        let keep = |mine: String, cached: Option<&String>| {
            if mine.is_empty() {
                cached.cloned().unwrap_or_default()
            } else {
                mine
            }
        };
        let current = VersionedStatus {
            status: Arc::new(merged),
            version: old.as_ref().map_or(0, |o| o.version) + 1,
            pod_name: keep(meta.name, old.as_ref().map(|o| &o.pod_name)),
            pod_namespace: keep(meta.namespace, old.as_ref().map(|o| &o.pod_namespace)),
        };
        self.cache.insert(uid.clone(), current.clone());
        let old_phase = old.and_then(|o| Phase::parse(o.status.phase.as_deref()));
        ApplyOutcome::Changed { old_phase, current }
    }

    /// The cached status of `uid`.
    pub fn get(&self, uid: &PodUid) -> Option<VersionedStatus> {
        self.cache.get(uid)
    }

    /// Forgets `uid` entirely; returns what was cached.
    pub fn forget(&mut self, uid: &PodUid) -> Option<VersionedStatus> {
        self.pods.remove(uid);
        self.cache.remove(uid)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, PodSpec};

    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    fn phase(p: &str) -> PodStatus {
        PodStatus {
            phase: Some(p.into()),
            ..Default::default()
        }
    }

    #[test]
    fn versions_bump_only_on_change() {
        let mut store = StatusStore::new(StatusCache::new());
        let uid = PodUid::from("u");
        let ApplyOutcome::Changed { old_phase, current } = store.apply(&uid, phase("Pending"), at(1)) else {
            panic!("first status is a change")
        };
        assert_eq!((old_phase, current.version), (None, 1));
        assert_eq!(store.apply(&uid, phase("Pending"), at(2)), ApplyOutcome::Unchanged);
        let ApplyOutcome::Changed { old_phase, current } = store.apply(&uid, phase("Running"), at(3)) else {
            panic!("phase change is a change")
        };
        assert_eq!((old_phase, current.version), (Some(Phase::Pending), 2));
        assert_eq!(
            current.status.start_time.as_ref().map(|t| t.0),
            Some(at(1)),
            "start time kept"
        );
        assert_eq!(store.get(&uid).map(|v| v.version), Some(2));
    }

    #[test]
    fn terminal_phase_sticks() {
        let mut store = StatusStore::new(StatusCache::new());
        let uid = PodUid::from("u");
        assert!(matches!(
            store.apply(&uid, phase("Failed"), at(1)),
            ApplyOutcome::Changed { .. }
        ));
        assert!(matches!(
            store.apply(&uid, phase("Running"), at(2)),
            ApplyOutcome::Rejected(TransitionError::LeavesTerminalPhase { .. })
        ));
        assert_eq!(store.get(&uid).unwrap().status.phase.as_deref(), Some("Failed"));
    }

    #[test]
    fn tracked_pod_gives_rules_and_names() {
        let mut store = StatusStore::new(StatusCache::new());
        let uid = PodUid::from("u");
        let mut pod = Pod {
            spec: Some(PodSpec {
                restart_policy: Some("Never".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        pod.metadata.name = Some("web".into());
        pod.metadata.namespace = Some("default".into());
        store.track(&uid, &pod);
        let exited = ContainerStatus {
            name: "a".into(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated::default()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let waiting = ContainerStatus {
            name: "a".into(),
            state: Some(ContainerState::default()),
            ..Default::default()
        };
        let with = |c: ContainerStatus| PodStatus {
            container_statuses: Some(vec![c]),
            ..phase("Running")
        };
        let ApplyOutcome::Changed { current, .. } = store.apply(&uid, with(exited), at(1)) else {
            panic!()
        };
        assert_eq!(
            (current.pod_name.as_str(), current.pod_namespace.as_str()),
            ("web", "default")
        );
        assert!(matches!(
            store.apply(&uid, with(waiting), at(2)),
            ApplyOutcome::Rejected(_)
        ));

        assert!(store.forget(&uid).is_some());
        assert!(store.get(&uid).is_none() && store.cache().is_empty());
        assert!(store.forget(&uid).is_none());
    }
}
