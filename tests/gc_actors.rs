//! The GC actors on their own, under a supervisor, on the mock CRI with
//! paused time: the node events they record (upstream reasons and
//! messages), and that nothing is removed before every pod source is ready.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::{ChildSpec, SupervisedRecipient, SupervisorSpec};
use actlet::cri::mock::{Fault, MockImage, MockRuntime};
use actlet::cri::{Runtime, v1};
use actlet::events::EventRecorder;
use actlet::gc::{
    CONTAINER_GC_PERIOD, ContainerGc, ContainerGcDeps, ContainerGcPolicy, FixedCapacity, GcState, IMAGE_GC_PERIOD,
    ImageFsSource, ImageGc, ImageGcDeps, ImageGcPolicy,
};
use actlet::kubelet::WallClock;
use actlet::messages::event::RecordEvent;
use actlet::pleg::PodCache;
use actlet::pod_manager::PodManager;
use actlet::pod_workers::PodSyncStatuses;
use actlet::sync_loop::SyncLoopState;
use actlet::testing::run_paused;
use tokio::time::sleep;

const MIB: u64 = 1 << 20;

type Events = Arc<Mutex<Vec<RecordEvent>>>;

fn recorder() -> (EventRecorder, Events) {
    let seen: Events = Arc::default();
    let s = seen.clone();
    (
        EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| {
            s.lock().unwrap().push(e)
        })),
        seen,
    )
}

fn reasons(events: &Events) -> Vec<String> {
    events.lock().unwrap().iter().map(|e| e.reason.clone()).collect()
}

fn image_gc(mock: &MockRuntime, policy: ImageGcPolicy, capacity: u64, events: EventRecorder) -> ImageGcDeps {
    ImageGcDeps {
        runtime: Arc::new(mock.clone()),
        policy,
        period: IMAGE_GC_PERIOD,
        image_fs: ImageFsSource(Arc::new(FixedCapacity(capacity))),
        state: GcState::new(),
        events,
        node_name: "node-a".into(),
    }
}

/// Not enough can be freed while the only unused image is younger than
/// `imageMinimumGCAge`: `FreeDiskSpaceFailed` every round, `ImageGCFailed`
/// from the second failure in a row; once it is old enough it goes (the
/// sandbox image never does) and the events stop.
#[test]
fn image_gc_failures_are_node_events() {
    run_paused(async {
        let mock = MockRuntime::builder()
            .without_default_images()
            .image(MockImage::pause())
            .image(MockImage::new("example.com/a:1").size(100 * MIB))
            .build();
        let (events, seen) = recorder();
        let policy = ImageGcPolicy {
            min_age: Duration::from_secs(6 * 60),
            ..Default::default()
        };
        let deps = image_gc(&mock, policy, 110 * MIB, events);
        let _root = SupervisorSpec::new("root")
            .child(ChildSpec::new("image-gc", move || ImageGc::new(deps.clone())))
            .start_root();
        sleep(Duration::from_secs(1)).await;
        assert_eq!(reasons(&seen), ["FreeDiskSpaceFailed"]);
        let first = seen.lock().unwrap()[0].clone();
        assert_eq!(first.involved.kind.as_deref(), Some("Node"));
        assert!(
            first
                .message
                .starts_with("Failed to garbage collect required amount of images. Attempted to free "),
            "{}",
            first.message
        );
        sleep(IMAGE_GC_PERIOD).await;
        assert_eq!(
            reasons(&seen),
            ["FreeDiskSpaceFailed", "FreeDiskSpaceFailed", "ImageGCFailed"]
        );
        sleep(IMAGE_GC_PERIOD).await;
        let left = mock.list_images(Default::default()).await.unwrap().images;
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].repo_tags, ["registry.k8s.io/pause:3.9"]);
        sleep(IMAGE_GC_PERIOD * 2).await;
        assert_eq!(reasons(&seen).len(), 3, "no more failures: {:?}", reasons(&seen));
    });
}

/// A zero-capacity image filesystem: `InvalidDiskCapacity`.
#[test]
fn zero_capacity_is_invalid() {
    run_paused(async {
        let mock = MockRuntime::new();
        let (events, seen) = recorder();
        let deps = image_gc(&mock, ImageGcPolicy::default(), 0, events);
        let _root = SupervisorSpec::new("root")
            .child(ChildSpec::new("image-gc", move || ImageGc::new(deps.clone())))
            .start_root();
        sleep(Duration::from_secs(1)).await;
        let e = seen.lock().unwrap()[0].clone();
        assert_eq!(
            (e.reason.as_str(), e.message.as_str()),
            ("InvalidDiskCapacity", "invalid capacity 0 on image filesystem")
        );
    });
}

/// Container GC deps on `mock` with the default policy, no cgroups and pod
/// logs under `logs`.
fn container_gc(
    mock: &MockRuntime,
    sync_state: SyncLoopState,
    logs: &std::path::Path,
    events: EventRecorder,
    runtime_cache: Option<PodCache>,
) -> ContainerGcDeps {
    ContainerGcDeps {
        runtime: Arc::new(mock.clone()),
        pods: PodManager::new(),
        pod_sync_statuses: PodSyncStatuses::default(),
        sync_state,
        policy: ContainerGcPolicy::default(),
        period: CONTAINER_GC_PERIOD,
        pod_logs_dir: logs.to_path_buf(),
        container_logs_dir: None,
        cgroup_mount: None,
        systemd_slices: None,
        state: GcState::new(),
        events,
        node_name: "node-a".into(),
        wall_clock: WallClock::default(),
        runtime_cache,
    }
}

/// A stopped sandbox of a pod nobody wants, on the mock.
async fn dead_sandbox(mock: &MockRuntime, uid: &str) -> String {
    let config = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: "old".into(),
            namespace: "default".into(),
            uid: uid.into(),
            attempt: 0,
        }),
        ..Default::default()
    };
    let id = mock
        .run_pod_sandbox(v1::RunPodSandboxRequest {
            config: Some(config),
            runtime_handler: String::new(),
        })
        .await
        .unwrap()
        .pod_sandbox_id;
    mock.stop_pod_sandbox(v1::StopPodSandboxRequest {
        pod_sandbox_id: id.clone(),
    })
    .await
    .unwrap();
    id
}

/// Nothing goes before all sources are ready; a failed removal is a
/// `ContainerGCFailed` node event and is retried next round.
#[test]
fn container_gc_waits_for_sources_and_reports_failures() {
    run_paused(async {
        let mock = MockRuntime::new();
        let id = dead_sandbox(&mock, "orphan").await;
        let (events, seen) = recorder();
        let sync_state = SyncLoopState::default();
        let tmp = tempfile::tempdir().unwrap();
        let deps = container_gc(&mock, sync_state.clone(), tmp.path(), events, None);
        let _root = SupervisorSpec::new("root")
            .child(ChildSpec::new("container-gc", move || ContainerGc::new(deps.clone())))
            .start_root();
        sleep(CONTAINER_GC_PERIOD * 3).await;
        assert_eq!(mock.snapshot().sandboxes.len(), 1, "sources not ready: nothing removed");
        assert!(mock.calls_to("RemovePodSandbox").is_empty());

        sync_state.lock().sources_ready = true;
        mock.inject(
            "RemovePodSandbox",
            Fault::error(tonic::Code::Internal, "disk on fire").times(1),
        );
        sleep(CONTAINER_GC_PERIOD).await;
        let e = seen.lock().unwrap().first().cloned().expect("an event");
        assert_eq!(e.reason, "ContainerGCFailed");
        assert!(
            e.message.contains("disk on fire") && e.message.contains(&id),
            "{}",
            e.message
        );
        sleep(CONTAINER_GC_PERIOD).await;
        assert!(mock.snapshot().sandboxes.is_empty(), "retried and removed");
        assert_eq!(reasons(&seen), ["ContainerGCFailed"]);
    });
}

/// A period whose inputs did not move since a round that removed nothing
/// lists nothing; a change the PLEG's cache saw runs the next round, and a
/// full round runs every 10 periods for what none of the inputs see.
#[test]
fn quiet_container_rounds_are_skipped_until_an_input_moves() {
    run_paused(async {
        let mock = MockRuntime::new();
        let cache = PodCache::new();
        let sync_state = SyncLoopState::default();
        sync_state.lock().sources_ready = true;
        let tmp = tempfile::tempdir().unwrap();
        let (events, _seen) = recorder();
        let deps = container_gc(&mock, sync_state, tmp.path(), events, Some(cache.clone()));
        let lists = || mock.calls_to("ListPodSandbox").len();
        let _root = SupervisorSpec::new("root")
            .child(ChildSpec::new("container-gc", move || ContainerGc::new(deps.clone())))
            .start_root();
        sleep(Duration::from_secs(1)).await;
        let first = lists();
        assert!(first > 0, "the first round lists the runtime");
        sleep(CONTAINER_GC_PERIOD * 3).await;
        assert_eq!(lists(), first, "three quiet periods skipped");

        // A sandbox stops and the PLEG sees it: the next period collects.
        let orphan = dead_sandbox(&mock, "orphan").await;
        cache.set("orphan".into(), None, None, tokio::time::Instant::now());
        sleep(CONTAINER_GC_PERIOD).await;
        assert!(mock.snapshot().sandboxes.is_empty(), "{orphan} collected");

        // One the PLEG never saw waits for the full round, 10 periods after
        // the last clean one.
        sleep(CONTAINER_GC_PERIOD * 2).await;
        let ghost = dead_sandbox(&mock, "ghost").await;
        let before = lists();
        sleep(CONTAINER_GC_PERIOD * 5).await;
        assert_eq!((lists(), mock.snapshot().sandboxes.len()), (before, 1), "skipped");
        sleep(CONTAINER_GC_PERIOD * 4).await;
        assert!(
            mock.snapshot().sandboxes.is_empty(),
            "{ghost} collected by the full round"
        );
    });
}
