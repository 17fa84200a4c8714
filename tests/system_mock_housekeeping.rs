//! Housekeeping of the assembled kubelet on the mock CRI under paused time:
//! a pass may be skipped while its inputs are unchanged (a quiet idle node
//! does not walk every pod every 2 s), but what appears in the runtime
//! between full passes is still acted on at the next pass, not only at the
//! next forced full one ([`FULL_PASS_PERIOD`]).

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::cri::v1::*;
use actlet::sync_loop::housekeeping::FULL_PASS_PERIOD;
use support::{Node, orphan, pod, run_paused, uid_of};
use tokio::time::sleep;

/// A quiet node skips passes over unchanged inputs; orphans created at
/// different points between forced full passes are each stopped within a
/// relist and a housekeeping period (1 s + 2 s), never left until the next
/// full pass up to 10 s later.
#[test]
fn orphans_appearing_after_quiet_passes_are_stopped_within_a_pass() {
    run_paused(|| async {
        let mock = MockRuntime::new();
        let node = Node::start(mock.clone());
        let web = pod(r#"
metadata: {name: web, namespace: default, uid: u-web}
spec:
  containers: [{name: app, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}]
"#);
        node.set_pods(&[&web]);
        node.wait_for("web running", Duration::from_secs(30), |n| {
            n.is_running(&uid_of(&web), "app")
        })
        .await;
        // Several quiet passes: from here on housekeeping skips.
        sleep(FULL_PASS_PERIOD + Duration::from_secs(3)).await;

        let limit = Duration::from_secs(4);
        // Spaced so that the orphans land at different points of the full
        // pass cycle: at least one would wait > `limit` for a full pass.
        for (i, gap) in [0u64, 3, 3, 3].into_iter().enumerate() {
            sleep(Duration::from_secs(gap)).await;
            let name = format!("orphan-{i}");
            orphan(&mock, &name).await;
            let took = node
                .wait_for(&format!("{name} stopped"), FULL_PASS_PERIOD * 2, |n| {
                    let s = n.sandboxes(&name);
                    !s.is_empty() && s.iter().all(|s| s.state() == PodSandboxState::SandboxNotready)
                })
                .await;
            assert!(
                took <= limit,
                "{name} was stopped after {took:?}: housekeeping waited for a full pass"
            );
        }
        // The wanted pod was never touched.
        assert!(node.is_running(&uid_of(&web), "app"), "{}", node.describe());
        assert_eq!(node.calls("RunPodSandbox").len(), 1 + 4, "{}", node.describe());
    });
}
