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
    }
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
    let out = sync_pod(&deps, &Arc::new(pod), None, &Waiting::new(), Default::default()).await;
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
    let out = sync_pod(&deps, &Arc::new(pod), None, &Waiting::new(), Default::default()).await;
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
