//! Static pods under `EventedPLEG` (mock CRI, paused time), the scenario of
//! upstream's evented-PLEG bugs (k/k #121349, #123087: duplicate containers
//! of static pods, pods restarted again and again): a static pod from the
//! manifest directory runs one sandbox and one container through a global
//! relist, a container exit, a runtime restart (the event stream breaks and
//! the exits' events are lost) and a manifest update (a new UID for the same
//! full name). At every step each instance has exactly the sandboxes and
//! containers that step explains, and never two running containers at once.
//! tests/system_mock_evented_pleg.rs covers the same with pods of a custom
//! source.

#[path = "support/system.rs"]
mod support;

use std::fs;
use std::path::Path;
use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::{ContainerState, PodSandboxState};
use actlet::messages::PodUid;
use support::{Node, run_paused};

const WAIT: Duration = Duration::from_secs(60);

fn manifest(command: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: web, namespace: default}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {{name: app, image: \"busybox:1.36\", command: [sleep, \"{command}\"]}}\n"
    )
}

fn write(dir: &Path, body: &str) {
    fs::write(dir.join("web.yaml"), body).unwrap_or_else(|e| panic!("write web.yaml: {e}"));
}

/// The UID of the desired static pod `web-node-a`.
fn uid(node: &Node) -> Option<PodUid> {
    node.kubelet
        .pods
        .pods()
        .into_iter()
        .find(|d| d.pod.metadata.name.as_deref() == Some("web-node-a"))
        .map(|d| d.pod.metadata.uid.clone().unwrap_or_default().into())
}

fn running(node: &Node) -> bool {
    uid(node).is_some_and(|u| node.phase(&u) == "Running" && node.is_running(&u, "app"))
}

/// Running `app` containers of `web-node-a`, of every instance.
fn running_containers(node: &Node) -> usize {
    node.containers("web-node-a", "app")
        .iter()
        .filter(|c| c.status.state() == ContainerState::ContainerRunning)
        .count()
}

/// (sandboxes, containers) the kubelet created: `RunPodSandbox` and
/// `CreateContainer` calls (the node runs only `web`; container GC may
/// remove dead ones from the runtime meanwhile).
fn counts(node: &Node) -> (usize, usize) {
    (node.calls("RunPodSandbox").len(), node.calls("CreateContainer").len())
}

#[test]
fn a_static_pod_keeps_one_container_through_relists_exits_a_runtime_restart_and_an_update() {
    run_paused(|| async {
        let pods = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let dir = pods.path();
        write(dir, &manifest("3600"));
        // SIGTERM ignored: an instance stops only when its 1 s grace ran out.
        let mock = MockRuntime::builder()
            .script("app", Behaviour::run_forever().ignore_sigterm())
            .build();
        let node = Node::builder(mock.clone())
            .static_pods(dir.to_path_buf(), Duration::from_secs(20))
            .evented_pleg()
            .start();
        node.wait_for("web running", WAIT, running).await;
        assert_eq!(counts(&node), (1, 1), "{}", node.describe());
        let first = uid(&node);

        // Through a global relist (every 300 s with events) and the resyncs.
        node.holds_for("one running container", Duration::from_secs(310), |n| {
            running_containers(n) == 1 && counts(n) == (1, 1)
        })
        .await;

        // A container exit: its event restarts it once, in the same sandbox.
        let id = node
            .containers("web-node-a", "app")
            .into_iter()
            .find(|c| c.status.state() == ContainerState::ContainerRunning)
            .map(|c| c.status.id)
            .unwrap_or_else(|| panic!("no running container: {}", node.describe()));
        assert!(mock.exit_container(&id, 1));
        let u = first.clone().unwrap_or_else(|| panic!("web has no UID"));
        node.wait_for("restarted once", WAIT, |n| {
            n.restart_count(&u, "app") == 1 && running(n)
        })
        .await;
        node.holds_for("one new container, no more", Duration::from_secs(120), |n| {
            running_containers(n) <= 1 && counts(n) == (1, 2)
        })
        .await;

        // The runtime restarts: every container exits, the sandbox is not
        // ready and the stream breaks, so the exits' events are lost.
        mock.simulate_restart();
        node.wait_for("web running again", WAIT, |n| running(n) && counts(n) == (2, 3))
            .await;
        node.holds_for(
            "one running container after the restart",
            Duration::from_secs(120),
            |n| running_containers(n) <= 1 && counts(n) == (2, 3),
        )
        .await;
        assert_eq!(uid(&node), first, "the same instance");

        // A changed manifest: a new UID for `web-node-a`; the old instance
        // stops, the new one gets one sandbox and one container.
        // Gated by full name: the new one starts only once the old one
        // stopped (seen at every poll).
        write(dir, &manifest("7200"));
        let most = std::cell::Cell::new(0);
        node.wait_for("the new instance running", WAIT, |n| {
            most.set(most.get().max(running_containers(n)));
            uid(n).is_some_and(|u| Some(&u) != first.as_ref()) && running(n)
        })
        .await;
        assert_eq!(most.get(), 1, "two instances ran at once: {}", node.describe());
        node.holds_for("the new instance alone", Duration::from_secs(120), |n| {
            running_containers(n) == 1 && counts(n) == (3, 4)
        })
        .await;
        let old_sandboxes = node
            .sandboxes("web-node-a")
            .into_iter()
            .filter(|s| {
                first
                    .as_ref()
                    .is_some_and(|f| s.metadata.as_ref().is_some_and(|m| m.uid == f.to_string()))
            })
            .collect::<Vec<_>>();
        assert!(
            old_sandboxes
                .iter()
                .all(|s| s.state() == PodSandboxState::SandboxNotready),
            "the old instance stopped: {}",
            node.describe()
        );
    });
}
