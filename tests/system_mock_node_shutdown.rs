//! Graceful node shutdown (upstream `pkg/kubelet/nodeshutdown`) on the
//! assembled kubelet with the mock CRI: `shutdownGracePeriod: 30s`,
//! `shutdownGracePeriodCriticalPods: 10s`. The trigger terminates the
//! ordinary pods first (each with min(20 s, its own grace)), the critical pod
//! only after them; every pod ends `Failed`/`Terminated` with upstream's
//! message and `DisruptionTarget`; the node is NotReady ("node is shutting
//! down") and rejects new pods (`NodeShutdown`); a NodeShutdown event is
//! recorded. The manager killed mid-shutdown resumes it. A cancellation
//! admits pods again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::KillChild;
use actlet::cri::mock::Behaviour;
use actlet::nodeshutdown::ShutdownConfig;
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::Pod;

/// A pod whose container is `stubborn` (ignores SIGTERM) for `web`, else `c`.
fn pod(name: &str, priority: i32, grace: i64) -> Pod {
    let container = if name == "web" { "stubborn" } else { "c" };
    PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .grace_period(grace)
        .container(container, "busybox:1.36", ["sleep", "3600"])
        .modify(move |p| p.spec.as_mut().unwrap().priority = Some(priority))
        .build()
}

fn ready(node: &TestNode) -> Option<(String, String)> {
    let conds = node.kubelet().node.view().conditions;
    conds
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status, c.message.unwrap_or_default()))
}

fn start(events: Arc<Mutex<Vec<(String, String)>>>) -> TestNode {
    TestNode::builder()
        .customize(move |b| {
            b.configure(|c| {
                c.shutdown = ShutdownConfig::new(Duration::from_secs(30), Duration::from_secs(10), vec![]);
                c.node_status_update_frequency = Duration::from_secs(1);
            })
            .on_event(move |e| events.lock().unwrap().push((e.reason, e.message)))
        })
        .start()
}

fn phase(node: &TestNode, name: &str) -> Option<String> {
    node.status("default", name).and_then(|s| s.phase)
}

#[test]
fn pods_terminate_by_priority_and_the_node_refuses_new_ones() {
    run_paused(async {
        let events: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let node = start(events.clone());
        let (web, quick, critical) = (
            pod("web", 0, 30),
            pod("quick", 0, 3),
            pod("critical", 2_000_000_000, 30),
        );
        // The mock's web container ignores SIGTERM: it goes at the end of its grace period.
        node.mock()
            .script("stubborn", Behaviour::run_forever().ignore_sigterm());
        node.set_pods(vec![web.clone(), quick.clone(), critical.clone()]);
        for name in ["web", "quick", "critical"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(30))
                .await
                .unwrap();
        }
        wait_until(
            || ready(&node).is_some_and(|(s, _)| s == "True"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();

        let began = tokio::time::Instant::now();
        node.kubelet().node_shutdown(true).unwrap();
        node.wait_for_phase("default", "quick", "Failed", Duration::from_secs(10))
            .await
            .unwrap();
        wait_until(
            || ready(&node).is_some_and(|(s, m)| s == "False" && m == "node is shutting down"),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(
            phase(&node, "critical").as_deref(),
            Some("Running"),
            "critical pods go last"
        );

        // Admission is closed.
        node.set_pods(vec![web.clone(), quick.clone(), critical.clone(), pod("late", 0, 30)]);
        node.wait_for_phase("default", "late", "Failed", Duration::from_secs(10))
            .await
            .unwrap();
        let late = node.status("default", "late").unwrap();
        assert_eq!(late.reason.as_deref(), Some("NodeShutdown"));
        // upstream's rejectPod prefixes the handler's message, which already says it
        assert_eq!(
            late.message.as_deref(),
            Some("Pod was rejected: Pod was rejected as the node is shutting down.")
        );

        // The stubborn web pod takes its group's 20 s, then the critical group goes.
        node.wait_for_phase("default", "web", "Failed", Duration::from_secs(40))
            .await
            .unwrap();
        node.wait_for_phase("default", "critical", "Failed", Duration::from_secs(40))
            .await
            .unwrap();
        let took = began.elapsed();
        assert!(
            took >= Duration::from_secs(19) && took < Duration::from_secs(32),
            "web's group lasted its 20 s budget, critical followed: {took:?}"
        );
        for name in ["web", "quick", "critical"] {
            let st = node.status("default", name).unwrap();
            assert_eq!(st.reason.as_deref(), Some("Terminated"), "{name}");
            assert_eq!(
                st.message.as_deref(),
                Some("Pod was terminated in response to imminent node shutdown."),
                "{name}"
            );
            let dt = st
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "DisruptionTarget")
                .cloned();
            let dt = dt.unwrap_or_else(|| panic!("{name}: DisruptionTarget"));
            assert_eq!(dt.reason.as_deref(), Some("TerminationByKubelet"), "{name}");
        }
        assert!(
            events
                .lock()
                .unwrap()
                .iter()
                .any(|(r, m)| r == "NodeShutdown" && m == "Shutdown manager detected shutdown event"),
            "{:?}",
            events.lock().unwrap()
        );

        // The state file (upstream's, behind the start/end time gauges):
        // written at the start, completed when every group is done.
        let state_file = node.dir().join("root/graceful_node_shutdown_state");
        wait_until(
            || {
                std::fs::read_to_string(&state_file)
                    .is_ok_and(|s| s.contains("\"startTime\":\"20") && !s.contains("0001-01-01"))
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|_| panic!("state file: {:?}", std::fs::read_to_string(&state_file)));

        // Cancelled: pods are admitted again and the node is Ready.
        node.kubelet().node_shutdown(false).unwrap();
        node.set_pods(vec![pod("after", 0, 30)]);
        node.wait_for_phase("default", "after", "Running", Duration::from_secs(30))
            .await
            .unwrap();
        wait_until(
            || ready(&node).is_some_and(|(s, _)| s == "True"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    });
}

#[test]
fn a_manager_killed_mid_shutdown_resumes_it() {
    run_paused(async {
        let node = start(Arc::default());
        node.mock()
            .script("stubborn", Behaviour::run_forever().ignore_sigterm());
        node.set_pods(vec![pod("web", 0, 30), pod("critical", 2_000_000_000, 30)]);
        for name in ["web", "critical"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(30))
                .await
                .unwrap();
        }
        node.kubelet().node_shutdown(true).unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        node.kubelet()
            .root
            .addr()
            .send(KillChild("node-shutdown-manager".into()))
            .await
            .expect("root reachable")
            .expect("kill the shutdown manager");
        assert!(
            node.kubelet().node_shutdown.shutting_down(),
            "the flag outlives the actor"
        );
        // The rebuilt manager resumes: it waits for the stubborn web pod's
        // group before the critical one.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(phase(&node, "critical").as_deref(), Some("Running"));
        node.wait_for_phase("default", "web", "Failed", Duration::from_secs(60))
            .await
            .unwrap();
        node.wait_for_phase("default", "critical", "Failed", Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            node.status("default", "critical").and_then(|s| s.reason).as_deref(),
            Some("Terminated")
        );
    });
}
