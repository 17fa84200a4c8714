//! The kubelet API against a real containerd (the `actlet` binary, its HTTPS
//! port with the flags' defaults: anonymous, AlwaysAllow): container logs
//! from the CRI log files containerd writes (both streams, tailLines,
//! limitBytes, follow, previous after a restart), `/run` through ExecSync,
//! and `exec` through containerd's own streaming server — the WebSocket
//! `v4.channel.k8s.io` session goes client → actlet → containerd and back.
//! Skipped loudly without `ACTLET_CRI_ENDPOINT` (see tests/support/daemon.rs).

#[path = "support/daemon.rs"]
mod daemon;
#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use daemon::{Env, container_status, phase};
use kubelet_api::{https, ws_session};

const START: Duration = Duration::from_secs(60);

fn pod_yaml(name: &str, restart: &str, command: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: docker.io/library/busybox:1.36
      imagePullPolicy: IfNotPresent
      command: {command}
"#
    )
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let resp = https(None).get(format!("https://{addr}{path}")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_exec_and_run_on_containerd() {
    let Some(env) = Env::start("logs_exec_and_run_on_containerd", "api").await else {
        return;
    };
    let addr: SocketAddr = format!("127.0.0.1:{}", env.api_port).parse().unwrap();
    env.write_manifest(
        "talker.yaml",
        &pod_yaml(
            "talker",
            "Always",
            r#"["sh", "-c", "echo hello; sleep 0.2; echo oops >&2; sleep 4; echo later; sleep 3600"]"#,
        ),
    );
    env.write_manifest(
        "crasher.yaml",
        &pod_yaml("crasher", "Always", r#"["sh", "-c", "echo attempt; exit 1"]"#),
    );
    env.wait_pod("talker", "Running", START, |p| phase(p) == "Running")
        .await;
    let talker = env.pod_name("talker");
    let logs = format!("/containerLogs/default/{talker}/main");

    // follow, started before "later" is written
    let mut follow = https(None)
        .get(format!("https://{addr}{logs}?follow=true"))
        .send()
        .await
        .unwrap();
    assert_eq!(follow.status().as_u16(), 200);
    let mut followed = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !followed.contains("later\n") {
        let chunk = tokio::time::timeout_at(deadline, follow.chunk()).await;
        let chunk = chunk.unwrap_or_else(|_| panic!("follow saw only {followed:?}; {}", env.log_tail(20)));
        followed.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("follow ended early")));
        if !followed.contains("later") {
            assert!(followed.starts_with("hello\n"), "{followed:?}");
        }
    }
    assert_eq!(
        followed, "hello\noops\nlater\n",
        "stdout and stderr interleaved in time order"
    );
    drop(follow);

    assert_eq!(get(addr, &logs).await, (200, "hello\noops\nlater\n".into()));
    assert_eq!(
        get(addr, &format!("{logs}?tailLines=2")).await,
        (200, "oops\nlater\n".into())
    );
    assert_eq!(
        get(addr, &format!("{logs}?limitBytes=8")).await,
        (200, "hello\noo".into())
    );

    // the Summary API from containerd's container stats
    let (code, body) = get(addr, "/stats/summary").await;
    assert_eq!(code, 200, "{body}");
    let summary: serde_json::Value = serde_json::from_str(&body).unwrap();
    let pod = summary["pods"]
        .as_array()
        .and_then(|pods| pods.iter().find(|p| p["podRef"]["name"] == talker.as_str()).cloned())
        .unwrap_or_else(|| panic!("no {talker} in {summary:#}"));
    let main = &pod["containers"][0];
    assert_eq!(main["name"], "main");
    assert!(
        main["memory"]["workingSetBytes"].as_u64().is_some_and(|b| b > 0),
        "{main:#}"
    );
    assert!(main["cpu"]["usageCoreNanoSeconds"].as_u64().is_some(), "{main:#}");
    assert!(
        summary["node"]["runtime"]["imageFs"]["usedBytes"]
            .as_u64()
            .is_some_and(|b| b > 0)
    );
    let (code, text) = get(addr, "/metrics/resource").await;
    assert_eq!(code, 200);
    assert!(
        text.lines().any(
            |l| l.starts_with("container_memory_working_set_bytes{container=\"main\"") && l.contains(talker.as_str())
        ),
        "{text}"
    );

    // exec through containerd's streaming server
    let path = format!("/exec/default/{talker}/main?command=echo&command=hi-from-containerd&output=1&error=1");
    let s = ws_session(addr, &path, "v4.channel.k8s.io", None, None).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&s.stdout), "hi-from-containerd\n");
    assert!(s.status.contains("Success"), "{}", s.status);
    let path = format!(
        "/exec/default/{talker}/main?command=sh&command=-c&command=echo%20to-err%20%3E%262%3B%20exit%207&output=1&error=1"
    );
    let s = ws_session(addr, &path, "v4.channel.k8s.io", None, None).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&s.stderr), "to-err\n");
    assert!(
        s.status.contains("NonZeroExitCode") && s.status.contains("\"7\""),
        "{}",
        s.status
    );

    // /run: ExecSync
    let resp = https(None)
        .post(format!("https://{addr}/run/default/{talker}/main?cmd=echo%20run-ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (resp.status().as_u16(), resp.text().await.unwrap()),
        (200, "run-ok\n".into())
    );

    // portForward: containerd hands out a URL; a plain GET is refused before any upgrade
    let (code, body) = get(addr, &format!("/portForward/default/{talker}")).await;
    assert_eq!((code, body.as_str()), (400, "Upgrade request required"));

    // previous: the last instance of a restarted container
    let started = Instant::now();
    env.wait_pod("crasher", "restarted once", START, |p| {
        container_status(p, "main").is_some_and(|c| c.restart_count >= 1)
    })
    .await;
    let crasher = env.pod_name("crasher");
    let (code, body) = get(addr, &format!("/containerLogs/default/{crasher}/main?previous=true")).await;
    assert_eq!(
        (code, body.as_str()),
        (200, "attempt\n"),
        "after {:?}",
        started.elapsed()
    );
}
