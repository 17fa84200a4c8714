//! Chaos on the mock CRI (in process, paused time): errors, latency, hangs
//! and a runtime outage are injected into the CRI one after another while
//! pods come and go; once the faults clear, the invariants of
//! tests/support/invariants.rs hold between the status manager's statuses
//! (what reaches the API) and the runtime: one sandbox per live pod, no
//! healthy container restarted, statuses equal to the runtime, removed pods
//! gone from both; no leak (the status cache and the pod lifecycle records
//! hold only the live pods); supervision intensity respected (the root never
//! exits, every child runs).
//!
//! `ACTLET_CHAOS_SOAK_MINUTES=N` repeats the fault rounds for N minutes (wall clock).

#[path = "support/invariants.rs"]
mod invariants;
#[path = "support/system.rs"]
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use actlet::actors::supervisor::ChildState;
use actlet::cri::mock::{CallOutcome, Fault, MockRuntime};
use actlet::cri::{Runtime, v1};
use invariants::{Baseline, Expect, PodView, World};
use k8s_openapi::api::core::v1::Pod;
use support::{Node, pod, run_paused};
use tokio::time::{Instant, sleep};
use tonic::Code;

/// How long each fault stays in force (virtual time).
const FAULT_FOR: Duration = Duration::from_secs(20);
/// How long the node may take to converge once the faults clear (virtual time).
const CONVERGE: Duration = Duration::from_secs(600);

fn test_pod(name: &str) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: {name}, namespace: default, uid: u-{name}}}
spec:
  terminationGracePeriodSeconds: 2
  containers: [{{name: app, image: "busybox:1.36", command: [sleep, "100000000"]}}]
"#
    ))
}

/// Injects one fault into the mock.
type Inject = Box<dyn Fn(&MockRuntime)>;

/// One step of chaos: what, the method that must feel it (and whether its
/// calls fail rather than slow down), and how to inject it.
struct Step {
    what: &'static str,
    method: &'static str,
    fails: bool,
    inject: Inject,
}

fn step(what: &'static str, method: &'static str, fails: bool, inject: impl Fn(&MockRuntime) + 'static) -> Step {
    Step {
        what,
        method,
        fails,
        inject: Box::new(inject),
    }
}

fn unavailable(method: &'static str) -> impl Fn(&MockRuntime) {
    move |m| m.inject(method, Fault::error(Code::Unavailable, "chaos"))
}

/// The faults, one per step.
fn steps() -> Vec<Step> {
    let secs = Duration::from_secs;
    vec![
        step("RunPodSandbox fails 3 times", "RunPodSandbox", true, |m| {
            m.fail_next("RunPodSandbox", 3, Code::Unavailable, "chaos")
        }),
        step("CreateContainer slow (5 s)", "CreateContainer", false, move |m| {
            m.inject("CreateContainer", Fault::latency(secs(5)))
        }),
        step("StartContainer hangs twice", "StartContainer", true, move |m| {
            m.inject("StartContainer", Fault::hang_for(secs(30)).times(2))
        }),
        step(
            "ListContainers fails (relist)",
            "ListContainers",
            true,
            unavailable("ListContainers"),
        ),
        step("ListPodSandbox hangs", "ListPodSandbox", true, move |m| {
            m.inject("ListPodSandbox", Fault::hang_for(secs(15)))
        }),
        step(
            "ContainerStatus fails",
            "ContainerStatus",
            true,
            unavailable("ContainerStatus"),
        ),
        step("PodSandboxStatus slow (3 s)", "PodSandboxStatus", false, move |m| {
            m.inject("PodSandboxStatus", Fault::latency(secs(3)))
        }),
        step(
            "StopContainer fails",
            "StopContainer",
            true,
            unavailable("StopContainer"),
        ),
        step("StopPodSandbox hangs once", "StopPodSandbox", true, move |m| {
            m.inject("StopPodSandbox", Fault::hang_for(secs(30)).times(1))
        }),
        step("runtime down", "ListPodSandbox", true, |m| m.set_down(true)),
        step("every method slow (1 s)", "RunPodSandbox", false, move |m| {
            for method in [
                "RunPodSandbox",
                "CreateContainer",
                "StartContainer",
                "ListContainers",
                "ListPodSandbox",
            ] {
                m.inject(method, Fault::latency(secs(1)));
            }
        }),
    ]
}

/// The status manager's statuses and the mock's sandboxes and containers.
async fn world(node: &Node) -> World {
    let pods = node
        .kubelet
        .statuses
        .snapshot()
        .into_iter()
        .map(|(uid, v)| PodView::from_status(uid.as_str(), &v.pod_name, &v.pod_namespace, Some(&v.status)))
        .collect();
    let sandboxes = node
        .mock
        .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
        .await
        .unwrap_or_else(|e| panic!("ListPodSandbox: {e}"))
        .items;
    let containers = node
        .mock
        .list_containers(v1::ListContainersRequest { filter: None })
        .await
        .unwrap_or_else(|e| panic!("ListContainers: {e}"))
        .containers;
    World::new(pods, &sandboxes, &containers, |_| true)
}

/// Waits (virtual time) until every invariant holds.
async fn converge(node: &Node, what: &str, expect: &Expect, baseline: &Baseline) -> World {
    let start = Instant::now();
    loop {
        let w = world(node).await;
        let mut v = w.violations(expect, baseline);
        let records = node.kubelet.pod_sync_statuses.len();
        if records != expect.live.len() {
            v.push(format!(
                "{records} pod lifecycle records for {} live pods",
                expect.live.len()
            ));
        }
        if v.is_empty() {
            return w;
        }
        assert!(
            start.elapsed() < CONVERGE,
            "{what}: no convergence within {CONVERGE:?}:\n  {}\n{}\n{}",
            v.join("\n  "),
            w.describe(),
            node.describe()
        );
        sleep(Duration::from_millis(500)).await;
    }
}

#[test]
fn cri_faults_under_pod_churn() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let healthy: Vec<Pod> = (0..4).map(|i| test_pod(&format!("healthy-{i}"))).collect();
        let names = |pods: &[Pod]| -> Vec<String> { pods.iter().filter_map(|p| p.metadata.name.clone()).collect() };
        node.set_pods(&healthy.iter().collect::<Vec<_>>());
        let mut expect = Expect {
            live: names(&healthy).into_iter().collect(),
            one_sandbox: true,
        };
        let w = converge(&node, "healthy pods running", &expect, &Baseline::new()).await;
        let baseline = w.baseline(&names(&healthy));
        assert_eq!(baseline.len(), healthy.len(), "{}", w.describe());

        let mut churn: Vec<Pod> = Vec::new();
        invariants::rounds("cri_faults_under_pod_churn", async |round| {
            for (i, step) in steps().into_iter().enumerate() {
                let from = Instant::now();
                (step.inject)(&node.mock);
                // Churn while the fault is in force: one pod added, the one
                // added two steps ago removed.
                churn.push(test_pod(&format!("churn-{round}-{i}")));
                if churn.len() > 2 {
                    churn.remove(0);
                }
                let live: Vec<&Pod> = healthy.iter().chain(churn.iter()).collect();
                node.set_pods(&live);
                expect.live = live
                    .iter()
                    .filter_map(|p| p.metadata.name.clone())
                    .collect::<BTreeSet<_>>();
                sleep(FAULT_FOR).await;
                node.mock.clear_faults(None);
                node.mock.set_down(false);
                let what = step.what;
                assert_eq!(node.kubelet.root.exit_reason(), None, "the root exited during: {what}");
                // The fault was felt: the method was called while it was in
                // force (and failed or hung, for those kinds).
                let felt = node
                    .mock
                    .calls_to(step.method)
                    .iter()
                    .any(|c| c.at >= from && (!step.fails || c.outcome != CallOutcome::Ok));
                assert!(felt, "{what}: no {} call felt it", step.method);
            }
            converge(&node, "after the faults", &expect, &baseline).await;
            assert_eq!(
                node.kubelet.statuses.snapshot().len(),
                expect.live.len(),
                "status cache leak"
            );
        })
        .await;

        // Supervision intensity respected: nothing escalated to the root.
        assert_eq!(node.kubelet.root.exit_reason(), None);
        for info in node.kubelet.tree().snapshot() {
            assert_ne!(info.state, ChildState::Failed, "{}: {info:?}", info.path);
        }
    });
}

/// The invariants catch what they promise to: a second ready sandbox, a
/// restarted container, a status that disagrees with the runtime, a pod left
/// running after its removal.
#[test]
fn invariants_catch_violations() {
    use invariants::{ContainerView, SandboxView, StatusView};
    let status = |id: &str| StatusView {
        name: "app".into(),
        id: Some(id.into()),
        running: true,
        restart_count: 0,
    };
    let sandbox = |id: &str, uid: &str| SandboxView {
        id: id.into(),
        uid: uid.into(),
        name: uid.into(),
        namespace: "default".into(),
        ready: true,
    };
    let container = |id: &str, sandbox: &str, uid: &str| ContainerView {
        id: id.into(),
        sandbox_id: sandbox.into(),
        uid: uid.into(),
        name: "app".into(),
        running: true,
    };
    let pod = PodView {
        uid: "a".into(),
        name: "a".into(),
        namespace: "default".into(),
        phase: "Running".into(),
        deleting: false,
        spec_containers: vec!["app".into()],
        statuses: vec![status("c1")],
    };
    let good = World {
        pods: vec![pod.clone()],
        sandboxes: vec![sandbox("s1", "a")],
        containers: vec![container("c1", "s1", "a")],
    };
    let expect = Expect {
        live: ["a".to_string()].into(),
        one_sandbox: true,
    };
    let baseline = good.baseline(&["a".into()]);
    assert_eq!(good.violations(&expect, &baseline), Vec::<String>::new());

    // A duplicate ready sandbox whose container now runs instead (a restart).
    let mut dup = good.clone();
    dup.sandboxes.push(sandbox("s2", "a"));
    dup.containers[0].running = false;
    dup.containers.push(container("c2", "s2", "a"));
    dup.pods[0].statuses = vec![StatusView {
        restart_count: 1,
        ..status("c2")
    }];
    let v = dup.violations(&expect, &baseline).join("\n");
    for want in [
        "2 ready sandboxes",
        "2 sandboxes (any state)",
        "restarted or lost",
        "restartCount 1",
    ] {
        assert!(v.contains(want), "{want:?} missing from:\n{v}");
    }

    // The API lags behind the runtime, and a removed pod still runs.
    let mut stale = good.clone();
    stale.pods[0].statuses = vec![status("old")];
    stale.sandboxes.push(sandbox("s9", "gone"));
    stale.containers.push(container("c9", "s9", "gone"));
    let v = stale.violations(&expect, &Baseline::new()).join("\n");
    for want in ["a/app: API", "sandbox s9 of gone", "container c9 app of uid gone"] {
        assert!(v.contains(want), "{want:?} missing from:\n{v}");
    }
}
