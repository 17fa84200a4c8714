//! Unit tests of the condition generators and transition-time stamping.

use k8s_openapi::api::core::v1::{Container, ContainerState, ContainerStatus, PodCondition, PodReadinessGate, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::*;

fn c(name: &str) -> Container {
    Container {
        name: name.into(),
        ..Default::default()
    }
}

fn spec(init: &[&str], sidecars: &[&str], containers: &[&str]) -> PodSpec {
    let mut inits: Vec<Container> = init.iter().map(|n| c(n)).collect();
    inits.extend(sidecars.iter().map(|n| Container {
        restart_policy: Some("Always".into()),
        ..c(n)
    }));
    PodSpec {
        init_containers: Some(inits),
        containers: containers.iter().map(|n| c(n)).collect(),
        ..Default::default()
    }
}

fn st(name: &str, ready: bool) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        ready,
        ..Default::default()
    }
}

fn running(name: &str, ready: bool) -> ContainerStatus {
    ContainerStatus {
        state: Some(ContainerState {
            running: Some(Default::default()),
            ..Default::default()
        }),
        started: Some(true),
        ..st(name, ready)
    }
}

fn parts(c: &PodCondition) -> (&str, &str, Option<&str>, Option<&str>) {
    (
        c.type_.as_str(),
        c.status.as_str(),
        c.reason.as_deref(),
        c.message.as_deref(),
    )
}

#[test]
fn containers_ready_table() {
    let s = spec(&[], &["side"], &["a", "b"]);
    let all = [running("side", true), running("a", true), running("b", true)];
    assert_eq!(
        parts(&containers_ready(&s, Some(&all), Phase::Running)),
        ("ContainersReady", "True", None, None)
    );
    let some = [running("side", false), running("a", true)];
    assert_eq!(
        parts(&containers_ready(&s, Some(&some), Phase::Running)),
        (
            "ContainersReady",
            "False",
            Some("ContainersNotReady"),
            Some("containers with unknown status: [b], containers with unready status: [side]")
        )
    );
    assert_eq!(
        parts(&containers_ready(&s, None, Phase::Running)),
        ("ContainersReady", "False", Some("UnknownContainerStatuses"), None)
    );
    assert_eq!(
        parts(&containers_ready(&s, Some(&all), Phase::Succeeded)),
        ("ContainersReady", "False", Some("PodCompleted"), None)
    );
    assert_eq!(
        parts(&containers_ready(&s, Some(&some), Phase::Succeeded)).2,
        Some("ContainersNotReady"),
        "succeeded with unknown containers is not completed"
    );
    assert_eq!(
        parts(&containers_ready(&s, Some(&all), Phase::Failed)),
        ("ContainersReady", "False", Some("PodFailed"), None)
    );
}

#[test]
fn pod_ready_follows_containers_ready_then_gates() {
    let mut s = spec(&[], &[], &["a"]);
    let unready = [running("a", false)];
    assert_eq!(
        parts(&pod_ready(&s, &[], Some(&unready), Phase::Running)),
        (
            "Ready",
            "False",
            Some("ContainersNotReady"),
            Some("containers with unready status: [a]")
        )
    );
    let ready = [running("a", true)];
    assert_eq!(
        parts(&pod_ready(&s, &[], Some(&ready), Phase::Running)),
        ("Ready", "True", None, None)
    );

    s.readiness_gates = Some(vec![
        PodReadinessGate {
            condition_type: "x/one".into(),
        },
        PodReadinessGate {
            condition_type: "x/two".into(),
        },
    ]);
    let gate = |t: &str, status: &str| PodCondition {
        type_: t.into(),
        status: status.into(),
        ..Default::default()
    };
    let cond = pod_ready(&s, &[gate("x/one", "False")], Some(&ready), Phase::Running);
    assert_eq!(
        parts(&cond),
        (
            "Ready",
            "False",
            Some("ReadinessGatesNotReady"),
            Some(
                "the status of pod readiness gate \"x/one\" is not \"True\", but False, \
                 corresponding condition of pod readiness gate \"x/two\" does not exist."
            )
        )
    );
    let cond = pod_ready(
        &s,
        &[gate("x/one", "True"), gate("x/two", "True")],
        Some(&ready),
        Phase::Running,
    );
    assert_eq!(parts(&cond), ("Ready", "True", None, None));
    let cond = pod_ready(
        &s,
        &[gate("x/one", "True"), gate("x/two", "True")],
        Some(&ready),
        Phase::Failed,
    );
    assert_eq!(parts(&cond), ("Ready", "False", Some("PodFailed"), None));
}

#[test]
fn initialized_table() {
    let s = spec(&["i1", "i2"], &["side"], &["app"]);
    let waiting_app = st("app", false);
    let cond = initialized(&s, Some(&[st("i1", true), waiting_app.clone()]), Phase::Pending);
    assert_eq!(
        parts(&cond),
        (
            "Initialized",
            "False",
            Some("ContainersNotInitialized"),
            Some("containers with unknown status: [i2 side]")
        )
    );
    let side_not_started = ContainerStatus {
        started: Some(false),
        ..running("side", false)
    };
    let cond = initialized(
        &s,
        Some(&[st("i1", true), st("i2", false), side_not_started]),
        Phase::Pending,
    );
    assert_eq!(parts(&cond).3, Some("containers with incomplete status: [i2 side]"));
    let cond = initialized(
        &s,
        Some(&[st("i1", true), st("i2", true), running("side", true)]),
        Phase::Pending,
    );
    assert_eq!(parts(&cond), ("Initialized", "True", None, None));
    let cond = initialized(
        &s,
        Some(&[st("i1", true), st("i2", true), st("side", false)]),
        Phase::Succeeded,
    );
    assert_eq!(parts(&cond), ("Initialized", "True", Some("PodCompleted"), None));
    let cond = initialized(
        &s,
        Some(&[st("i1", false), st("side", false), running("app", true)]),
        Phase::Running,
    );
    assert_eq!(
        parts(&cond),
        ("Initialized", "True", None, None),
        "a regular container already ran"
    );
    let cond = initialized(&s, None, Phase::Pending);
    assert_eq!(
        parts(&cond),
        ("Initialized", "False", Some("UnknownContainerStatuses"), None)
    );
    let no_init = spec(&[], &[], &["app"]);
    assert_eq!(
        parts(&initialized(&no_init, None, Phase::Pending)),
        ("Initialized", "True", None, None)
    );
    assert_eq!(
        parts(&initialized(&no_init, None, Phase::Succeeded)),
        ("Initialized", "True", Some("PodCompleted"), None)
    );
}

#[test]
fn sandbox_and_scheduled_conditions() {
    assert_eq!(
        parts(&ready_to_start_containers(true)),
        ("PodReadyToStartContainers", "True", None, None)
    );
    assert_eq!(
        parts(&ready_to_start_containers(false)),
        ("PodReadyToStartContainers", "False", None, None)
    );
    assert_eq!(parts(&pod_scheduled()), ("PodScheduled", "True", None, None));
}

#[test]
fn transition_times_kept_when_status_unchanged() {
    let t0 = Timestamp::from_second(1_000).unwrap();
    let t1 = Timestamp::from_second(2_000).unwrap();
    let now = Timestamp::from_second(3_000).unwrap();
    let cond = |t: &str, s: &str, at: Option<Timestamp>| PodCondition {
        type_: t.into(),
        status: s.into(),
        last_transition_time: at.map(Time),
        ..Default::default()
    };
    let old = vec![
        cond("Ready", "True", Some(t0)),
        cond("Initialized", "True", Some(t0)),
        cond("PodScheduled", "True", None),
    ];
    let mut new = vec![
        cond("Ready", "True", None),
        cond("Initialized", "False", None),
        cond("ContainersReady", "True", Some(t1)),
        cond("PodScheduled", "True", None),
        cond("x/gate", "True", None),
        cond("DisruptionTarget", "True", None),
    ];
    stamp_transition_times(&mut new, &old, now);
    let times: Vec<_> = new
        .iter()
        .map(|c| c.last_transition_time.as_ref().map(|t| t.0))
        .collect();
    assert_eq!(times, vec![Some(t0), Some(now), Some(t1), Some(now), None, Some(now)]);
}
