//! `generate_api_pod_status`: phases by restart policy and exit codes, init
//! container failures, and terminal phases that stick.

#[path = "support/status.rs"]
mod fixtures;

use std::collections::HashMap;

use actlet::kuberuntime::pod_status::{ContainerState, RuntimePodStatus};
use actlet::status::{Phase, StatusInput, TerminalOverride, generate_api_pod_status};
use fixtures::*;
use k8s_openapi::api::core::v1::{Pod, PodStatus};

const WEB: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, uid: u1}
spec:
  containers:
  - {name: app, image: "nginx:1"}
"#;

const WITH_INIT: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, uid: u1}
spec:
  initContainers:
  - {name: init, image: "busybox:1"}
  containers:
  - {name: app, image: "nginx:1"}
"#;

fn generate(pod: &Pod, rt: &RuntimePodStatus) -> PodStatus {
    generate_api_pod_status(&StatusInput {
        host_ip: Some("192.168.1.10".into()),
        ..StatusInput::new(pod, rt, at(100))
    })
}

fn with_policy(policy: &str) -> Pod {
    let mut p = pod(WEB);
    p.spec.as_mut().unwrap().restart_policy = Some(policy.into());
    p
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn restart_policy_and_exit_codes_table() {
    // (policy, exit code, runtime reason, pod_is_terminal, phase, state, Ready reason)
    let cases = [
        (
            "Never",
            0,
            "",
            false,
            "Succeeded",
            "terminated:Completed:0",
            "PodCompleted",
        ),
        ("Never", 1, "", false, "Failed", "terminated:Error:1", "PodFailed"),
        (
            "Never",
            137,
            "OOMKilled",
            false,
            "Failed",
            "terminated:OOMKilled:137",
            "PodFailed",
        ),
        (
            "OnFailure",
            0,
            "Completed",
            false,
            "Succeeded",
            "terminated:Completed:0",
            "PodCompleted",
        ),
        (
            "OnFailure",
            2,
            "Error",
            false,
            "Running",
            "terminated:Error:2",
            "ContainersNotReady",
        ),
        (
            "Always",
            0,
            "Completed",
            false,
            "Running",
            "terminated:Completed:0",
            "ContainersNotReady",
        ),
        (
            "Always",
            1,
            "Error",
            false,
            "Running",
            "terminated:Error:1",
            "ContainersNotReady",
        ),
        (
            "Always",
            0,
            "Completed",
            true,
            "Succeeded",
            "terminated:Completed:0",
            "PodCompleted",
        ),
        ("Always", 1, "Error", true, "Failed", "terminated:Error:1", "PodFailed"),
    ];
    for (policy, code, reason, terminal, want_phase, want_state, ready_reason) in cases {
        let p = with_policy(policy);
        let rt = runtime(
            &p,
            vec![sandbox(&["10.0.0.5"])],
            vec![exited("c1", "app", code, reason, 20)],
        );
        let st = generate_api_pod_status(&StatusInput {
            pod_is_terminal: terminal,
            ..StatusInput::new(&p, &rt, at(100))
        });
        let case = format!("{policy} exit {code} terminal={terminal}");
        assert_eq!(phase(&st), want_phase, "{case}");
        assert_eq!(states(&st, "app").0, want_state, "{case}");
        assert_eq!(cond(&st, "Ready").1.as_deref(), Some(ready_reason), "{case}");
    }
}

#[test]
fn always_pod_pending_until_every_container_started() {
    let p = pod(r#"
metadata: {name: two, uid: u2}
spec:
  containers: [{name: a, image: a}, {name: b, image: b}]
"#);
    let created = runtime(
        &p,
        vec![sandbox(&["10.0.0.5"])],
        vec![
            exited("a1", "a", 0, "Completed", 20),
            ctr("b1", "b", ContainerState::Created, 21),
        ],
    );
    let st = generate(&p, &created);
    assert_eq!(
        states(&st, "b").0,
        "waiting:",
        "created, not started: waiting without reason"
    );
    assert_eq!(phase(&st), "Pending");
    let static_pod = {
        let mut sp = with_policy("Always");
        sp.metadata.annotations = Some([(s("kubernetes.io/config.source"), s("file"))].into());
        sp
    };
    let rt = runtime(&static_pod, vec![], vec![exited("c1", "app", 0, "Completed", 20)]);
    let st = generate_api_pod_status(&StatusInput {
        pod_is_terminal: true,
        ..StatusInput::new(&static_pod, &rt, at(1))
    });
    assert_eq!(
        phase(&st),
        "Running",
        "static pods get no terminal phase (upstream TODO #116484)"
    );
}

#[test]
fn init_container_failures() {
    let mut never = pod(WITH_INIT);
    never.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    let rt = runtime(
        &never,
        vec![sandbox(&["10.0.0.5"])],
        vec![exited("i1", "init", 1, "Error", 20)],
    );
    let st = generate(&never, &rt);
    assert_eq!(phase(&st), "Failed");
    assert_eq!(states(&st, "app").0, "waiting:PodInitializing");

    let always = pod(WITH_INIT);
    let rt = runtime(
        &always,
        vec![sandbox(&["10.0.0.5"])],
        vec![exited("i1", "init", 1, "Error", 20)],
    );
    let waiting = HashMap::from([(s("init"), (s("CrashLoopBackOff"), s("back-off")))]);
    let st = generate_api_pod_status(&StatusInput {
        waiting: &waiting,
        ..StatusInput::new(&always, &rt, at(1))
    });
    assert_eq!(phase(&st), "Pending");
    assert_eq!(
        states(&st, "init"),
        (s("waiting:CrashLoopBackOff"), s("terminated:Error:1"))
    );
    assert_eq!(cond(&st, "Initialized").1.as_deref(), Some("ContainersNotInitialized"));

    let ok = runtime(
        &always,
        vec![sandbox(&["10.0.0.5"])],
        vec![exited("i1", "init", 0, "Completed", 20)],
    );
    let waiting = HashMap::from([(s("init"), (s("CrashLoopBackOff"), s("stale")))]);
    let st = generate_api_pod_status(&StatusInput {
        waiting: &waiting,
        ..StatusInput::new(&always, &ok, at(1))
    });
    assert_eq!(
        states(&st, "init").0,
        "terminated:Completed:0",
        "a succeeded init container never waits again"
    );
}

#[test]
fn terminal_override_and_terminal_phases_stick() {
    let p = pod(WEB);
    let rt = runtime(
        &p,
        vec![sandbox(&["10.0.0.5"])],
        vec![ctr("c1", "app", ContainerState::Running, 20)],
    );
    let evicted = TerminalOverride {
        phase: Phase::Failed,
        reason: s("Evicted"),
        message: s("low on memory"),
        disruption: true,
    };
    let st = generate_api_pod_status(&StatusInput {
        terminal_override: Some(evicted),
        ..StatusInput::new(&p, &rt, at(1))
    });
    assert_eq!(
        (phase(&st), st.reason.as_deref(), st.message.as_deref()),
        ("Failed", Some("Evicted"), Some("low on memory"))
    );
    assert_eq!(cond(&st, "Ready").1.as_deref(), Some("PodFailed"));
    let dt = st.conditions.iter().flatten().find(|c| c.type_ == "DisruptionTarget");
    let dt = dt.expect("an eviction adds DisruptionTarget");
    assert_eq!(
        (dt.status.as_str(), dt.reason.as_deref()),
        ("True", Some("TerminationByKubelet"))
    );
    assert_eq!(dt.message.as_deref(), Some("low on memory"));

    // The manager's terminal phase (and its reason) survive a running runtime.
    let st2 = generate_api_pod_status(&StatusInput {
        previous: Some(&st),
        ..StatusInput::new(&p, &rt, at(2))
    });
    assert_eq!((phase(&st2), st2.reason.as_deref()), ("Failed", Some("Evicted")));
    let kept = st2
        .conditions
        .iter()
        .flatten()
        .filter(|c| c.type_ == "DisruptionTarget")
        .count();
    assert_eq!(kept, 1, "DisruptionTarget kept from the manager's status, once");

    // So does the API's.
    let mut api_done = p.clone();
    api_done.status = Some(pod_status("phase: Succeeded"));
    let st3 = generate(&api_done, &rt);
    assert_eq!(phase(&st3), "Succeeded");
}
