//! SyncPod against the mock CRI runtime, on paused tokio time: pod creation,
//! sandbox recreation, init containers, restart policies, spec changes and
//! probe failures.

#[path = "support/kuberuntime.rs"]
mod support;

use std::time::Duration;

use actlet::cri::Runtime;
use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1;
use actlet::kuberuntime::ProbeView;
use actlet::kuberuntime::pod_status::{ContainerState, SandboxState};
use support::{Node, assert_ok, pod};
use tokio::time::sleep;

const WEB: &str = r#"
metadata: {name: web, namespace: default, uid: u-web}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - {name: app, image: "busybox:1.36", command: [sleep, "3600"]}
  - {name: side, image: "busybox:1.36", command: [sleep, "3600"], env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}
"#;

/// A new pod gets one sandbox with an IP and all its containers running; a
/// second sync changes nothing.
#[tokio::test(start_paused = true)]
async fn creating_a_pod_runs_the_sandbox_and_every_container() {
    let node = Node::new(MockRuntime::new());
    let web = pod(WEB);
    assert_ok(&node.sync(&web).await);

    let st = node.status(&web).await;
    assert_eq!(st.sandboxes.len(), 1);
    assert_eq!(st.sandboxes[0].state, SandboxState::Ready);
    assert_eq!(st.ips.len(), 1, "the pod has an IP");
    assert_eq!(node.running(&web).await, ["app", "side"]);
    assert!(
        st.containers
            .iter()
            .all(|c| c.restart_count == 0 && c.sandbox_id == st.sandboxes[0].id)
    );
    assert!(
        node.logs.path().join("pods/default_web_u-web/app").is_dir(),
        "container log dir created"
    );

    let creates = node.mock.call_count("CreateContainer");
    assert_ok(&node.sync(&web).await);
    assert_eq!(
        node.mock.call_count("CreateContainer"),
        creates,
        "steady state: nothing to do"
    );
    assert_eq!(node.mock.call_count("RunPodSandbox"), 1);
}

/// The sandbox dies (all its containers with it): the next sync creates
/// sandbox attempt 1 and restarts every container in it.
#[tokio::test(start_paused = true)]
async fn a_dead_sandbox_is_recreated_with_all_containers() {
    let node = Node::new(MockRuntime::new());
    let web = pod(WEB);
    assert_ok(&node.sync(&web).await);
    let old = node.status(&web).await.sandboxes[0].id.clone();
    node.mock
        .stop_pod_sandbox(v1::StopPodSandboxRequest {
            pod_sandbox_id: old.clone(),
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(node.running(&web).await.is_empty());

    assert_ok(&node.sync(&web).await);
    let st = node.status(&web).await;
    let newest = &st.sandboxes[0];
    assert_ne!(newest.id, old);
    assert_eq!((newest.state, newest.attempt), (SandboxState::Ready, 1));
    assert_eq!(node.running(&web).await, ["app", "side"]);
    let app = st.find_container("app").cloned().unwrap_or_else(|| panic!("no app"));
    assert_eq!((app.restart_count, app.sandbox_id.as_str()), (1, newest.id.as_str()));
}

const INIT: &str = r#"
metadata: {name: init, namespace: default, uid: u-init}
spec:
  restartPolicy: RESTART
  initContainers:
  - {name: i0, image: "busybox:1.36"}
  - {name: i1, image: "busybox:1.36"}
  containers:
  - {name: app, image: "busybox:1.36", command: [sleep, "3600"]}
"#;

/// Init containers run one at a time, in order, each to success; only then
/// does the regular container start.
#[tokio::test(start_paused = true)]
async fn init_containers_run_in_order_before_regular_containers() {
    let mock = MockRuntime::builder()
        .script("i0", Behaviour::exit_after(Duration::from_secs(2), 0))
        .script("i1", Behaviour::exit_after(Duration::from_secs(3), 0))
        .build();
    let node = Node::new(mock);
    let p = pod(&INIT.replace("RESTART", "Always"));

    assert_ok(&node.sync(&p).await);
    assert_eq!(node.running(&p).await, ["i0"]);
    assert_ok(&node.sync(&p).await);
    assert_eq!((node.created("i1"), node.created("app")), (0, 0), "i1 waits for i0");

    sleep(Duration::from_millis(2100)).await;
    assert_ok(&node.sync(&p).await);
    assert_eq!(node.running(&p).await, ["i1"]);
    assert_eq!(node.created("app"), 0);

    sleep(Duration::from_millis(3100)).await;
    assert_ok(&node.sync(&p).await);
    assert_eq!(node.running(&p).await, ["app"]);
    assert_eq!((node.created("i0"), node.created("i1"), node.created("app")), (1, 1, 1));
}

/// A failing init container is retried (with backoff) under Always and
/// OnFailure; the regular container never starts meanwhile.
#[tokio::test(start_paused = true)]
async fn a_failed_init_container_is_retried_unless_restart_policy_is_never() {
    for policy in ["Always", "OnFailure"] {
        let mock = MockRuntime::builder()
            .script("i0", Behaviour::crash_on_start(1))
            .script("i1", Behaviour::crash_on_start(0))
            .build();
        let node = Node::new(mock);
        let p = pod(&INIT.replace("RESTART", policy));
        assert_ok(&node.sync(&p).await);
        assert_ok(&node.sync(&p).await);
        assert_eq!(node.created("i0"), 2, "{policy}: first retry at once");
        let r = node.sync(&p).await;
        assert_eq!(
            r.failure_of(actlet::kuberuntime::SyncAction::StartContainer, "i0")
                .map(|e| e.reason.as_str()),
            Some("CrashLoopBackOff")
        );
        assert_eq!((node.created("i1"), node.created("app")), (0, 0), "{policy}");
        assert_eq!(node.ready_sandboxes(&p).await, 1, "{policy}: the pod keeps its sandbox");
    }
}

/// Under restartPolicy Never a failed init container fails the pod: nothing
/// else starts and the sandbox is stopped.
#[tokio::test(start_paused = true)]
async fn a_failed_init_container_kills_the_pod_under_never() {
    let node = Node::new(
        MockRuntime::builder()
            .script("i0", Behaviour::crash_on_start(3))
            .build(),
    );
    let p = pod(&INIT.replace("RESTART", "Never"));
    assert_ok(&node.sync(&p).await);
    assert_ok(&node.sync(&p).await);
    assert_eq!((node.created("i0"), node.created("i1"), node.created("app")), (1, 0, 0));
    assert_eq!(node.ready_sandboxes(&p).await, 0, "sandbox stopped");
    assert_ok(&node.sync(&p).await);
    assert_eq!(
        node.mock.call_count("RunPodSandbox"),
        1,
        "a failed Never pod gets no new sandbox"
    );
}

/// Restart policies against exit codes 0 and 1: Always restarts both,
/// OnFailure only the failure, Never neither; a pod with nothing left to
/// run has its sandbox stopped.
#[tokio::test(start_paused = true)]
async fn restart_policies_decide_whether_an_exited_container_restarts() {
    let table = [
        ("Always", 0, true),
        ("Always", 1, true),
        ("OnFailure", 0, false),
        ("OnFailure", 1, true),
        ("Never", 0, false),
        ("Never", 1, false),
    ];
    for (policy, code, restarts) in table {
        let mock = MockRuntime::builder()
            .script("job", Behaviour::exit_after(Duration::from_secs(1), code))
            .build();
        let node = Node::new(mock);
        let p = pod(&format!(
            "metadata: {{name: job, namespace: default, uid: u-job}}\nspec:\n  restartPolicy: {policy}\n  containers: [{{name: job, image: 'busybox:1.36'}}]"
        ));
        assert_ok(&node.sync(&p).await);
        sleep(Duration::from_secs(2)).await;
        let st = node.status(&p).await;
        assert_eq!(
            st.find_container("job").map(|c| (c.state, c.exit_code)),
            Some((ContainerState::Exited, code))
        );
        assert_ok(&node.sync(&p).await);
        let case = format!("{policy} exit {code}");
        assert_eq!(node.created("job"), if restarts { 2 } else { 1 }, "{case}");
        assert_eq!(
            node.ready_sandboxes(&p).await,
            usize::from(restarts),
            "{case}: sandbox stopped when done"
        );
    }
}

/// Changing one container's spec restarts that container only.
#[tokio::test(start_paused = true)]
async fn a_spec_change_restarts_only_that_container() {
    let node = Node::new(MockRuntime::new());
    let web = pod(WEB);
    assert_ok(&node.sync(&web).await);
    let before = node.status(&web).await;
    let side_id = before.find_container("side").map(|c| c.id.clone());

    let changed = pod(&WEB.replace(r#"command: [sleep, "3600"]}"#, r#"command: [sleep, "7200"]}"#));
    assert_ok(&node.sync(&changed).await);
    let after = node.status(&changed).await;
    let app = after.find_container("app").cloned().unwrap_or_else(|| panic!("no app"));
    assert_eq!((app.state, app.restart_count), (ContainerState::Running, 1));
    assert_ne!(Some(app.id.clone()), before.find_container("app").map(|c| c.id.clone()));
    assert_eq!(
        after.find_container("side").map(|c| c.id.clone()),
        side_id,
        "side untouched"
    );
    assert_eq!(after.sandboxes.len(), 1, "same sandbox");
    assert_eq!(node.mock.call_count("StopContainer"), 1);
}

/// A failed liveness probe kills and restarts the container.
#[tokio::test(start_paused = true)]
async fn a_failed_liveness_probe_restarts_the_container() {
    let node = Node::new(MockRuntime::new());
    let web = pod(WEB);
    assert_ok(&node.sync(&web).await);
    let app = node
        .status(&web)
        .await
        .find_container("app")
        .map(|c| c.id.clone())
        .unwrap_or_default();
    assert_ok(
        &node
            .sync_with(&web, &ProbeView::new().with_liveness_failure(app.clone()))
            .await,
    );
    let st = node.status(&web).await;
    let new = st.find_container("app").cloned().unwrap_or_else(|| panic!("no app"));
    assert_ne!(new.id, app);
    assert_eq!((new.state, new.restart_count), (ContainerState::Running, 1));
}
