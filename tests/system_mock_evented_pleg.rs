//! `EventedPLEG` on the mock CRI (paused time): the runtime's container
//! events replace the one-second global relist, without the evented PLEG
//! bugs upstream had (k/k #121349, #123087: duplicate containers, events lost
//! across a runtime restart).
//!
//! - An exit is seen through its event at once, while the global relist
//!   (counted as unfiltered `ListPodSandbox` calls) runs every 300 s instead
//!   of every second.
//! - A runtime restart breaks the stream and loses the exits' events: the
//!   PLEG falls back to relisting every second at once, the pod is restarted,
//!   the stream is reconnected and the relist slows down again.
//! - Churn with events on creates exactly one sandbox per pod and never
//!   starts a container twice.
//! - Idle pods' periodic resyncs read no pod status: the global relist
//!   covers them without events, the events keep the cache current with
//!   them (`PodCache::events_live`, cleared when the stream breaks).
//! - A pod start costs one pod status read, its worker's own after the
//!   start: the events of the start wait for it (`pleg::requests`) instead
//!   of costing the PLEG a read each, and still become PLEG events.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, CallOutcome, MockRuntime};
use actlet::cri::v1::ListPodSandboxRequest;
use actlet::messages::pleg::PlegEventType;
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, TestSystem, run_paused, wait_until};
use tokio::time::sleep;

/// A node on `mock` with `EventedPLEG` as given, and the count of global
/// relists (unfiltered `ListPodSandbox`) it made.
fn start_node(mock: &MockRuntime, evented: bool) -> (TestNode, Arc<AtomicUsize>) {
    let (node, relists, _) = start_node_counting(mock, evented);
    (node, relists)
}

/// [`start_node`], also counting the pod status reads (`ListPodSandbox`
/// filtered by pod UID: a targeted relist's or a worker's own read).
fn start_node_counting(mock: &MockRuntime, evented: bool) -> (TestNode, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    start_node_observed(mock, evented, |b| b)
}

/// [`start_node_counting`], with more of the builder (an observer).
fn start_node_observed(
    mock: &MockRuntime,
    evented: bool,
    more: impl FnOnce(actlet::embed::ActletBuilder) -> actlet::embed::ActletBuilder + 'static,
) -> (TestNode, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let relists = Arc::new(AtomicUsize::new(0));
    let pod_reads = Arc::new(AtomicUsize::new(0));
    let (counted, reads) = (relists.clone(), pod_reads.clone());
    let hooked = HookedRuntime::new(mock.clone(), move |call| {
        if let Some(r) = call.request::<ListPodSandboxRequest>() {
            match &r.filter {
                None => counted.fetch_add(1, Ordering::SeqCst),
                Some(f) if f.label_selector.contains_key("io.kubernetes.pod.uid") => {
                    reads.fetch_add(1, Ordering::SeqCst)
                }
                Some(_) => 0,
            };
        }
    });
    let node = TestNode::builder()
        .mock(mock.clone())
        .runtime(hooked)
        .customize(move |b| more(b.configure(move |c| c.evented_pleg = evented)))
        .start();
    (node, relists, pod_reads)
}

fn mock() -> MockRuntime {
    MockRuntime::builder().script("app", Behaviour::run_forever()).build()
}

fn web() -> k8s_openapi::api::core::v1::Pod {
    PodBuilder::new("web")
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .build()
}

/// Gives the node the `web` pod and waits until it runs.
async fn run_web(node: &TestNode) {
    node.set_pods(vec![web()]);
    node.wait_for_phase("default", "web", "Running", Duration::from_secs(30))
        .await
        .unwrap();
}

async fn relists_during(relists: &AtomicUsize, window: Duration) -> usize {
    let before = relists.load(Ordering::SeqCst);
    sleep(window).await;
    relists.load(Ordering::SeqCst) - before
}

#[test]
fn an_exit_is_seen_through_its_event_and_the_global_relist_slows_down() {
    run_paused(async {
        // Without events: a global relist every second.
        let plain = mock();
        let (node, relists) = start_node(&plain, false);
        run_web(&node).await;
        let generic = relists_during(&relists, Duration::from_secs(120)).await;
        assert!(generic >= 100, "generic PLEG: {generic} relists in 120 s");
        drop(node);

        let mock = mock();
        let (node, relists) = start_node(&mock, true);
        run_web(&node).await;
        sleep(Duration::from_secs(5)).await;
        assert_eq!(mock.calls_to("GetContainerEvents").len(), 1, "one stream, kept open");
        let evented = relists_during(&relists, Duration::from_secs(120)).await;
        assert!(
            evented <= 1,
            "evented PLEG: {evented} relists in 120 s (global relist every 300 s)"
        );

        // An exit the kubelet did not cause: only the event can tell it
        // before the next global relist, minutes away.
        let id = mock.find_container("web", "app").unwrap().status.id;
        assert!(mock.exit_container(&id, 3));
        let restarted = node
            .wait_for_restart_count("default", "web", "app", 1, Duration::from_secs(5))
            .await;
        assert!(
            restarted.is_ok(),
            "exit not acted on within 5 s: {}",
            node.describe("default", "web")
        );
        let last = restarted
            .unwrap()
            .last_state
            .and_then(|s| s.terminated)
            .map(|t| t.exit_code);
        assert_eq!(last, Some(3));
    });
}

#[test]
fn a_runtime_restart_falls_back_to_relisting_then_reconnects() {
    run_paused(async {
        let mock = mock();
        let (node, relists) = start_node(&mock, true);
        run_web(&node).await;
        sleep(Duration::from_secs(5)).await;
        let sandboxes = mock.calls_to("RunPodSandbox").len();

        // The runtime goes away: the stream breaks and the PLEG relists
        // every second again (the relists fail until it is back).
        mock.set_down(true);
        let fallback = relists_during(&relists, Duration::from_secs(10)).await;
        assert!(fallback >= 8, "while the stream is down: {fallback} relists in 10 s");
        mock.set_down(false);
        wait_until(
            || {
                mock.calls_to("GetContainerEvents")
                    .iter()
                    .filter(|c| c.outcome == CallOutcome::Ok)
                    .count()
                    >= 2
            },
            Duration::from_secs(120),
        )
        .await
        .expect("reconnected");
        let streams = mock.calls_to("GetContainerEvents").len();

        // containerd restarts: its streams are cut first, so the exits the
        // restart causes are never sent. The reconnection's global relist
        // finds them.
        mock.simulate_restart();
        wait_until(
            || mock.calls_to("RunPodSandbox").len() > sandboxes,
            Duration::from_secs(30),
        )
        .await
        .expect("the pod's sandbox, dead in the restart, is recreated");
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(30))
            .await
            .unwrap();
        // Reconnected after the backoff (the last stream lived less than a
        // minute, so the backoff built up while the runtime was down holds).
        wait_until(
            || mock.calls_to("GetContainerEvents").len() > streams,
            Duration::from_secs(120),
        )
        .await
        .expect("a new stream after the restart");

        // Streaming again: the relist slows down again.
        sleep(Duration::from_secs(5)).await;
        let again = relists_during(&relists, Duration::from_secs(120)).await;
        assert!(again <= 1, "after reconnecting: {again} relists in 120 s");
    });
}

#[test]
fn churn_with_events_creates_one_sandbox_per_pod_and_starts_each_container_once() {
    run_paused(async {
        let mock = mock();
        let (node, _) = start_node(&mock, true);
        let pods: Vec<_> = (0..20)
            .map(|i| {
                PodBuilder::new(format!("p{i}"))
                    .container("app", "busybox:1.36", ["sleep", "3600"])
                    .build()
            })
            .collect();
        node.set_pods(pods.clone());
        for i in 0..20 {
            node.wait_for_phase("default", &format!("p{i}"), "Running", Duration::from_secs(60))
                .await
                .unwrap();
        }
        // Half go, the rest stay; events of the kills arrive while workers sync.
        node.set_pods(pods[10..].to_vec());
        wait_until(|| mock.snapshot().sandboxes.len() == 10, Duration::from_secs(120))
            .await
            .expect("the removed pods' sandboxes are removed");
        sleep(Duration::from_secs(30)).await;
        assert_eq!(mock.calls_to("RunPodSandbox").len(), 20, "one sandbox per pod");
        assert_eq!(mock.calls_to("StartContainer").len(), 20, "one start per container");
        for i in 10..20 {
            let status = node.status("default", &format!("p{i}")).unwrap();
            let restarts = status.container_statuses.unwrap()[0].restart_count;
            assert_eq!(restarts, 0, "p{i} restarted");
        }
    });
}

#[test]
fn a_runtime_without_the_stream_keeps_the_one_second_relist() {
    run_paused(async {
        // containerd 1.6: GetContainerEvents is UNIMPLEMENTED.
        let mock = mock();
        mock.inject(
            "GetContainerEvents",
            actlet::cri::mock::Fault::error(tonic::Code::Unimplemented, "unknown method GetContainerEvents"),
        );
        let (node, relists) = start_node(&mock, true);
        run_web(&node).await;
        let n = relists_during(&relists, Duration::from_secs(120)).await;
        assert!(n >= 100, "{n} relists in 120 s");
        // Asked again at most once a minute, in case the runtime is upgraded.
        let asked = mock.calls_to("GetContainerEvents").len();
        assert!((2..=4).contains(&asked), "asked {asked} times in ~2 min");
        let id = mock.find_container("web", "app").unwrap().status.id;
        assert!(mock.exit_container(&id, 3));
        node.wait_for_restart_count("default", "web", "app", 1, Duration::from_secs(5))
            .await
            .expect("the relist finds the exit");
    });
}

#[test]
fn a_restarted_pleg_watches_again() {
    run_paused(async {
        use actlet::actors::supervisor::KillChild;
        let mock = mock();
        let (node, relists) = start_node(&mock, true);
        run_web(&node).await;
        node.kubelet()
            .root
            .addr()
            .send(KillChild("pleg".into()))
            .await
            .expect("root reachable")
            .expect("pleg killed");
        sleep(Duration::from_secs(5)).await;
        assert_eq!(
            mock.calls_to("GetContainerEvents").len(),
            2,
            "the new instance opened its own stream"
        );
        let n = relists_during(&relists, Duration::from_secs(120)).await;
        assert!(n <= 1, "{n} relists in 120 s");
        let id = mock.find_container("web", "app").unwrap().status.id;
        assert!(mock.exit_container(&id, 3));
        node.wait_for_restart_count("default", "web", "app", 1, Duration::from_secs(5))
            .await
            .expect("the exit is seen through the new stream");
        assert_eq!(mock.calls_to("RunPodSandbox").len(), 1, "no second sandbox");
    });
}

#[test]
fn a_failed_global_relist_is_retried_at_the_next_tick_with_the_stream_up() {
    run_paused(async {
        let mock = mock();
        let (node, relists) = start_node(&mock, true);
        run_web(&node).await;
        // Wait for the first 300 s safety-net relist to pass, then make the
        // next one fail once.
        let before = relists.load(Ordering::SeqCst);
        wait_until(|| relists.load(Ordering::SeqCst) > before, Duration::from_secs(400))
            .await
            .expect("the periodic global relist");
        // Just before the next one (pod syncs' own filtered lists would
        // take the fault otherwise).
        sleep(Duration::from_millis(298_500)).await;
        mock.fail_next("ListPodSandbox", 1, tonic::Code::Unavailable, "injected");
        let before = relists.load(Ordering::SeqCst);
        wait_until(|| relists.load(Ordering::SeqCst) > before, Duration::from_secs(400))
            .await
            .expect("the next periodic global relist (it fails)");
        let n = relists_during(&relists, Duration::from_secs(5)).await;
        assert!(n >= 1, "retried within 5 s, not 300 s later: {n}");
    });
}

#[test]
fn idle_resyncs_read_no_pod_status_with_or_without_events() {
    run_paused(async {
        for evented in [false, true] {
            let mock = mock();
            let (node, _, pod_reads) = start_node_counting(&mock, evented);
            run_web(&node).await;
            let cache = node.kubelet().cache.clone();
            if evented {
                wait_until(|| cache.events_live(), Duration::from_secs(30))
                    .await
                    .expect("the cache is fed by events once the stream's first relist is done");
            }
            sleep(Duration::from_secs(30)).await;
            // Ten syncFrequency periods: each resync of the pod would have
            // asked for a targeted relist (one filtered ListPodSandbox).
            let idle = relists_during(&pod_reads, Duration::from_secs(600)).await;
            assert_eq!(idle, 0, "evented {evented}: pod status reads in 10 idle minutes");
            assert_eq!(cache.events_live(), evented);
            // The cache is still current: an exit is seen and acted on.
            let id = mock.find_container("web", "app").unwrap().status.id;
            assert!(mock.exit_container(&id, 3));
            node.wait_for_restart_count("default", "web", "app", 1, Duration::from_secs(5))
                .await
                .expect("the exit is seen");
            assert_eq!(mock.calls_to("RunPodSandbox").len(), 1, "no second sandbox");
            if evented {
                mock.set_down(true);
                wait_until(|| !cache.events_live(), Duration::from_secs(10))
                    .await
                    .expect("a broken stream no longer vouches for the cache");
            }
        }
    });
}

#[test]
fn a_pod_start_costs_one_pod_status_read_and_its_events_still_arrive() {
    // Real time: on a paused clock a request and the read after it can carry
    // the same instant, and the PLEG then reads again to be sure.
    TestSystem::real_time().block_on(async {
        let mock = mock();
        let started = Arc::new(AtomicUsize::new(0));
        let seen = started.clone();
        let (node, _, pod_reads) = start_node_observed(&mock, true, move |b| {
            b.on_pleg_events(move |events| {
                let n = events
                    .0
                    .iter()
                    .filter(|e| e.kind == PlegEventType::ContainerStarted)
                    .count();
                seen.fetch_add(n, Ordering::SeqCst);
            })
        });
        let cache = node.kubelet().cache.clone();
        wait_until(|| cache.events_live(), Duration::from_secs(30))
            .await
            .expect("the stream's first relist is done");
        let before = pod_reads.load(Ordering::SeqCst);
        run_web(&node).await;
        // The sandbox's and the container's starts, as PLEG events.
        wait_until(|| started.load(Ordering::SeqCst) >= 2, Duration::from_secs(10))
            .await
            .expect("the start's container events become PLEG events");
        sleep(Duration::from_millis(300)).await;
        assert_eq!(
            pod_reads.load(Ordering::SeqCst) - before,
            1,
            "one pod status read for the start: the worker's own after it"
        );
        // Nothing is left parked: an exit is still read and acted on.
        let id = mock.find_container("web", "app").unwrap().status.id;
        assert!(mock.exit_container(&id, 3));
        node.wait_for_restart_count("default", "web", "app", 1, Duration::from_secs(10))
            .await
            .expect("the exit is seen");
    });
}
