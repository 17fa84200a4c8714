//! Restart behaviour of the assembled kubelet on the mock CRI under paused
//! time: restart policies, init containers, CrashLoopBackOff and the image
//! pull policy `Never`.

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, Fault, MockImage, MockRuntime, Script};
use actlet::cri::v1::{ContainerState, PodSandboxState};
use k8s_openapi::api::core::v1::Pod;
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};
use tonic::Code;

/// A one-container pod `name` whose container runs 5 s and exits with `code`.
fn exiting(name: &str, policy: &str, code: i32) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: {name}, namespace: default, uid: u-{name}}}
spec:
  restartPolicy: {policy}
  containers:
  - {{name: app, image: "busybox:1.36", command: [sh, -c, "sleep 5; exit {code}"]}}
"#
    ))
}

/// Whether every sandbox of `pod_name` is stopped.
fn sandbox_stopped(node: &Node, pod_name: &str) -> bool {
    let sandboxes = node.sandboxes(pod_name);
    !sandboxes.is_empty() && sandboxes.iter().all(|s| s.state() == PodSandboxState::SandboxNotready)
}

/// A container that exits is restarted promptly (the first restart has no
/// backoff) and its restartCount goes up; the pod stays Running.
async fn assert_restarted(node: &Node, p: &Pod) {
    let uid = uid_of(p);
    let name = p.metadata.name.clone().unwrap_or_default();
    node.wait_for(&format!("{name} restarted"), Duration::from_secs(20), |n| {
        n.restart_count(&uid, "app") >= 1 && n.is_running(&uid, "app")
    })
    .await;
    let ctrs = node.containers(&name, "app");
    assert!(ctrs.len() >= 2, "{}", node.describe());
    let first_exit = ctrs[0].status.finished_at;
    let second_start = ctrs[1].status.started_at;
    let gap = Duration::from_nanos((second_start - first_exit).max(0) as u64);
    assert!(
        gap <= Duration::from_secs(3),
        "{name}: restarted {gap:?} after the exit"
    );
    assert_eq!(ctrs[1].attempt(), 1);
    assert_eq!(node.phase(&uid), "Running", "{}", node.describe());
    assert_eq!(node.sandboxes(&name).len(), 1, "the sandbox is kept");
}

/// A container that exits is not restarted: the pod reaches `phase`, keeps
/// it, and its sandbox is stopped.
async fn assert_finished(node: &Node, p: &Pod, phase: &str, code: i32) {
    let uid = uid_of(p);
    let name = p.metadata.name.clone().unwrap_or_default();
    node.wait_for(&format!("{name} {phase}"), Duration::from_secs(20), |n| {
        n.phase(&uid) == phase
    })
    .await;
    node.wait_for(&format!("{name} sandbox stopped"), Duration::from_secs(10), |n| {
        sandbox_stopped(n, &name)
    })
    .await;
    let app = node.container_status(&uid, "app").unwrap();
    let terminated = app.state.and_then(|s| s.terminated).expect("app terminated");
    assert_eq!(terminated.exit_code, code);
    assert_eq!(
        terminated.reason.as_deref(),
        Some(if code == 0 { "Completed" } else { "Error" })
    );
    assert_eq!(app.restart_count, 0);
    assert_eq!(node.containers(&name, "app").len(), 1, "never restarted");
}

/// Runs two pods with `policy`: one whose container exits 0, one exits 1.
/// Returns the node and the pods, after 60 s more of resyncs.
async fn run_both(policy: &str) -> (Node, Pod, Pod) {
    let node = Node::start(MockRuntime::new());
    let lc = policy.to_lowercase();
    let ok = exiting(&format!("{lc}-zero"), policy, 0);
    let bad = exiting(&format!("{lc}-one"), policy, 1);
    node.set_pods(&[&ok, &bad]);
    for p in [&ok, &bad] {
        let uid = uid_of(p);
        node.wait_for("Running", Duration::from_secs(5), |n| n.is_running(&uid, "app"))
            .await;
    }
    (node, ok, bad)
}

#[test]
fn restart_policy_always_restarts_after_exit_0_and_exit_1() {
    run_paused(|| async {
        let (node, ok, bad) = run_both("Always").await;
        assert_restarted(&node, &ok).await;
        assert_restarted(&node, &bad).await;
    });
}

#[test]
fn restart_policy_on_failure_restarts_only_after_exit_1() {
    run_paused(|| async {
        let (node, ok, bad) = run_both("OnFailure").await;
        assert_finished(&node, &ok, "Succeeded", 0).await;
        assert_restarted(&node, &bad).await;
        sleep(Duration::from_secs(60)).await;
        assert_eq!(node.containers("onfailure-zero", "app").len(), 1, "{}", node.describe());
        assert_eq!(node.phase(&uid_of(&ok)), "Succeeded");
    });
}

#[test]
fn restart_policy_never_leaves_pods_succeeded_or_failed() {
    run_paused(|| async {
        let (node, ok, bad) = run_both("Never").await;
        assert_finished(&node, &ok, "Succeeded", 0).await;
        assert_finished(&node, &bad, "Failed", 1).await;
        sleep(Duration::from_secs(60)).await;
        assert_eq!(node.calls("CreateContainer").len(), 2, "{}", node.describe());
        assert_eq!(node.phase(&uid_of(&ok)), "Succeeded");
        assert_eq!(node.phase(&uid_of(&bad)), "Failed");
    });
}

fn with_init(name: &str, policy: &str) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: {name}, namespace: default, uid: u-{name}}}
spec:
  restartPolicy: {policy}
  initContainers:
  - {{name: init, image: "busybox:1.36", command: [sh, -c, "sleep 2; exit 0"]}}
  containers:
  - {{name: app, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}}
"#
    ))
}

fn condition(node: &Node, uid: &actlet::messages::PodUid, kind: &str) -> Option<String> {
    let status = node.status(uid)?;
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

/// An init container that succeeds runs to completion before the app
/// container is created; the pod is then Running and Initialized.
#[test]
fn init_container_success_starts_the_app_afterwards() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let p = with_init("init-ok", "Always");
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("Initialized: False while init runs", Duration::from_secs(2), |n| {
            n.is_running(&uid, "init") && condition(n, &uid, "Initialized").as_deref() == Some("False")
        })
        .await;
        assert!(node.containers("init-ok", "app").is_empty(), "app waits for init");
        assert_eq!(node.phase(&uid), "Pending");
        node.wait_for("app Running", Duration::from_secs(10), |n| {
            n.is_running(&uid, "app") && n.phase(&uid) == "Running"
        })
        .await;
        let init = &node.containers("init-ok", "init")[0];
        let app = &node.containers("init-ok", "app")[0];
        assert_eq!(init.status.exit_code, 0);
        assert!(
            app.status.created_at >= init.status.finished_at,
            "app created after init exited"
        );
        assert_eq!(node.exit_code(&uid, "init"), Some(0));
        assert_eq!(condition(&node, &uid, "Initialized").as_deref(), Some("True"));
        sleep(Duration::from_secs(60)).await;
        assert_eq!(node.containers("init-ok", "init").len(), 1, "init is not rerun");
        assert_eq!(node.containers("init-ok", "app").len(), 1);
    });
}

/// With `restartPolicy: Never`, a failed init container fails the pod: the
/// app container is never created and the sandbox is stopped.
#[test]
fn init_container_failure_with_never_fails_the_pod() {
    run_paused(|| async {
        let mock = MockRuntime::builder()
            .script("init", Behaviour::exit_after(Duration::from_secs(2), 1))
            .build();
        let node = Node::start(mock);
        let p = with_init("init-bad", "Never");
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("Failed", Duration::from_secs(10), |n| n.phase(&uid) == "Failed")
            .await;
        node.wait_for("sandbox stopped", Duration::from_secs(10), |n| {
            sandbox_stopped(n, "init-bad")
        })
        .await;
        sleep(Duration::from_secs(60)).await;
        assert!(node.containers("init-bad", "app").is_empty(), "{}", node.describe());
        assert_eq!(node.containers("init-bad", "init").len(), 1, "not retried");
        assert_eq!(node.exit_code(&uid, "init"), Some(1));
        assert_eq!(node.phase(&uid), "Failed");
        assert_eq!(condition(&node, &uid, "Initialized").as_deref(), Some("False"));
    });
}

/// With `restartPolicy: Always`, a failing init container is retried (with
/// backoff) and the app starts only once it succeeded.
#[test]
fn init_container_failure_with_always_is_retried_until_it_succeeds() {
    run_paused(|| async {
        let fail = Behaviour::exit_after(Duration::from_secs(1), 1);
        let ok = Behaviour::exit_after(Duration::from_secs(1), 0);
        let mock = MockRuntime::builder()
            .script("init", Script::PerAttempt(vec![fail.clone(), fail, ok]))
            .build();
        let node = Node::start(mock);
        let p = with_init("init-retry", "Always");
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("app Running", Duration::from_secs(60), |n| {
            assert_ne!(n.phase(&uid), "Failed", "{}", n.describe());
            assert!(
                n.containers("init-retry", "app").is_empty()
                    || n.containers("init-retry", "init").last().is_some_and(|c| {
                        c.attempt() == 2 && c.state() == ContainerState::ContainerExited && c.status.exit_code == 0
                    }),
                "app created before init succeeded: {}",
                n.describe()
            );
            n.is_running(&uid, "app")
        })
        .await;
        let creates: Vec<_> = node
            .calls("CreateContainer")
            .into_iter()
            .filter(|c| c.target.ends_with("/init"))
            .collect();
        assert_eq!(creates.len(), 3, "{creates:?}");
        assert_eq!(node.restart_count(&uid, "init"), 2);
        assert_eq!(node.exit_code(&uid, "init"), Some(0));
        // The first retry is immediate, the second waits for the 10 s backoff.
        let second = creates[2].at.duration_since(creates[1].at).as_secs_f64();
        assert!(
            (11.0..=14.0).contains(&second),
            "second retry {second}s after the first (1 s run + 10 s backoff)"
        );
        assert_eq!(node.phase(&uid), "Running");
    });
}

/// A container that crashes at once is restarted immediately the first time,
/// then after 10, 20, 40, 80, 160, 300 and 300 s (give or take the 1 s sync
/// tick and PLEG relist); meanwhile the API status shows it waiting with
/// reason CrashLoopBackOff and its restartCount goes up.
#[test]
fn crash_loop_backoff_delays_double_from_10s_to_300s() {
    run_paused(|| async {
        let mock = MockRuntime::builder()
            .script("app", Behaviour::crash_on_start(1))
            .build();
        let node = Node::start(mock);
        let p = pod(r#"
metadata: {name: crash, namespace: default, uid: u-crash}
spec:
  containers:
  - {name: app, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        let start = Instant::now();
        let mut restart_counts = vec![];
        let mut saw_backoff = 0;
        while start.elapsed() < Duration::from_secs(1000) {
            if node.waiting_reason(&uid, "app").as_deref() == Some("CrashLoopBackOff") {
                saw_backoff += 1;
                let n = node.restart_count(&uid, "app");
                if restart_counts.last() != Some(&n) {
                    restart_counts.push(n);
                }
            }
            sleep(Duration::from_millis(500)).await;
        }
        let starts: Vec<Instant> = node.calls("StartContainer").iter().map(|c| c.at).collect();
        let gaps: Vec<f64> = starts
            .windows(2)
            .map(|w| w[1].duration_since(w[0]).as_secs_f64())
            .collect();
        let want = [0, 10, 20, 40, 80, 160, 300, 300];
        assert_eq!(gaps.len(), want.len(), "starts after {gaps:?}");
        for (i, (got, want)) in gaps.iter().zip(want).enumerate() {
            let want = want as f64;
            assert!(
                *got >= want && *got <= want + 3.0,
                "restart {}: {got}s after the previous, want {want}s (+3): {gaps:?}",
                i + 1
            );
        }
        let creates = node.calls("CreateContainer").len();
        assert_eq!(creates, starts.len(), "one container per start");
        assert!(saw_backoff > 100, "waiting CrashLoopBackOff most of the time");
        assert!(
            restart_counts.windows(2).all(|w| w[0] < w[1]) && restart_counts.len() >= 7,
            "restartCount goes up: {restart_counts:?}"
        );
        assert_eq!(node.phase(&uid), "Running");
        let sandboxes = node.sandboxes("crash");
        assert_eq!(sandboxes.len(), 1);
        assert_eq!(sandboxes[0].state(), PodSandboxState::SandboxReady);
    });
}

/// `imagePullPolicy: Never` with an image that is not present: the container
/// waits with `ErrImageNeverPull`, nothing is pulled or created for it, and
/// the pod's other container runs regardless.
#[test]
fn image_policy_never_with_a_missing_image_waits_without_pulling() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let p = pod(r#"
metadata: {name: nopull, namespace: default, uid: u-nopull}
spec:
  containers:
  - {name: missing, image: "example.com/missing:1.0", imagePullPolicy: Never}
  - {name: ok, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("ErrImageNeverPull", Duration::from_secs(10), |n| {
            n.waiting_reason(&uid, "missing").as_deref() == Some("ErrImageNeverPull") && n.is_running(&uid, "ok")
        })
        .await;
        let missing = node.container_status(&uid, "missing").unwrap();
        let message = missing.state.unwrap().waiting.unwrap().message.unwrap_or_default();
        assert!(
            message.contains("example.com/missing:1.0") && message.contains("Never"),
            "{message}"
        );
        sleep(Duration::from_secs(120)).await;
        assert_eq!(node.calls("PullImage").len(), 0, "never pulled");
        assert!(node.containers("nopull", "missing").is_empty());
        assert_eq!(node.containers("nopull", "ok").len(), 1);
        assert_eq!(
            node.containers("nopull", "ok")[0].state(),
            ContainerState::ContainerRunning
        );
        assert_eq!(
            node.waiting_reason(&uid, "missing").as_deref(),
            Some("ErrImageNeverPull")
        );
        assert_eq!(node.phase(&uid), "Pending");
    });
}

/// Pull failures back off 10 s, 20 s, 40 s (ImagePullBackOff in between) and
/// the pull is retried as soon as each backoff ends, not at the next resync.
#[test]
fn failed_pulls_are_retried_when_their_backoff_ends() {
    run_paused(|| async {
        let image = "example.com/app:1.0";
        let mock = MockRuntime::builder()
            .pullable(MockImage::new(image).busybox_like(), Duration::ZERO)
            .fault("PullImage", Fault::error(Code::Unavailable, "registry down").times(3))
            .build();
        let node = Node::start(mock);
        let p = pod(&format!(
            r#"
metadata: {{name: puller, namespace: default, uid: u-puller}}
spec:
  containers:
  - {{name: app, image: "{image}", imagePullPolicy: IfNotPresent, command: [sh, -c, "sleep 3600"]}}
"#
        ));
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("ImagePullBackOff", Duration::from_secs(15), |n| {
            n.waiting_reason(&uid, "app").as_deref() == Some("ImagePullBackOff")
        })
        .await;
        node.wait_for("app running after the 4th pull", Duration::from_secs(120), |n| {
            n.is_running(&uid, "app")
        })
        .await;
        let pulls: Vec<Instant> = node.calls("PullImage").iter().map(|c| c.at).collect();
        assert_eq!(pulls.len(), 4, "three failures then success: {}", node.describe());
        for (i, want) in [10u64, 20, 40].into_iter().enumerate() {
            let gap = pulls[i + 1] - pulls[i];
            assert!(
                gap >= Duration::from_secs(want) && gap <= Duration::from_secs(want + 3),
                "pull {} came {gap:?} after the previous one, want {want}s",
                i + 2
            );
        }
    });
}
