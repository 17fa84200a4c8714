//! Container GC on a REAL containerd: the `actlet` binary, a static pod
//! whose manifest is deleted; its sandbox and container are then removed
//! from containerd by `container-gc` (every minute), with its log directory.
//!
//! Needs root and a running containerd (see `tests/system_containerd.rs`):
//! `ACTLET_CRI_ENDPOINT=$EP cargo test --test system_containerd_gc`. Without
//! `ACTLET_CRI_ENDPOINT` the test prints a loud SKIPPED line and passes,
//! unless `ACTLET_REQUIRE_CONTAINERD=1`, which makes it fail instead.

#[path = "support/daemon.rs"]
mod daemon;

use std::time::Duration;

use actlet::cri::Runtime;
use daemon::{Env, container_status, phase, uid};

const BUSYBOX: &str = "docker.io/library/busybox:1.36";

fn pod_yaml(name: &str, command: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: {BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: {command}
"#
    )
}

/// A deleted static pod's sandbox and container vanish from containerd
/// within two GC periods; a crash-looping pod beside it keeps at most its
/// newest dead container plus what died since the last round; the live
/// pod's sandbox stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pod_is_collected_from_containerd() {
    let Some(env) = Env::start("deleted_pod_is_collected_from_containerd", "gc").await else {
        return;
    };
    env.write_manifest("keep.yaml", &pod_yaml("keep", r#"["sleep", "3600"]"#));
    env.write_manifest("gone.yaml", &pod_yaml("gone", r#"["sleep", "3600"]"#));
    env.write_manifest("crash.yaml", &pod_yaml("crash", r#"["sh", "-c", "exit 3"]"#));
    let running = |p: &k8s_openapi::api::core::v1::Pod| {
        phase(p) == "Running"
            && container_status(p, "main").is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    };
    let keep = env.wait_pod("keep", "Running", Duration::from_secs(30), running).await;
    let gone = env.wait_pod("gone", "Running", Duration::from_secs(30), running).await;
    let crash = env
        .wait_pod("crash", "restarted twice", Duration::from_secs(60), |p| {
            container_status(p, "main").is_some_and(|c| c.restart_count >= 2)
        })
        .await;
    let (keep_uid, gone_uid, crash_uid) = (uid(&keep), uid(&gone), uid(&crash));
    let log_dir_of = |u: &str| {
        std::fs::read_dir("/var/log/pods")
            .ok()
            .and_then(|rd| {
                rd.filter_map(|e| e.ok())
                    .find(|e| e.file_name().to_string_lossy().ends_with(u))
            })
            .map(|e| e.path())
    };
    assert!(log_dir_of(&gone_uid).is_some(), "gone has a log directory");
    // its pod cgroup under every hierarchy (runc creates it, never removes it)
    let pod_cgroups = |u: &str| -> Vec<std::path::PathBuf> {
        let mut out = vec![];
        for base in std::fs::read_dir("/sys/fs/cgroup")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
        {
            for qos in ["", "burstable", "besteffort"] {
                let p = base.path().join("kubepods").join(qos).join(format!("pod{u}"));
                if p.is_dir() {
                    out.push(p);
                }
            }
        }
        out
    };
    assert!(!pod_cgroups(&gone_uid).is_empty(), "gone has its pod cgroups");

    env.remove_manifest("gone.yaml");
    let started = std::time::Instant::now();
    env.wait_for(
        "gone: sandbox and container removed by GC",
        Duration::from_secs(150),
        async || {
            let v = env.cri_view().await;
            (v.sandboxes_of(&gone_uid).is_empty() && v.containers_of(&gone_uid).is_empty()).then_some(())
        },
    )
    .await;
    env.note(format!(
        "deleted pod collected {:.1?} after its manifest went",
        started.elapsed()
    ));
    assert!(log_dir_of(&gone_uid).is_none(), "its log directory is removed too");
    assert!(!pod_cgroups(&keep_uid).is_empty(), "the live pod has its pod cgroup");
    env.wait_for("gone: pod cgroups removed", Duration::from_secs(70), async || {
        pod_cgroups(&gone_uid).is_empty().then_some(())
    })
    .await;

    // Image GC's protection of the sandbox image: containerd names it.
    let runtime: actlet::cri::SharedRuntime = std::sync::Arc::new(env.cri.clone());
    let pause = actlet::gc::image_actor::sandbox_image_id(&runtime).await;
    let pause_status = env
        .cri
        .image_status(actlet::cri::v1::ImageStatusRequest {
            image: Some(actlet::cri::v1::ImageSpec {
                image: "registry.k8s.io/pause:3.9".into(),
                ..Default::default()
            }),
            verbose: false,
        })
        .await
        .ok()
        .and_then(|r| r.image)
        .map(|i| i.id);
    assert!(
        pause.is_some() && pause == pause_status,
        "sandbox image {pause:?} vs pause {pause_status:?}"
    );
    // Image GC's disk usage: the image filesystem containerd names, measured by statvfs.
    use actlet::gc::ImageFsStats;
    let usage = actlet::gc::CriStatfs
        .usage(&env.cri)
        .await
        .unwrap_or_else(|e| panic!("image filesystem usage: {e}"));
    assert!(usage.capacity > 0 && usage.available <= usage.capacity, "{usage:?}");
    env.note(format!("image filesystem: {usage:?}"));

    let v = env.cri_view().await;
    assert_eq!(v.sandboxes_of(&keep_uid).len(), 1, "{}", v.summary());
    assert_eq!(v.running_containers_of(&keep_uid).len(), 1, "{}", v.summary());
    let crash_now = env.pod("crash").await.expect("crash in /pods");
    let restarts = container_status(&crash_now, "main").map_or(0, |c| c.restart_count);
    let held = v.containers_of(&crash_uid).len();
    if restarts >= 3 {
        assert!(
            held <= 3 && held <= restarts as usize,
            "crash: {held} containers held after {restarts} restarts\n{}",
            v.summary()
        );
    }
}
