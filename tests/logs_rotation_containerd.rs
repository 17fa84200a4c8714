//! Container log rotation on a real containerd (the `actlet` binary with
//! `--container-log-max-size 8Ki`, a 3 s monitor interval from `--config`,
//! which also keeps the API anonymous + AlwaysAllow as the flags' defaults):
//! a container writing numbered lines has its log rotated (`0.log.<ts>`,
//! older ones `.gz`, at most `--container-log-max-files`), and
//! `/containerLogs?follow=true` streams on across the rotations without a
//! gap or a repeat. Skipped loudly without `ACTLET_CRI_ENDPOINT` (see
//! tests/support/daemon.rs).

#[path = "support/daemon.rs"]
mod daemon;
#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::time::Duration;

use daemon::{Env, phase, uid};
use kubelet_api::https;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_rotate_and_follow_keeps_streaming_on_containerd() {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerLogMonitorInterval: 3s\n\
         authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\n\
         authorization: {mode: AlwaysAllow}\n",
    )
    .unwrap();
    let config_arg = config.path().display().to_string();
    let Some(env) = Env::start_with(
        "logs_rotate_and_follow_keeps_streaming_on_containerd",
        "rot",
        &[
            "--config",
            &config_arg,
            "--container-log-max-size",
            "8Ki",
            "--container-log-max-files",
            "3",
        ],
    )
    .await
    else {
        return;
    };
    let addr: SocketAddr = format!("127.0.0.1:{}", env.api_port).parse().unwrap();
    env.write_manifest(
        "chatty.yaml",
        r#"apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: docker.io/library/busybox:1.36
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "i=0; while true; do echo line-$i-0123456789012345678901234567890123456789; i=$((i+1)); sleep 0.01; done"]
"#,
    );
    let pod = env
        .wait_pod("chatty", "Running", Duration::from_secs(60), |p| phase(p) == "Running")
        .await;
    let name = env.pod_name("chatty");
    let log_dir = std::path::PathBuf::from(format!("/var/log/pods/default_{name}_{}/main", uid(&pod)));

    let mut follow = https(None)
        .get(format!("https://{addr}/containerLogs/default/{name}/main?follow=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(follow.status().as_u16(), 200);
    let mut text = String::new();
    let mut rotations_seen = 0;
    let mut gz_seen = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    while rotations_seen < 2 || !gz_seen {
        let chunk = tokio::time::timeout_at(deadline, follow.chunk()).await;
        let chunk = chunk.unwrap_or_else(|_| {
            panic!(
                "no second rotation within 40 s: {:?}\n{}",
                std::fs::read_dir(&log_dir).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()),
                env.log_tail(30)
            )
        });
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("follow ended early")));
        let names: Vec<String> = std::fs::read_dir(&log_dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        assert!(names.len() <= 3, "at most --container-log-max-files: {names:?}");
        let rotated = names.iter().filter(|n| n.starts_with("0.log.")).count();
        gz_seen |= names.iter().any(|n| n.ends_with(".gz"));
        if rotated > 0 {
            rotations_seen = rotations_seen.max(rotated);
        }
    }
    // keep reading a little past the last rotation
    let until = tokio::time::Instant::now() + Duration::from_secs(4);
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(until, follow.chunk()).await {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(follow);
    let numbers: Vec<u64> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.strip_prefix("line-")
                .and_then(|r| r.split('-').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected line {l:?}"))
        })
        .collect();
    assert!(numbers.len() > 300, "followed {} lines", numbers.len());
    for w in numbers.windows(2) {
        assert_eq!(w[1], w[0] + 1, "no gap nor repeat across rotations");
    }
    env.note(format!("followed {} lines across rotations", numbers.len()));
}
