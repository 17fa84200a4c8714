//! Node-pressure eviction (upstream `pkg/kubelet/eviction`) on the assembled
//! kubelet with the mock CRI and a node summary the test controls: memory
//! below `memory.available<100Mi` turns MemoryPressure True, evicts the
//! BestEffort pod first (Failed/Evicted, upstream's message, DisruptionTarget,
//! a Warning `Evicted` event, `kubelet_evictions`), never the critical pod,
//! refuses new BestEffort pods while the condition is held for the transition
//! period. The manager is killed while it holds the condition: the rebuilt
//! one keeps it for the rest of the period, then evicts on new pressure.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::KillChild;
use actlet::eviction::{NodeSummary, Pressure, SummarySource, ThresholdSettings, parse_thresholds};
use actlet::stats::types::Summary;
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::Pod;

const MI: u64 = 1 << 20;

/// An Event's annotations.
type Annotations = BTreeMap<String, String>;

/// A pod's uid, name and working set.
type PodUsage = (String, String, u64);

/// A summary the test sets: node memory available, and each pod's working set.
#[derive(Clone, Default)]
struct FakeSummary(Arc<Mutex<(u64, Vec<PodUsage>)>>);

impl FakeSummary {
    fn set(&self, available: u64, pods: &[(&Pod, u64)]) {
        let pods = pods
            .iter()
            .map(|(p, ws)| {
                (
                    p.metadata.uid.clone().unwrap_or_default(),
                    p.metadata.name.clone().unwrap_or_default(),
                    *ws,
                )
            })
            .collect();
        *self.0.lock().unwrap() = (available, pods);
    }
}

#[async_trait::async_trait]
impl NodeSummary for FakeSummary {
    async fn summary(&self) -> Result<Summary, String> {
        let (available, pods) = self.0.lock().unwrap().clone();
        let t = "2026-01-01T00:00:00Z";
        let pods: Vec<_> = pods
            .iter()
            .map(|(uid, name, ws)| {
                serde_json::json!({
                    "podRef": {"name": name, "namespace": "default", "uid": uid},
                    "startTime": t,
                    "containers": [{"name": "c", "startTime": t, "memory": {"time": t, "workingSetBytes": ws}}]
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "node-a", "startTime": t,
                     "memory": {"time": t, "availableBytes": available, "workingSetBytes": 8192 * MI}},
            "pods": pods
        }))
        .map_err(|e| e.to_string())
    }
}

fn pod(name: &str, memory_request: Option<&str>) -> Pod {
    let b = PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .container("c", "busybox:1.36", ["sleep", "3600"]);
    match memory_request {
        Some(m) => b.requests("c", &[("memory", m)]).build(),
        None => b.build(),
    }
}

fn condition(node: &TestNode, type_: &str) -> Option<String> {
    node.kubelet()
        .node
        .view()
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status)
}

#[test]
fn memory_pressure_evicts_besteffort_first_and_refuses_new_ones() {
    run_paused(async {
        let summary = FakeSummary::default();
        let events: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
        let log = events.clone();
        let evicted_annotations: Arc<Mutex<Vec<(String, Annotations)>>> = Arc::default();
        let alog = evicted_annotations.clone();
        let source = SummarySource::new(summary.clone());
        let node = TestNode::builder()
            .customize(move |b| {
                b.configure(move |c| {
                    let hard = [("memory.available".to_string(), "100Mi".to_string())].into();
                    c.eviction.thresholds = parse_thresholds(
                        &ThresholdSettings {
                            hard,
                            ..Default::default()
                        },
                        false,
                    )
                    .unwrap();
                    c.eviction.monitoring_interval = Duration::from_secs(1);
                    c.eviction.pressure_transition_period = Duration::from_secs(30);
                    c.eviction.summary = Some(source);
                    c.node_status_update_frequency = Duration::from_secs(1);
                })
                .on_event(move |e| {
                    let name = e.involved.name.clone().unwrap_or_default();
                    if e.reason == "Evicted" {
                        alog.lock().unwrap().push((name.clone(), e.annotations.clone()));
                    }
                    log.lock().unwrap().push((name, e.reason, e.message))
                })
            })
            .start();
        let (besteffort, burstable) = (pod("besteffort", None), pod("burstable", Some("200Mi")));
        let critical = PodBuilder::new("critical")
            .uid("uid-critical")
            .container("c", "busybox:1.36", ["sleep", "3600"])
            .modify(|p| p.spec.as_mut().unwrap().priority = Some(2_000_000_000))
            .build();
        summary.set(4096 * MI, &[]);
        node.set_pods(vec![besteffort.clone(), burstable.clone(), critical.clone()]);
        for name in ["besteffort", "burstable", "critical"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(60))
                .await
                .unwrap();
        }
        wait_until(
            || condition(&node, "MemoryPressure").as_deref() == Some("False"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();

        // Memory drops below the threshold; the critical pod uses the most.
        summary.set(
            50 * MI,
            &[(&besteffort, 10 * MI), (&burstable, 100 * MI), (&critical, 900 * MI)],
        );
        node.wait_for_phase("default", "besteffort", "Failed", Duration::from_secs(30))
            .await
            .unwrap();
        let st = node.status("default", "besteffort").unwrap();
        assert_eq!(st.reason.as_deref(), Some("Evicted"));
        assert_eq!(
            st.message.as_deref(),
            Some(
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. \
                 Container c was using 10Mi, request is 0, has larger consumption of memory. "
            )
        );
        let dt = st
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "DisruptionTarget")
            .cloned();
        let dt = dt.expect("DisruptionTarget on the evicted pod");
        assert_eq!(
            (dt.status.as_str(), dt.reason.as_deref()),
            ("True", Some("TerminationByKubelet"))
        );
        assert!(
            events.lock().unwrap().iter().any(|(n, r, m)| n == "besteffort"
                && r == "Evicted"
                && m.starts_with("The node was low on resource: memory.")),
            "a Warning Evicted event: {:?}",
            events.lock().unwrap()
        );
        // upstream AnnotatedEventf: who used more than requested, and what was starved
        let annotations = evicted_annotations.lock().unwrap()[0].clone();
        assert_eq!(annotations.0, "besteffort");
        let want: BTreeMap<String, String> = [
            ("offending_containers", "c"),
            ("offending_containers_usage", "10Mi"),
            ("starved_resource", "memory"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(annotations.1, want);
        assert!(
            events.lock().unwrap().iter().any(|(n, r, m)| n == TestNode::NODE_NAME
                && r == "EvictionThresholdMet"
                && m == "Attempting to reclaim memory"),
            "a node event before the eviction: {:?}",
            events.lock().unwrap()
        );
        // Memory is back at once: nothing more is evicted, but the condition
        // is held for the transition period, and admission follows it.
        summary.set(4096 * MI, &[(&burstable, 100 * MI), (&critical, 900 * MI)]);
        assert!(node.kubelet().eviction.pressures().contains(&Pressure::Memory));
        wait_until(
            || condition(&node, "MemoryPressure").as_deref() == Some("True"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        let late_be = pod("late-besteffort", None);
        let late_b = pod("late-burstable", Some("10Mi"));
        let all = vec![
            besteffort.clone(),
            burstable.clone(),
            critical.clone(),
            late_be.clone(),
            late_b.clone(),
        ];
        node.set_pods(all);
        node.wait_for_phase("default", "late-besteffort", "Failed", Duration::from_secs(30))
            .await
            .unwrap();
        let st = node.status("default", "late-besteffort").unwrap();
        assert_eq!(st.reason.as_deref(), Some("Evicted"));
        assert_eq!(
            st.message.as_deref(),
            Some("Pod was rejected: The node had condition: [MemoryPressure]. ")
        );
        node.wait_for_phase("default", "late-burstable", "Running", Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(
            node.status("default", "burstable").and_then(|s| s.phase).as_deref(),
            Some("Running")
        );

        // Pressure again: the pod over its request goes next, never the critical one.
        summary.set(50 * MI, &[(&burstable, 300 * MI), (&critical, 900 * MI), (&late_b, MI)]);
        node.wait_for_phase("default", "burstable", "Failed", Duration::from_secs(30))
            .await
            .unwrap();
        summary.set(4096 * MI, &[(&critical, 900 * MI), (&late_b, MI)]);

        // The manager dies while the condition is held: its tracker is not
        // lost, so the rebuilt manager keeps MemoryPressure for the rest of
        // the transition period instead of clearing it on its first round.
        node.kubelet()
            .root
            .addr()
            .send(KillChild("eviction-manager".into()))
            .await
            .expect("root reachable")
            .expect("kill the eviction manager");
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            node.kubelet().eviction.pressures().contains(&Pressure::Memory),
            "held across the restart"
        );
        assert_eq!(condition(&node, "MemoryPressure").as_deref(), Some("True"));
        for name in ["critical", "late-burstable"] {
            assert_eq!(
                node.status("default", name).and_then(|s| s.phase).as_deref(),
                Some("Running"),
                "{name}"
            );
        }
        wait_until(
            || condition(&node, "MemoryPressure").as_deref() == Some("False"),
            Duration::from_secs(40),
        )
        .await
        .unwrap();
        assert!(node.kubelet().eviction.pressures().is_empty());

        // The rebuilt manager evicts on the next pressure.
        summary.set(50 * MI, &[(&critical, 900 * MI), (&late_b, 60 * MI)]);
        node.wait_for_phase("default", "late-burstable", "Failed", Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(
            node.status("default", "critical").and_then(|s| s.phase).as_deref(),
            Some("Running")
        );
        assert!(
            node.kubelet().eviction.pressures().contains(&Pressure::Memory),
            "pressure after the restart"
        );
    });
}

/// An image filesystem of `capacity` bytes holding the mock's images.
#[derive(Clone)]
struct ImageDisk {
    mock: actlet::cri::mock::MockRuntime,
    capacity: Arc<std::sync::atomic::AtomicU64>,
}

#[async_trait::async_trait]
impl NodeSummary for ImageDisk {
    async fn summary(&self) -> Result<Summary, String> {
        use actlet::cri::Runtime;
        let images = self
            .mock
            .list_images(Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let used: u64 = images.images.iter().map(|i| i.size).sum();
        let capacity = self.capacity.load(std::sync::atomic::Ordering::SeqCst);
        let t = "2026-01-01T00:00:00Z";
        serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "node-a", "startTime": t,
                     "runtime": {"imageFs": {"time": t, "availableBytes": capacity.saturating_sub(used), "capacityBytes": capacity}}},
            "pods": []
        }))
        .map_err(|e| e.to_string())
    }
}

/// Disk pressure is first met by node-level reclaim: the GC removes the
/// unused image and no pod is evicted. When nothing is left to reclaim, the
/// pod is evicted.
#[test]
fn disk_pressure_reclaims_unused_images_before_evicting() {
    use actlet::cri::mock::{MockImage, MockRuntime};
    use std::sync::atomic::{AtomicU64, Ordering};
    run_paused(async {
        let img = |n: &str, mib: u64| {
            MockImage::new(&format!("example.com/{n}:1"))
                .size(mib * MI)
                .busybox_like()
        };
        let mock = MockRuntime::builder()
            .without_default_images()
            .image(MockImage::pause())
            .image(img("app", 100))
            .image(img("big", 600))
            .build();
        let disk = ImageDisk {
            mock: mock.clone(),
            capacity: Arc::new(AtomicU64::new(10_000 * MI)),
        };
        let events: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let log = events.clone();
        let source = SummarySource::new(disk.clone());
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(move |b| {
                b.configure(move |c| {
                    let hard = [("imagefs.available".to_string(), "50%".to_string())].into();
                    c.eviction.thresholds = parse_thresholds(
                        &ThresholdSettings {
                            hard,
                            ..Default::default()
                        },
                        false,
                    )
                    .unwrap();
                    c.eviction.monitoring_interval = Duration::from_secs(1);
                    c.eviction.summary = Some(source);
                    c.image_minimum_gc_age = Duration::ZERO;
                })
                .on_event(move |e| log.lock().unwrap().push((e.reason, e.message)))
            })
            .start();
        let app = PodBuilder::new("app")
            .uid("uid-app")
            .container("c", "example.com/app:1", ["sleep", "3600"])
            .build();
        node.set_pods(vec![app.clone()]);
        node.wait_for_phase("default", "app", "Running", Duration::from_secs(30))
            .await
            .unwrap();
        // 1000 MiB with 700+ used: under 50% available; the unused image goes.
        disk.capacity.store(1000 * MI, Ordering::SeqCst);
        let big_gone = || async {
            use actlet::cri::Runtime;
            let images = mock.list_images(Default::default()).await.unwrap().images;
            !images.iter().any(|i| i.repo_tags.iter().any(|t| t.contains("big")))
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !big_gone().await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the unused image was not reclaimed"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(
            node.status("default", "app").and_then(|s| s.phase).as_deref(),
            Some("Running")
        );
        assert!(
            !events.lock().unwrap().iter().any(|(r, _)| r == "Evicted"),
            "{:?}",
            events.lock().unwrap()
        );

        // A smaller disk: nothing left to reclaim, so the pod goes.
        disk.capacity.store(150 * MI, Ordering::SeqCst);
        node.wait_for_phase("default", "app", "Failed", Duration::from_secs(30))
            .await
            .unwrap();
        let st = node.status("default", "app").unwrap();
        assert_eq!(st.reason.as_deref(), Some("Evicted"));
        assert!(
            st.message
                .as_deref()
                .unwrap_or("")
                .starts_with("The node was low on resource: ephemeral-storage. "),
            "{st:?}"
        );
    });
}
