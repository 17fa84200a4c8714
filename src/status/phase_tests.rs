//! Unit tests of [`get_phase`](super::get_phase): one case per upstream rule.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodSpec};

use super::*;
use crate::status::pod_predicates::{CONFIG_SOURCE_ANNOTATION, waiting_state};

fn c(name: &str) -> Container {
    Container {
        name: name.into(),
        ..Default::default()
    }
}

fn sidecar(name: &str) -> Container {
    Container {
        name: name.into(),
        restart_policy: Some("Always".into()),
        ..Default::default()
    }
}

fn pod(policy: &str, init: Vec<Container>, containers: Vec<Container>) -> Pod {
    Pod {
        spec: Some(PodSpec {
            restart_policy: Some(policy.into()),
            init_containers: (!init.is_empty()).then_some(init),
            containers,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn running(name: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(ContainerState {
            running: Some(Default::default()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn started(name: &str) -> ContainerStatus {
    ContainerStatus {
        started: Some(true),
        ..running(name)
    }
}

fn term(exit_code: i32) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn exited(name: &str, code: i32) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(term(code)),
        ..Default::default()
    }
}

fn waiting(name: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(waiting_state(Some("ContainerCreating"), None)),
        ..Default::default()
    }
}

fn crashloop(name: &str, last_code: i32) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(waiting_state(Some("CrashLoopBackOff"), None)),
        last_state: Some(term(last_code)),
        ..Default::default()
    }
}

fn stateless(name: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        ..Default::default()
    }
}

#[test]
fn phase_strings_round_trip() {
    for p in [
        Phase::Pending,
        Phase::Running,
        Phase::Succeeded,
        Phase::Failed,
        Phase::Unknown,
    ] {
        assert_eq!(Phase::parse(Some(p.as_str())), Some(p));
        assert_eq!(p.to_string(), p.as_str());
    }
    assert_eq!(Phase::parse(None), None);
    assert_eq!(Phase::parse(Some("Bogus")), None);
    assert!(Phase::Succeeded.is_terminal() && Phase::Failed.is_terminal());
    assert!(!Phase::Running.is_terminal() && !Phase::Pending.is_terminal() && !Phase::Unknown.is_terminal());
    assert!(is_terminal_phase(Some("Failed")) && !is_terminal_phase(Some("Running")) && !is_terminal_phase(None));
}

#[test]
fn regular_containers_table() {
    let two = || vec![c("a"), c("b")];
    let cases: Vec<(&str, &str, Vec<ContainerStatus>, bool, Phase)> = vec![
        ("no statuses", "Always", vec![], false, Phase::Pending),
        ("one unknown", "Always", vec![running("a")], false, Phase::Pending),
        (
            "all running",
            "Always",
            vec![running("a"), running("b")],
            false,
            Phase::Running,
        ),
        (
            "one waiting",
            "Always",
            vec![running("a"), waiting("b")],
            false,
            Phase::Pending,
        ),
        (
            "running + crashloop",
            "Always",
            vec![running("a"), crashloop("b", 1)],
            false,
            Phase::Running,
        ),
        (
            "running + exited",
            "Never",
            vec![running("a"), exited("b", 1)],
            false,
            Phase::Running,
        ),
        (
            "always all exited ok",
            "Always",
            vec![exited("a", 0), exited("b", 0)],
            false,
            Phase::Running,
        ),
        (
            "always all exited bad",
            "Always",
            vec![exited("a", 1), crashloop("b", 1)],
            false,
            Phase::Running,
        ),
        (
            "always exited terminal ok",
            "Always",
            vec![exited("a", 0), exited("b", 0)],
            true,
            Phase::Succeeded,
        ),
        (
            "always exited terminal bad",
            "Always",
            vec![exited("a", 0), exited("b", 2)],
            true,
            Phase::Failed,
        ),
        (
            "never all ok",
            "Never",
            vec![exited("a", 0), exited("b", 0)],
            false,
            Phase::Succeeded,
        ),
        (
            "never one failed",
            "Never",
            vec![exited("a", 0), exited("b", 1)],
            false,
            Phase::Failed,
        ),
        (
            "onfailure all ok",
            "OnFailure",
            vec![exited("a", 0), exited("b", 0)],
            false,
            Phase::Succeeded,
        ),
        (
            "onfailure one failed",
            "OnFailure",
            vec![exited("a", 0), exited("b", 1)],
            false,
            Phase::Running,
        ),
        (
            "onfailure crashloop",
            "OnFailure",
            vec![exited("a", 0), crashloop("b", 1)],
            false,
            Phase::Running,
        ),
        (
            "onfailure terminal failed",
            "OnFailure",
            vec![exited("a", 0), exited("b", 1)],
            true,
            Phase::Failed,
        ),
        (
            "stateless status",
            "Always",
            vec![running("a"), stateless("b")],
            false,
            Phase::Pending,
        ),
        (
            "crashloop counts failed",
            "Never",
            vec![crashloop("a", 1), exited("b", 0)],
            false,
            Phase::Failed,
        ),
    ];
    for (name, policy, statuses, terminal, expected) in cases {
        assert_eq!(
            get_phase(&pod(policy, vec![], two()), &statuses, terminal),
            expected,
            "{name}"
        );
    }
}

#[test]
fn terminal_static_pod_keeps_restart_policy_rules() {
    let mut p = pod("Always", vec![], vec![c("a")]);
    p.metadata.annotations = Some(BTreeMap::from([(CONFIG_SOURCE_ANNOTATION.into(), "file".into())]));
    assert_eq!(get_phase(&p, &[exited("a", 0)], true), Phase::Running);
    p.metadata.annotations = Some(BTreeMap::from([(CONFIG_SOURCE_ANNOTATION.into(), "api".into())]));
    assert_eq!(get_phase(&p, &[exited("a", 0)], true), Phase::Succeeded);
}

#[test]
fn regular_init_containers_table() {
    let cases: Vec<(&str, &str, Vec<ContainerStatus>, Phase)> = vec![
        ("init unknown", "Always", vec![waiting("app")], Phase::Pending),
        (
            "init waiting",
            "Always",
            vec![waiting("init"), waiting("app")],
            Phase::Pending,
        ),
        (
            "init running",
            "Always",
            vec![running("init"), waiting("app")],
            Phase::Pending,
        ),
        (
            "init no state",
            "Always",
            vec![stateless("init"), waiting("app")],
            Phase::Pending,
        ),
        (
            "init done, app running",
            "Always",
            vec![exited("init", 0), running("app")],
            Phase::Running,
        ),
        (
            "init done, app waiting",
            "Always",
            vec![exited("init", 0), waiting("app")],
            Phase::Pending,
        ),
        (
            "init failed never",
            "Never",
            vec![exited("init", 1), waiting("app")],
            Phase::Failed,
        ),
        (
            "init crashloop never",
            "Never",
            vec![crashloop("init", 1), waiting("app")],
            Phase::Failed,
        ),
        (
            "init failed always",
            "Always",
            vec![exited("init", 1), waiting("app")],
            Phase::Pending,
        ),
        (
            "init failed onfailure",
            "OnFailure",
            vec![crashloop("init", 1), waiting("app")],
            Phase::Pending,
        ),
        (
            "init restarting after ok",
            "Always",
            vec![crashloop("init", 0), running("app")],
            Phase::Running,
        ),
    ];
    for (name, policy, statuses, expected) in cases {
        let p = pod(policy, vec![c("init")], vec![c("app")]);
        assert_eq!(get_phase(&p, &statuses, false), expected, "{name}");
    }
}

#[test]
fn sidecar_init_containers_table() {
    let cases: Vec<(&str, Vec<ContainerStatus>, Phase)> = vec![
        ("sidecar unknown", vec![running("app")], Phase::Pending),
        ("sidecar waiting", vec![waiting("side"), waiting("app")], Phase::Pending),
        (
            "sidecar running, not started",
            vec![running("side"), waiting("app")],
            Phase::Pending,
        ),
        (
            "sidecar started, app waiting",
            vec![started("side"), waiting("app")],
            Phase::Pending,
        ),
        (
            "sidecar started, app running",
            vec![started("side"), running("app")],
            Phase::Running,
        ),
        (
            "sidecar restarting, app running",
            vec![running("side"), running("app")],
            Phase::Running,
        ),
        (
            "sidecar crashloop, app running",
            vec![crashloop("side", 1), running("app")],
            Phase::Running,
        ),
        (
            "sidecar exited, app running",
            vec![exited("side", 1), running("app")],
            Phase::Running,
        ),
        (
            "sidecar no state",
            vec![stateless("side"), running("app")],
            Phase::Pending,
        ),
        (
            "sidecar exited, app done",
            vec![exited("side", 137), exited("app", 0)],
            Phase::Succeeded,
        ),
    ];
    for (name, statuses, expected) in cases {
        let p = pod("Never", vec![sidecar("side")], vec![c("app")]);
        assert_eq!(get_phase(&p, &statuses, false), expected, "{name}");
    }
}

/// KEP-5307: a container's own policy and exit-code rules decide whether a
/// stopped container counts as restarting.
#[test]
fn container_restart_rules_decide_per_container() {
    let retry42: Container = serde_json::from_value(serde_json::json!({
        "name": "a", "restartPolicy": "Never",
        "restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]
    }))
    .expect("container");
    let p = pod("Never", vec![], vec![retry42.clone()]);
    assert_eq!(get_phase(&p, &[exited("a", 42)], false), Phase::Running, "will restart");
    assert_eq!(get_phase(&p, &[crashloop("a", 42)], false), Phase::Running);
    assert_eq!(get_phase(&p, &[exited("a", 3)], false), Phase::Failed);
    assert_eq!(get_phase(&p, &[exited("a", 0)], false), Phase::Succeeded);

    let mut never = c("job");
    never.restart_policy = Some("Never".into());
    let always = pod("Always", vec![], vec![never.clone(), c("srv")]);
    assert_eq!(
        get_phase(&always, &[exited("job", 1), exited("srv", 0)], false),
        Phase::Running,
        "srv restarts under the pod's Always"
    );
    let only = pod("Always", vec![], vec![never]);
    assert_eq!(get_phase(&only, &[exited("job", 1)], false), Phase::Failed);

    // An init container that failed is fatal only if it will not be retried.
    let mut init = retry42;
    init.name = "init".into();
    let p = pod("Never", vec![init], vec![c("main")]);
    assert_eq!(
        get_phase(&p, &[exited("init", 42), waiting("main")], false),
        Phase::Pending
    );
    assert_eq!(
        get_phase(&p, &[exited("init", 2), waiting("main")], false),
        Phase::Failed
    );
}
