//! Per-pod local storage limits (upstream `localStorageEviction`) through the
//! real stats pipeline: the node summary comes from the kubelet's own stats
//! provider (`du` of the pod volumes and container log directories), the
//! eviction manager runs at upstream's 10 s monitoring interval on real time,
//! with no eviction threshold at all (`localStorageCapacityIsolation` alone
//! starts it, as upstream). The pods run on the mock CRI; the test writes
//! into the emptyDir and the log directory on the host, as the containers
//! would.
//!
//! - an emptyDir past its `sizeLimit` evicts its pod (Failed/Evicted,
//!   upstream's message, no DisruptionTarget condition, a Warning `Evicted`
//!   event);
//! - a container whose logs pass its `ephemeral-storage` limit evicts its
//!   pod, named in the message, while the pod's total is under the sum;
//! - a pod under its limits, and a critical pod over them, keep running.
//!
//! Prints the reaction time (limit passed → pod Failed).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actlet::testing::{PodBuilder, TestNode, TestSystem};
use k8s_openapi::api::core::v1::Pod;

fn with_empty_dir(b: PodBuilder, size_limit: &str) -> PodBuilder {
    let size_limit = size_limit.to_string();
    b.modify(move |p| {
        let spec = p.spec.as_mut().unwrap();
        spec.volumes = Some(vec![
            serde_json::from_value(serde_json::json!({"name": "cache", "emptyDir": {"sizeLimit": size_limit}}))
                .unwrap(),
        ]);
        spec.containers[0].volume_mounts = Some(vec![
            serde_json::from_value(serde_json::json!({"name": "cache", "mountPath": "/cache"})).unwrap(),
        ]);
    })
}

fn base(name: &str) -> PodBuilder {
    PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .container("a", "busybox:1.36", ["sleep", "3600"])
}

fn write_kib(dir: &Path, file: &str, kib: usize) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), vec![7u8; kib << 10]).unwrap();
}

fn phase(node: &TestNode, name: &str) -> Option<String> {
    node.status("default", name).and_then(|s| s.phase)
}

#[test]
fn pods_over_their_local_storage_limits_are_evicted_and_the_others_keep_running() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, logs) = (tmp.path().join("root"), tmp.path().join("logs"));
    TestSystem::real_time().block_on(async {
        let events: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let log = events.clone();
        let (r, l) = (root.clone(), logs.clone());
        let node = TestNode::builder()
            .customize(move |b| {
                b.configure(move |c| {
                    c.root_dir = r;
                    c.pod_logs_dir = l;
                    c.eviction.thresholds.clear();
                    assert!(c.eviction.local_storage_capacity_isolation, "on by default");
                })
                .on_event(move |e| {
                    if e.reason == "Evicted" {
                        log.lock().unwrap().push((e.involved.name.clone().unwrap_or_default(), e.message));
                    }
                })
            })
            .start();
        let scratch = with_empty_dir(base("scratch"), "1Mi").build();
        let idle = with_empty_dir(base("idle"), "1Mi")
            .limits("a", &[("ephemeral-storage", "4Mi")])
            .build();
        let chatty = base("chatty")
            .container("b", "busybox:1.36", ["sleep", "3600"])
            .limits("a", &[("ephemeral-storage", "1Mi")])
            .limits("b", &[("ephemeral-storage", "20Mi")])
            .build();
        let critical: Pod = with_empty_dir(base("critical"), "1Mi")
            .modify(|p| p.spec.as_mut().unwrap().priority = Some(2_000_000_000))
            .build();
        node.set_pods(vec![scratch, idle, chatty, critical]);
        for name in ["scratch", "idle", "chatty", "critical"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(30))
                .await
                .unwrap();
        }
        let empty_dir = |uid: &str| root.join(format!("pods/{uid}/volumes/kubernetes.io~empty-dir/cache"));
        for uid in ["uid-scratch", "uid-idle", "uid-critical"] {
            assert!(empty_dir(uid).is_dir(), "{uid}'s emptyDir is set up");
        }
        // du counts the directory's own blocks too: half the limit is under it
        write_kib(&empty_dir("uid-idle"), "small", 512);
        write_kib(&empty_dir("uid-critical"), "big", 3 << 10);
        write_kib(&logs.join("default_chatty_uid-chatty/a"), "0.log", 3 << 10);
        write_kib(&empty_dir("uid-scratch"), "big", 2 << 10);
        let passed = Instant::now();
        for name in ["scratch", "chatty"] {
            node.wait_for_phase("default", name, "Failed", Duration::from_secs(60))
                .await
                .unwrap();
        }
        println!(
            "local storage eviction reaction time (limit passed -> both pods Failed, monitoring interval 10 s): {:.1} s",
            passed.elapsed().as_secs_f64()
        );
        let st = node.status("default", "scratch").unwrap();
        assert_eq!(st.reason.as_deref(), Some("Evicted"));
        assert_eq!(
            st.message.as_deref(),
            Some("Usage of EmptyDir volume \"cache\" exceeds the limit \"1Mi\". ")
        );
        assert!(
            !st.conditions.iter().flatten().any(|c| c.type_ == "DisruptionTarget"),
            "local storage evictions carry no DisruptionTarget condition (upstream): {:?}",
            st.conditions
        );
        let st = node.status("default", "chatty").unwrap();
        assert_eq!(st.reason.as_deref(), Some("Evicted"));
        assert_eq!(
            st.message.as_deref(),
            Some("Container a exceeded its local ephemeral storage limit \"1Mi\". ")
        );
        let evicted = events.lock().unwrap().clone();
        assert!(
            evicted.iter().any(|(n, m)| n == "scratch" && m.starts_with("Usage of EmptyDir volume")),
            "{evicted:?}"
        );
        assert!(evicted.iter().any(|(n, _)| n == "chatty"), "{evicted:?}");
        // Another round passes: the others are still running.
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(phase(&node, "idle").as_deref(), Some("Running"));
        assert_eq!(phase(&node, "critical").as_deref(), Some("Running"), "critical pods are never evicted");
        assert_eq!(events.lock().unwrap().len(), 2, "{:?}", events.lock().unwrap());
        drop(node);
    });
}
