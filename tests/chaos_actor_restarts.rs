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
//! Before issue #10, restarting `pod-workers-manager` orphaned its workers
//! (the removed pod was never killed), restarting `sync-loop` turned
//! housekeeping off for good, and restarting `pod-config` lost the merge
//! state (the removed pod was never REMOVEd).

#[path = "support/system.rs"]
mod support;

use std::collections::HashMap;
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason, KillChild};
use actlet::cri::Runtime;
use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::{PodSandboxConfig, PodSandboxMetadata, PodSandboxState, RunPodSandboxRequest};
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

    node.kubelet
        .root
        .addr()
        .send(KillChild(actor.into()))
        .await
        .expect("root reachable")
        .unwrap_or_else(|e| panic!("kill {actor}: {e}"));
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
    let labels: HashMap<String, String> = [
        ("io.kubernetes.pod.uid", "u-orphan"),
        ("io.kubernetes.pod.name", "orphan"),
        ("io.kubernetes.pod.namespace", "default"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    mock.run_pod_sandbox(RunPodSandboxRequest {
        config: Some(PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: "orphan".into(),
                uid: "u-orphan".into(),
                namespace: "default".into(),
                attempt: 0,
            }),
            labels,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await
    .expect("orphan sandbox");
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

    let info = node
        .kubelet
        .tree()
        .get(&format!("root/{actor}"))
        .expect("actor in the tree");
    assert_eq!((info.state, info.restarts), (ChildState::Running, 1), "{actor}");
    assert_eq!(info.last_failure.map(|f| f.reason), Some(ExitReason::Killed));
    assert_eq!(node.kubelet.root.exit_reason(), None);
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
}
