//! The pod events the runtime manager records, in order and with the
//! container's field path, driven on the mock CRI runtime (paused time):
//! a start (image present or pulled), a crash loop, a failed pull and its
//! backoff, a failed create, a failed sandbox, a kill.

#[path = "support/kuberuntime.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::SupervisedRecipient;
use actlet::cri::mock::{Behaviour, MockImage, MockRuntime};
use actlet::events::EventRecorder;
use actlet::messages::event::{EventType, RecordEvent};
use k8s_openapi::api::core::v1::Pod;
use support::{Node, assert_ok, pod};
use tokio::time::sleep;
use tonic::Code;

/// (type, reason, message, field path) of one recorded event.
type Seen = (EventType, String, String, Option<String>);

/// A node whose runtime manager records events into a list.
fn node_with_events(mock: MockRuntime) -> (Node, Arc<Mutex<Vec<RecordEvent>>>) {
    let mut node = Node::new(mock);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let recorder = EventRecorder::new(SupervisedRecipient::from_fn(move |e: RecordEvent| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(e)
    }));
    node.mgr = node.restarted_manager().with_events(recorder);
    (node, seen)
}

/// The events recorded so far (and forgets them), checking they are about `pod`.
fn take(seen: &Arc<Mutex<Vec<RecordEvent>>>, pod: &Pod) -> Vec<Seen> {
    let events = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
    events
        .into_iter()
        .map(|e| {
            assert_eq!(e.involved.kind.as_deref(), Some("Pod"));
            assert_eq!(e.involved.name, pod.metadata.name);
            assert_eq!(e.involved.uid, pod.metadata.uid);
            (e.type_, e.reason, e.message, e.involved.field_path)
        })
        .collect()
}

fn ev(type_: EventType, reason: &str, message: &str, path: Option<&str>) -> Seen {
    (type_, reason.into(), message.into(), path.map(String::from))
}

const N: EventType = EventType::Normal;
const W: EventType = EventType::Warning;
const APP: Option<&str> = Some("spec.containers{app}");

fn image_pod(image: &str) -> Pod {
    pod(&format!(
        "metadata: {{name: img, namespace: default, uid: u-img}}\nspec:\n  containers:\n  - {{name: app, image: '{image}', command: [sleep, '3600']}}"
    ))
}

#[tokio::test(start_paused = true)]
async fn a_start_records_pulled_created_started_per_container() {
    let (node, seen) = node_with_events(MockRuntime::new());
    let p = pod(r#"
metadata: {name: web, namespace: default, uid: u-web}
spec:
  initContainers:
  - {name: init, image: "busybox:1.36", command: ["true"]}
  containers:
  - {name: app, image: "busybox:1.36", command: [sleep, "3600"]}
"#);
    assert_ok(&node.sync(&p).await);
    let init = Some("spec.initContainers{init}");
    let present = r#"Container image "busybox:1.36" already present on machine"#;
    assert_eq!(
        take(&seen, &p),
        [
            ev(N, "Pulled", present, init),
            ev(N, "Created", "Created container init", init),
            ev(N, "Started", "Started container init", init),
        ]
    );
    sleep(Duration::from_secs(1)).await;
    assert_ok(&node.sync(&p).await);
    assert_eq!(
        take(&seen, &p),
        [
            ev(N, "Pulled", present, APP),
            ev(N, "Created", "Created container app", APP),
            ev(N, "Started", "Started container app", APP),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_pulled_image_records_pulling_and_how_long_it_took() {
    let image = MockImage::new("example.com/app:1").busybox_like();
    let mock = MockRuntime::builder().pullable(image, Duration::from_secs(3)).build();
    let (node, seen) = node_with_events(mock);
    let p = image_pod("example.com/app:1");
    assert_ok(&node.sync(&p).await);
    assert_eq!(
        take(&seen, &p),
        [
            ev(N, "Pulling", r#"Pulling image "example.com/app:1""#, APP),
            ev(
                N,
                "Pulled",
                r#"Successfully pulled image "example.com/app:1" in 3s"#,
                APP
            ),
            ev(N, "Created", "Created container app", APP),
            ev(N, "Started", "Started container app", APP),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_crash_loop_records_back_off() {
    let mock = MockRuntime::builder()
        .script("app", Behaviour::crash_on_start(1))
        .build();
    let (node, seen) = node_with_events(mock);
    let p = pod(r#"
metadata: {name: crash, namespace: default, uid: u-crash}
spec:
  containers:
  - {name: app, image: "busybox:1.36", command: [sleep, "3600"]}
"#);
    for _ in 0..3 {
        node.sync(&p).await;
        sleep(Duration::from_secs(1)).await;
    }
    let events = take(&seen, &p);
    let backoff = ev(
        W,
        "BackOff",
        "Back-off restarting failed container app in pod crash_default(u-crash)",
        APP,
    );
    assert!(events.contains(&backoff), "{events:?}");
    let started = events.iter().filter(|e| e.1 == "Started").count();
    assert_eq!(
        started, 2,
        "started, crashed, restarted at once, then backed off: {events:?}"
    );
    assert_eq!(events.last(), Some(&backoff));
}

#[tokio::test(start_paused = true)]
async fn a_failed_pull_records_failed_then_back_off() {
    let (node, seen) = node_with_events(MockRuntime::new());
    let p = image_pod("example.com/app:1");
    node.sync(&p).await;
    let events = take(&seen, &p);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], ev(N, "Pulling", r#"Pulling image "example.com/app:1""#, APP));
    assert_eq!((events[1].0, events[1].1.as_str()), (W, "Failed"));
    assert!(
        events[1]
            .2
            .starts_with(r#"Failed to pull image "example.com/app:1": rpc error: code = "#),
        "{:?}",
        events[1]
    );
    assert_eq!(events[2], ev(W, "Failed", "Error: ErrImagePull", APP));

    sleep(Duration::from_secs(5)).await;
    node.sync(&p).await;
    assert_eq!(
        take(&seen, &p),
        [
            ev(N, "BackOff", r#"Back-off pulling image "example.com/app:1""#, APP),
            ev(W, "Failed", "Error: ImagePullBackOff", APP),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn runtime_failures_record_failed_with_the_error() {
    let (node, seen) = node_with_events(MockRuntime::new());
    let p = image_pod("busybox:1.36");
    node.mock
        .fail_next("CreateContainer", 1, Code::Unknown, "no space left");
    node.sync(&p).await;
    let events = take(&seen, &p);
    assert_eq!(
        events.last(),
        Some(&ev(W, "Failed", "Error: no space left", APP)),
        "{events:?}"
    );

    let other = pod(
        "metadata: {name: nosb, namespace: default, uid: u-nosb}\nspec:\n  containers:\n  - {name: app, image: 'busybox:1.36'}",
    );
    node.mock.fail_next("RunPodSandbox", 1, Code::Unknown, "cni down");
    node.sync(&other).await;
    let events = take(&seen, &other);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].0, events[0].1.as_str(), &events[0].3),
        (W, "FailedCreatePodSandBox", &None)
    );
    assert!(events[0].2.starts_with("Failed to create pod sandbox: ") && events[0].2.contains("cni down"));
}

#[tokio::test(start_paused = true)]
async fn a_kill_records_killing_per_container() {
    let (node, seen) = node_with_events(MockRuntime::new());
    let p = image_pod("busybox:1.36");
    assert_ok(&node.sync(&p).await);
    take(&seen, &p);
    let status = node.status(&p).await;
    assert!(node.mgr.kill_pod(Some(&p), &status, Some(0)).await.is_ok());
    assert_eq!(take(&seen, &p), [ev(N, "Killing", "Stopping container app", APP)]);

    // An orphan (no pod spec) is stopped without an event.
    assert_ok(&node.sync(&p).await);
    take(&seen, &p);
    let status = node.status(&p).await;
    assert!(node.mgr.kill_pod(None, &status, Some(0)).await.is_ok());
    assert_eq!(take(&seen, &p), []);
}
