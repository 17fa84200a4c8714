//! Bounded pod syncs on the whole kubelet (mock CRI, paused time; issue #16
//! item 4c, `--max-concurrent-pod-syncs`): at most N pods are in their
//! runtime work at once, every pod still reaches Running, 0 is unbounded,
//! and a kill of a pod whose sync waits for a turn is not delayed by the
//! queue.

use std::time::Duration;

use actlet::cri::mock::{Behaviour, Fault, MockImage, MockRuntime};
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::Pod;
use tokio::time::{Instant, sleep};

/// How long every `CreateContainer` takes once the latency is injected.
const CREATE: Duration = Duration::from_secs(10);

fn node(max_concurrent_pod_syncs: usize) -> (TestNode, MockRuntime) {
    let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
    let node = TestNode::builder()
        .mock(mock.clone())
        .customize(move |b| b.configure(move |c| c.max_concurrent_pod_syncs = max_concurrent_pod_syncs))
        .start();
    (node, mock)
}

fn pod(name: &str) -> Pod {
    PodBuilder::new(name)
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .build()
}

/// The most `CreateContainer` calls in flight at once (one per pod: each
/// pod has one container), from the mock's call log: a call is in flight
/// from its arrival for `latency`.
fn most_creates_at_once(mock: &MockRuntime, latency: Duration) -> usize {
    let arrivals: Vec<Instant> = mock.calls_to("CreateContainer").iter().map(|c| c.at).collect();
    arrivals
        .iter()
        .map(|&t| arrivals.iter().filter(|&&u| u <= t && t < u + latency).count())
        .max()
        .unwrap_or(0)
}

/// Starts `n` pods with slow creates; returns the most creates at once.
async fn start_pods(node: &TestNode, mock: &MockRuntime, n: usize) -> usize {
    mock.inject("CreateContainer", Fault::latency(CREATE));
    let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    node.set_pods(names.iter().map(|n| pod(n)));
    for name in &names {
        node.wait_for_phase("default", name, "Running", Duration::from_secs(600))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(mock.calls_to("CreateContainer").len(), n, "one create per pod");
    most_creates_at_once(mock, CREATE)
}

#[test]
fn at_most_n_pods_are_in_their_runtime_work_at_once_and_all_reach_running() {
    run_paused(async {
        let (node, mock) = node(2);
        let most = start_pods(&node, &mock, 8).await;
        assert_eq!(most, 2, "two turns, eight pods: {:?}", mock.calls_to("CreateContainer"));
    });
}

#[test]
fn zero_is_unbounded() {
    run_paused(async {
        let (node, mock) = node(0);
        let most = start_pods(&node, &mock, 8).await;
        assert_eq!(most, 8, "every pod at once: {:?}", mock.calls_to("CreateContainer"));
    });
}

#[test]
fn a_kill_of_a_pod_waiting_for_its_turn_is_not_delayed_by_the_queue() {
    run_paused(async {
        let (node, mock) = node(1);
        // A UID of its own: the label change below is an update of the same
        // pod (without one, the test source derives the UID from the content).
        let b = PodBuilder::new("b")
            .uid("u-b")
            .container("c", "busybox:1.36", ["sleep", "3600"])
            .build();
        node.set_pods(vec![b.clone()]);
        node.wait_for_phase("default", "b", "Running", Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // One turn: a1 holds it for a minute-long create, a2 waits.
        let slow = Duration::from_secs(60);
        mock.inject("CreateContainer", Fault::latency(slow));
        node.set_pods(vec![b.clone(), pod("a1"), pod("a2")]);
        wait_until(|| mock.calls_to("CreateContainer").len() >= 2, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("a1 never created: {e}"));
        // b changes: its update sync queues behind a2 for a turn.
        let mut b2 = b.clone();
        b2.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("changed".into(), "yes".into());
        node.set_pods(vec![b2, pod("a1"), pod("a2")]);
        sleep(Duration::from_secs(1)).await;
        assert!(mock.calls_to("StopPodSandbox").is_empty(), "nothing stopped yet");
        // b is removed: its kill ends the wait and runs at once (its
        // container gets its grace period from then on).
        let removed = Instant::now();
        node.set_pods(vec![pod("a1"), pod("a2")]);
        wait_until(|| !mock.calls_to("StopPodSandbox").is_empty(), Duration::from_secs(600))
            .await
            .unwrap_or_else(|e| panic!("b never stopped: {e}"));
        let stops = mock.calls_to("StopContainer");
        assert_eq!(stops.len(), 1, "{stops:?}");
        assert!(stops[0].at >= removed, "b was stopped before its removal: {stops:?}");
        let began = stops[0].at - removed;
        assert!(
            began < Duration::from_secs(5),
            "the kill began {began:?} after the removal: it waited behind the queued syncs (a1's create ends {slow:?} after it began)"
        );
        let c = mock
            .find_container("b", "c")
            .unwrap_or_else(|| panic!("b's container is gone"));
        assert_eq!(
            c.status.state(),
            actlet::cri::v1::ContainerState::ContainerExited,
            "b's container was stopped"
        );
        // The queue goes on: both still start.
        for name in ["a1", "a2"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(600))
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    });
}

#[test]
fn a_pod_waiting_for_an_image_pull_gives_its_turn_to_a_pod_whose_image_is_present() {
    run_paused(async {
        let (node, mock) = node(1);
        let pull = Duration::from_secs(30);
        mock.publish_image(MockImage::new("example.com/slow:1").busybox_like(), pull);
        let slow = PodBuilder::new("slow")
            .container("c", "example.com/slow:1", ["sleep", "3600"])
            .build();
        node.set_pods(vec![slow.clone()]);
        wait_until(|| !mock.calls_to("PullImage").is_empty(), Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("no pull: {e}"));
        let t0 = Instant::now();
        node.set_pods(vec![slow, pod("present")]);
        node.wait_for_phase("default", "present", "Running", Duration::from_secs(300))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            t0.elapsed() < pull / 2,
            "the pod with a present image waited {:?} for the one turn a pull held",
            t0.elapsed()
        );
        node.wait_for_phase("default", "slow", "Running", Duration::from_secs(300))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    });
}
