//! Volumes across a restart of actlet (mock CRI, paused time, the same
//! root directory): the volumes of a pod still running are found again on
//! disk and not set up again (a memory-backed emptyDir keeps its content:
//! no second tmpfs over it), the volumes of a pod nobody wants any more are
//! torn down once its containers are stopped, and removing the last pod
//! leaves nothing under `<root>/pods` and no mount.

#[path = "support/system.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::kubelet::{Kubelet, KubeletConfig, WallClock};
use actlet::kuberuntime::convert::timestamp_from_system_time;
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use k8s_openapi::api::core::v1::Pod;
use support::{pod, run_paused};
use tokio::time::{Instant, sleep};

fn start(dir: &Path, mock: &MockRuntime) -> Kubelet {
    let mut cfg = KubeletConfig::new("node-a");
    cfg.root_dir = dir.join("root");
    cfg.pod_logs_dir = dir.join("logs");
    cfg.container_logs_dir = None;
    cfg.node_ip = Some("10.0.0.1".into());
    cfg.custom_sources = vec![support::SOURCE.into()];
    let clock = mock.clock().clone();
    cfg.wall_clock = WallClock(Arc::new(move || timestamp_from_system_time(clock.now())));
    actlet::kubelet::start(cfg, Arc::new(mock.clone())).unwrap_or_else(|e| panic!("start: {e}"))
}

fn set_pods(k: &Kubelet, pods: &[&Pod]) {
    let snapshot = SourceSnapshot {
        source: PodSource::Custom(support::SOURCE.into()),
        pods: pods.iter().map(|p| Arc::new((*p).clone())).collect(),
        errors: vec![],
    };
    k.pod_config
        .do_send(snapshot)
        .unwrap_or_else(|e| panic!("pod-config: {e}"));
}

fn with_memory_volume(name: &str) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: {name}, namespace: default, uid: u-{name}}}
spec:
  containers:
  - {{name: app, image: "busybox:1.36", command: [sleep, "3600"], volumeMounts: [{{name: data, mountPath: /data}}]}}
  volumes:
  - {{name: data, emptyDir: {{medium: Memory, sizeLimit: 4Mi}}}}
"#
    ))
}

fn running(mock: &MockRuntime, pod_name: &str) -> usize {
    mock.snapshot()
        .containers
        .iter()
        .filter(|c| c.pod_name == pod_name && c.status.state == 1)
        .count()
}

async fn until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(100)).await;
    }
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

#[test]
fn volumes_are_found_again_after_a_restart_and_orphans_are_cleaned() {
    run_paused(|| async {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mock = MockRuntime::new();
        let (keep, gone) = (with_memory_volume("keep"), with_memory_volume("gone"));
        let first = start(tmp.path(), &mock);
        set_pods(&first, &[&keep, &gone]);
        until("both pods running", Duration::from_secs(30), || {
            running(&mock, "keep") == 1 && running(&mock, "gone") == 1
        })
        .await;
        let pods = tmp.path().join("root/pods");
        let data = |uid: &str| pods.join(uid).join("volumes/kubernetes.io~empty-dir/data");
        std::fs::write(data("u-keep").join("marker"), "before restart").unwrap_or_else(|e| panic!("{e}"));
        let tmpfs = mounts_under(tmp.path());
        if nix::unistd::geteuid().is_root() {
            assert_eq!(tmpfs.len(), 2, "one tmpfs per memory emptyDir: {tmpfs:?}");
        }
        first
            .shutdown(Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("shutdown: {e:?}"));
        let created = mock.calls_to("CreateContainer").len();

        // The new actlet only wants `keep`: `gone` is killed and cleaned up.
        let second = start(tmp.path(), &mock);
        set_pods(&second, &[&keep]);
        until("gone's directory removed", Duration::from_secs(60), || {
            !pods.join("u-gone").exists()
        })
        .await;
        assert_eq!(running(&mock, "gone"), 0);
        assert_eq!(running(&mock, "keep"), 1);
        assert_eq!(mock.calls_to("CreateContainer").len(), created, "nothing restarted");
        assert_eq!(
            std::fs::read_to_string(data("u-keep").join("marker")).ok().as_deref(),
            Some("before restart"),
            "keep's volume found again, not set up again"
        );
        if nix::unistd::geteuid().is_root() {
            assert_eq!(
                mounts_under(tmp.path()),
                vec![data("u-keep").to_string_lossy().into_owned()]
            );
        }

        // The last pod goes: nothing is left behind.
        set_pods(&second, &[]);
        until("keep's directory removed", Duration::from_secs(60), || {
            !pods.join("u-keep").exists()
        })
        .await;
        assert!(mounts_under(tmp.path()).is_empty(), "{:?}", mounts_under(tmp.path()));
        assert_eq!(std::fs::read_dir(&pods).map(|d| d.count()).unwrap_or(0), 0);
    });
}
