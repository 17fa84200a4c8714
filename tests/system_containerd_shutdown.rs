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

use daemon::{Env, phase};
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
