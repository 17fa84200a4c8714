//! Bounded image pulls on the whole kubelet (mock CRI, paused time), as
//! upstream's serial and parallel image pullers: with `serializeImagePulls`
//! one pull runs at a time; with it off, `maxParallelImagePulls` bounds
//! them; a pod whose image is present never waits behind a slow pull
//! (k/k #108405).

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockImage, MockRuntime};
use actlet::testing::{PodBuilder, TestNode, run_paused};
use tokio::time::Instant;

const PULL: Duration = Duration::from_secs(30);

fn node(serialize: bool, max_parallel: Option<usize>) -> (TestNode, MockRuntime) {
    let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
    for name in ["slow-a", "slow-b", "slow-c"] {
        mock.publish_image(MockImage::new(&format!("example.com/{name}:1")).busybox_like(), PULL);
    }
    let node = TestNode::builder()
        .mock(mock.clone())
        .customize(move |b| {
            b.configure(move |c| {
                c.serialize_image_pulls = serialize;
                c.max_parallel_image_pulls = max_parallel;
            })
        })
        .start();
    (node, mock)
}

fn pod(name: &str, image: &str) -> k8s_openapi::api::core::v1::Pod {
    PodBuilder::new(name).container("c", image, ["sleep", "3600"]).build()
}

/// When each `PullImage` reached the runtime, relative to `t0`, sorted.
fn pull_starts(mock: &MockRuntime, t0: Instant) -> Vec<Duration> {
    let mut v: Vec<Duration> = mock
        .calls_to("PullImage")
        .iter()
        .map(|c| c.at.saturating_duration_since(t0))
        .collect();
    v.sort();
    v
}

async fn run_three(node: &TestNode) -> Instant {
    let t0 = Instant::now();
    node.set_pods(vec![
        pod("a", "example.com/slow-a:1"),
        pod("b", "example.com/slow-b:1"),
        pod("c", "example.com/slow-c:1"),
        pod("present", "busybox:1.36"),
    ]);
    node.wait_for_phase("default", "present", "Running", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        t0.elapsed() < PULL,
        "the pod with a present image waited for a pull: {:?}",
        t0.elapsed()
    );
    for name in ["a", "b", "c"] {
        node.wait_for_phase("default", name, "Running", Duration::from_secs(300))
            .await
            .unwrap();
    }
    t0
}

#[test]
fn serialized_pulls_run_one_at_a_time() {
    run_paused(async {
        let (node, mock) = node(true, None);
        let t0 = run_three(&node).await;
        let starts = pull_starts(&mock, t0);
        assert_eq!(starts.len(), 3, "{starts:?}");
        assert!(
            starts[1] >= starts[0] + PULL && starts[2] >= starts[1] + PULL,
            "serial: {starts:?}"
        );
    });
}

#[test]
fn parallel_pulls_are_bounded_by_max_parallel_image_pulls() {
    run_paused(async {
        let (node, mock) = node(false, Some(2));
        let t0 = run_three(&node).await;
        let starts = pull_starts(&mock, t0);
        assert_eq!(starts.len(), 3, "{starts:?}");
        assert!(starts[1] < starts[0] + PULL, "two at once: {starts:?}");
        assert!(starts[2] >= starts[0] + PULL, "the third waits for a slot: {starts:?}");
    });
}

#[test]
fn unbounded_parallel_pulls_all_start_at_once() {
    run_paused(async {
        let (node, mock) = node(false, None);
        let t0 = run_three(&node).await;
        let starts = pull_starts(&mock, t0);
        assert!(starts.len() == 3 && starts[2] < starts[0] + PULL, "{starts:?}");
    });
}
