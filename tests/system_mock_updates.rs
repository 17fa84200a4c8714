//! How the assembled kubelet (mock CRI, paused time) handles updates that
//! arrive while a pod worker is busy: they coalesce to the latest, and a
//! kill, once requested, is never undone by later updates or re-adds.

#[path = "support/system.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, Fault, MockRuntime, Script};
use actlet::cri::v1::{ContainerState, PodSandboxState};
use k8s_openapi::api::core::v1::Pod;
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};

/// Version `v` of the pod: its container's command says which.
fn version(v: u32) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: busy, namespace: default, uid: u-busy, labels: {{version: "{v}"}}}}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - {{name: app, image: "busybox:1.36", command: [sh, -c, "echo v{v}; sleep 3600"]}}
"#
    ))
}

/// A mock whose `app` containers handle SIGTERM and whose creations are
/// recorded (the command line of each, in order).
fn recording_mock() -> (MockRuntime, Arc<Mutex<Vec<String>>>) {
    let created = Arc::new(Mutex::new(Vec::new()));
    let rec = created.clone();
    let mock = MockRuntime::builder()
        .script(
            "app",
            Script::from_fn(move |info| {
                rec.lock().unwrap().push(info.argv.join(" "));
                Behaviour::run_forever()
            }),
        )
        .build();
    (mock, created)
}

/// The versions of `app` created so far, from their command lines.
fn created_versions(created: &Mutex<Vec<String>>) -> Vec<String> {
    created
        .lock()
        .unwrap()
        .iter()
        .map(|argv| {
            argv.split_whitespace()
                .find(|w| w.starts_with('v'))
                .unwrap_or("?")
                .trim_end_matches(';')
                .to_string()
        })
        .collect()
}

/// Three updates sent while the pod's first sync is stuck in a 20 s
/// `CreateContainer`: when it finishes, the worker runs only the latest
/// update (v3) — v1 and v2 are never applied.
#[test]
fn updates_while_a_sync_runs_coalesce_to_the_latest() {
    run_paused(|| async {
        let (mock, created) = recording_mock();
        mock.inject("CreateContainer", Fault::latency(Duration::from_secs(20)).times(1));
        let node = Node::start(mock);
        let uid = uid_of(&version(0));
        node.set_pods(&[&version(0)]);
        node.wait_for("CreateContainer in flight", Duration::from_secs(5), |n| {
            n.calls("CreateContainer").len() == 1
        })
        .await;
        for v in 1..=3 {
            node.set_pods(&[&version(v)]);
            sleep(Duration::from_secs(1)).await;
        }
        assert_eq!(node.calls("CreateContainer").len(), 1, "the worker is still busy");
        node.wait_for("v3 running", Duration::from_secs(40), |n| {
            created_versions(&created).last().map(String::as_str) == Some("v3") && n.is_running(&uid, "app")
        })
        .await;
        sleep(Duration::from_secs(90)).await;
        assert_eq!(created_versions(&created), ["v0", "v3"], "{}", node.describe());
        assert_eq!(node.calls("StopContainer").len(), 1, "only v0 was replaced");
        assert_eq!(node.calls("RunPodSandbox").len(), 1);
        let app = node.containers("busy", "app");
        assert_eq!(app.len(), 2);
        assert_eq!(app[0].state(), ContainerState::ContainerExited);
        assert_eq!(app[1].state(), ContainerState::ContainerRunning);
        assert_eq!(node.phase(&uid), "Running");
    });
}

/// While a sync is stuck in a 20 s `CreateContainer`, the pod is removed
/// (kill), then re-added and updated. The kill is sticky: once the stuck
/// sync ends, the pod is terminated (containers stopped, sandbox NOTREADY)
/// and nothing is created for it while it terminates. Only after it has
/// fully terminated is the re-added pod started afresh — once, from its
/// latest version, in a new sandbox. A final removal leaves it terminated.
#[test]
fn kill_is_sticky_over_later_updates_and_re_adds() {
    run_paused(|| async {
        let (mock, created) = recording_mock();
        let node = Node::start(mock.clone());
        let uid = uid_of(&version(0));
        node.set_pods(&[&version(0)]);
        node.wait_for("v0 running", Duration::from_secs(5), |n| n.is_running(&uid, "app"))
            .await;

        mock.inject("CreateContainer", Fault::latency(Duration::from_secs(20)).times(1));
        node.set_pods(&[&version(1)]);
        node.wait_for("v1 CreateContainer in flight", Duration::from_secs(5), |n| {
            n.calls("CreateContainer").len() == 2
        })
        .await;
        node.set_pods(&[]); // REMOVE → kill, while the worker is busy
        sleep(Duration::from_secs(1)).await;
        node.set_pods(&[&version(2)]); // re-added (same UID)
        sleep(Duration::from_secs(1)).await;
        node.set_pods(&[&version(3)]); // and updated

        // The stuck sync ends, then the kill runs.
        let sandbox0 = node.sandboxes("busy")[0].id.clone();
        node.wait_for("first sandbox stopped", Duration::from_secs(60), |n| {
            n.sandboxes("busy")
                .iter()
                .any(|s| s.id == sandbox0 && s.state() == PodSandboxState::SandboxNotready)
        })
        .await;
        // In call order (virtual time may not move between calls): from the
        // kill's StopContainer of the v1 container to the StopPodSandbox,
        // nothing is created or started.
        let v1_id = node
            .containers("busy", "app")
            .into_iter()
            .find(|c| c.sandbox_id == sandbox0 && c.attempt() == 1)
            .expect("the stuck sync created v1")
            .status
            .id;
        let calls = node.mock.calls();
        let kill_started = calls
            .iter()
            .position(|c| c.method == "StopContainer" && c.target == v1_id)
            .expect("the kill stopped the v1 container");
        let terminated = calls
            .iter()
            .position(|c| c.method == "StopPodSandbox" && c.target == sandbox0)
            .expect("StopPodSandbox of the first sandbox");
        assert!(kill_started < terminated);
        let during: Vec<_> = calls[kill_started..=terminated]
            .iter()
            .filter(|c| ["RunPodSandbox", "CreateContainer", "StartContainer"].contains(&c.method))
            .collect();
        assert!(during.is_empty(), "created while terminating: {during:?}");
        let old: Vec<_> = node
            .mock
            .snapshot()
            .containers
            .into_iter()
            .filter(|c| c.sandbox_id == sandbox0)
            .collect();
        assert!(
            old.iter().all(|c| c.state() == ContainerState::ContainerExited),
            "every container of the killed pod is stopped: {}",
            node.describe()
        );

        // Then the re-added pod starts afresh, from its latest version.
        node.wait_for("re-added pod running", Duration::from_secs(30), |n| {
            n.sandboxes("busy").len() == 2 && n.is_running(&uid, "app")
        })
        .await;
        sleep(Duration::from_secs(60)).await;
        assert_eq!(created_versions(&created), ["v0", "v1", "v3"], "{}", node.describe());
        let sandboxes = node.sandboxes("busy");
        assert_eq!(sandboxes.len(), 2, "{}", node.describe());
        assert_eq!(sandboxes[1].metadata.as_ref().unwrap().attempt, 1);
        assert_eq!(sandboxes[1].state(), PodSandboxState::SandboxReady);
        assert_eq!(node.phase(&uid), "Running");

        // Removed for good: terminated, and stays so.
        let removed = Instant::now();
        node.set_pods(&[]);
        node.wait_for("terminated", Duration::from_secs(30), |n| {
            n.sandboxes("busy")
                .iter()
                .all(|s| s.state() == PodSandboxState::SandboxNotready)
                && n.containers("busy", "app")
                    .iter()
                    .all(|c| c.state() == ContainerState::ContainerExited)
        })
        .await;
        assert!(removed.elapsed() < Duration::from_secs(5));
        sleep(Duration::from_secs(60)).await;
        // nothing new was started (what is left is collected by container GC)
        assert_eq!(node.calls("RunPodSandbox").len(), 2, "{}", node.describe());
        assert!(
            node.sandboxes("busy")
                .iter()
                .all(|s| s.state() == PodSandboxState::SandboxNotready),
            "{}",
            node.describe()
        );
        assert_eq!(created_versions(&created).len(), 3);
        assert!(!node.kubelet.pods.contains(&uid));
    });
}
