//! The assembled kubelet on the mock CRI under paused time: a pod is
//! created and runs, a spec update restarts only the changed container, and
//! removing a pod's manifest terminates it gracefully.

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::{ContainerState, PodSandboxState};
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};

const WEB: &str = r#"
metadata: {name: web, namespace: default, uid: u-web}
spec:
  containers:
  - {name: app, image: "busybox:1.36", command: [sh, -c, "echo hi; sleep 3600"]}
"#;

/// A pod from the source gets a sandbox and a running container, and its API
/// status says Running with the sandbox IP, the host IP and a container ID.
#[test]
fn pod_reaches_running_and_reports_ip() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let web = pod(WEB);
        let uid = uid_of(&web);
        node.set_pods(&[&web]);
        node.wait_for("web Running", Duration::from_secs(10), |n| {
            n.phase(&uid) == "Running" && n.is_running(&uid, "app")
        })
        .await;
        let sandboxes = node.sandboxes("web");
        assert_eq!(sandboxes.len(), 1, "{}", node.describe());
        assert_eq!(sandboxes[0].state(), PodSandboxState::SandboxReady);
        let ip = sandboxes[0].network.clone().unwrap_or_default().ip;
        assert!(!ip.is_empty());
        let ctrs = node.containers("web", "app");
        assert_eq!(ctrs.len(), 1);
        assert_eq!(ctrs[0].state(), ContainerState::ContainerRunning);
        let status = node.status(&uid).unwrap();
        assert_eq!(status.pod_ip.as_deref(), Some(ip.as_str()));
        assert_eq!(status.host_ip.as_deref(), Some("10.0.0.1"));
        let app = node.container_status(&uid, "app").unwrap();
        assert_eq!(
            app.container_id.as_deref(),
            Some(format!("containerd://{}", ctrs[0].status.id).as_str())
        );
        assert_eq!(app.restart_count, 0);
        assert!(app.ready);
    });
}

fn two_containers(b_command: &str) -> k8s_openapi::api::core::v1::Pod {
    pod(&format!(
        r#"
metadata: {{name: duo, namespace: default, uid: u-duo}}
spec:
  containers:
  - {{name: a, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}}
  - {{name: b, image: "busybox:1.36", command: [sh, -c, "{b_command}"]}}
"#
    ))
}

/// Changing one container's command (an UPDATE from the source) restarts
/// that container only: the other keeps its CRI container and never restarts.
#[test]
fn spec_update_restarts_only_the_changed_container() {
    run_paused(|| async {
        // Both handle SIGTERM (exit 143 at once).
        let mock = MockRuntime::builder()
            .script("a", Behaviour::run_forever())
            .script("b", Behaviour::run_forever())
            .build();
        let node = Node::start(mock);
        let v1 = two_containers("sleep 3600");
        let uid = uid_of(&v1);
        node.set_pods(&[&v1]);
        node.wait_for("duo Running", Duration::from_secs(10), |n| {
            n.is_running(&uid, "a") && n.is_running(&uid, "b")
        })
        .await;
        let a_id = node.containers("duo", "a")[0].status.id.clone();
        let b_id = node.containers("duo", "b")[0].status.id.clone();

        node.set_pods(&[&two_containers("sleep 7200")]);
        let updated = Instant::now();
        node.wait_for("b replaced", Duration::from_secs(10), |n| {
            n.containers("duo", "b").len() == 2 && n.is_running(&uid, "b")
        })
        .await;
        assert!(updated.elapsed() < Duration::from_secs(5), "restarted promptly");
        // Let resyncs and relists run: nothing else may change.
        sleep(Duration::from_secs(90)).await;

        let a = node.containers("duo", "a");
        assert_eq!(a.len(), 1, "a must not be recreated: {}", node.describe());
        assert_eq!(a[0].status.id, a_id);
        assert_eq!(a[0].state(), ContainerState::ContainerRunning);
        let b = node.containers("duo", "b");
        assert_eq!(b.len(), 2, "{}", node.describe());
        assert_eq!(b[0].status.id, b_id);
        assert_eq!(b[0].state(), ContainerState::ContainerExited, "old b stopped");
        assert_eq!(b[1].state(), ContainerState::ContainerRunning);
        assert_eq!(b[1].attempt(), 1);
        assert_eq!(node.calls("StopContainer").len(), 1, "only b was stopped");
        assert_eq!(node.calls("RunPodSandbox").len(), 1, "the sandbox is kept");
        assert_eq!(node.restart_count(&uid, "a"), 0);
        assert_eq!(node.restart_count(&uid, "b"), 1);
        let b_api = node.container_status(&uid, "b").unwrap();
        assert_eq!(
            b_api.container_id.as_deref(),
            Some(format!("containerd://{}", b[1].status.id).as_str())
        );
        assert_eq!(node.phase(&uid), "Running");
    });
}

/// Removing a pod's manifest kills it with its grace period (30 s): a
/// container that handles SIGTERM stops at once, one that ignores it
/// (`trap "" TERM` as PID 1) is killed when the 30 s are up; then the
/// sandbox is stopped and the last API status shows both terminated.
#[test]
fn removed_manifest_terminates_gracefully_within_the_grace_period() {
    run_paused(|| async {
        let mock = MockRuntime::builder()
            .script("polite", Behaviour::run_forever())
            .build();
        let node = Node::start(mock);
        let p = pod(r#"
metadata: {name: slow, namespace: default, uid: u-slow}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - {name: stubborn, image: "busybox:1.36", command: [sh, -c, 'trap "" TERM; sleep 3600']}
  - {name: polite, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("slow Running", Duration::from_secs(10), |n| {
            n.is_running(&uid, "stubborn") && n.is_running(&uid, "polite")
        })
        .await;

        let removed = Instant::now();
        node.set_pods(&[]);
        let exited = |n: &Node, name: &str| {
            n.containers("slow", name)
                .first()
                .is_some_and(|c| c.state() == ContainerState::ContainerExited)
        };
        let polite = node
            .wait_for("polite stopped", Duration::from_secs(40), |n| exited(n, "polite"))
            .await;
        assert!(
            polite < Duration::from_secs(3),
            "SIGTERM stops polite at once, took {polite:?}"
        );
        node.wait_for("stubborn stopped", Duration::from_secs(40), |n| exited(n, "stubborn"))
            .await;
        let stubborn = removed.elapsed();
        assert!(
            stubborn >= Duration::from_secs(30) && stubborn < Duration::from_secs(35),
            "stubborn must be killed when the 30 s grace period is up, took {stubborn:?}"
        );
        assert_eq!(node.containers("slow", "stubborn")[0].status.exit_code, 137);
        assert_eq!(node.containers("slow", "polite")[0].status.exit_code, 143);
        let stops = node.calls("StopContainer");
        assert_eq!(stops.len(), 2, "{stops:?}");
        assert!(
            stops
                .iter()
                .all(|c| c.at.duration_since(removed) < Duration::from_secs(3)),
            "both containers get SIGTERM at once: {stops:?}"
        );

        node.wait_for("sandbox stopped", Duration::from_secs(10), |n| {
            n.sandboxes("slow")
                .iter()
                .all(|s| s.state() == PodSandboxState::SandboxNotready)
        })
        .await;
        let stop_sandbox = node.calls("StopPodSandbox");
        assert!(!stop_sandbox.is_empty());
        assert!(
            stop_sandbox[0].at.duration_since(removed) >= Duration::from_secs(30),
            "the sandbox is stopped only after its containers: {stop_sandbox:?}"
        );
        // Nothing is restarted afterwards.
        sleep(Duration::from_secs(60)).await;
        assert_eq!(node.calls("CreateContainer").len(), 2, "{}", node.describe());
        assert_eq!(node.calls("RunPodSandbox").len(), 1);
        assert!(!node.kubelet.pods.contains(&uid));
    });
}
