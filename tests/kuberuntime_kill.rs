//! Killing pods against the mock CRI runtime (paused tokio time): grace
//! periods with containers that ignore SIGTERM, overrides, the 2s minimum,
//! and orphans killed from the runtime status alone.

#[path = "support/kuberuntime.rs"]
mod support;

use std::time::Duration;

use actlet::cri::Runtime;
use actlet::cri::mock::{Behaviour, MockRuntime, OnTerm};
use actlet::cri::v1;
use actlet::kuberuntime::pod_status::{ContainerState, SandboxState};
use actlet::kuberuntime::{PodSyncResult, SyncAction};
use k8s_openapi::api::core::v1::Pod;
use support::{Node, assert_ok, pod};
use tokio::time::Instant;

/// Two containers whose PID 1 is `sleep` (ignores SIGTERM in its own PID
/// namespace, like busybox on containerd), with `grace` if given.
fn sleepers(grace: Option<i64>, extra_meta: &str) -> Pod {
    let grace = grace
        .map(|g| format!("  terminationGracePeriodSeconds: {g}\n"))
        .unwrap_or_default();
    pod(&format!(
        "metadata: {{name: sleepy, namespace: default, uid: u-sleepy{extra_meta}}}\nspec:\n{grace}  containers:\n  - {{name: a, image: 'busybox:1.36', command: [sleep, '3600']}}\n  - {{name: b, image: 'busybox:1.36', command: [sleep, '3600']}}"
    ))
}

/// Runs the pod, kills it with `grace_override`, and returns how long the
/// kill took in virtual time and its result.
async fn run_then_kill(node: &Node, p: &Pod, grace_override: Option<i64>) -> (Duration, PodSyncResult) {
    assert_ok(&node.sync(p).await);
    assert_eq!(node.running(p).await, ["a", "b"]);
    let status = node.status(p).await;
    let start = Instant::now();
    let result = node.mgr.kill_pod(Some(p), &status, grace_override).await;
    (start.elapsed(), result)
}

async fn assert_all_stopped(node: &Node, p: &Pod) {
    let st = node.status(p).await;
    assert!(
        st.containers.iter().all(|c| c.state == ContainerState::Exited),
        "{:?}",
        st.containers
    );
    assert!(st.sandboxes.iter().all(|s| s.state == SandboxState::NotReady));
}

/// Containers that ignore SIGTERM are stopped in parallel and take the whole
/// grace period (not twice it), then the sandbox is stopped.
#[tokio::test(start_paused = true)]
async fn kill_pod_waits_out_the_grace_period_of_sigterm_ignoring_containers_in_parallel() {
    let node = Node::new(MockRuntime::new());
    let p = sleepers(Some(5), "");
    let (took, result) = run_then_kill(&node, &p, None).await;
    assert_ok(&result);
    assert_eq!(took, Duration::from_secs(5));
    let steps: Vec<_> = result.results.iter().map(|r| (r.action, r.target.as_str())).collect();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[2], (SyncAction::KillPodSandbox, "u-sleepy"));
    assert_all_stopped(&node, &p).await;
    let st = node.status(&p).await;
    assert!(
        st.containers.iter().all(|c| c.exit_code == 137),
        "SIGKILLed after the grace period"
    );
}

/// Containers that exit on SIGTERM do not make the kill wait.
#[tokio::test(start_paused = true)]
async fn cooperative_containers_stop_at_once() {
    let node = Node::new(
        MockRuntime::builder()
            .script("a", Behaviour::run_forever())
            .script(
                "b",
                Behaviour::run_forever().on_sigterm(OnTerm::ExitAfter(Duration::from_secs(1), 0)),
            )
            .build(),
    );
    let (took, result) = run_then_kill(&node, &sleepers(Some(30), ""), None).await;
    assert_ok(&result);
    assert_eq!(took, Duration::from_secs(1), "b shuts down in 1s; a at once");
}

/// The default grace period is 30s; `deletionGracePeriodSeconds` wins over
/// the spec; a grace of 0 still leaves 2s; an override replaces all of it.
#[tokio::test(start_paused = true)]
async fn grace_period_sources_and_limits() {
    let cases: [(Option<i64>, &str, Option<i64>, u64); 5] = [
        (None, "", None, 30),
        (Some(60), ", deletionGracePeriodSeconds: 4", None, 4),
        (Some(0), "", None, 2),
        (Some(30), "", Some(1), 1),
        (Some(30), "", Some(0), 0),
    ];
    for (grace, meta, over, want) in cases {
        let node = Node::new(MockRuntime::new());
        let p = sleepers(grace, meta);
        let (took, result) = run_then_kill(&node, &p, over).await;
        assert_ok(&result);
        assert_eq!(
            took,
            Duration::from_secs(want),
            "grace {grace:?} meta {meta:?} override {over:?}"
        );
        assert_all_stopped(&node, &p).await;
    }
}

/// After a kubelet restart the pod spec is gone: `kill_pod` works from the
/// runtime status alone, reading the grace period back from the containers'
/// annotations.
#[tokio::test(start_paused = true)]
async fn kill_pod_works_from_the_runtime_status_alone() {
    let node = Node::new(MockRuntime::new());
    let p = sleepers(Some(3), "");
    assert_ok(&node.sync(&p).await);
    let restarted = node.restarted_manager();
    let uid = actlet::messages::PodUid::new("u-sleepy");
    let status = restarted
        .get_pod_status(&uid, "sleepy", "default")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let result = restarted.kill_pod(None, &status, None).await;
    assert_ok(&result);
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    assert_all_stopped(&node, &p).await;
}

/// Containers that vanish between the status read and the kill count as
/// stopped; sandboxes that vanished too.
#[tokio::test(start_paused = true)]
async fn containers_and_sandboxes_already_gone_count_as_stopped() {
    let node = Node::new(MockRuntime::new());
    let p = sleepers(Some(5), "");
    assert_ok(&node.sync(&p).await);
    let status = node.status(&p).await;
    let sandbox = status.sandboxes[0].id.clone();
    node.mock
        .remove_pod_sandbox(v1::RemovePodSandboxRequest {
            pod_sandbox_id: sandbox,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ok(&node.mgr.kill_pod(Some(&p), &status, None).await);
    assert_ok(&node.mgr.kill_pod(None, &status, None).await);
}

/// A runtime that is down makes the kill fail visibly, step by step.
#[tokio::test(start_paused = true)]
async fn kill_failures_are_reported_per_step() {
    let node = Node::new(MockRuntime::new());
    let p = sleepers(Some(5), "");
    assert_ok(&node.sync(&p).await);
    let status = node.status(&p).await;
    node.mock.set_down(true);
    let result = node.mgr.kill_pod(Some(&p), &status, None).await;
    let reasons: Vec<_> = result
        .results
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| e.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        ["KillContainerError", "KillContainerError", "KillPodSandboxError"]
    );
    assert!(result.has_real_errors());
}
