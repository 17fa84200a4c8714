//! `generate_api_pod_status`: a pod's lifecycle, phase by phase, from inline
//! YAML pods and scripted runtime states.

#[path = "support/status.rs"]
mod fixtures;

use std::collections::HashMap;

use actlet::kuberuntime::pod_status::{ContainerState, RuntimePodStatus};
use actlet::status::{StatusInput, generate_api_pod_status};
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

fn s(v: &str) -> String {
    v.to_owned()
}

#[test]
fn just_created_pod_is_pending_with_container_creating() {
    let p = pod(WEB);
    let st = generate(&p, &runtime(&p, vec![], vec![]));
    assert_eq!(phase(&st), "Pending");
    assert_eq!(states(&st, "app"), (s("waiting:ContainerCreating"), s("none")));
    let app = container(&st, "app");
    assert_eq!(
        (app.image.as_str(), app.ready, app.started, app.restart_count),
        ("nginx:1", false, Some(false), 0)
    );
    assert_eq!(app.container_id, None);
    let types: Vec<_> = st.conditions.iter().flatten().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled"
        ]
    );
    assert_eq!(cond(&st, "PodReadyToStartContainers").0, "False");
    assert_eq!(cond(&st, "Initialized"), (s("True"), None, None));
    let not_ready = (
        s("False"),
        Some(s("ContainersNotReady")),
        Some(s("containers with unready status: [app]")),
    );
    assert_eq!(cond(&st, "Ready"), not_ready);
    assert_eq!(cond(&st, "ContainersReady"), not_ready);
    assert_eq!(cond(&st, "PodScheduled"), (s("True"), None, None));
    assert!(
        st.conditions
            .iter()
            .flatten()
            .all(|c| c.last_transition_time.as_ref().map(|t| t.0) == Some(at(100)))
    );
    assert_eq!(st.start_time.as_ref().map(|t| t.0), Some(at(100)));
    assert_eq!(st.qos_class.as_deref(), Some("BestEffort"));
    assert_eq!(st.host_ip.as_deref(), Some("192.168.1.10"));
    assert_eq!(st.pod_ip, None);
    assert_eq!(st.init_container_statuses, None);
}

#[test]
fn init_container_running_keeps_pod_initializing() {
    let p = pod(WITH_INIT);
    let rt = runtime(
        &p,
        vec![sandbox(&["10.0.0.5"])],
        vec![ctr("i1", "init", ContainerState::Running, 20)],
    );
    let st = generate(&p, &rt);
    assert_eq!(phase(&st), "Pending");
    assert_eq!(states(&st, "init").0, "running");
    assert_eq!(states(&st, "app"), (s("waiting:PodInitializing"), s("none")));
    assert_eq!(
        cond(&st, "Initialized"),
        (
            s("False"),
            Some(s("ContainersNotInitialized")),
            Some(s("containers with incomplete status: [init]"))
        )
    );
    assert_eq!(cond(&st, "PodReadyToStartContainers").0, "True");
    assert_eq!(st.pod_ip.as_deref(), Some("10.0.0.5"));
    assert!(!container(&st, "init").ready);
}

#[test]
fn init_done_and_app_running_is_running_and_ready() {
    let p = pod(WITH_INIT);
    let rt = runtime(
        &p,
        vec![sandbox(&["10.0.0.5", "fd00::5"])],
        vec![
            exited("i1", "init", 0, "Completed", 20),
            ctr("c1", "app", ContainerState::Running, 30),
        ],
    );
    let st = generate(&p, &rt);
    assert_eq!(phase(&st), "Running");
    assert_eq!(states(&st, "init").0, "terminated:Completed:0");
    assert!(
        container(&st, "init").ready,
        "a regular init container is ready once it exited 0"
    );
    let app = container(&st, "app");
    assert_eq!(app.container_id.as_deref(), Some("containerd://c1"));
    assert_eq!(
        (app.image.as_str(), app.image_id.as_str()),
        ("docker.io/library/app:1", "sha256:app")
    );
    assert_eq!((app.ready, app.started), (true, Some(true)));
    let started_at = app
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.as_ref());
    assert_eq!(started_at.map(|t| t.0), Some(at(31)));
    for c in ["Initialized", "Ready", "ContainersReady", "PodReadyToStartContainers"] {
        assert_eq!(cond(&st, c), (s("True"), None, None), "{c}");
    }
    let ips: Vec<_> = st.pod_ips.iter().flatten().map(|ip| ip.ip.as_str()).collect();
    assert_eq!(
        (st.pod_ip.as_deref(), ips),
        (Some("10.0.0.5"), vec!["10.0.0.5", "fd00::5"])
    );
}

#[test]
fn crashlooping_container_waits_with_last_termination() {
    let p = pod(r#"
metadata: {name: web, uid: u1}
spec:
  containers:
  - {name: app, image: app}
  - {name: side, image: side}
"#);
    let mut second = exited("c2", "app", 1, "Error", 40);
    second.restart_count = 1;
    let rt = runtime(
        &p,
        vec![sandbox(&["10.0.0.5"])],
        vec![
            exited("c1", "app", 1, "Error", 20),
            second,
            ctr("s1", "side", ContainerState::Running, 21),
        ],
    );
    let waiting = HashMap::from([(
        s("app"),
        (s("CrashLoopBackOff"), s("back-off 10s restarting failed container=app")),
    )]);
    let st = generate_api_pod_status(&StatusInput {
        waiting: &waiting,
        ..StatusInput::new(&p, &rt, at(100))
    });
    assert_eq!(phase(&st), "Running");
    assert_eq!(
        states(&st, "app"),
        (s("waiting:CrashLoopBackOff"), s("terminated:Error:1"))
    );
    let app = container(&st, "app");
    assert_eq!(app.restart_count, 1);
    let last = app.last_state.as_ref().and_then(|s| s.terminated.as_ref()).unwrap();
    assert_eq!(
        last.container_id.as_deref(),
        Some("containerd://c2"),
        "the newest attempt is the last state"
    );
    let w = app.state.as_ref().and_then(|s| s.waiting.as_ref()).unwrap();
    assert_eq!(
        w.message.as_deref(),
        Some("back-off 10s restarting failed container=app")
    );
    let not_ready = (
        s("False"),
        Some(s("ContainersNotReady")),
        Some(s("containers with unready status: [app]")),
    );
    assert_eq!(cond(&st, "Ready"), not_ready);
    assert!(container(&st, "side").ready);
}

#[test]
fn image_pull_errors_keep_the_pod_pending() {
    let p = pod(WEB);
    let rt = runtime(&p, vec![sandbox(&["10.0.0.5"])], vec![]);
    for reason in [
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
    ] {
        let waiting = HashMap::from([(s("app"), (s(reason), s("details")))]);
        let st = generate_api_pod_status(&StatusInput {
            waiting: &waiting,
            ..StatusInput::new(&p, &rt, at(1))
        });
        assert_eq!(
            (phase(&st), states(&st, "app").0),
            ("Pending", format!("waiting:{reason}")),
            "{reason}"
        );
    }
}
