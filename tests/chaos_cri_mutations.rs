//! A CRI mutation in flight is never cancelled by a force-stop (issue #10:
//! "Supervisor force-stops drop in-flight CRI mutations, contrary to the
//! `Runtime` contract"). The pod workers are killed (their instances
//! dropped, as a panic or a supervisor's force-stop would) while a
//! `StartContainer` or a `StopContainer` is being answered; the call must
//! still reach its end in the runtime, and the restarted workers must carry
//! on from there: no second container, no restart, no second grace period.
//!
//! Without `cri::to_completion` in front of the runtime the dropped call
//! stops where it was (the mock's call stays `InFlight`; over gRPC the
//! drop cancels the request).

#[path = "support/kill_child.rs"]
mod kill_child;
#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, CallOutcome, Fault, MockRuntime};
use kill_child::kill_child;
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};

#[test]
fn a_start_in_flight_when_the_workers_die_still_starts_the_container_once() {
    run_paused(|| async {
        let mock = MockRuntime::new();
        let node = Node::start(mock.clone());
        mock.inject("StartContainer", Fault::latency(Duration::from_secs(5)).times(1));
        let p = pod(r#"
metadata: {name: slow, namespace: default, uid: u-slow}
spec:
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("StartContainer in flight", Duration::from_secs(30), |n| {
            !n.calls("StartContainer").is_empty()
        })
        .await;
        kill_child(&node.kubelet, "pod-workers").await;

        node.wait_for("slow running", Duration::from_secs(30), |n| {
            n.phase(&uid) == "Running" && n.is_running(&uid, "app")
        })
        .await;
        sleep(Duration::from_secs(70)).await; // a resync and a GC round later
        let starts = node.calls("StartContainer");
        assert_eq!(
            starts[0].outcome,
            CallOutcome::Ok,
            "the start in flight ran to its end: {}",
            node.describe()
        );
        assert_eq!(node.calls("CreateContainer").len(), 1, "{}", node.describe());
        assert_eq!(node.calls("RunPodSandbox").len(), 1, "{}", node.describe());
        assert_eq!(node.containers("slow", "app").len(), 1, "{}", node.describe());
        assert_eq!(node.restart_count(&uid, "app"), 0);
    });
}

#[test]
fn a_stop_in_flight_when_the_workers_die_keeps_its_grace_period() {
    const GRACE: u64 = 20;
    run_paused(|| async {
        let mock = MockRuntime::new();
        mock.script("stubborn", Behaviour::run_forever().ignore_sigterm());
        let node = Node::start(mock.clone());
        let p = pod(&format!(
            r#"
metadata: {{name: gone, namespace: default, uid: u-gone}}
spec:
  terminationGracePeriodSeconds: {GRACE}
  containers: [{{name: stubborn, image: "busybox:1.36", command: [sleep, "3600"]}}]
"#
        ));
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("gone running", Duration::from_secs(30), |n| {
            n.is_running(&uid, "stubborn")
        })
        .await;

        let removed_at = Instant::now();
        node.set_pods(&[]);
        node.wait_for("StopContainer in flight", Duration::from_secs(10), |n| {
            n.calls("StopContainer")
                .iter()
                .any(|c| c.outcome == CallOutcome::InFlight)
        })
        .await;
        sleep(Duration::from_secs(2)).await;
        kill_child(&node.kubelet, "pod-workers").await;

        node.wait_for("gone stopped", Duration::from_secs(3 * GRACE), |n| {
            !n.is_running(&uid, "stubborn")
        })
        .await;
        let took = removed_at.elapsed();
        assert!(
            took >= Duration::from_secs(GRACE - 1) && took <= Duration::from_secs(GRACE + 3),
            "stopped {took:?} after the removal, not at the end of its {GRACE} s grace: {}",
            node.describe()
        );
        let stops = node.calls("StopContainer");
        assert_eq!(
            stops[0].outcome,
            CallOutcome::Ok,
            "the stop in flight ran to its end: {}",
            node.describe()
        );
    });
}
