//! Chaos, actor by actor: every core actor kind of the assembled kubelet is
//! killed mid-flight (its instance dropped, as a panic would) on the mock CRI
//! under paused time, and the node must not notice:
//! - no pod lost: a pod removed after the restart is killed with its own
//!   grace period (not the 1 s orphan grace), a pod added is started;
//! - nothing duplicated: exactly one sandbox and one container for the new
//!   pod, no restart of the running one;
//! - housekeeping still runs: an orphan sandbox found in the runtime is
//!   stopped;
//! - the supervisor restarted the actor once and the root kept running.
//!
//! Two kinds get a test of what they own besides: `node-conditions`
//! (observers hear every real change and no invented one after the
//! restart) and `sync-loop` (its admission totals: no over-admission after
//! the restart).
//!
//! Before issue #10, restarting `pod-workers-manager` orphaned its workers
//! (the removed pod was never killed), restarting `sync-loop` turned
//! housekeeping off for good, and restarting `pod-config` lost the merge
//! state (the removed pod was never REMOVEd).

#[path = "support/kill_child.rs"]
mod kill_child;
#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::actors::supervisor::ChildState;
use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::PodSandboxState;
use kill_child::{assert_restarted_after_kills, kill_child};
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};

const GRACE: u64 = 20;

async fn survives_restart_of(actor: &str) {
    let mock = MockRuntime::new();
    // `gone`'s container ignores SIGTERM: it stops only when its grace runs out.
    mock.script("stubborn", Behaviour::run_forever().ignore_sigterm());
    let node = Node::start(mock.clone());
    let keep = pod(r#"
metadata: {name: keep, namespace: default, uid: u-keep}
spec:
  terminationGracePeriodSeconds: 2
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
"#);
    let gone = pod(&format!(
        r#"
metadata: {{name: gone, namespace: default, uid: u-gone}}
spec:
  terminationGracePeriodSeconds: {GRACE}
  containers: [{{name: stubborn, image: "busybox:1.36", command: [sleep, "3600"]}}]
"#
    ));
    let new = pod(r#"
metadata: {name: new, namespace: default, uid: u-new}
spec:
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
"#);
    node.set_pods(&[&keep, &gone]);
    node.wait_for("keep and gone running", Duration::from_secs(30), |n| {
        n.is_running(&uid_of(&keep), "app") && n.is_running(&uid_of(&gone), "stubborn")
    })
    .await;
    // Let housekeeping see the sources ready before the chaos.
    sleep(Duration::from_secs(3)).await;
    let keep_id = node.containers("keep", "app")[0].status.id.clone();
    let sandboxes_before = node.calls("RunPodSandbox").len();
    let starts_before = node.calls("StartContainer").len();

    kill_child(&node.kubelet, actor).await;
    sleep(Duration::from_millis(50)).await;

    // The world changes around the restart.
    let removed_at = Instant::now();
    node.set_pods(&[&keep, &new]);
    node.wait_for("new running", Duration::from_secs(30), |n| {
        n.is_running(&uid_of(&new), "app")
    })
    .await;
    let stopped_after = node
        .wait_for("gone stopped", Duration::from_secs(60), |n| {
            !n.is_running(&uid_of(&gone), "stubborn")
        })
        .await;
    let stop_took = removed_at.elapsed().max(stopped_after);
    assert!(
        stop_took >= Duration::from_secs(GRACE - 1),
        "{actor}: gone was killed after {stop_took:?}, not with its {GRACE} s grace"
    );

    // Housekeeping still runs: an orphan sandbox nobody wants is stopped.
    support::orphan(&mock, "orphan").await;
    node.wait_for("orphan sandbox stopped by housekeeping", Duration::from_secs(30), |n| {
        let s = n.sandboxes("orphan");
        !s.is_empty() && s.iter().all(|s| s.state() == PodSandboxState::SandboxNotready)
    })
    .await;

    // Nothing duplicated, nothing restarted.
    assert_eq!(
        node.calls("RunPodSandbox").len(),
        sandboxes_before + 2,
        "{actor}: one sandbox for `new` (plus the test's orphan): {}",
        node.describe()
    );
    assert_eq!(
        node.calls("StartContainer").len(),
        starts_before + 1,
        "{actor}: one container start, for `new`: {}",
        node.describe()
    );
    assert_eq!(node.containers("keep", "app").len(), 1, "{actor}: keep not restarted");
    assert_eq!(node.containers("keep", "app")[0].status.id, keep_id);
    assert_eq!(node.restart_count(&uid_of(&keep), "app"), 0);

    // Updates still reach the running workers: removing `keep` stops it
    // within its 2 s grace, not at its worker's next resync (1 min).
    node.set_pods(&[&new]);
    node.wait_for("keep stopped promptly", Duration::from_secs(10), |n| {
        !n.is_running(&uid_of(&keep), "app")
    })
    .await;
    // And the lifecycle records shrink to the live pods (no leak).
    node.wait_for("only `new` has a lifecycle record", Duration::from_secs(30), |n| {
        let states = n.kubelet.pod_sync_statuses.states();
        states.len() == 1 && states.contains_key(&uid_of(&new))
    })
    .await;

    assert_restarted_after_kills(&node.kubelet, actor, 1);
}

macro_rules! chaos {
    ($($test:ident => $actor:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            run_paused(|| survives_restart_of($actor));
        }
    )*};
}

chaos! {
    pod_workers_manager_restart_goes_unnoticed => "pod-workers-manager",
    sync_loop_restart_goes_unnoticed => "sync-loop",
    pod_config_restart_goes_unnoticed => "pod-config",
    pleg_restart_goes_unnoticed => "pleg",
    status_manager_restart_goes_unnoticed => "status-manager",
    runtime_health_restart_goes_unnoticed => "runtime-health",
    pod_workers_supervisor_restart_goes_unnoticed => "pod-workers",
    container_gc_restart_goes_unnoticed => "container-gc",
    image_gc_restart_goes_unnoticed => "image-gc",
    container_manager_restart_goes_unnoticed => "container-manager",
    oom_watcher_restart_goes_unnoticed => "oom-watcher",
    container_log_manager_restart_goes_unnoticed => "container-log-manager",
    node_conditions_restart_goes_unnoticed => "node-conditions",
}

/// `node-conditions` (standalone mode) killed mid-flight: the restarted
/// instance knows what it last reported (the conditions live in the
/// `NodeHandle`), so observers hear no change that did not happen, and they
/// still hear the ones that do: the runtime's network going down turns the
/// node NotReady, its return Ready again.
#[test]
fn node_conditions_restart_keeps_observers_informed() {
    use actlet::messages::node::NodeConditionChanged;
    use actlet::testing::{TestNode, wait_until};
    use std::sync::{Arc, Mutex};

    run_paused(|| async {
        let heard: Arc<Mutex<Vec<NodeConditionChanged>>> = Arc::default();
        let log = heard.clone();
        let mock = MockRuntime::new();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(move |b| b.on_node_condition(move |c| log.lock().unwrap().push(c)))
            .start();
        let ready = || {
            let heard = heard.lock().unwrap();
            heard
                .iter()
                .rev()
                .find(|c| c.type_ == "Ready")
                .map(|c| c.status.clone())
        };
        let t = Duration::from_secs(60);
        wait_until(|| ready().as_deref() == Some("True"), t).await.unwrap();
        sleep(Duration::from_secs(15)).await;
        let before = heard.lock().unwrap().len();

        kill_child(node.kubelet(), "node-conditions").await;
        // Three update periods (10 s) of the new instance.
        sleep(Duration::from_secs(35)).await;
        let info = node.kubelet().tree().get("root/node-conditions").expect("in the tree");
        assert_eq!((info.state, info.restarts), (ChildState::Running, 1));
        assert_eq!(
            heard.lock().unwrap()[before..].to_vec(),
            vec![],
            "nothing changed, nothing is reported"
        );
        let view = node.kubelet().node.view();
        let cond = view.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready kept");
        assert_eq!(cond.status, "True");

        mock.set_network_ready(false);
        wait_until(|| ready().as_deref() == Some("False"), t).await.unwrap();
        let last = heard.lock().unwrap().last().cloned().expect("heard");
        assert!(last.message.contains("network"), "{last:?}");
        mock.set_network_ready(true);
        wait_until(|| ready().as_deref() == Some("True"), t).await.unwrap();
        assert_eq!(node.kubelet().root.exit_reason(), None);
    });
}

/// The sync loop's admission book survives its restart (finding R2b of
/// issue #10): with `maxPods: 2` and two pods running, `sync-loop` is
/// killed, then a third pod arrives and is rejected as upstream rejects it
/// (`OutOfpods`, "Node didn't have enough resource: pods"), never started,
/// while the two admitted pods keep running untouched. Removing one frees
/// its place: a fourth pod is admitted.
#[test]
fn sync_loop_restart_keeps_the_admission_totals() {
    use actlet::testing::{PodBuilder, TestNode};

    run_paused(|| async {
        let mock = MockRuntime::new();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(|b| b.configure(|c| c.max_pods = 2))
            .start();
        let pod = |name: &str| {
            PodBuilder::new(name)
                .uid(format!("u-{name}"))
                .container("app", "busybox:1.36", ["sleep", "3600"])
                .build()
        };
        let t = Duration::from_secs(60);
        node.set_pods(vec![pod("a"), pod("b")]);
        for name in ["a", "b"] {
            node.wait_for_phase("default", name, "Running", t).await.unwrap();
        }
        sleep(Duration::from_secs(3)).await;
        let ids: Vec<String> = ["a", "b"]
            .iter()
            .map(|n| mock.find_container(n, "app").expect("running").status.id)
            .collect();

        kill_child(node.kubelet(), "sync-loop").await;
        sleep(Duration::from_millis(50)).await;

        node.set_pods(vec![pod("a"), pod("b"), pod("c")]);
        node.wait_for_phase("default", "c", "Failed", t).await.unwrap();
        let status = node.status("default", "c").expect("c has a status");
        assert_eq!(status.reason.as_deref(), Some("OutOfpods"), "{status:?}");
        let message = status.message.unwrap_or_default();
        assert!(
            message.starts_with("Pod was rejected: Node didn't have enough resource: pods"),
            "{message}"
        );
        sleep(Duration::from_secs(30)).await;
        assert!(mock.find_container("c", "app").is_none(), "c never started");
        assert_eq!(mock.calls_to("RunPodSandbox").len(), 2, "one sandbox each for a and b");
        for (name, id) in ["a", "b"].iter().zip(&ids) {
            assert_eq!(
                node.status("default", name).and_then(|s| s.phase).as_deref(),
                Some("Running")
            );
            let c = mock.find_container(name, "app").expect("still there");
            assert_eq!(&c.status.id, id, "{name} not restarted");
        }
        let info = node.kubelet().tree().get("root/sync-loop").expect("in the tree");
        assert_eq!((info.state, info.restarts), (ChildState::Running, 1));

        // The book counts down as well as up: b's place goes to d.
        node.set_pods(vec![pod("a"), pod("c"), pod("d")]);
        node.wait_for_phase("default", "d", "Running", t).await.unwrap();
        assert_eq!(mock.calls_to("RunPodSandbox").len(), 3, "one sandbox for d");
        assert_eq!(node.kubelet().root.exit_reason(), None);
    });
}
