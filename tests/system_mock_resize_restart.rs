//! A pending in-place resize across a restart of actlet (mock CRI, paused
//! time, the same root directory): the pod whose resize the node could not
//! allocate is admitted again with what it was allocated (from
//! `<root>/allocated_pods_state`), not with the spec that does not fit, so
//! the running pod is neither rejected nor restarted, and its status still
//! says `PodResizePending`.

#[path = "support/system.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::kubelet::{Kubelet, KubeletConfig, WallClock};
use actlet::kuberuntime::convert::timestamp_from_system_time;
use actlet::messages::PodUid;
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
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

fn app(cpu: &str) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: app, namespace: default, uid: u-app, generation: 1}}
spec:
  containers:
  - {{name: c, image: "busybox:1.36", command: [sleep, "3600"],
      resources: {{requests: {{cpu: "{cpu}", memory: 32Mi}}, limits: {{cpu: "{cpu}", memory: 32Mi}}}}}}
"#
    ))
}

fn status(k: &Kubelet) -> Option<PodStatus> {
    k.statuses.get(&PodUid::new("u-app")).map(|v| (*v.status).clone())
}

fn pending_reason(k: &Kubelet) -> Option<String> {
    status(k)?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodResizePending")
        .and_then(|c| c.reason)
}

async fn until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_pending_resize_is_not_admitted_as_asked_after_a_restart() {
    run_paused(|| async {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
        let first = start(tmp.path(), &mock);
        set_pods(&first, &[&app("500m")]);
        until("app running", Duration::from_secs(60), || {
            status(&first).and_then(|s| s.phase).as_deref() == Some("Running")
        })
        .await;
        // 1000 cores: more than any node has.
        let resized = {
            let mut p = app("1000");
            p.metadata.generation = Some(2);
            p
        };
        set_pods(&first, &[&resized]);
        until("the resize pending", Duration::from_secs(30), || {
            pending_reason(&first).as_deref() == Some("Infeasible")
        })
        .await;
        let checkpoint = tmp.path().join("root/allocated_pods_state");
        until("the checkpoint written", Duration::from_secs(10), || {
            std::fs::read_to_string(&checkpoint).is_ok_and(|s| s.contains("u-app"))
        })
        .await;
        first
            .shutdown(Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("shutdown: {e:?}"));
        let created = mock.calls_to("CreateContainer").len();

        let second = start(tmp.path(), &mock);
        set_pods(&second, &[&resized]);
        until("pending again after the restart", Duration::from_secs(60), || {
            pending_reason(&second).as_deref() == Some("Infeasible")
        })
        .await;
        sleep(Duration::from_secs(30)).await;
        let st = status(&second).unwrap_or_default();
        assert_eq!(st.phase.as_deref(), Some("Running"), "not rejected: {st:?}");
        assert_eq!(mock.calls_to("CreateContainer").len(), created, "not restarted");
        let quota = mock
            .find_container("app", "c")
            .and_then(|c| c.status.resources?.linux)
            .map(|l| l.cpu_quota);
        assert_eq!(quota, Some(50_000), "still 500m");

        // A feasible resize after the restart is allocated and applied.
        let feasible = {
            let mut p = app("700m");
            p.metadata.generation = Some(3);
            p
        };
        set_pods(&second, &[&feasible]);
        until("resized", Duration::from_secs(60), || {
            pending_reason(&second).is_none()
                && mock
                    .find_container("app", "c")
                    .and_then(|c| c.status.resources?.linux)
                    .map(|l| l.cpu_quota)
                    == Some(70_000)
        })
        .await;
        until("the checkpoint emptied", Duration::from_secs(10), || {
            std::fs::read_to_string(&checkpoint).is_ok_and(|s| !s.contains("u-app"))
        })
        .await;
        second
            .shutdown(Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("shutdown: {e:?}"));
    });
}
