//! Volumes on a REAL containerd through the `actlet` binary (static pods;
//! see tests/system_containerd.rs for how to run; SKIPPED loudly without
//! `ACTLET_CRI_ENDPOINT`): a busybox container reads its downwardAPI files,
//! writes to its emptyDir (also through a subPath) and its hostPath, and
//! sees a memory emptyDir as a tmpfs of its `sizeLimit`; after the pod is
//! removed — also while actlet was killed with SIGKILL — no volume
//! directory and no mount is left behind.

#[path = "support/daemon.rs"]
mod daemon;

use std::path::{Path, PathBuf};
use std::time::Duration;

use actlet::cri::{Runtime, v1};
use daemon::{Env, container_status, phase, uid};

const START: Duration = Duration::from_secs(60);

fn manifest(name: &str, host: &Path) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: vols}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: docker.io/library/busybox:1.36
      imagePullPolicy: IfNotPresent
      command: [sh, -c, "echo hello > /cache/x; sleep 3600"]
      volumeMounts:
        - {{name: cache, mountPath: /cache}}
        - {{name: cache, mountPath: /logs, subPath: logs}}
        - {{name: mem, mountPath: /mem}}
        - {{name: host, mountPath: /hostdata}}
        - {{name: info, mountPath: /etc/podinfo}}
  volumes:
    - {{name: cache, emptyDir: {{}}}}
    - {{name: mem, emptyDir: {{medium: Memory, sizeLimit: 8Mi}}}}
    - {{name: host, hostPath: {{path: "{}", type: DirectoryOrCreate}}}}
    - name: info
      downwardAPI:
        items:
          - {{path: name, fieldRef: {{fieldPath: metadata.name}}}}
          - {{path: labels, fieldRef: {{fieldPath: metadata.labels}}}}
"#,
        host.display()
    )
}

fn root_of(env: &Env) -> PathBuf {
    env.manifest_dir().parent().map(|p| p.join("root")).unwrap_or_default()
}

fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let dir = dir.to_string_lossy().into_owned();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(&dir))
        .map(str::to_string)
        .collect()
}

async fn exec(env: &Env, id: &str, script: &str) -> String {
    let out = env
        .cri
        .exec_sync(v1::ExecSyncRequest {
            container_id: id.to_string(),
            cmd: vec!["sh".into(), "-c".into(), script.into()],
            timeout: 10,
        })
        .await
        .unwrap_or_else(|e| panic!("ExecSync: {e}"));
    assert_eq!(out.exit_code, 0, "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Waits for the static pod `name` (short name) to run; its UID and container id.
async fn running_pod(env: &Env, name: &str) -> (String, String) {
    let p = env
        .wait_pod(name, "Running", START, |p| {
            phase(p) == "Running" && container_status(p, "main").is_some_and(|c| c.ready)
        })
        .await;
    let id = container_status(&p, "main")
        .and_then(|c| c.container_id.clone())
        .unwrap_or_default();
    let id = id.strip_prefix("containerd://").unwrap_or_default().to_string();
    (uid(&p), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_reads_and_writes_its_volumes_and_nothing_is_left_behind() {
    let Some(mut env) = Env::start("a_container_reads_and_writes_its_volumes", "vol").await else {
        return;
    };
    let root = root_of(&env);
    let host = root.parent().map(|p| p.join("host-data")).unwrap_or_default();
    env.write_manifest("vols.yaml", &manifest("vols", &host));
    let name = env.pod_name("vols");
    let (uid, id) = running_pod(&env, "vols").await;
    assert_eq!(exec(&env, &id, "cat /etc/podinfo/name").await, name);
    assert_eq!(exec(&env, &id, "cat /etc/podinfo/labels").await, "app=\"vols\"");
    assert_eq!(exec(&env, &id, "cat /cache/x").await, "hello");
    exec(&env, &id, "echo via-subpath > /logs/s; echo to-host > /hostdata/f").await;
    let cache = root
        .join("pods")
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/cache");
    assert_eq!(
        std::fs::read_to_string(cache.join("logs/s")).ok().as_deref(),
        Some("via-subpath\n")
    );
    assert_eq!(
        std::fs::read_to_string(host.join("f")).ok().as_deref(),
        Some("to-host\n")
    );
    let df = exec(&env, &id, "grep ' /mem ' /proc/mounts; df -k /mem | tail -1").await;
    assert!(df.contains("tmpfs /mem tmpfs"), "{df}");
    assert!(
        df.lines().last().unwrap_or_default().split_whitespace().nth(1) == Some("8192"),
        "{df}"
    );
    let denied = env
        .cri
        .exec_sync(v1::ExecSyncRequest {
            container_id: id.clone(),
            cmd: vec!["sh".into(), "-c".into(), "echo x > /etc/podinfo/new".into()],
            timeout: 10,
        })
        .await
        .unwrap_or_else(|e| panic!("ExecSync: {e}"));
    assert_ne!(denied.exit_code, 0, "downwardAPI volumes are read-only");

    // Removed while actlet runs: everything goes.
    env.remove_manifest("vols.yaml");
    let pod_dir = root.join("pods").join(&uid);
    env.wait_for("pod directory removed", START, async || {
        (!pod_dir.exists()).then_some(())
    })
    .await;
    assert!(mounts_under(&root).is_empty(), "{:?}", mounts_under(&root));
    assert!(host.join("f").exists(), "hostPath content stays");

    // Removed while actlet is dead (kill -9): cleaned after the restart.
    env.write_manifest("again.yaml", &manifest("again", &host));
    let (uid2, _) = running_pod(&env, "again").await;
    let pod_dir2 = root.join("pods").join(&uid2);
    assert_eq!(mounts_under(&root).len(), 1, "the memory emptyDir");
    env.kill_9();
    env.remove_manifest("again.yaml");
    env.restart().await;
    env.wait_for("orphaned pod directory removed", START, async || {
        (!pod_dir2.exists()).then_some(())
    })
    .await;
    assert!(mounts_under(&root).is_empty(), "{:?}", mounts_under(&root));
}
