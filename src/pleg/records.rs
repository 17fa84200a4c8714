//! [`Records`]: what the PLEG last saw of every container and sandbox, by id
//! and by pod, so that one pod can be read again and compared on its own (a
//! targeted relist) with the same diff a global relist makes (pure).

use std::collections::HashMap;

use super::events::{Observed, PlegState, Relist, compute_events};
use crate::kuberuntime::pod_status::{ContainerState, RuntimePodStatus, SandboxState};
use crate::messages::PodUid;
use crate::messages::pleg::PodLifecycleEvent;

/// The last relist's view, indexed by pod.
#[derive(Debug, Default)]
pub struct Records {
    by_id: Relist,
    by_pod: HashMap<PodUid, Vec<String>>,
}

impl Records {
    /// The view a global relist saw.
    pub fn from_relist(by_id: Relist) -> Self {
        let mut by_pod: HashMap<PodUid, Vec<String>> = HashMap::with_capacity(by_id.len() / 2);
        for (id, o) in &by_id {
            by_pod.entry(o.pod.clone()).or_default().push(id.clone());
        }
        Self { by_id, by_pod }
    }

    /// Every id seen, with its pod and state.
    pub fn relist(&self) -> &Relist {
        &self.by_id
    }

    /// Replaces what was seen of `pod` by `now` (its ids and states, from a
    /// fresh read of that pod alone) and returns the events between the two,
    /// exactly as [`compute_events`] would for a global relist.
    pub fn replace_pod(&mut self, pod: &PodUid, now: Vec<(String, PlegState)>) -> Vec<PodLifecycleEvent> {
        let mut old = Relist::new();
        for id in self.by_pod.remove(pod).unwrap_or_default() {
            if let Some(o) = self.by_id.remove(&id) {
                old.insert(id, o);
            }
        }
        let new: Relist = now
            .into_iter()
            .map(|(id, state)| {
                let observed = Observed {
                    pod: pod.clone(),
                    state,
                };
                (id, observed)
            })
            .collect();
        let events = compute_events(&old, &new);
        if !new.is_empty() {
            self.by_pod.insert(pod.clone(), new.keys().cloned().collect());
            self.by_id.extend(new);
        }
        events
    }
}

/// The PLEG states of a pod's sandboxes and containers as one status read
/// shows them (the same mapping a global relist makes of the CRI lists).
pub fn observed_in(status: &RuntimePodStatus) -> Vec<(String, PlegState)> {
    let sandboxes = status.sandboxes.iter().map(|s| {
        let state = match s.state {
            SandboxState::Ready => PlegState::Running,
            SandboxState::NotReady => PlegState::Exited,
        };
        (s.id.clone(), state)
    });
    let containers = status.containers.iter().map(|c| {
        let state = match c.state {
            ContainerState::Running => PlegState::Running,
            ContainerState::Exited => PlegState::Exited,
            ContainerState::Created | ContainerState::Unknown => PlegState::Unknown,
        };
        (c.id.clone(), state)
    });
    sandboxes.chain(containers).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::pleg::PlegEventType::*;

    fn seen(pod: &str, state: PlegState) -> Observed {
        Observed { pod: pod.into(), state }
    }

    fn kinds(events: &[PodLifecycleEvent]) -> Vec<(String, crate::messages::pleg::PlegEventType)> {
        events.iter().map(|e| (e.id.clone(), e.kind)).collect()
    }

    #[test]
    fn a_targeted_read_yields_the_events_a_global_relist_would() {
        let mut records = Records::from_relist(Relist::from([
            ("s1".to_string(), seen("a", PlegState::Running)),
            ("c1".to_string(), seen("a", PlegState::Running)),
            ("c2".to_string(), seen("a", PlegState::Exited)),
            ("s2".to_string(), seen("b", PlegState::Running)),
        ]));
        let a: PodUid = "a".into();
        // c1 died, c2 was removed, c3 is new and running.
        let events = records.replace_pod(
            &a,
            vec![
                ("s1".into(), PlegState::Running),
                ("c1".into(), PlegState::Exited),
                ("c3".into(), PlegState::Running),
            ],
        );
        assert_eq!(
            kinds(&events),
            [
                ("c1".to_string(), ContainerDied),
                ("c2".to_string(), ContainerRemoved),
                ("c3".to_string(), ContainerStarted)
            ]
        );
        assert!(events.iter().all(|e| e.uid == a));
        // The other pod is untouched; the view holds the new state.
        assert_eq!(records.relist().get("s2"), Some(&seen("b", PlegState::Running)));
        assert_eq!(records.relist().get("c1"), Some(&seen("a", PlegState::Exited)));
        assert!(!records.relist().contains_key("c2"));
        // Reading the same state again yields nothing (duplicate hints are harmless).
        let again = records.replace_pod(
            &a,
            vec![
                ("s1".into(), PlegState::Running),
                ("c1".into(), PlegState::Exited),
                ("c3".into(), PlegState::Running),
            ],
        );
        assert!(again.is_empty(), "{again:?}");
    }

    #[test]
    fn a_pod_gone_from_the_runtime_leaves_the_view() {
        let mut records = Records::from_relist(Relist::from([
            ("s1".to_string(), seen("a", PlegState::Exited)),
            ("c1".to_string(), seen("a", PlegState::Running)),
        ]));
        let events = records.replace_pod(&"a".into(), vec![]);
        assert_eq!(
            kinds(&events),
            [
                ("c1".to_string(), ContainerDied),
                ("c1".to_string(), ContainerRemoved),
                ("s1".to_string(), ContainerRemoved)
            ]
        );
        assert!(records.relist().is_empty());
        // A pod the view never had: its first read reports what it has.
        let events = records.replace_pod(&"new".into(), vec![("s9".into(), PlegState::Running)]);
        assert_eq!(kinds(&events), [("s9".to_string(), ContainerStarted)]);
    }

    #[test]
    fn statuses_map_to_the_states_a_relist_sees() {
        use crate::kuberuntime::pod_status::SandboxStatus;
        let mut status = RuntimePodStatus::empty("a".into(), "web", "default");
        status.sandboxes.push(SandboxStatus {
            id: "s".into(),
            state: SandboxState::NotReady,
            created_at: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            attempt: 0,
            ips: vec![],
            host_network: false,
        });
        use crate::cri::v1;
        for (id, state) in [
            ("r", v1::ContainerState::ContainerRunning),
            ("e", v1::ContainerState::ContainerExited),
            ("c", v1::ContainerState::ContainerCreated),
        ] {
            let listed = v1::Container {
                id: id.into(),
                state: state as i32,
                ..Default::default()
            };
            status
                .containers
                .push(crate::kuberuntime::convert::container_from_list(&listed));
        }
        assert_eq!(
            observed_in(&status),
            [
                ("s".to_string(), PlegState::Exited),
                ("r".to_string(), PlegState::Running),
                ("e".to_string(), PlegState::Exited),
                ("c".to_string(), PlegState::Unknown)
            ]
        );
    }
}
