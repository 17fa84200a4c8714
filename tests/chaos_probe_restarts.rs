//! Chaos for the probe actors (mock CRI, paused time): the `probe-workers`
//! supervisor is killed with every worker under it while probes fail and
//! succeed, and a liveness worker panics mid-probe. The probe results and
//! the workers' progress live in the shared `ProbeStore`, and the prober
//! manager reads its workers from the tree, so:
//! - readiness still converges: a Ready container stays Ready, one whose
//!   probe starts succeeding turns Ready;
//! - no container is restarted by the chaos (a crash is not a failed probe);
//! - liveness still guards: a probe that really fails restarts its
//!   container, once.

#[path = "support/kill_child.rs"]
mod kill_child;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason};
use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::{ExecAction, Pod, PodStatus, Probe};
use tokio::time::{Instant, sleep};

use kill_child::kill_child;

const T: Duration = Duration::from_secs(60);

/// Files "present" in the containers, for `cat <file>` exec probes.
#[derive(Clone, Default)]
struct Files(Arc<Mutex<HashMap<String, bool>>>);

impl Files {
    fn set(&self, file: &str, present: bool) {
        self.0.lock().unwrap().insert(file.into(), present);
    }

    fn behaviour(&self) -> Behaviour {
        let files = self.clone();
        Behaviour::run_forever().exec(move |argv| match argv {
            [cat, file] if cat == "cat" => {
                let ok = files.0.lock().unwrap().get(file).copied().unwrap_or(false);
                Some(ExecResult::exit(if ok { 0 } else { 1 }))
            }
            _ => None,
        })
    }
}

fn probe(command: &[&str], failure_threshold: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
        }),
        period_seconds: Some(1),
        failure_threshold: Some(failure_threshold),
        ..Default::default()
    }
}

/// Pod `name` (uid `u-<name>`) whose container `app` is ready while
/// `/<name>-ready` exists and alive while `/<name>-alive` does.
fn probed_pod(name: &str) -> Pod {
    let (ready, alive) = (format!("/{name}-ready"), format!("/{name}-alive"));
    PodBuilder::new(name)
        .uid(format!("u-{name}"))
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| {
            let c = &mut p.spec.as_mut().unwrap().containers[0];
            c.readiness_probe = Some(probe(&["cat", &ready], 1));
            c.liveness_probe = Some(probe(&["cat", &alive], 2));
        })
        .build()
}

fn status(node: &TestNode, name: &str) -> PodStatus {
    node.status("default", name).unwrap_or_default()
}

fn ready(node: &TestNode, name: &str) -> bool {
    status(node, name)
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn restarts(node: &TestNode, name: &str) -> i32 {
    status(node, name)
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == "app")
        .map_or(-1, |c| c.restart_count)
}

async fn holds(node: &TestNode, what: &str, d: Duration, cond: impl Fn(&TestNode) -> bool) {
    let start = Instant::now();
    while start.elapsed() < d {
        assert!(
            cond(node),
            "{what} stopped holding: {}",
            node.describe("default", "late")
        );
        sleep(Duration::from_millis(100)).await;
    }
}

/// The `probe-workers` supervisor is killed, and every probe worker with
/// it, while `steady`'s probes succeed and `late`'s readiness probe fails.
/// Then `late`'s probe starts succeeding: it turns Ready once the manager
/// has started the workers again (it reads them from the tree), `steady`
/// never leaves Ready, nothing restarts. Finally `late`'s liveness probe
/// fails for real and restarts its container, once.
#[test]
fn probe_workers_restart_mid_probing_converges_and_restarts_nothing() {
    run_paused(async {
        let files = Files::default();
        for f in ["/steady-ready", "/steady-alive", "/late-alive"] {
            files.set(f, true);
        }
        let mock = MockRuntime::builder().script("app", files.behaviour()).build();
        let node = TestNode::with_mock(mock.clone());
        node.set_pods(vec![probed_pod("steady"), probed_pod("late")]);
        wait_until(|| ready(&node, "steady"), T).await.unwrap();
        node.wait_for_phase("default", "late", "Running", T).await.unwrap();
        // Both pods probed for a while: late's readiness failing.
        holds(&node, "late not ready", Duration::from_secs(5), |n| !ready(n, "late")).await;
        let starts = mock.call_count("StartContainer");
        let tree = node.kubelet().tree().clone();
        let workers = |uid: &str| {
            tree.subtree("root/probe-workers")
                .into_iter()
                .filter(|c| c.name.ends_with(uid) && c.state == ChildState::Running)
                .count()
        };
        assert_eq!((workers("u-steady"), workers("u-late")), (2, 2));

        kill_child(node.kubelet(), "probe-workers").await;
        files.set("/late-ready", true);

        let start = Instant::now();
        while !ready(&node, "late") {
            assert!(start.elapsed() < Duration::from_secs(30), "late never turned Ready");
            assert!(ready(&node, "steady"), "steady left Ready");
            sleep(Duration::from_millis(100)).await;
        }
        holds(&node, "both ready", Duration::from_secs(10), |n| {
            ready(n, "steady") && ready(n, "late")
        })
        .await;
        assert_eq!((workers("u-steady"), workers("u-late")), (2, 2), "the workers are back");
        assert_eq!(mock.call_count("StartContainer"), starts, "no container restarted");
        assert_eq!((restarts(&node, "steady"), restarts(&node, "late")), (0, 0));
        let info = tree.get("root/probe-workers").expect("in the tree");
        assert_eq!((info.state, info.restarts), (ChildState::Running, 1));
        assert_eq!(info.last_failure.map(|f| f.reason), Some(ExitReason::Killed));

        // Liveness guards again: late's container is restarted, steady's not.
        files.set("/late-alive", false);
        wait_until(|| restarts(&node, "late") == 1, Duration::from_secs(30))
            .await
            .unwrap();
        files.set("/late-alive", true);
        holds(
            &node,
            "one restart of late, none of steady",
            Duration::from_secs(10),
            |n| restarts(n, "late") == 1 && restarts(n, "steady") == 0,
        )
        .await;
        assert_eq!(mock.calls_to("RunPodSandbox").len(), 2, "one sandbox per pod");
        assert_eq!(node.kubelet().root.exit_reason(), None);
    });
}

/// A liveness worker panics in the middle of a probe (inside the runtime's
/// ExecSync). With `failureThreshold: 1`, a crash taken for a failed probe
/// would restart the container; it must not. The worker is restarted and
/// probes on, and a probe that really fails afterwards still restarts the
/// container, once.
#[test]
fn a_liveness_worker_killed_mid_probe_restarts_nothing_and_keeps_guarding() {
    run_paused(async {
        let (armed, alive, probes) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(true)),
            Arc::new(AtomicU32::new(0)),
        );
        let (a, l, n) = (armed.clone(), alive.clone(), probes.clone());
        let behaviour = Behaviour::run_forever().exec(move |argv| {
            (argv.first().map(String::as_str) == Some("check")).then(|| {
                n.fetch_add(1, Ordering::SeqCst);
                if a.swap(false, Ordering::SeqCst) {
                    panic!("injected panic in a liveness probe");
                }
                ExecResult::exit(if l.load(Ordering::SeqCst) { 0 } else { 1 })
            })
        });
        let mock = MockRuntime::builder().script("app", behaviour).build();
        let node = TestNode::with_mock(mock.clone());
        let web = PodBuilder::new("web")
            .uid("u-web")
            .container("app", "busybox:1.36", ["sleep", "3600"])
            .modify(|p| p.spec.as_mut().unwrap().containers[0].liveness_probe = Some(probe(&["check"], 1)))
            .build();
        node.set_pods(vec![web]);
        node.wait_for_phase("default", "web", "Running", T).await.unwrap();
        wait_until(|| probes.load(Ordering::SeqCst) >= 3, T).await.unwrap();

        armed.store(true, Ordering::SeqCst);
        wait_until(|| !armed.load(Ordering::SeqCst), Duration::from_secs(5))
            .await
            .unwrap();
        let before = probes.load(Ordering::SeqCst);
        holds(&node, "web not restarted", Duration::from_secs(10), |n| {
            restarts(n, "web") == 0
        })
        .await;
        assert_eq!(mock.call_count("StartContainer"), 1, "no container restarted");
        assert!(
            probes.load(Ordering::SeqCst) >= before + 5,
            "the restarted worker probes on"
        );
        let worker = node
            .kubelet()
            .tree()
            .get("root/probe-workers/probe-liveness-app.u-web")
            .expect("the worker");
        assert_eq!((worker.state, worker.restarts), (ChildState::Running, 1), "{worker:?}");
        assert!(
            matches!(worker.last_failure.map(|f| f.reason), Some(ExitReason::Panicked(_))),
            "restarted after its panic"
        );

        alive.store(false, Ordering::SeqCst);
        wait_until(|| restarts(&node, "web") == 1, Duration::from_secs(30))
            .await
            .unwrap();
        alive.store(true, Ordering::SeqCst);
        holds(&node, "one restart", Duration::from_secs(10), |n| {
            restarts(n, "web") == 1
        })
        .await;
        assert_eq!(mock.calls_to("RunPodSandbox").len(), 1, "one sandbox");
        assert_eq!(node.kubelet().root.exit_reason(), None);
    });
}
