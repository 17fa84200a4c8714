use std::sync::Mutex;

use super::*;
use crate::actors::supervisor::SupervisedRecipient;
use crate::cri::mock::MockRuntime;
use crate::events::EventRecorder;
use crate::kuberuntime::{RuntimeManager, RuntimeManagerConfig};
use crate::messages::event::RecordEvent;
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;
use crate::status::StatusCache;

fn deps(mock: &MockRuntime, events: EventRecorder) -> WorkerDeps {
    let runtime = RuntimeManager::new(Arc::new(mock.clone()), RuntimeManagerConfig::default()).with_events(events);
    WorkerDeps {
        runtime: Arc::new(runtime),
        cache: PodCache::new(),
        pods: PodManager::new(),
        statuses: StatusCache::new(),
        status_manager: SupervisedRecipient::from_fn(|_| {}),
        host_ip: None,
        runtime_name: "mock".into(),
        wall_clock: crate::clock::WallClock::system(),
        probes: Default::default(),
        volumes: crate::volumes::VolumeHandle::disabled(),
        cgroups: crate::cm::ContainerManager::disabled(),
        allocations: Default::default(),
        metrics: None,
        sync_statuses: Default::default(),
        in_flight: Default::default(),
        sync_slots: Default::default(),
    }
}

/// A pod's first sync step, as a new worker runs it.
async fn first_sync(deps: &WorkerDeps, pod: Pod) -> StepOutcome {
    sync_pod(
        deps,
        &Arc::new(pod),
        None,
        false,
        &Waiting::new(),
        Default::default(),
        None,
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_runtime_status_records_failed_sync() {
    let seen = Arc::new(Mutex::new(Vec::<RecordEvent>::new()));
    let sink = seen.clone();
    let events = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(e)
    }));
    let mock = MockRuntime::new();
    let deps = deps(&mock, events);
    let pod: Pod = serde_yaml_ng::from_str(
        "metadata: {name: web, namespace: default, uid: u-web}\nspec: {containers: [{name: app, image: busybox}]}",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    mock.set_down(true);
    // As the PLEG records a pod whose status it could not read.
    let uid = crate::messages::PodUid::from("u-web");
    deps.cache.set(
        uid,
        None,
        Some("rpc error: runtime down".into()),
        tokio::time::Instant::now(),
    );
    let out = first_sync(&deps, pod).await;
    let error = out.error.unwrap_or_else(|| panic!("the sync must fail"));
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].type_, seen[0].reason.as_str()),
        (EventType::Warning, "FailedSync")
    );
    assert_eq!(seen[0].message, format!("error determining status: {error}"));
    assert_eq!(seen[0].involved.name.as_deref(), Some("web"));
    assert_eq!(seen[0].involved.field_path, None);
}

#[tokio::test]
async fn a_pod_cgroup_error_fails_the_sync_with_an_event_naming_the_path() {
    use crate::cm::fs::{CgroupVersion, Cgroupfs};
    let seen = Arc::new(Mutex::new(Vec::<RecordEvent>::new()));
    let sink = seen.clone();
    let events = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(e)
    }));
    let mock = MockRuntime::new();
    let mut deps = deps(&mock, events);
    let t = tempfile::tempdir().unwrap();
    let fs = Arc::new(Cgroupfs::new(t.path(), CgroupVersion::V2));
    deps.cgroups = crate::cm::ContainerManager::new(
        crate::cm::CmConfig::default(),
        fs,
        None,
        PodManager::new(),
        crate::cm::NodeCapacity::default(),
    );
    assert!(deps.cgroups.start().await);
    // the pod's cgroup directory cannot be created: a file is in the way
    std::fs::write(t.path().join("kubepods/besteffort/podu9"), "").unwrap();
    let pod: Pod = serde_yaml_ng::from_str(
        "metadata: {name: web, namespace: default, uid: u9}\nspec: {containers: [{name: app, image: busybox}]}",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    deps.cache.update_time(tokio::time::Instant::now()); // a relist found nothing of the pod
    let out = first_sync(&deps, pod).await;
    let error = out.error.unwrap_or_else(|| panic!("the sync must fail"));
    assert!(error.contains("kubepods/besteffort/podu9"), "{error}");
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    let ev = seen
        .iter()
        .find(|e| e.reason == "FailedToCreatePodContainer")
        .unwrap_or_else(|| panic!("no event: {seen:?}"));
    assert_eq!(ev.type_, EventType::Warning);
    assert!(ev.message.contains("kubepods/besteffort/podu9"), "{}", ev.message);
    assert_eq!(mock.call_count("RunPodSandbox"), 0, "no sandbox without its cgroup");
}

/// The status `read` answers with, which must not wait (no read of its own).
async fn at_once(
    read: impl std::future::Future<Output = Result<Arc<RuntimePodStatus>, String>>,
) -> Arc<RuntimePodStatus> {
    let start = tokio::time::Instant::now();
    match tokio::time::timeout(std::time::Duration::from_secs(5), read).await {
        Ok(Ok(s)) => {
            assert_eq!(start.elapsed(), std::time::Duration::ZERO, "answered without waiting");
            s
        }
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("waited for a runtime read"),
    }
}

fn web_pod() -> Pod {
    serde_yaml_ng::from_str(
        "metadata: {name: web, namespace: default, uid: u-web}\nspec: {containers: [{name: app, image: busybox}]}",
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The cache as after a step that read the pod at `read_at` and a global
/// relist before it.
fn cache_with_entry(deps: &WorkerDeps, read_at: tokio::time::Instant) -> Arc<RuntimePodStatus> {
    let status = Arc::new(RuntimePodStatus::empty("u-web".into(), "web", "default"));
    deps.cache.update_time(read_at);
    deps.cache.set("u-web".into(), Some(status.clone()), None, read_at);
    status
}

#[tokio::test(start_paused = true)]
async fn a_resync_uses_the_event_fed_entry_without_asking_for_a_relist() {
    let deps = deps(&MockRuntime::new(), EventRecorder::disabled());
    let t0 = tokio::time::Instant::now();
    let stored = cache_with_entry(&deps, t0);
    tokio::time::advance(std::time::Duration::from_secs(60)).await;
    let min = tokio::time::Instant::now(); // the previous (idle) step
    deps.cache.set_events_live(true);
    let got = at_once(runtime_status(&deps, &web_pod(), Some(min), true)).await;
    assert!(Arc::ptr_eq(&got, &stored));
    assert!(!deps.cache.relist_pending(&"u-web".into()), "no targeted relist");
}

#[tokio::test(start_paused = true)]
async fn without_events_or_for_other_work_an_old_entry_asks_for_a_relist() {
    for (live, resync) in [(false, true), (true, false)] {
        let deps = deps(&MockRuntime::new(), EventRecorder::disabled());
        cache_with_entry(&deps, tokio::time::Instant::now());
        tokio::time::advance(std::time::Duration::from_secs(60)).await;
        let min = tokio::time::Instant::now();
        deps.cache.set_events_live(live);
        let pod = web_pod();
        let read = runtime_status(&deps, &pod, Some(min), resync);
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), read).await;
        assert!(
            waited.is_err(),
            "live {live}, resync {resync}: waits for a read after the last step"
        );
        assert!(
            deps.cache.relist_pending(&"u-web".into()),
            "live {live}, resync {resync}: a targeted relist was asked for"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_pending_relist_is_waited_for_even_with_events() {
    let deps = deps(&MockRuntime::new(), EventRecorder::disabled());
    cache_with_entry(&deps, tokio::time::Instant::now());
    tokio::time::advance(std::time::Duration::from_secs(60)).await;
    let min = tokio::time::Instant::now();
    deps.cache.set_events_live(true);
    // An event asked for a read of the pod: the entry is about to change.
    deps.cache.request_relist(&"u-web".into(), "web", "default");
    let pod = web_pod();
    let cache = deps.cache.clone();
    let fresh = Arc::new(RuntimePodStatus::empty("u-web".into(), "web", "default"));
    let write = fresh.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        cache.set("u-web".into(), Some(write), None, tokio::time::Instant::now());
    });
    let got = runtime_status(&deps, &pod, Some(min), true).await;
    assert!(
        Arc::ptr_eq(&got.unwrap_or_else(|e| panic!("{e}")), &fresh),
        "the read the event asked for"
    );
}

#[tokio::test(start_paused = true)]
async fn a_global_relist_after_the_last_step_answers_without_a_targeted_one() {
    let deps = deps(&MockRuntime::new(), EventRecorder::disabled());
    let stored = cache_with_entry(&deps, tokio::time::Instant::now());
    let min = tokio::time::Instant::now();
    tokio::time::advance(std::time::Duration::from_secs(1)).await;
    deps.cache.update_time(tokio::time::Instant::now()); // the generic PLEG's next relist
    let got = at_once(runtime_status(&deps, &web_pod(), Some(min), false)).await;
    assert!(Arc::ptr_eq(&got, &stored));
    assert!(
        !deps.cache.relist_pending(&"u-web".into()),
        "the global relist covers it"
    );
}

/// The status manager's part in these tests: statuses stored as it stores
/// them (an equal one is not stored again), each one it was sent counted.
fn storing_status_manager(deps: &mut WorkerDeps) -> Arc<Mutex<Vec<crate::status::store::ApplyOutcome>>> {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = outcomes.clone();
    let store = Mutex::new(crate::status::store::StatusStore::new(deps.statuses.clone()));
    deps.status_manager = SupervisedRecipient::from_fn(move |m: UpdatePodStatus| {
        let uid = pod_uid(&m.pod);
        let mut store = store.lock().unwrap_or_else(|e| e.into_inner());
        store.track(&uid, &m.pod);
        let outcome = store.apply(&uid, m.status, k8s_openapi::jiff::Timestamp::now());
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(outcome);
    });
    outcomes
}

#[tokio::test(start_paused = true)]
async fn a_sync_with_the_last_publications_inputs_generates_and_sends_no_status() {
    use crate::status::store::ApplyOutcome;
    let mock = MockRuntime::builder()
        .script("app", crate::cri::mock::Behaviour::run_forever())
        .build();
    let mut deps = deps(&mock, EventRecorder::disabled());
    let outcomes = storing_status_manager(&mut deps);
    let sent = || outcomes.lock().unwrap_or_else(|e| e.into_inner()).len();
    let pod: Arc<Pod> = Arc::new(
        serde_yaml_ng::from_str(
            "metadata: {name: web, namespace: default, uid: u-web}\nspec: {containers: [{name: app, image: \"busybox:1.36\"}]}",
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    deps.cache.update_time(tokio::time::Instant::now()); // a relist found nothing of the pod
    let none = Waiting::new();
    let step = |memo| sync_pod(&deps, &pod, None, true, &none, Default::default(), memo);

    let first = step(None).await;
    assert_eq!(first.error, None);
    assert_eq!(sent(), 2, "before the start (Pending) and after it (Running)");
    // The status manager stored the second status: its allocation is a new input.
    let second = step(first.publish).await;
    assert_eq!(sent(), 3);
    assert!(
        matches!(outcomes.lock().unwrap()[2], ApplyOutcome::Unchanged),
        "the same status again"
    );
    // Now every input is the last publication's: nothing is generated or sent.
    let mut memo = second.publish;
    for _ in 0..3 {
        let out = step(memo).await;
        assert_eq!(out.error, None);
        assert_eq!(sent(), 3, "an idle resync sends nothing");
        memo = out.publish;
    }
    // The runtime changes (the container exits): the next sync publishes it.
    let app = |status: &PodStatus| status.container_statuses.as_deref().unwrap_or_default()[0].clone();
    let uid = crate::messages::PodUid::from("u-web");
    let before = app(&deps.statuses.status(&uid).unwrap_or_else(|| panic!("a status")));
    let id = mock
        .find_container("web", "app")
        .map(|c| c.status.id)
        .unwrap_or_default();
    assert!(mock.exit_container(&id, 3));
    refresh(&deps, &pod).await.unwrap_or_else(|e| panic!("{e}"));
    let out = step(memo).await;
    assert_eq!(out.error, None);
    assert!(sent() > 3, "the exit is published");
    let after = app(&deps.statuses.status(&uid).unwrap_or_else(|| panic!("a status")));
    assert_eq!(after.restart_count, before.restart_count + 1, "{after:?}");
    let last = after.last_state.and_then(|s| s.terminated).map(|t| t.exit_code);
    assert_eq!(last, Some(3), "the exit is the last state");
}
