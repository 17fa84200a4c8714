//! Restart and image pull backoff, driven by syncing once per virtual second
//! against the mock CRI runtime (paused tokio time).

#[path = "support/kuberuntime.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockImage, MockRuntime, Script};
use actlet::kuberuntime::SyncAction;
use support::{Node, pod, start_failure};
use tokio::time::{Instant, sleep};

const CRASH: &str = r#"
metadata: {name: crash, namespace: default, uid: u-crash}
spec:
  containers:
  - {name: app, image: "busybox:1.36", command: [sleep, "3600"]}
"#;

/// Syncs once per second for `seconds`; returns the second at which each
/// new `app` container was created and the distinct failure messages.
async fn drive(node: &Node, seconds: u64) -> (Vec<u64>, Vec<String>) {
    let p = pod(CRASH);
    let start = Instant::now();
    let (mut created, mut messages) = (Vec::new(), Vec::<String>::new());
    for _ in 0..seconds {
        let before = node.created("app");
        let r = node.sync(&p).await;
        if node.created("app") > before {
            created.push(start.elapsed().as_secs());
        }
        if let Some(e) = r.failure_of(SyncAction::StartContainer, "app") {
            assert_eq!(e.reason.as_str(), "CrashLoopBackOff");
            if messages.last() != Some(&e.message) {
                messages.push(e.message.clone());
            }
        }
        sleep(Duration::from_secs(1)).await;
    }
    (created, messages)
}

/// A container that crashes at once is restarted immediately the first time,
/// then after 10, 20, 40, 80, 160 and 300 seconds, and every 300s after that;
/// meanwhile the sync reports `CrashLoopBackOff` with upstream's message.
#[tokio::test(start_paused = true)]
async fn crash_loop_backoff_doubles_from_10s_to_300s() {
    let node = Node::new(
        MockRuntime::builder()
            .script("app", Behaviour::crash_on_start(1))
            .build(),
    );
    let (created, messages) = drive(&node, 1000).await;
    let gaps: Vec<u64> = created.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [1, 10, 20, 40, 80, 160, 300, 300], "created at {created:?}");
    let pod = "pod=crash_default(u-crash)";
    let want: Vec<String> = ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s"]
        .iter()
        .map(|d| format!("back-off {d} restarting failed container=app {pod}"))
        .collect();
    assert_eq!(messages, want);
}

/// A container that ran for more than 10 minutes before failing starts its
/// backoff over: restarted at once, then after 10s again.
#[tokio::test(start_paused = true)]
async fn backoff_starts_over_after_ten_minutes_of_running() {
    let crash = Behaviour::crash_on_start(1);
    let long_run = Behaviour::exit_after(Duration::from_secs(660), 1);
    let script = Script::PerAttempt(vec![crash.clone(), crash.clone(), crash.clone(), long_run, crash]);
    let node = Node::new(MockRuntime::builder().script("app", script).build());
    let (created, _) = drive(&node, 750).await;
    assert_eq!(created, [0, 1, 11, 31, 692, 702, 722], "attempt 3 ran 31s..691s");
}

fn image_pod(image: &str, policy: Option<&str>) -> k8s_openapi::api::core::v1::Pod {
    let policy = policy.map(|p| format!(", imagePullPolicy: {p}")).unwrap_or_default();
    pod(&format!(
        "metadata: {{name: img, namespace: default, uid: u-img}}\nspec:\n  containers:\n  - {{name: app, image: '{image}', command: [sleep, '3600']{policy}}}"
    ))
}

/// imagePullPolicy Never with a missing image: `ErrImageNeverPull`, and the
/// runtime is never asked to pull.
#[tokio::test(start_paused = true)]
async fn never_pull_policy_with_a_missing_image_is_err_image_never_pull() {
    let node = Node::new(MockRuntime::new());
    let p = image_pod("example.com/missing:1", Some("Never"));
    for _ in 0..2 {
        let r = node.sync(&p).await;
        let want = (
            "ErrImageNeverPull".to_string(),
            r#"Container image "example.com/missing:1" is not present with pull policy of Never"#.to_string(),
        );
        assert_eq!(start_failure(&r, "app"), Some(want));
    }
    assert_eq!((node.mock.call_count("PullImage"), node.created("app")), (0, 0));
    assert_eq!(
        node.ready_sandboxes(&p).await,
        1,
        "the sandbox exists; the container waits"
    );
}

/// A present image with IfNotPresent (a tagged image's default) is used
/// without pulling; Always (an untagged image's default) pulls even then —
/// and containerd's pull needs the registry.
#[tokio::test(start_paused = true)]
async fn pull_policy_decides_whether_a_present_image_is_pulled() {
    let node = Node::new(MockRuntime::new());
    let tagged = image_pod("busybox:1.36", None);
    assert!(node.sync(&tagged).await.is_ok());
    assert_eq!(node.mock.call_count("PullImage"), 0);
    assert_eq!(node.running(&tagged).await, ["app"]);

    let node = Node::new(MockRuntime::new());
    let r = node.sync(&image_pod("busybox", None)).await;
    assert_eq!(node.mock.call_count("PullImage"), 1);
    assert_eq!(start_failure(&r, "app").map(|f| f.0), Some("ErrImagePull".to_string()));
}

/// Failed pulls back off (10s, then 20s) as `ImagePullBackOff` without
/// calling the runtime; once the image can be pulled the container starts.
#[tokio::test(start_paused = true)]
async fn failed_pulls_back_off_then_succeed() {
    let node = Node::new(MockRuntime::new());
    let p = image_pod("example.com/app:1", None);
    let reason = |r: &actlet::kuberuntime::PodSyncResult| start_failure(r, "app").map(|f| f.0);
    let step = |secs| sleep(Duration::from_secs(secs));

    assert_eq!(reason(&node.sync(&p).await).as_deref(), Some("ErrImagePull"));
    step(5).await;
    let r = node.sync(&p).await;
    assert_eq!(
        start_failure(&r, "app"),
        Some((
            "ImagePullBackOff".into(),
            r#"Back-off pulling image "example.com/app:1""#.into()
        ))
    );
    assert_eq!(node.mock.call_count("PullImage"), 1);
    step(5).await;
    assert_eq!(
        reason(&node.sync(&p).await).as_deref(),
        Some("ErrImagePull"),
        "10s later: pulls again"
    );
    step(19).await;
    assert_eq!(
        reason(&node.sync(&p).await).as_deref(),
        Some("ImagePullBackOff"),
        "now 20s"
    );
    assert_eq!(node.mock.call_count("PullImage"), 2);

    node.mock.publish_image(
        MockImage::new("example.com/app:1").busybox_like(),
        Duration::from_secs(3),
    );
    step(1).await;
    assert!(node.sync(&p).await.is_ok());
    assert_eq!(node.mock.call_count("PullImage"), 3);
    assert_eq!(node.running(&p).await, ["app"]);
}
