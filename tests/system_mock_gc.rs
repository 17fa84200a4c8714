//! Container, sandbox, log and image GC of the assembled kubelet on the mock
//! CRI under paused time: deleted pods leave nothing behind, a crash loop's
//! history stays bounded, unused images go least recently used first down
//! to the low threshold (never one in use, never the sandbox image), and
//! both GC actors can panic mid-round without anything being lost.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason};
use actlet::cri::Runtime;
use actlet::cri::mock::{MockImage, MockRuntime};
use actlet::gc::{FixedCapacity, GcError, ImageFsSource, ImageFsStats, images::FsUsage};
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::Pod;
use tokio::time::sleep;

const MIB: u64 = 1 << 20;

fn sleeper(name: &str, image: &str) -> Pod {
    PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .container("app", image, ["sleep", "3600"])
        .modify(|p| {
            if let Some(s) = p.spec.as_mut() {
                s.termination_grace_period_seconds = Some(1);
                s.containers[0].image_pull_policy = Some("IfNotPresent".into());
            }
        })
        .build()
}

/// Pod names with a sandbox, and with a container, in the mock.
fn held(node: &TestNode) -> (BTreeSet<String>, BTreeSet<String>) {
    let snap = node.mock().snapshot();
    let sandboxes = snap
        .sandboxes
        .iter()
        .filter_map(|s| s.metadata.as_ref().map(|m| m.name.clone()))
        .collect();
    let containers = snap.containers.iter().map(|c| c.pod_name.clone()).collect();
    (sandboxes, containers)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn log_dirs(node: &TestNode) -> BTreeSet<String> {
    std::fs::read_dir(node.dir().join("pods"))
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default()
}

async fn all_running(node: &TestNode, names: &[&str]) {
    for n in names {
        node.wait_for_phase("default", n, "Running", Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("{n}: {e}\n{}", node.describe("default", n)));
    }
}

/// Pods come and go: after the next container GC round the runtime holds
/// only the live pods' sandboxes and containers, and only their log
/// directories are left.
#[test]
fn deleted_pods_leave_nothing_behind() {
    run_paused(async {
        let node = TestNode::start();
        let names = ["a", "b", "c", "d"];
        node.set_pods(names.iter().map(|n| sleeper(n, "busybox:1.36")));
        all_running(&node, &names).await;
        assert_eq!(held(&node).0, set(&names));
        assert_eq!(log_dirs(&node).len(), 4, "{:?}", log_dirs(&node));

        node.set_pods(["a", "c"].iter().map(|n| sleeper(n, "busybox:1.36")));
        let took = wait_until(
            || held(&node) == (set(&["a", "c"]), set(&["a", "c"])),
            Duration::from_secs(150),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}: {:?}", held(&node)));
        assert!(took <= Duration::from_secs(125), "within two GC periods: {took:?}");
        wait_until(|| log_dirs(&node).len() == 2, Duration::from_secs(70))
            .await
            .unwrap_or_else(|e| panic!("{e}: {:?}", log_dirs(&node)));
        assert!(
            log_dirs(&node)
                .iter()
                .all(|d| d.ends_with("uid-a") || d.ends_with("uid-c"))
        );

        // The live pods were never disturbed.
        all_running(&node, &["a", "c"]).await;
        assert_eq!(node.mock().calls_to("RunPodSandbox").len(), 4);
        // A pod re-added under a new UID starts afresh; the old one's remains go.
        node.set_pods(vec![
            sleeper("a", "busybox:1.36"),
            PodBuilder::new("c")
                .uid("uid-c2")
                .container("app", "busybox:1.36", ["sleep", "3600"])
                .build(),
        ]);
        wait_until(
            || {
                node.mock()
                    .snapshot()
                    .sandboxes
                    .iter()
                    .filter(|s| s.metadata.as_ref().is_some_and(|m| m.name == "c"))
                    .count()
                    == 1
                    && node
                        .mock()
                        .snapshot()
                        .sandboxes
                        .iter()
                        .any(|s| s.metadata.as_ref().is_some_and(|m| m.uid == "uid-c2"))
            },
            Duration::from_secs(180),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}: {:?}", node.mock().snapshot().sandboxes));
        node.shutdown().await.unwrap();
    });
}

/// A crash-looping container: its dead instances stay bounded (the newest
/// dead one is kept for the restart count, plus whatever died since the
/// last round), and the restart count keeps counting.
#[test]
fn crash_loop_history_stays_bounded() {
    run_paused(async {
        let node = TestNode::start();
        node.set_pods(vec![
            PodBuilder::new("crash")
                .uid("uid-crash")
                .container("app", "busybox:1.36", ["sh", "-c", "exit 1"])
                .build(),
        ]);
        let (mut max_early, mut max_late, mut last_restarts) = (0, 0, 0);
        for t in 0..(12 * 60) {
            sleep(Duration::from_secs(1)).await;
            let n = node
                .mock()
                .snapshot()
                .containers
                .iter()
                .filter(|c| c.pod_name == "crash")
                .count();
            if t < 180 {
                max_early = max_early.max(n);
            } else {
                max_late = max_late.max(n);
            }
            let restarts = node
                .status("default", "crash")
                .and_then(|s| s.container_statuses)
                .map_or(0, |cs| cs[0].restart_count);
            assert!(
                restarts >= last_restarts,
                "restart count went back: {last_restarts} → {restarts}"
            );
            last_restarts = restarts;
        }
        assert!(last_restarts >= 6, "the loop went on: {last_restarts} restarts");
        // Once the backoff exceeds the GC period, at most one dies between
        // rounds: the newest dead one kept, one died since, one starting.
        assert!(
            max_early <= 5 && max_late <= 3,
            "held {max_early} early, {max_late} later"
        );
        assert!(node.mock().calls_to("RemoveContainer").len() as i32 >= last_restarts - 2);
        node.shutdown().await.unwrap();
    });
}

/// An image filesystem whose capacity the test sets; usage is the mock's
/// images (as [`FixedCapacity`]); can panic once when armed.
struct Disk {
    capacity: AtomicU64,
    panic_armed: AtomicBool,
}

#[async_trait::async_trait]
impl ImageFsStats for Disk {
    async fn usage(&self, runtime: &dyn Runtime) -> Result<FsUsage, GcError> {
        if self.panic_armed.swap(false, Ordering::SeqCst) {
            panic!("injected panic in the image filesystem stats");
        }
        FixedCapacity(self.capacity.load(Ordering::SeqCst)).usage(runtime).await
    }
}

/// The first tag of every image the mock holds.
async fn image_tags(mock: &MockRuntime) -> BTreeSet<String> {
    let images = mock.list_images(Default::default()).await.unwrap().images;
    images.into_iter().map(|i| i.repo_tags.join(",")).collect()
}

/// Waits (polling every second) until the mock holds `n` images.
async fn wait_images(mock: &MockRuntime, n: usize, timeout: Duration) -> BTreeSet<String> {
    let start = tokio::time::Instant::now();
    loop {
        let tags = image_tags(mock).await;
        if tags.len() == n {
            return tags;
        }
        assert!(
            start.elapsed() < timeout,
            "still {} images after {timeout:?}: {tags:?}",
            tags.len()
        );
        sleep(Duration::from_secs(1)).await;
    }
}

/// Images are collected least recently used first (never used before used
/// long ago before used recently), down to the low threshold; images in use
/// and the sandbox image never go, even when that leaves the disk full.
/// The image GC panics mid-round once; its records of image use survive.
#[test]
fn images_go_least_recently_used_first_down_to_the_low_threshold() {
    run_paused(async {
        let img = |n: &str, mib: u64| {
            MockImage::new(&format!("example.com/{n}:1"))
                .size(mib * MIB)
                .busybox_like()
        };
        let mock = MockRuntime::builder()
            .without_default_images()
            .image(MockImage::pause())
            .image(img("big", 500))
            .image(img("never", 50))
            .image(img("early", 50))
            .image(img("late", 50))
            .build();
        let disk = Arc::new(Disk {
            capacity: AtomicU64::new(1 << 40),
            panic_armed: AtomicBool::new(false),
        });
        let d = disk.clone();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(move |b| b.configure(move |c| c.image_fs = ImageFsSource(d)))
            .start();
        // rounds at 0, 5, 10, 15 … min: early and late in use at 5 min, late at 10 min
        node.set_pods(vec![
            sleeper("keep", "example.com/big:1"),
            sleeper("early", "example.com/early:1"),
            sleeper("late", "example.com/late:1"),
        ]);
        all_running(&node, &["keep", "early", "late"]).await;
        sleep(Duration::from_secs(6 * 60)).await;
        node.set_pods(vec![
            sleeper("keep", "example.com/big:1"),
            sleeper("late", "example.com/late:1"),
        ]);
        sleep(Duration::from_secs(5 * 60)).await;
        node.set_pods(vec![sleeper("keep", "example.com/big:1")]);
        // the 15 min round panics (the actor restarts; the records must survive)
        disk.panic_armed.store(true, Ordering::SeqCst);
        sleep(Duration::from_secs(5 * 60)).await;
        assert!(!disk.panic_armed.load(Ordering::SeqCst), "the panic was injected");
        let info = node
            .kubelet()
            .tree()
            .get("root/image-gc")
            .expect("image-gc in the tree");
        assert!(info.restarts >= 1, "{info:?}");
        assert!(
            matches!(&info.last_failure.as_ref().unwrap().reason, ExitReason::Panicked(m) if m.contains("injected"))
        );
        assert_eq!(info.state, ChildState::Running);
        assert_eq!(
            image_tags(&mock).await.len(),
            5,
            "nothing removed while the disk is roomy"
        );

        // A disk at 90 % whose low threshold (80 %) needs 75 MiB freed: the
        // never used image, then the one used longest ago; not the recent one.
        let used: u64 = mock
            .list_images(Default::default())
            .await
            .unwrap()
            .images
            .iter()
            .map(|i| i.size)
            .sum();
        let capacity = (used - 75 * MIB) * 10 / 8;
        disk.capacity.store(capacity, Ordering::SeqCst);
        let left = wait_images(&mock, 3, Duration::from_secs(5 * 60 + 5)).await;
        assert!(left.iter().any(|t| t.contains("late")), "{left:?}");
        assert!(
            !left.iter().any(|t| t.contains("never") || t.contains("early")),
            "{left:?}"
        );
        let used_after: u64 = mock
            .list_images(Default::default())
            .await
            .unwrap()
            .images
            .iter()
            .map(|i| i.size)
            .sum();
        assert!(used_after * 100 <= capacity * 80, "down to the low threshold");
        sleep(Duration::from_secs(5 * 60)).await;
        assert_eq!(
            image_tags(&mock).await,
            left,
            "below the high threshold: nothing more goes"
        );

        // A tiny disk: everything unused goes; big (in use) and pause (the sandbox image) stay.
        disk.capacity.store(used / 2, Ordering::SeqCst);
        let left = wait_images(&mock, 2, Duration::from_secs(5 * 60 + 5)).await;
        assert!(
            left.iter().any(|t| t.contains("big")) && left.iter().any(|t| t.contains("pause")),
            "{left:?}"
        );
        sleep(Duration::from_secs(15 * 60)).await;
        assert_eq!(
            image_tags(&mock).await,
            left,
            "never an image in use, never the sandbox image"
        );
        all_running(&node, &["keep"]).await;
        // The rest of the tree did not notice.
        for c in node.kubelet().tree().snapshot() {
            if c.path != "root/image-gc" {
                assert_eq!(c.restarts, 0, "{c:?}");
            }
        }
        node.shutdown().await.unwrap();
    });
}

/// The container GC panics in the middle of a round (after removing the
/// dead containers, while listing for the sandboxes): its supervisor
/// restarts it, the restarted instance's first round removes the sandbox,
/// nothing is removed twice and nothing else restarts.
#[test]
fn container_gc_panic_mid_round_loses_nothing() {
    run_paused(async {
        let mock = MockRuntime::new();
        let armed = Arc::new(AtomicBool::new(false));
        let removing = Arc::new(AtomicBool::new(false));
        let (a, r) = (armed.clone(), removing.clone());
        let hooked = HookedRuntime::new(mock.clone(), move |call| {
            if call.method == "RemoveContainer" && a.load(Ordering::SeqCst) {
                r.store(true, Ordering::SeqCst);
            }
            // the GC lists sandboxes with an (empty) filter, the PLEG without:
            // panic at the GC's second listing of a round that removed containers
            let gc_listing = call
                .request::<actlet::cri::v1::ListPodSandboxRequest>()
                .is_some_and(|r| r.filter.is_some());
            if gc_listing && r.swap(false, Ordering::SeqCst) && a.swap(false, Ordering::SeqCst) {
                panic!("injected panic in the container GC's sandbox listing");
            }
        });
        let node = TestNode::builder().mock(mock.clone()).runtime(hooked).start();
        node.set_pods(vec![sleeper("stay", "busybox:1.36"), sleeper("gone", "busybox:1.36")]);
        all_running(&node, &["stay", "gone"]).await;
        node.set_pods(vec![sleeper("stay", "busybox:1.36")]);
        wait_until(
            || !held(&node).0.contains("gone") || held(&node).1.contains("gone"),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        // arm once the pod is killed: the next GC round removes its container, then panics
        wait_until(
            || {
                node.mock().snapshot().containers.iter().all(|c| {
                    c.pod_name != "gone" || c.status.state == actlet::cri::v1::ContainerState::ContainerExited as i32
                })
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        armed.store(true, Ordering::SeqCst);
        wait_until(|| !armed.load(Ordering::SeqCst), Duration::from_secs(70))
            .await
            .unwrap();
        sleep(Duration::from_secs(1)).await;
        assert!(
            !held(&node).1.contains("gone"),
            "the round's container removals were done: {:?}",
            held(&node)
        );
        let info = node
            .kubelet()
            .tree()
            .get("root/container-gc")
            .expect("container-gc in the tree");
        assert!(info.restarts >= 1 && info.state == ChildState::Running, "{info:?}");
        assert!(
            matches!(&info.last_failure.as_ref().unwrap().reason, ExitReason::Panicked(m) if m.contains("injected"))
        );

        wait_until(
            || held(&node) == (set(&["stay"]), set(&["stay"])),
            Duration::from_secs(70),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}: {:?}", held(&node)));
        let removed: Vec<_> = mock
            .calls_to("RemovePodSandbox")
            .into_iter()
            .map(|c| c.target)
            .collect();
        assert_eq!(removed.len(), 1, "removed once: {removed:?}");
        assert_eq!(mock.calls_to("RemoveContainer").len(), 1);
        all_running(&node, &["stay"]).await;
        for c in node.kubelet().tree().snapshot() {
            if c.path != "root/container-gc" {
                assert_eq!(c.restarts, 0, "{c:?}");
            }
        }
        node.shutdown().await.unwrap();
    });
}

/// A removal in flight when the tree stops is not cancelled: the slow
/// `RemoveContainer` the GC started still completes.
#[test]
fn removal_in_flight_survives_the_actor() {
    run_paused(async {
        let mock = MockRuntime::new();
        let node = TestNode::with_mock(mock.clone());
        node.set_pods(vec![sleeper("gone", "busybox:1.36")]);
        all_running(&node, &["gone"]).await;
        mock.inject(
            "RemoveContainer",
            actlet::cri::mock::Fault::latency(Duration::from_secs(30)),
        );
        node.set_pods(vec![]);
        wait_until(|| !mock.calls_to("RemoveContainer").is_empty(), Duration::from_secs(90))
            .await
            .unwrap();
        // the GC is waiting on the runtime: stop the whole tree now
        node.shutdown().await.unwrap();
        sleep(Duration::from_secs(31)).await;
        assert!(held(&node).1.is_empty(), "the removal completed: {:?}", held(&node));
    });
}
