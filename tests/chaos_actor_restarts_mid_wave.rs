//! Chaos, actor by actor, with work in flight: every core actor kind of the
//! assembled kubelet is killed (its instance dropped, as a panic would)
//! while a wave of ten pods is starting — sandboxes and containers still
//! being created in the mock CRI — and again while the wave is stopping, on
//! the mock CRI under paused time. tests/chaos_actor_restarts.rs kills each
//! kind in a steady state; this file kills it mid-flight. The node must not
//! notice:
//! - no pod lost or duplicated: each pod of the wave gets one sandbox and one
//!   container start, and every one runs; the running pod is not restarted;
//! - status still reaches the status manager (phase Running for each);
//! - no kill with a shortened grace: the wave's containers ignore SIGTERM, so
//!   each is stopped only when its 5 s grace runs out, and by one
//!   `StopContainer` (a second one would mean a second grace);
//! - nothing leaks: the lifecycle records shrink to the one live pod;
//! - the supervisor restarted the actor twice and the root kept running.

#[path = "support/kill_child.rs"]
mod kill_child;
#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, Fault, MockRuntime};
use k8s_openapi::api::core::v1::Pod;
use kill_child::{assert_restarted_after_kills, kill_child};
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};

const WAVE: usize = 10;
const GRACE: u64 = 5;
/// How long the mock takes for each sandbox and container create.
const LATENCY: Duration = Duration::from_millis(400);

fn wave_pod(i: usize) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: w{i}, namespace: default, uid: u-w{i}}}
spec:
  terminationGracePeriodSeconds: {GRACE}
  containers: [{{name: stubborn, image: "busybox:1.36", command: [sleep, "3600"]}}]
"#
    ))
}

async fn survives_restarts_mid_wave_of(actor: &str) {
    let mock = MockRuntime::new();
    mock.script("stubborn", Behaviour::run_forever().ignore_sigterm());
    let node = Node::start(mock.clone());
    let keep = pod(r#"
metadata: {name: keep, namespace: default, uid: u-keep}
spec:
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
"#);
    node.set_pods(&[&keep]);
    node.wait_for("keep running", Duration::from_secs(30), |n| {
        n.is_running(&uid_of(&keep), "app")
    })
    .await;
    sleep(Duration::from_secs(3)).await;
    let keep_id = node.containers("keep", "app")[0].status.id.clone();
    let sandboxes_before = node.calls("RunPodSandbox").len();
    let starts_before = node.calls("StartContainer").len();

    // The wave starts slowly; the actor dies while it is in flight.
    for method in ["RunPodSandbox", "CreateContainer"] {
        mock.inject(method, Fault::latency(LATENCY));
    }
    let wave: Vec<Pod> = (0..WAVE).map(wave_pod).collect();
    let mut all: Vec<&Pod> = wave.iter().collect();
    all.push(&keep);
    node.set_pods(&all);
    node.wait_for("the wave's sandboxes in flight", Duration::from_secs(10), |n| {
        n.calls("RunPodSandbox").len() > sandboxes_before
    })
    .await;
    sleep(LATENCY / 4).await;
    kill_child(&node.kubelet, actor).await;

    node.wait_for("the whole wave running", Duration::from_secs(60), |n| {
        wave.iter()
            .all(|p| n.is_running(&uid_of(p), "stubborn") && n.phase(&uid_of(p)) == "Running")
    })
    .await;
    assert_eq!(
        node.calls("RunPodSandbox").len(),
        sandboxes_before + WAVE,
        "{actor}: one sandbox per pod of the wave: {}",
        node.describe()
    );
    assert_eq!(
        node.calls("StartContainer").len(),
        starts_before + WAVE,
        "{actor}: one container start per pod of the wave: {}",
        node.describe()
    );
    for p in &wave {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        assert_eq!(
            node.containers(name, "stubborn").len(),
            1,
            "{actor}: {name}: {}",
            node.describe()
        );
    }

    // The wave is removed; the actor dies again while the stops are in flight.
    let stops_before = node.calls("StopContainer").len();
    let removed_at = Instant::now();
    node.set_pods(&[&keep]);
    node.wait_for("the wave's stops in flight", Duration::from_secs(10), |n| {
        n.calls("StopContainer").len() > stops_before
    })
    .await;
    kill_child(&node.kubelet, actor).await;
    node.wait_for("the whole wave stopped", Duration::from_secs(60), |n| {
        wave.iter().all(|p| !n.is_running(&uid_of(p), "stubborn"))
    })
    .await;
    let took = removed_at.elapsed();
    assert!(
        took >= Duration::from_secs(GRACE - 1),
        "{actor}: the wave was killed after {took:?}, not with its {GRACE} s grace"
    );
    let wave_ids: Vec<String> = wave
        .iter()
        .flat_map(|p| node.containers(p.metadata.name.as_deref().unwrap_or_default(), "stubborn"))
        .map(|c| c.status.id)
        .collect();
    let stops = node
        .calls("StopContainer")
        .into_iter()
        .filter(|c| wave_ids.contains(&c.target))
        .count();
    assert_eq!(
        stops,
        WAVE,
        "{actor}: one StopContainer (one grace) per container: {}",
        node.describe()
    );

    // The running pod was never touched, and only it stays known.
    assert_eq!(node.containers("keep", "app").len(), 1, "{actor}: keep not restarted");
    assert_eq!(node.containers("keep", "app")[0].status.id, keep_id);
    assert_eq!(node.restart_count(&uid_of(&keep), "app"), 0);
    node.wait_for("only `keep` has a lifecycle record", Duration::from_secs(60), |n| {
        let states = n.kubelet.pod_sync_statuses.states();
        states.len() == 1 && states.contains_key(&uid_of(&keep))
    })
    .await;

    assert_restarted_after_kills(&node.kubelet, actor, 2);
}

macro_rules! chaos {
    ($($test:ident => $actor:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            run_paused(|| survives_restarts_mid_wave_of($actor));
        }
    )*};
}

chaos! {
    pod_workers_manager_killed_mid_wave => "pod-workers-manager",
    sync_loop_killed_mid_wave => "sync-loop",
    pod_config_killed_mid_wave => "pod-config",
    pleg_killed_mid_wave => "pleg",
    status_manager_killed_mid_wave => "status-manager",
    runtime_health_killed_mid_wave => "runtime-health",
    pod_workers_supervisor_killed_mid_wave => "pod-workers",
    container_gc_killed_mid_wave => "container-gc",
    image_gc_killed_mid_wave => "image-gc",
    container_manager_killed_mid_wave => "container-manager",
    oom_watcher_killed_mid_wave => "oom-watcher",
    container_log_manager_killed_mid_wave => "container-log-manager",
    node_conditions_killed_mid_wave => "node-conditions",
}
