//! The embedding API as an outside crate uses it: only `actlet::…` public
//! items, the test kit (`actlet::testing`) and the mock CRI, under paused
//! time (no real sleeps).
//!
//! - pods run through the mock and their phase transitions are observed;
//! - runtime faults (failing calls, the runtime down for a while) are
//!   retried and the pods recover;
//! - a panicking custom pod source is restarted by its supervisor and the
//!   pods it served keep running;
//! - a runtime that panics inside a call made by a pod worker is contained:
//!   the worker is restarted and nothing is created twice.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::{ChildInfo, ChildState, ExitReason};
use actlet::cri::mock::{Fault, MockRuntime};
use actlet::messages::pleg::PlegEventType;
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use actlet::{PodSource, SourceError};
use k8s_openapi::api::core::v1::Pod;
use tokio::time::sleep;

const MINUTE: Duration = Duration::from_secs(60);

fn sleeper(name: &str) -> Pod {
    PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .container("app", "busybox:1.36", ["sh", "-c", "sleep 3600"])
        .build()
}

/// The tree entry at `path`, or a panic listing the tree.
fn child(node: &TestNode, path: &str) -> ChildInfo {
    let tree = node.kubelet().tree();
    tree.get(path)
        .unwrap_or_else(|| panic!("no {path} in {:?}", tree.snapshot()))
}

/// The ids of the mock's containers of pod `pod` named `name`.
fn container_ids(node: &TestNode, pod: &str, name: &str) -> Vec<String> {
    let snapshot = node.mock().snapshot();
    let found = snapshot
        .containers
        .iter()
        .filter(|c| c.pod_name == pod && c.name() == name);
    found.map(|c| c.status.id.clone()).collect()
}

/// Asserts that no child of the tree but `except` was ever restarted.
fn only_restarted(node: &TestNode, except: &str) {
    for c in node.kubelet().tree().snapshot() {
        if c.path != except {
            assert_eq!(c.restarts, 0, "unexpected restart: {c:?}");
        }
    }
}

#[test]
fn pods_run_through_the_mock_and_transitions_are_observed() {
    run_paused(async {
        // An extra observer, as an embedder would install one.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let node = TestNode::builder()
            .customize(move |b| {
                b.on_pod_status(move |c| {
                    s.lock().unwrap().push((c.uid.to_string(), c.old_phase, c.new_phase));
                })
            })
            .start();
        let job = PodBuilder::new("job")
            .uid("uid-job")
            .restart_policy("Never")
            .container("main", "busybox:1.36", ["sh", "-c", "echo hi; sleep 2"])
            .build();
        node.set_pods(vec![sleeper("web"), job]);

        let web = node.wait_for_phase("default", "web", "Running", MINUTE).await.unwrap();
        assert_eq!(web.host_ip.as_deref(), Some(TestNode::NODE_IP));
        let job = node
            .wait_for_phase("default", "job", "Succeeded", MINUTE)
            .await
            .unwrap();
        let main = &job.container_statuses.as_ref().unwrap()[0];
        let done = main
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .expect("terminated");
        assert_eq!((done.exit_code, done.reason.as_deref()), (0, Some("Completed")));

        // Pending → Running, and Running → Succeeded.
        assert_eq!(node.phase_history("default", "web"), ["Pending", "Running"]);
        assert_eq!(
            node.phase_history("default", "job"),
            ["Pending", "Running", "Succeeded"]
        );
        // The embedder's own observer saw the same transitions.
        let job_phases: Vec<_> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(u, ..)| u == "uid-job")
            .map(|(_, _, n)| *n)
            .collect();
        assert_eq!(
            job_phases.last().copied().flatten().map(|p| p.as_str()),
            Some("Succeeded")
        );

        // The PLEG saw the job's container start, then die about 2 s later.
        let started = node
            .wait_for_event("default", "job", Some("main"), PlegEventType::ContainerStarted, MINUTE)
            .await
            .unwrap();
        let died = node
            .wait_for_event("default", "job", Some("main"), PlegEventType::ContainerDied, MINUTE)
            .await
            .unwrap();
        assert!(died.at >= started.at + Duration::from_secs(1), "{started:?} {died:?}");
        assert_eq!(node.events().count("default", "web", PlegEventType::ContainerDied), 0);

        // Removing the pods from the source stops their containers.
        node.set_pods(vec![]);
        wait_until(|| node.kubelet().pods.is_empty(), MINUTE).await.unwrap();
        wait_until(
            || {
                node.mock()
                    .snapshot()
                    .containers
                    .iter()
                    .all(|c| c.state() != actlet::cri::v1::ContainerState::ContainerRunning)
            },
            MINUTE,
        )
        .await
        .unwrap_or_else(|e| panic!("web's container was not stopped: {e}"));

        let report = node.shutdown().await.unwrap();
        assert!(report.killed.is_empty(), "{report:?}");
        assert!(report.stopped.iter().any(|c| c.contains("source-test")), "{report:?}");
    });
}

#[test]
fn runtime_faults_are_retried_and_pods_recover() {
    run_paused(async {
        let mock = MockRuntime::new();
        // The first two RunPodSandbox calls fail.
        mock.inject(
            "RunPodSandbox",
            Fault::error(tonic::Code::Unknown, "injected: sandbox boom").times(2),
        );
        let node = TestNode::with_mock(mock);
        node.set_pods(vec![sleeper("web")]);
        node.wait_for_phase("default", "web", "Running", 2 * MINUTE)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(node.mock().call_count("RunPodSandbox"), 3, "two failures, then success");
        assert_eq!(node.mock().snapshot().sandboxes.len(), 1);
        assert_eq!(container_ids(&node, "web", "app").len(), 1);

        // The runtime goes down for a minute; a pod added meanwhile waits.
        node.mock().set_down(true);
        let mut health = node.kubelet().runtime_health.clone();
        tokio::time::timeout(MINUTE, health.wait_for(|h| !h.runtime_ready))
            .await
            .expect("runtime health noticed the outage")
            .unwrap();
        node.set_pods(vec![sleeper("web"), sleeper("late")]);
        sleep(MINUTE).await;
        assert_ne!(
            node.kubelet().phase_of_named("default", "late").as_deref(),
            Some("Running")
        );
        assert!(container_ids(&node, "late", "app").is_empty());

        // It comes back: the late pod starts; web was never restarted.
        node.mock().set_down(false);
        node.wait_for_phase("default", "late", "Running", 2 * MINUTE)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            node.kubelet().phase_of_named("default", "web").as_deref(),
            Some("Running")
        );
        assert_eq!(container_ids(&node, "web", "app").len(), 1);
        let web = node
            .wait_for_restart_count("default", "web", "app", 0, MINUTE)
            .await
            .unwrap();
        assert_eq!(web.restart_count, 0);
        assert!(node.kubelet().runtime_health.borrow().runtime_ready);
        only_restarted(&node, "");
    });
}

/// A custom source that serves one pod, panics on its second call (after
/// 10 s), and serves the same pod again once rebuilt.
struct FlakySource {
    calls: Arc<AtomicUsize>,
}

const SOURCE_PANIC: &str = "flaky source exploded";

#[async_trait::async_trait]
impl PodSource for FlakySource {
    async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
        match self.calls.fetch_add(1, Ordering::SeqCst) {
            0 | 2 => Ok(vec![sleeper("served")]),
            1 => {
                sleep(Duration::from_secs(10)).await;
                panic!("{SOURCE_PANIC}");
            }
            _ => std::future::pending().await,
        }
    }
}

#[test]
fn a_panicking_source_is_restarted_and_its_pods_keep_running() {
    run_paused(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let node = TestNode::builder()
            .customize(move |b| b.source("flaky", move || FlakySource { calls: c.clone() }))
            .start();
        node.wait_for_phase("default", "served", "Running", MINUTE)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let before = container_ids(&node, "served", "app");
        assert_eq!(before.len(), 1);

        let path = "root/source-flaky";
        wait_until(|| child(&node, path).restarts >= 1, MINUTE)
            .await
            .unwrap_or_else(|e| panic!("{path} was not restarted: {e}; {:?}", child(&node, path)));
        let info = child(&node, path);
        let failure = info.last_failure.clone().expect("the panic is recorded");
        assert!(
            matches!(&failure.reason, ExitReason::Panicked(m) if m.contains(SOURCE_PANIC)),
            "{failure:?}"
        );
        wait_until(|| calls.load(Ordering::SeqCst) >= 4, MINUTE).await.unwrap();
        assert_eq!(child(&node, path).state, ChildState::Running);

        // The pod kept running through the restart and after it.
        sleep(2 * MINUTE).await;
        assert_eq!(
            node.kubelet().phase_of_named("default", "served").as_deref(),
            Some("Running")
        );
        assert_eq!(
            container_ids(&node, "served", "app"),
            before,
            "same container, not recreated"
        );
        assert_eq!(node.mock().call_count("RunPodSandbox"), 1);
        assert_eq!(node.phase_history("default", "served"), ["Pending", "Running"]);
        only_restarted(&node, path);
    });
}

const RUNTIME_PANIC: &str = "injected panic in CreateContainer";

#[test]
fn a_runtime_panic_in_a_pod_worker_is_contained() {
    run_paused(async {
        let mock = MockRuntime::new();
        let armed = Arc::new(AtomicBool::new(true));
        let a = armed.clone();
        // The caller's runtime: the mock, but the first CreateContainer of
        // container "app" panics (after the sandbox exists).
        let runtime = HookedRuntime::new(mock.clone(), move |call| {
            if call.container_name() == Some("app") && a.swap(false, Ordering::SeqCst) {
                panic!("{RUNTIME_PANIC}");
            }
        });
        let node = TestNode::builder().mock(mock).runtime(runtime).start();
        node.set_pods(vec![sleeper("phoenix")]);
        node.wait_for_phase("default", "phoenix", "Running", MINUTE)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!armed.load(Ordering::SeqCst), "the panic was injected");

        let path = "root/pod-workers/pod-uid-phoenix";
        let info = child(&node, path);
        assert!(info.restarts >= 1, "{info:?}");
        assert_eq!(info.state, ChildState::Running);
        let failure = info.last_failure.expect("the panic is recorded");
        assert!(
            matches!(&failure.reason, ExitReason::Panicked(m) if m.contains(RUNTIME_PANIC)),
            "{failure:?}"
        );

        // Resyncs and relists add nothing: one sandbox, one container.
        sleep(2 * MINUTE).await;
        assert_eq!(node.mock().snapshot().sandboxes.len(), 1);
        assert_eq!(container_ids(&node, "phoenix", "app").len(), 1);
        assert_eq!(node.mock().call_count("RunPodSandbox"), 1);
        assert_eq!(
            node.mock().call_count("CreateContainer"),
            1,
            "the panicking call never reached the mock"
        );
        let app = node
            .wait_for_restart_count("default", "phoenix", "app", 0, MINUTE)
            .await
            .unwrap();
        assert_eq!(app.restart_count, 0);
        only_restarted(&node, path);
    });
}

/// type, status, reason, message
type Condition = (String, String, String, String);

#[test]
fn node_conditions_are_observed_without_an_api_server() {
    run_paused(async {
        let mock = MockRuntime::new();
        let seen: Arc<Mutex<Vec<Condition>>> = Arc::default();
        let s = seen.clone();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(move |b| {
                b.configure(|c| c.runtime_health_period = Duration::from_secs(1))
                    .on_node_condition(move |c| {
                        s.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((c.type_, c.status, c.reason, c.message))
                    })
            })
            .start();
        let ready = |status: &'static str| {
            let seen = seen.clone();
            move || {
                seen.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .rev()
                    .find(|c| c.0 == "Ready")
                    .is_some_and(|c| c.1 == status)
            }
        };
        wait_until(ready("True"), Duration::from_secs(30)).await.unwrap();
        let types: Vec<String> = seen.lock().unwrap().iter().map(|c| c.0.clone()).collect();
        for t in ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"] {
            assert!(types.iter().any(|x| x == t), "{t} reported: {types:?}");
        }
        assert_eq!(node.kubelet().node.ready(), Some(true));

        mock.set_down(true);
        wait_until(ready("False"), Duration::from_secs(30)).await.unwrap();
        let last = seen
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|c| c.0 == "Ready")
            .cloned()
            .unwrap();
        assert_eq!(last.2, "KubeletNotReady");
        assert!(last.3.contains("container runtime"), "{last:?}");
        assert_eq!(node.kubelet().node.ready(), Some(false));

        mock.set_down(false);
        wait_until(ready("True"), Duration::from_secs(30)).await.unwrap();
        node.shutdown().await.unwrap();
    });
}

#[test]
fn node_labels_drive_node_selector_admission() {
    run_paused(async {
        let node = TestNode::builder()
            .customize(|b| {
                b.configure(|c| {
                    c.node_labels.insert("example.com/pool".into(), "a".into());
                })
            })
            .start();
        let selecting = |name: &str, pool: &str| {
            let pool = pool.to_string();
            PodBuilder::new(name)
                .container("c", "busybox:1.36", ["sleep", "3600"])
                .modify(move |p| {
                    if let Some(spec) = p.spec.as_mut() {
                        spec.node_selector = Some([("example.com/pool".to_string(), pool)].into());
                    }
                })
                .build()
        };
        node.set_pods(vec![selecting("in-pool", "a"), selecting("other-pool", "b")]);
        node.wait_for_phase("default", "in-pool", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        node.wait_for_phase("default", "other-pool", "Failed", Duration::from_secs(60))
            .await
            .unwrap();
        let rejected = node.status("default", "other-pool").unwrap();
        assert_eq!(rejected.reason.as_deref(), Some("NodeAffinity"), "{rejected:?}");
        assert!(
            rejected
                .message
                .as_deref()
                .unwrap_or_default()
                .ends_with("Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"),
            "{rejected:?}"
        );
        node.shutdown().await.unwrap();
    });
}
