use std::path::PathBuf;
use std::sync::Mutex;

use super::*;
use crate::messages::event::RecordEvent;
use crate::messages::pod_update::PodSource;
use crate::volumes::mounts::MountedVolume;
use crate::volumes::objects::Standalone;
use crate::volumes::plugin::Plugin;

struct Fixture {
    handle: VolumeHandle,
    store: VolumeStore,
    pods: PodManager,
    events: Arc<Mutex<Vec<RecordEvent>>>,
    pod: Arc<Pod>,
}

fn fixture() -> Fixture {
    let pod: Pod = serde_yaml_ng::from_str(
        "metadata: {name: web, namespace: prod, uid: u1}\nspec: {containers: [{name: c}], volumes: [{name: a, emptyDir: {}}, {name: b, emptyDir: {}}]}",
    )
    .unwrap();
    let pod = Arc::new(pod);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| {
        sink.lock().unwrap().push(e)
    }));
    let (store, pods) = (VolumeStore::new(), PodManager::new());
    pods.upsert(pod.clone(), PodSource::Api);
    let handle = VolumeHandle::new(store.clone(), Arc::new(Standalone), pods.clone(), recorder);
    Fixture {
        handle,
        store,
        pods,
        events,
        pod,
    }
}

fn vol(name: &str) -> MountedVolume {
    MountedVolume {
        plugin: Plugin::EmptyDir,
        host_path: PathBuf::from(format!("/v/{name}")),
        read_only: false,
    }
}

#[tokio::test(start_paused = true)]
async fn returns_the_volumes_once_all_are_mounted() {
    let f = fixture();
    f.store.mounted("u1", "a", vol("a"));
    let store = f.store.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        store.mounted("u1", "b", vol("b"));
    });
    let start = Instant::now();
    let ctx = f.handle.prepare(&f.pod).await.unwrap().unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(300),
        "woken by the store, not by polling"
    );
    assert_eq!(ctx.volumes.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert!(!ctx.env.has_client);
}

#[tokio::test(start_paused = true)]
async fn a_failure_retried_later_ends_the_wait_at_once() {
    let f = fixture();
    // An old failure does not end the wait; a new one whose retry is far
    // off (the fourth attempt: 4 s) does.
    for _ in 0..3 {
        f.store.failed("u1", "b", "old".into());
    }
    tokio::time::advance(Duration::from_millis(10)).await;
    let store = f.store.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        store.failed("u1", "b", "configmap \"x\" not found".into());
    });
    let start = Instant::now();
    let err = f.handle.prepare(&f.pod).await.unwrap_err();
    assert_eq!(
        err,
        "MountVolume.SetUp failed for volume \"b\" : configmap \"x\" not found"
    );
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    assert!(f.store.take_retry("u1"), "the worker asked for a prompt retry");
}

#[tokio::test(start_paused = true)]
async fn a_failure_retried_soon_is_waited_through() {
    let f = fixture();
    f.store.mounted("u1", "a", vol("a"));
    let store = f.store.clone();
    tokio::spawn(async move {
        // A TokenRequest refused while the Node authorizer catches up, then
        // the reconciler's retry half a second later works.
        tokio::time::sleep(Duration::from_millis(100)).await;
        store.failed("u1", "b", "serviceaccounts \"default\" is forbidden".into());
        tokio::time::sleep(Duration::from_millis(600)).await;
        store.mounted("u1", "b", vol("b"));
    });
    let start = Instant::now();
    let ctx = f.handle.prepare(&f.pod).await.unwrap().unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(700));
    assert_eq!(ctx.volumes.keys().collect::<Vec<_>>(), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn a_removed_pod_is_not_waited_for() {
    let f = fixture();
    let pods = f.pods.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        pods.remove(&"u1".into());
    });
    let start = Instant::now();
    let err = f.handle.prepare(&f.pod).await.unwrap_err();
    assert!(err.contains("being removed"), "{err}");
    assert!(start.elapsed() <= Duration::from_millis(1500), "{:?}", start.elapsed());
}

#[tokio::test(start_paused = true)]
async fn the_wait_is_bounded_and_reported_as_failed_mount() {
    let f = fixture();
    f.store.mounted("u1", "a", vol("a"));
    let handle = f.handle.clone();
    let start = Instant::now();
    let err = handle.prepare(&f.pod).await.unwrap_err();
    assert_eq!(start.elapsed(), MOUNT_TIMEOUT);
    assert_eq!(
        err,
        "unmounted volumes=[b], unattached volumes=[b]: timed out waiting for the condition"
    );
    let events = f.events.lock().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, "FailedMount");
    assert_eq!(events[0].message, format!("Unable to attach or mount volumes: {err}"));
}
