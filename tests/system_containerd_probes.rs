//! Probes on a REAL containerd with the real `actlet` binary (static pods):
//! a busybox httpd whose httpGet readiness flips when its file is removed,
//! and an exec liveness probe that fails, so the container is restarted.
//!
//! Needs root and a running containerd: `EP=$(sudo hack/containerd/up.sh)`,
//! then `ACTLET_CRI_ENDPOINT=$EP cargo test --test system_containerd_probes`.
//! Without `ACTLET_CRI_ENDPOINT` every test prints a loud SKIPPED line and
//! passes, unless `ACTLET_REQUIRE_CONTAINERD=1`.

#[path = "support/daemon.rs"]
mod daemon;

use std::time::Duration;

use actlet::cri::{Runtime, v1};
use daemon::{Env, container_status, phase, pod_summary};
use k8s_openapi::api::core::v1::Pod;

const BUSYBOX: &str = "docker.io/library/busybox:1.36";

fn ready(p: &Pod) -> bool {
    let conditions = p.status.iter().flat_map(|s| s.conditions.iter().flatten());
    phase(p) == "Running" && conditions.into_iter().any(|c| c.type_ == "Ready" && c.status == "True")
}

fn not_ready(p: &Pod) -> bool {
    phase(p) == "Running" && container_status(p, "web").is_some_and(|c| !c.ready)
}

async fn exec(env: &Env, p: &Pod, cmd: &str) {
    let id = container_status(p, "web")
        .and_then(|c| c.container_id.clone())
        .unwrap_or_default();
    let id = id.strip_prefix("containerd://").unwrap_or(&id).to_string();
    let req = v1::ExecSyncRequest {
        container_id: id,
        cmd: vec!["sh".into(), "-c".into(), cmd.into()],
        timeout: 5,
    };
    let r = env
        .cri
        .exec_sync(req)
        .await
        .unwrap_or_else(|e| panic!("exec {cmd}: {e}"));
    assert_eq!(r.exit_code, 0, "{cmd}: {}", String::from_utf8_lossy(&r.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpd_readiness_follows_its_file() {
    let Some(env) = Env::start("httpd_readiness_follows_its_file", "rdy").await else {
        return;
    };
    let yaml = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: httpd}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: {BUSYBOX}
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "mkdir -p /www && echo ok > /www/ready && exec httpd -f -p 8080 -h /www"]
    ports: [{{name: http, containerPort: 8080}}]
    readinessProbe:
      httpGet: {{path: /ready, port: http}}
      periodSeconds: 1
      failureThreshold: 2
"#
    );
    env.write_manifest("httpd.yaml", &yaml);
    let p = env.wait_pod("httpd", "Ready", Duration::from_secs(60), ready).await;
    exec(&env, &p, "rm /www/ready").await;
    let p = env
        .wait_pod(
            "httpd",
            "NotReady after the file went",
            Duration::from_secs(30),
            not_ready,
        )
        .await;
    assert_eq!(
        container_status(&p, "web").map(|c| c.restart_count),
        Some(0),
        "{}",
        pod_summary(&p)
    );
    exec(&env, &p, "echo ok > /www/ready").await;
    env.wait_pod("httpd", "Ready again", Duration::from_secs(30), ready)
        .await;
    env.remove_manifest("httpd.yaml");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_exec_liveness_probe_restarts_the_container() {
    let Some(env) = Env::start("a_failing_exec_liveness_probe_restarts_the_container", "liv").await else {
        return;
    };
    let yaml = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: sick}}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: web
    image: {BUSYBOX}
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1; done"]
    livenessProbe:
      exec: {{command: [sh, -c, "test -e /healthy"]}}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 2
"#
    );
    env.write_manifest("sick.yaml", &yaml);
    let p = env
        .wait_pod(
            "sick",
            "restarted by its liveness probe",
            Duration::from_secs(90),
            |p| container_status(p, "web").is_some_and(|c| c.restart_count >= 2),
        )
        .await;
    let last = container_status(&p, "web").and_then(|c| c.last_state.clone());
    assert!(
        last.and_then(|s| s.terminated).is_some(),
        "the previous instance terminated: {}",
        pod_summary(&p)
    );
    env.remove_manifest("sick.yaml");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_sidecar_completes() {
    let Some(env) = Env::start("a_job_with_a_sidecar_completes", "side").await else {
        return;
    };
    let yaml = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: job}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: proxy
    image: {BUSYBOX}
    imagePullPolicy: IfNotPresent
    restartPolicy: Always
    command: [sh, -c, "touch /tmp/up; trap 'exit 0' TERM; while true; do sleep 1; done"]
    startupProbe:
      exec: {{command: [test, -e, /tmp/up]}}
      periodSeconds: 1
  containers:
  - name: main
    image: {BUSYBOX}
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "sleep 2"]
"#
    );
    env.write_manifest("job.yaml", &yaml);
    let p = env
        .wait_pod("job", "Succeeded", Duration::from_secs(90), |p| phase(p) == "Succeeded")
        .await;
    let view = env.cri_view().await;
    let uid = daemon::uid(&p);
    assert!(view.running_containers_of(&uid).is_empty(), "{}", view.summary());
    assert_eq!(
        view.named(&uid, "proxy").len(),
        1,
        "the sidecar ran once: {}",
        view.summary()
    );
    env.remove_manifest("job.yaml");
}
