//! A long grace period is honoured end to end (issue #10, "Done when" 2):
//! a pod with `terminationGracePeriodSeconds: 300` whose container ignores
//! SIGTERM is removed; the kubelet sends ONE `StopContainer` asking the
//! runtime to wait 300 s, the container still runs at 299 s and is killed
//! at 300 s, and the pod is then forgotten. Before the fix, the CRI client
//! gave `StopContainer` the plain `runtimeRequestTimeout` (2 min) as its
//! gRPC deadline: the call failed at 120 s and was retried with a new
//! SIGTERM, and the container was never killed.
//!
//! The node talks to the mock over real gRPC (a [`CriClient`] with the
//! upstream default 2 min request timeout, to a [`CriServer`] on a unix
//! socket), so the client's per-verb deadline table is part of what is
//! tested; time is paused, so 300 s take milliseconds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::client::CriClient;
use actlet::cri::mock::{Behaviour, CallOutcome, MockRuntime};
use actlet::cri::server::CriServer;
use actlet::cri::v1::{ContainerState, StopContainerRequest};
use actlet::messages::PodUid;
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use tokio::time::{Instant, sleep_until};

/// Upstream's default `runtimeRequestTimeout`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
const GRACE: u64 = 300;

/// Serves `mock` over gRPC on a socket in `dir`; every `StopContainer`
/// request's `timeout` is appended to `stops`.
async fn serve(mock: &MockRuntime, dir: &std::path::Path, stops: Arc<Mutex<Vec<i64>>>) -> CriClient {
    let hooked = HookedRuntime::new(mock.clone(), move |call| {
        if let Some(req) = call.request::<StopContainerRequest>() {
            stops.lock().unwrap_or_else(|p| p.into_inner()).push(req.timeout);
        }
    });
    let sock = dir.join("cri.sock");
    let path = sock.clone();
    // Serves until the test's runtime ends.
    tokio::spawn(async move {
        CriServer::new(Arc::new(hooked))
            .serve(&path, std::future::pending())
            .await
            .unwrap_or_else(|e| panic!("serve the mock: {e}"));
    });
    wait_until(|| sock.exists(), Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("the mock's socket: {e}"));
    CriClient::new(&format!("unix://{}", sock.display()), REQUEST_TIMEOUT).unwrap_or_else(|e| panic!("client: {e}"))
}

fn is_running(mock: &MockRuntime, id: &str) -> bool {
    mock.container(id)
        .is_some_and(|c| c.state() == ContainerState::ContainerRunning)
}

#[test]
fn a_300_s_grace_period_is_waited_once_then_the_container_is_killed() {
    run_paused(async {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mock = MockRuntime::builder()
            .script("stubborn", Behaviour::run_forever().ignore_sigterm())
            .build();
        let stops = Arc::new(Mutex::new(Vec::new()));
        let client = serve(&mock, dir.path(), stops.clone()).await;
        let node = TestNode::builder().mock(mock.clone()).runtime(client).start();
        let uid = PodUid::from("u-slow");
        node.set_pods(vec![
            PodBuilder::new("slow")
                .uid("u-slow")
                .grace_period(GRACE as i64)
                .container("stubborn", "busybox:1.36", ["sleep", "3600"])
                .build(),
        ]);
        node.wait_for_phase("default", "slow", "Running", Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let id = mock
            .find_container("slow", "stubborn")
            .unwrap_or_else(|| panic!("the container: {:?}", mock.snapshot()))
            .status
            .id;

        let removed = Instant::now();
        node.set_pods(vec![]);
        wait_until(|| !mock.calls_to("StopContainer").is_empty(), Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("no StopContainer after the removal: {e}"));
        let stop = mock.calls_to("StopContainer").remove(0);
        assert_eq!(stop.target, id);
        assert!(
            stop.at - removed < Duration::from_secs(3),
            "the kill starts at once, not at a resync: {:?}",
            stop.at - removed
        );

        // One second before the grace runs out: still running, still one call.
        sleep_until(stop.at + Duration::from_secs(GRACE - 1)).await;
        assert!(
            is_running(&mock, &id),
            "killed before its 300 s grace: {:?}; stops {:?}, removals {:?}",
            mock.container(&id),
            mock.calls_to("StopContainer"),
            mock.calls_to("RemoveContainer"),
        );
        assert_eq!(
            mock.calls_to("StopContainer").len(),
            1,
            "one SIGTERM, not a retry: {:?}",
            mock.calls_to("StopContainer")
        );

        let waited = wait_until(|| !is_running(&mock, &id), Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("not killed after its grace: {e}"));
        let killed_after = stop.at.elapsed();
        assert!(
            killed_after >= Duration::from_secs(GRACE) && killed_after <= Duration::from_secs(GRACE + 2),
            "killed {killed_after:?} after the SIGTERM (waited {waited:?} past 299 s), not at {GRACE} s"
        );
        let status = mock.container(&id).unwrap_or_else(|| panic!("container {id} gone"));
        assert_eq!(status.exit_code, 137, "SIGKILLed after the grace: {status:?}");

        // The pod is finished with and forgotten.
        wait_until(
            || {
                let k = node.kubelet();
                k.pods.is_empty() && k.pod_sync_statuses.is_empty() && k.statuses.get(&uid).is_none()
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|e| panic!("the pod is not forgotten: {e}"));

        let calls = mock.calls_to("StopContainer");
        assert_eq!(calls.len(), 1, "exactly one StopContainer: {calls:?}");
        assert_eq!(calls[0].outcome, CallOutcome::Ok, "the one call succeeded: {calls:?}");
        let timeouts = stops.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(timeouts, [GRACE as i64], "the runtime is asked to wait the pod's grace");
    });
}
