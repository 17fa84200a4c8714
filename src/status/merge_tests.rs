//! Unit tests of the status manager rules.

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, Pod, PodCondition,
    PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::status::pod_predicates::waiting_state;

fn ts(secs: i64, nanos: i32) -> Timestamp {
    Timestamp::new(secs, nanos).unwrap()
}

fn running(name: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(ts(100, 500))),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn exited(name: &str, code: i32) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn waiting(name: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(waiting_state(Some("CrashLoopBackOff"), None)),
        ..Default::default()
    }
}

fn status(phase: &str, containers: Vec<ContainerStatus>, init: Vec<ContainerStatus>) -> PodStatus {
    PodStatus {
        phase: Some(phase.into()),
        container_statuses: Some(containers),
        init_container_statuses: (!init.is_empty()).then_some(init),
        ..Default::default()
    }
}

fn rules(policy: &str) -> TransitionRules {
    TransitionRules {
        restart_policy: policy.into(),
        init_containers: vec![("init".into(), false), ("side".into(), true)],
        container_count: 3,
        overrides: vec![],
    }
}

#[test]
fn rules_from_pod_and_default() {
    let pod = Pod {
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            init_containers: Some(vec![
                Container {
                    name: "init".into(),
                    ..Default::default()
                },
                Container {
                    name: "side".into(),
                    restart_policy: Some("Always".into()),
                    ..Default::default()
                },
            ]),
            containers: vec![Container {
                name: "app".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(TransitionRules::from_pod(&pod), rules("Never"));
    assert_eq!(TransitionRules::default().restart_policy, "Always");
    assert_eq!(TransitionRules::from_pod(&Pod::default()).restart_policy, "Always");
}

#[test]
fn terminal_phase_is_never_left() {
    for terminal in ["Succeeded", "Failed"] {
        let old = status(terminal, vec![], vec![]);
        for new_phase in ["Running", "Pending"] {
            let err = validate_transition(&old, &status(new_phase, vec![], vec![]), &TransitionRules::default());
            assert_eq!(
                err,
                Err(TransitionError::LeavesTerminalPhase {
                    from: terminal.into(),
                    to: Some(new_phase.into())
                })
            );
        }
        assert_eq!(
            validate_transition(&old, &status(terminal, vec![], vec![]), &TransitionRules::default()),
            Ok(())
        );
    }
    let no_phase = PodStatus::default();
    assert!(
        validate_transition(
            &status("Failed", vec![], vec![]),
            &no_phase,
            &TransitionRules::default()
        )
        .is_err()
    );
    assert_eq!(
        validate_transition(
            &status("Running", vec![], vec![]),
            &no_phase,
            &TransitionRules::default()
        ),
        Ok(())
    );
}

#[test]
fn container_transitions_table() {
    type Case = (&'static str, &'static str, ContainerStatus, ContainerStatus, bool);
    let cases: Vec<Case> = vec![
        (
            "always: exit 0 may restart",
            "Always",
            exited("a", 0),
            running("a"),
            true,
        ),
        ("never: exit 0 stays", "Never", exited("a", 0), running("a"), false),
        ("never: exit 1 stays", "Never", exited("a", 1), waiting("a"), false),
        (
            "onfailure: exit 1 may restart",
            "OnFailure",
            exited("a", 1),
            running("a"),
            true,
        ),
        (
            "onfailure: exit 0 stays",
            "OnFailure",
            exited("a", 0),
            running("a"),
            false,
        ),
        (
            "never: terminated to terminated",
            "Never",
            exited("a", 1),
            exited("a", 1),
            true,
        ),
        (
            "never: running to terminated",
            "Never",
            running("a"),
            exited("a", 0),
            true,
        ),
        ("never: other container", "Never", exited("a", 0), running("b"), true),
    ];
    for (name, policy, old, new, ok) in cases {
        let res = validate_transition(
            &status("Running", vec![old], vec![]),
            &status("Running", vec![new], vec![]),
            &rules(policy),
        );
        assert_eq!(res.is_ok(), ok, "{name}: {res:?}");
        if !ok {
            assert_eq!(
                res,
                Err(TransitionError::ContainerLeftTerminated { name: "a".into() }),
                "{name}"
            );
        }
    }
}

#[test]
fn init_container_transitions_table() {
    type Case = (&'static str, &'static str, ContainerStatus, ContainerStatus, bool);
    let cases: Vec<Case> = vec![
        (
            "always: anything goes",
            "Always",
            exited("init", 0),
            running("init"),
            true,
        ),
        (
            "onfailure: done init stays done",
            "OnFailure",
            exited("init", 0),
            running("init"),
            false,
        ),
        (
            "onfailure: failed init retries",
            "OnFailure",
            exited("init", 1),
            running("init"),
            true,
        ),
        (
            "never: failed init stays",
            "Never",
            exited("init", 1),
            waiting("init"),
            false,
        ),
        (
            "never: sidecar may restart",
            "Never",
            exited("side", 0),
            running("side"),
            true,
        ),
    ];
    for (name, policy, old, new, ok) in cases {
        let res = validate_transition(
            &status("Pending", vec![], vec![old]),
            &status("Pending", vec![], vec![new]),
            &rules(policy),
        );
        assert_eq!(res.is_ok(), ok, "{name}: {res:?}");
        if !ok {
            assert!(
                matches!(res, Err(TransitionError::InitContainerLeftTerminated { .. })),
                "{name}"
            );
        }
    }
}

fn cond(type_: &str, status: &str, at: Option<Timestamp>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: at.map(Time),
        ..Default::default()
    }
}

#[test]
fn merge_keeps_transition_times_and_start_time_and_normalizes() {
    let now = ts(5_000, 999_999_999);
    let old = PodStatus {
        start_time: Some(Time(ts(10, 0))),
        conditions: Some(vec![
            cond("Ready", "False", Some(ts(20, 0))),
            cond("PodScheduled", "True", Some(ts(10, 0))),
        ]),
        ..status("Running", vec![running("a")], vec![])
    };
    let new = PodStatus {
        start_time: Some(Time(ts(4_000, 0))),
        conditions: Some(vec![cond("Ready", "True", None), cond("PodScheduled", "True", None)]),
        ..status("Running", vec![running("b"), running("a")], vec![])
    };
    let merged = merge_status(Some(&old), new, &rules("Always"), now).unwrap();
    let times: Vec<_> = merged
        .conditions
        .iter()
        .flatten()
        .map(|c| c.last_transition_time.clone().unwrap().0)
        .collect();
    assert_eq!(
        times,
        vec![ts(5_000, 0), ts(10, 0)],
        "changed → now (to the second), unchanged → old"
    );
    assert_eq!(merged.start_time, Some(Time(ts(10, 0))));
    let names: Vec<_> = merged
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let started = merged.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .running
        .unwrap()
        .started_at
        .unwrap();
    assert_eq!(started.0, ts(100, 0));

    let first = merge_status(None, status("Pending", vec![], vec![]), &rules("Always"), now).unwrap();
    assert_eq!(
        first.start_time,
        Some(Time(ts(5_000, 0))),
        "no start time anywhere → now"
    );
}

#[test]
fn merge_refuses_illegal_transitions() {
    let old = status("Failed", vec![exited("a", 1)], vec![]);
    let res = merge_status(
        Some(&old),
        status("Running", vec![running("a")], vec![]),
        &rules("Never"),
        ts(1, 0),
    );
    assert!(matches!(res, Err(TransitionError::LeavesTerminalPhase { .. })));
    let old = status("Running", vec![exited("a", 1)], vec![]);
    let res = merge_status(
        Some(&old),
        status("Running", vec![running("a")], vec![]),
        &rules("Never"),
        ts(1, 0),
    );
    assert!(matches!(res, Err(TransitionError::ContainerLeftTerminated { .. })));
}

#[test]
fn normalize_truncates_messages_and_orders_init_containers() {
    let mut long = exited("init", 1);
    let t = long.state.as_mut().unwrap().terminated.as_mut().unwrap();
    t.message = Some("é".repeat(5_000)); // 10_000 bytes
    t.finished_at = Some(Time(ts(7, 123)));
    let mut s = PodStatus {
        init_container_statuses: Some(vec![running("side"), long, exited("zzz", 0)]),
        ..Default::default()
    };
    normalize_status(&mut s, &rules("Always"));
    let inits = s.init_container_statuses.unwrap();
    assert_eq!(
        inits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["init", "side", "zzz"]
    );
    let t = inits[0].state.clone().unwrap().terminated.unwrap();
    assert_eq!(
        t.message.unwrap().len(),
        4_096,
        "12 KiB shared by 3 containers, cut on a char boundary"
    );
    assert_eq!(t.finished_at.unwrap().0, ts(7, 0));

    let mut odd = String::from("aé");
    truncate_bytes(&mut odd, 2);
    assert_eq!(odd, "a");
}

#[test]
fn equality_ignores_condition_times_only() {
    let a = PodStatus {
        conditions: Some(vec![
            cond("Ready", "True", Some(ts(1, 0))),
            cond("x/gate", "True", None),
        ]),
        ..status("Running", vec![running("a")], vec![])
    };
    let mut b = a.clone();
    b.conditions = Some(vec![cond("Ready", "True", Some(ts(2, 0)))]);
    assert!(
        status_equal_ignoring_time(&a, &b),
        "times and foreign conditions of old are ignored"
    );
    b.conditions = Some(vec![cond("Ready", "False", Some(ts(1, 0)))]);
    assert!(!status_equal_ignoring_time(&a, &b));
    b.conditions = Some(vec![PodCondition {
        reason: Some("R".into()),
        ..cond("Ready", "True", None)
    }]);
    assert!(!status_equal_ignoring_time(&a, &b));
    b.conditions = Some(vec![cond("ContainersReady", "True", None)]);
    assert!(
        !status_equal_ignoring_time(&a, &b),
        "a new kubelet condition is a change"
    );
    let mut c = a.clone();
    c.phase = Some("Succeeded".into());
    assert!(!status_equal_ignoring_time(&a, &c));
    assert!(status_equal_ignoring_time(&a, &a.clone()));
}

/// KEP-5307: a container whose own `restartPolicy: Never` finished may not
/// come back, even in an `Always` pod; one its rules retry may.
#[test]
fn container_overrides_decide_their_own_transitions() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "spec": {"restartPolicy": "Always", "containers": [
            {"name": "job", "restartPolicy": "Never",
             "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]},
            {"name": "srv"}
        ]}
    }))
    .expect("pod");
    let rules = TransitionRules::from_pod(&pod);
    assert_eq!(rules.overrides.len(), 1);
    let old = status("Running", vec![exited("job", 1), exited("srv", 1)], vec![]);
    let back = status("Running", vec![running("job"), running("srv")], vec![]);
    assert_eq!(
        validate_transition(&old, &back, &rules),
        Err(TransitionError::ContainerLeftTerminated { name: "job".into() })
    );
    let srv_only = status("Running", vec![exited("job", 1), running("srv")], vec![]);
    assert_eq!(validate_transition(&old, &srv_only, &rules), Ok(()));
    let retried = status("Running", vec![exited("job", 42)], vec![]);
    assert_eq!(
        validate_transition(&retried, &status("Running", vec![running("job")], vec![]), &rules),
        Ok(())
    );
}
