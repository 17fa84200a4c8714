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
