//! Pod workers on arbiters of their own (`pod_worker_threads`, the
//! execution model's option for CPU-bound nodes): pods start and stop as on
//! the main arbiter, a worker that panics mid-sync is rebuilt on its arbiter
//! without a second sandbox, and the work really runs on other threads.
//! Real time: the other arbiters' timers are not a paused clock.

#[path = "support/system.rs"]
mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason};
use actlet::cri::SharedRuntime;
use actlet::cri::mock::MockRuntime;
use actlet::testing::HookedRuntime;
use k8s_openapi::api::core::v1::Pod;
use support::{Node, pod, run_real, uid_of};

const BOOM: &str = "injected panic in CreateContainer";

fn web(i: usize) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: web-{i}, namespace: default, uid: u-{i}}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{{name: app, image: "busybox:1.36", command: [sleep, "3600"]}}]
"#
    ))
}

#[test]
fn pods_run_recover_and_stop_with_workers_on_two_other_arbiters() {
    run_real(|| async {
        let mock = MockRuntime::new();
        // The thread of every RunPodSandbox call (made by the pod workers);
        // the first CreateContainer panics (in the worker, between calls).
        let seen: Arc<Mutex<HashSet<std::thread::ThreadId>>> = Arc::default();
        let armed = Arc::new(AtomicBool::new(true));
        let (noted, fire) = (seen.clone(), armed.clone());
        let runtime: SharedRuntime = Arc::new(HookedRuntime::new(mock.clone(), move |call| {
            if call.method == "RunPodSandbox" {
                noted.lock().unwrap().insert(std::thread::current().id());
            }
            if call.method == "CreateContainer" && fire.swap(false, Ordering::SeqCst) {
                panic!("{BOOM}");
            }
        }));
        let node = Node::builder(mock).runtime(runtime).pod_worker_threads(2).start();
        let pods: Vec<Pod> = (0..20).map(web).collect();
        node.set_pods(&pods.iter().collect::<Vec<_>>());
        node.wait_for("20 pods running", Duration::from_secs(30), |n| {
            pods.iter().all(|p| n.is_running(&uid_of(p), "app"))
        })
        .await;
        assert!(!armed.load(Ordering::SeqCst), "the panic was injected");
        let main = std::thread::current().id();
        let threads = seen.lock().unwrap().clone();
        assert!(
            !threads.contains(&main),
            "no sandbox made from the main arbiter: {threads:?}"
        );
        assert_eq!(threads.len(), 2, "the workers ran on both arbiters: {threads:?}");

        // The panicking worker was restarted and resumed from the caches.
        let tree = node.kubelet.tree().snapshot();
        let panicked: Vec<_> = tree
            .iter()
            .filter(|c| {
                c.last_failure
                    .as_ref()
                    .is_some_and(|f| matches!(&f.reason, ExitReason::Panicked(m) if m.contains(BOOM)))
            })
            .collect();
        assert_eq!(panicked.len(), 1, "{tree:?}");
        assert!(
            panicked[0].path.starts_with("root/pod-workers/pod-u-"),
            "{:?}",
            panicked[0]
        );
        assert_eq!((panicked[0].restarts, panicked[0].state), (1, ChildState::Running));
        assert_eq!(node.calls("RunPodSandbox").len(), 20, "no second sandbox");
        assert_eq!(
            node.calls("CreateContainer").len(),
            20,
            "the panicking call never reached the mock"
        );

        // Everything stops; the workers are forgotten.
        node.set_pods(&[]);
        node.wait_for("every container stopped", Duration::from_secs(30), |n| {
            pods.iter().all(|p| !n.is_running(&uid_of(p), "app"))
        })
        .await;
        node.wait_for("every worker forgotten", Duration::from_secs(30), |n| {
            n.kubelet.pod_sync_statuses.is_empty()
        })
        .await;
    });
}
