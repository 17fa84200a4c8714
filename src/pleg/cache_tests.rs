//! Unit tests of [`super::PodCache`].

use std::time::Duration;

use super::*;

fn status(uid: &str) -> Arc<RuntimePodStatus> {
    Arc::new(RuntimePodStatus::empty(uid.into(), "p", "default"))
}

#[tokio::test(start_paused = true)]
async fn pruned_entries_are_answered_by_the_global_timestamp_newer_ones_kept() {
    let cache = PodCache::new();
    let t0 = Instant::now();
    cache.set("gone".into(), Some(status("gone")), None, t0);
    cache.set("none".into(), None, None, t0);
    let mut running = RuntimePodStatus::empty("running".into(), "p", "default");
    running.sandboxes.push(crate::kuberuntime::pod_status::SandboxStatus {
        id: "sb".into(),
        state: crate::kuberuntime::pod_status::SandboxState::NotReady,
        created_at: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        attempt: 0,
        ips: vec![],
        host_network: false,
    });
    cache.set("running".into(), Some(Arc::new(running)), None, t0);
    tokio::time::advance(Duration::from_millis(10)).await;
    let t1 = Instant::now();
    cache.set("later".into(), Some(status("later")), None, t1);
    cache.prune_covered(t0);
    assert_eq!(
        cache.len(),
        4,
        "the global timestamp does not cover t0 yet: nothing pruned"
    );
    cache.update_time(t0);
    cache.prune_covered(t0);
    let mut left: Vec<String> = cache.pods.iter().map(|e| e.key().to_string()).collect();
    left.sort();
    assert_eq!(left, ["later", "running"], "only empty entries no newer than t0 go");
    let e = cache.get_relisted(&"gone".into()).await;
    assert!(
        e.status.is_none() && e.modified == t0,
        "answered as before: nothing, as of t0"
    );
}

#[test]
fn could_run_until_listed_then_as_the_entry_says() {
    use crate::kuberuntime::pod_status::{SandboxState, SandboxStatus};
    let cache = PodCache::new();
    let uid: PodUid = "u1".into();
    assert!(cache.could_have_running_containers(&uid), "not listed yet: may run");
    cache.update_time(Instant::now());
    assert!(
        !cache.could_have_running_containers(&uid),
        "listed, no entry: nothing runs"
    );
    cache.set(uid.clone(), Some(status("u1")), None, Instant::now());
    assert!(!cache.could_have_running_containers(&uid), "empty status");
    let mut ready = (*status("u1")).clone();
    ready.sandboxes.push(SandboxStatus {
        id: "s".into(),
        state: SandboxState::Ready,
        created_at: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        attempt: 0,
        ips: vec![],
        host_network: false,
    });
    cache.set(uid.clone(), Some(Arc::new(ready)), None, Instant::now());
    assert!(cache.could_have_running_containers(&uid), "ready sandbox");
    cache.set(uid.clone(), None, Some("cri down".into()), Instant::now());
    assert!(cache.could_have_running_containers(&uid), "unreadable: may run");
}

#[tokio::test(start_paused = true)]
async fn get_newer_than_returns_at_once_when_entry_is_newer() {
    let cache = PodCache::new();
    let t0 = Instant::now();
    tokio::time::advance(Duration::from_secs(1)).await;
    cache.set("a".into(), Some(status("a")), None, Instant::now());
    let e = cache.get_newer_than(&"a".into(), t0).await;
    assert!(e.status.is_some());
    assert!(e.modified > t0);
}

#[tokio::test(start_paused = true)]
async fn get_newer_than_waits_for_a_later_write() {
    let cache = PodCache::new();
    let t0 = Instant::now();
    cache.set("a".into(), Some(status("a")), None, t0);
    let c2 = cache.clone();
    let waiter = tokio::spawn(async move { c2.get_newer_than(&"a".into(), t0).await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "must wait: the entry is not newer than t0");
    tokio::time::advance(Duration::from_millis(10)).await;
    let t1 = Instant::now();
    cache.set("a".into(), Some(status("a")), None, t1);
    let e = waiter.await.unwrap();
    assert_eq!(e.modified, t1);
}

#[tokio::test(start_paused = true)]
async fn global_timestamp_answers_for_missing_pods() {
    let cache = PodCache::new();
    let t0 = Instant::now();
    let c2 = cache.clone();
    let waiter = tokio::spawn(async move { c2.get_newer_than(&"gone".into(), t0).await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    tokio::time::advance(Duration::from_millis(10)).await;
    cache.update_time(Instant::now());
    let e = waiter.await.unwrap();
    assert!(e.status.is_none());
    assert!(e.modified > t0);
}

#[tokio::test(start_paused = true)]
async fn older_write_never_replaces_newer() {
    let cache = PodCache::new();
    let t0 = Instant::now();
    tokio::time::advance(Duration::from_secs(1)).await;
    let t1 = Instant::now();
    cache.set("a".into(), Some(status("a")), None, t1);
    cache.set("a".into(), None, Some("stale".into()), t0);
    let e = cache.get(&"a".into()).unwrap();
    assert_eq!(e.modified, t1);
    assert!(e.status.is_some());
}

#[tokio::test(start_paused = true)]
async fn a_relist_request_is_answered_only_by_a_read_after_its_latest_repeat() {
    let cache = PodCache::new();
    let uid: PodUid = "u1".into();
    cache.request_relist(&uid, "p", "default");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let between = Instant::now();
    cache.set(uid.clone(), Some(status("u1")), None, between);
    tokio::time::sleep(Duration::from_millis(5)).await;
    cache.request_relist(&uid, "p", "default"); // coalesced, later
    let wanted = cache.take_relist_requests();
    let request = &wanted[&uid];
    assert!(request.at > between, "the repeat moved the request's time");
    assert!(
        cache.read_after(&uid, request.at).is_none(),
        "the read in between does not answer the later request"
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    cache.set(uid.clone(), None, Some("ListContainers failed".into()), Instant::now());
    assert!(
        cache.read_after(&uid, request.at).is_none(),
        "a failed read answers nothing"
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    cache.set(uid.clone(), Some(status("u1")), None, Instant::now());
    assert!(cache.read_after(&uid, request.at).is_some());
    assert!(cache.read_after(&"u2".into(), request.at).is_none());
}
