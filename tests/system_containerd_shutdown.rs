//! Graceful node shutdown on a REAL containerd (see `tests/system_containerd.rs`
//! for how to run these), issue #14: the daemon, configured with
//! `shutdownGracePeriod: 6s` and `shutdownGracePeriodCriticalPods: 3s`, gets
//! SIGUSR1 (no systemd-logind on this machine: the documented trigger).
//! Both pods' containers are busybox `sleep` as PID 1, which ignores SIGTERM,
//! so each group takes its whole budget: the regular pod is killed within
//! its 3 s and ends `Failed`/`Terminated` while the critical one still runs;
//! the critical pod is killed only after, within its own 3 s.

#[path = "support/daemon.rs"]
mod daemon;

use std::time::{Duration, Instant};

use daemon::{Env, phase, uid};
use k8s_openapi::api::core::v1::Pod;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const BUSYBOX: &str = "docker.io/library/busybox:1.36";

fn manifest(name: &str, priority: i32) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  priority: {priority}
  terminationGracePeriodSeconds: 30
  containers:
    - name: app
      image: {BUSYBOX}
      command: ["sleep", "3600"]
"#
    )
}

fn terminated(p: &Pod) -> bool {
    phase(p) == "Failed" && p.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Terminated")
}

#[tokio::test]
async fn shutdown_terminates_by_priority_within_the_budgets_on_containerd() {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        // Without an API server: no webhook authentication or authorization
        // (a configuration file's defaults), as the flags' defaults.
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\n\
         authorization: {mode: AlwaysAllow}\n\
         shutdownGracePeriod: 6s\nshutdownGracePeriodCriticalPods: 3s\n",
    )
    .unwrap();
    let path = config.path().display().to_string();
    let Some(env) = Env::start_with(
        "shutdown_terminates_by_priority_within_the_budgets_on_containerd",
        "shut",
        &["--config", &path],
    )
    .await
    else {
        return;
    };
    env.write_manifest("regular.yaml", &manifest("regular", 0));
    env.write_manifest("critical.yaml", &manifest("critical", 2_000_000_000));
    let (regular, critical) = ("regular", "critical");
    for name in [regular, critical] {
        env.wait_pod(name, "Running", Duration::from_secs(60), |p| phase(p) == "Running")
            .await;
    }

    let t0 = Instant::now();
    kill(Pid::from_raw(env.pid() as i32), Signal::SIGUSR1).unwrap();
    env.wait_pod(regular, "Failed/Terminated", Duration::from_secs(20), terminated)
        .await;
    let regular_done = t0.elapsed();
    let critical_then = env.pod(critical).await.expect("critical pod");
    env.wait_pod(critical, "Failed/Terminated", Duration::from_secs(20), terminated)
        .await;
    let critical_done = t0.elapsed();
    env.note(format!(
        "regular terminated after {regular_done:?}, critical after {critical_done:?}"
    ));
    assert_eq!(
        phase(&critical_then),
        "Running",
        "the critical pod runs while the regular group terminates"
    );
    assert!(
        regular_done <= Duration::from_secs(3) + Duration::from_secs(4),
        "the regular group's 3 s budget (+ status latency): {regular_done:?}"
    );
    assert!(
        critical_done >= regular_done + Duration::from_secs(2),
        "the critical group is killed only after the regular one: {regular_done:?} then {critical_done:?}"
    );
    assert!(
        critical_done <= Duration::from_secs(6) + Duration::from_secs(6),
        "both budgets (+ latency): {critical_done:?}"
    );
}

/// Issue #10 ("Done when" 2, the containerd variant): a grace period longer
/// than `runtimeRequestTimeout` (6 s against 2 s) is waited ONCE. busybox
/// `sleep` as PID 1 ignores SIGTERM, so the container runs until its grace
/// runs out and is then killed. Before the fix, `StopContainer`'s deadline
/// was the request timeout alone: the call failed after 2 s and was retried
/// with a new SIGTERM, so the container was not killed at its grace.
#[tokio::test]
async fn a_grace_longer_than_the_request_timeout_is_waited_once_on_containerd() {
    const GRACE: u64 = 6;
    let Some(env) = Env::start_with(
        "a_grace_longer_than_the_request_timeout_is_waited_once_on_containerd",
        "grace",
        &["--runtime-request-timeout", "2s"],
    )
    .await
    else {
        return;
    };
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: slow\nspec:\n  terminationGracePeriodSeconds: {GRACE}\n  \
         containers:\n    - name: app\n      image: {BUSYBOX}\n      command: [\"sleep\", \"3600\"]\n"
    );
    env.write_manifest("slow.yaml", &yaml);
    let pod = env
        .wait_pod("slow", "Running", Duration::from_secs(60), |p| phase(p) == "Running")
        .await;
    let uid = uid(&pod);
    let running = async || env.cri_view().await.running_containers_of(&uid).len();
    assert_eq!(running().await, 1);

    let t0 = Instant::now();
    env.remove_manifest("slow.yaml");
    // Past the request timeout, well within the grace: still running.
    tokio::time::sleep(Duration::from_secs(GRACE - 2)).await;
    assert_eq!(
        running().await,
        1,
        "killed before its {GRACE} s grace: {}",
        env.log_tail(40)
    );
    env.wait_for("the container killed", Duration::from_secs(30), async || {
        (running().await == 0).then_some(())
    })
    .await;
    let took = t0.elapsed();
    env.note(format!("killed {took:?} after the manifest was removed"));
    assert!(
        took >= Duration::from_secs(GRACE) && took <= Duration::from_secs(GRACE + 5),
        "killed after {took:?}, not at its {GRACE} s grace (+ the file source's latency): {}",
        env.log_tail(40)
    );
    let log = env.log_tail(100_000);
    assert!(
        !log.contains("container termination failed") && !log.contains("StopContainer failed"),
        "a StopContainer failed (and was retried): {}",
        env.log_tail(60)
    );
}
