//! A kill does not wait for the sync it interrupts (issue #10; upstream
//! cancels the sync's context): a pod removed while its image is being
//! pulled is stopped at once, the pull is abandoned, and nothing of the pod
//! is started afterwards.

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{MockImage, MockRuntime};
use actlet::cri::v1::PodSandboxState;
use support::{Node, pod, run_paused};
use tokio::time::{Instant, sleep};

#[test]
fn a_pod_removed_during_a_slow_pull_is_killed_without_waiting_for_the_pull() {
    run_paused(|| async {
        let mock = MockRuntime::new();
        // A 10-minute pull.
        mock.publish_image(MockImage::new("registry.local/huge:1"), Duration::from_secs(600));
        let node = Node::start(mock.clone());
        let slow = pod(r#"
metadata: {name: slow, namespace: default, uid: u-slow}
spec:
  containers: [{name: app, image: "registry.local/huge:1", command: [sleep, "3600"]}]
"#);
        node.set_pods(&[&slow]);
        node.wait_for("pulling", Duration::from_secs(30), |n| !n.calls("PullImage").is_empty())
            .await;
        sleep(Duration::from_secs(1)).await;
        let removed = Instant::now();
        node.set_pods(&[]);
        node.wait_for("sandbox stopped", Duration::from_secs(60), |n| {
            let s = n.sandboxes("slow");
            !s.is_empty() && s.iter().all(|s| s.state() == PodSandboxState::SandboxNotready)
        })
        .await;
        assert!(
            removed.elapsed() < Duration::from_secs(30),
            "killed after {:?}: it waited for the pull",
            removed.elapsed()
        );
        // The abandoned pull never leads to a container.
        sleep(Duration::from_secs(700)).await;
        assert!(node.calls("CreateContainer").is_empty(), "{}", node.describe());
    });
}
