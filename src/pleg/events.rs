//! Pure relist diff: previous and current container states → lifecycle events
//! (upstream `generateEvents`).

use std::collections::HashMap;

use crate::messages::PodUid;
use crate::messages::pleg::{PlegEventType, PodLifecycleEvent};

/// A container's (or sandbox's) state as the PLEG tracks it
/// (upstream `plegContainerState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlegState {
    /// Running (a sandbox: ready).
    Running,
    /// Exited (a sandbox: not ready).
    Exited,
    /// Created but not started, or unknown.
    Unknown,
    /// Not in the runtime.
    NonExistent,
}

/// What one relist saw of one container or sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The pod it belongs to.
    pub pod: PodUid,
    /// Its state.
    pub state: PlegState,
}

/// One relist's view: container or sandbox id → what was seen.
pub type Relist = HashMap<String, Observed>;

/// The events for one id whose state went from `old` to `new`.
pub fn events_for(pod: &PodUid, id: &str, old: PlegState, new: PlegState) -> Vec<PodLifecycleEvent> {
    if old == new {
        return vec![];
    }
    let ev = |kind| PodLifecycleEvent {
        uid: pod.clone(),
        kind,
        id: id.to_string(),
    };
    match new {
        PlegState::Running => vec![ev(PlegEventType::ContainerStarted)],
        PlegState::Exited => vec![ev(PlegEventType::ContainerDied)],
        PlegState::Unknown => vec![ev(PlegEventType::ContainerChanged)],
        PlegState::NonExistent if old == PlegState::Exited => vec![ev(PlegEventType::ContainerRemoved)],
        PlegState::NonExistent => vec![ev(PlegEventType::ContainerDied), ev(PlegEventType::ContainerRemoved)],
    }
}

/// All events between two relists, grouped per pod in a stable order (by pod
/// then id), so the same input always yields the same output. Linear in the
/// relists' size: only the ids whose state changed are sorted.
pub fn compute_events(old: &Relist, new: &Relist) -> Vec<PodLifecycleEvent> {
    let mut changed: Vec<(&PodUid, &str, PlegState, PlegState)> = Vec::new();
    for (id, n) in new {
        let o = old.get(id).map_or(PlegState::NonExistent, |o| o.state);
        if o != n.state {
            changed.push((&n.pod, id, o, n.state));
        }
    }
    for (id, o) in old {
        if !new.contains_key(id) {
            changed.push((&o.pod, id, o.state, PlegState::NonExistent));
        }
    }
    changed.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    changed
        .into_iter()
        .flat_map(|(pod, id, o, n)| events_for(pod, id, o, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use PlegEventType::*;
    use PlegState::*;

    fn relist(items: &[(&str, &str, PlegState)]) -> Relist {
        items
            .iter()
            .map(|(pod, id, s)| {
                (
                    id.to_string(),
                    Observed {
                        pod: (*pod).into(),
                        state: *s,
                    },
                )
            })
            .collect()
    }

    fn kinds(evs: &[PodLifecycleEvent]) -> Vec<(String, PlegEventType)> {
        evs.iter().map(|e| (e.id.clone(), e.kind)).collect()
    }

    #[test]
    fn transitions_map_to_upstream_events() {
        let p: PodUid = "p".into();
        let cases = [
            (NonExistent, Running, vec![ContainerStarted]),
            (Unknown, Running, vec![ContainerStarted]),
            (Running, Exited, vec![ContainerDied]),
            (NonExistent, Unknown, vec![ContainerChanged]),
            (Exited, NonExistent, vec![ContainerRemoved]),
            (Running, NonExistent, vec![ContainerDied, ContainerRemoved]),
            (Unknown, NonExistent, vec![ContainerDied, ContainerRemoved]),
            (Running, Running, vec![]),
            (Exited, Exited, vec![]),
        ];
        for (old, new, want) in cases {
            let got: Vec<_> = events_for(&p, "c", old, new).into_iter().map(|e| e.kind).collect();
            assert_eq!(got, want, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn compute_events_covers_new_changed_and_vanished_ids() {
        let old = relist(&[("a", "c1", Running), ("a", "c2", Exited), ("b", "c3", Running)]);
        let new = relist(&[("a", "c1", Exited), ("b", "c3", Running), ("b", "c4", Running)]);
        let evs = compute_events(&old, &new);
        assert_eq!(
            kinds(&evs),
            vec![
                ("c1".into(), ContainerDied),
                ("c2".into(), ContainerRemoved),
                ("c4".into(), ContainerStarted)
            ]
        );
        assert_eq!(evs[2].uid, PodUid::from("b"));
    }

    #[test]
    fn identical_relists_yield_nothing() {
        let r = relist(&[("a", "c1", Running), ("a", "s1", Running)]);
        assert!(compute_events(&r, &r).is_empty());
    }
}
