//! What the API syncer (a later issue) will write: the kubelet's status merged
//! onto the API server's (upstream v1.30 `mergePodStatus`).

use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::jiff::Timestamp;

use super::conditions::stamp_transition_times;
use super::phase::is_terminal_phase;
use super::reasons::{
    CONTAINERS_READY, DISRUPTION_TARGET, FALSE, POD_COMPLETED, POD_FAILED, READY, TRUE, is_kubelet_condition,
};

fn replace_or_append(conditions: &mut Vec<PodCondition>, c: PodCondition) {
    match conditions.iter_mut().find(|o| o.type_ == c.type_) {
        Some(o) => *o = c,
        None => conditions.push(c),
    }
}

/// Merges the kubelet's `new` status onto the API's `api` status: conditions
/// not owned by the kubelet stay the API's; the `DisruptionTarget` condition is
/// sent only together with the terminal phase; a terminal phase is held back
/// while containers may still run (`could_have_running_containers`); and a
/// terminal status never reports `Ready`/`ContainersReady` true.
pub fn merge_for_api(
    api: &PodStatus,
    mut new: PodStatus,
    could_have_running_containers: bool,
    now: Timestamp,
) -> PodStatus {
    let to_terminal = !is_terminal_phase(api.phase.as_deref()) && is_terminal_phase(new.phase.as_deref());
    let mut conditions: Vec<PodCondition> = api
        .conditions
        .iter()
        .flatten()
        .filter(|c| !is_kubelet_condition(&c.type_))
        .cloned()
        .collect();
    for c in new.conditions.iter().flatten() {
        if is_kubelet_condition(&c.type_) {
            conditions.push(c.clone());
        } else if c.type_ == DISRUPTION_TARGET && to_terminal && !could_have_running_containers {
            // Its transition time set earlier is stale: the condition was held back.
            let mut dt = vec![PodCondition {
                last_transition_time: None,
                ..c.clone()
            }];
            stamp_transition_times(&mut dt, api.conditions.as_deref().unwrap_or_default(), now);
            replace_or_append(&mut conditions, dt.remove(0));
        }
    }
    new.conditions = Some(conditions);
    new.resource_claim_statuses = api.resource_claim_statuses.clone();

    if to_terminal && could_have_running_containers {
        new.phase = api.phase.clone();
        new.reason = api.reason.clone();
        new.message = api.message.clone();
    }

    if is_terminal_phase(new.phase.as_deref()) {
        let is_true = |t: &str| {
            new.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == t && c.status == TRUE)
        };
        if is_true(READY) || is_true(CONTAINERS_READY) {
            let reason = if new.phase.as_deref() == Some("Failed") {
                POD_FAILED
            } else {
                POD_COMPLETED
            };
            let conditions = new.conditions.get_or_insert_with(Vec::new);
            for t in [CONTAINERS_READY, READY] {
                let mut c = vec![PodCondition {
                    type_: t.into(),
                    status: FALSE.into(),
                    reason: Some(reason.into()),
                    ..Default::default()
                }];
                stamp_transition_times(&mut c, conditions, now);
                replace_or_append(conditions, c.remove(0));
            }
        }
    }
    new
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn cond(t: &str, s: &str) -> PodCondition {
        PodCondition {
            type_: t.into(),
            status: s.into(),
            ..Default::default()
        }
    }

    fn status(phase: &str, conds: Vec<PodCondition>) -> PodStatus {
        PodStatus {
            phase: Some(phase.into()),
            conditions: Some(conds),
            ..Default::default()
        }
    }

    fn types(s: &PodStatus) -> Vec<(String, String, Option<String>)> {
        s.conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
            .collect()
    }

    fn now() -> Timestamp {
        Timestamp::from_second(100).unwrap()
    }

    #[test]
    fn keeps_foreign_conditions_and_takes_kubelet_ones() {
        let api = status("Running", vec![cond("x/gate", "True"), cond("Ready", "False")]);
        let new = status("Running", vec![cond("Ready", "True"), cond("x/gate", "False")]);
        let merged = merge_for_api(&api, new, false, now());
        assert_eq!(
            types(&merged),
            vec![
                ("x/gate".into(), "True".into(), None),
                ("Ready".into(), "True".into(), None)
            ]
        );
    }

    #[test]
    fn terminal_phase_waits_for_containers_to_stop() {
        let api = PodStatus {
            reason: Some("old".into()),
            ..status("Running", vec![])
        };
        let new = PodStatus {
            reason: Some("Evicted".into()),
            ..status("Failed", vec![cond("DisruptionTarget", "True")])
        };
        let held = merge_for_api(&api, new.clone(), true, now());
        assert_eq!(
            (held.phase.as_deref(), held.reason.as_deref()),
            (Some("Running"), Some("old"))
        );
        assert!(types(&held).is_empty(), "disruption target held back with the phase");

        let sent = merge_for_api(&api, new, false, now());
        assert_eq!(
            (sent.phase.as_deref(), sent.reason.as_deref()),
            (Some("Failed"), Some("Evicted"))
        );
        let dt = sent
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "DisruptionTarget")
            .unwrap();
        assert_eq!(dt.last_transition_time, Some(Time(now())));
    }

    #[test]
    fn terminal_status_is_never_ready() {
        let api = status("Running", vec![]);
        let new = status(
            "Succeeded",
            vec![cond("Ready", "True"), cond("ContainersReady", "True")],
        );
        let merged = merge_for_api(&api, new, false, now());
        assert_eq!(
            types(&merged),
            vec![
                ("Ready".into(), "False".into(), Some("PodCompleted".into())),
                ("ContainersReady".into(), "False".into(), Some("PodCompleted".into())),
            ]
        );
        let failed = merge_for_api(&api, status("Failed", vec![cond("Ready", "True")]), false, now());
        assert!(
            types(&failed)
                .iter()
                .all(|(_, s, r)| s == "False" && r.as_deref() == Some("PodFailed"))
        );
    }
}
