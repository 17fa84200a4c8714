//! In-place pod resize (KEP-1287, GA 1.35) on the whole kubelet (mock CRI,
//! paused time): a resize of a running pod's container resources is applied
//! with `UpdateContainerResources` without a restart, or with a restart when
//! the container's `resizePolicy` says `RestartContainer` for a changed
//! resource (whatever the pod's restartPolicy); the status reports the
//! resources and `PodResizeInProgress` while the runtime refuses.

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::{ContainerResizePolicy, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use tonic::Code;

const MI: i64 = 1 << 20;

fn resources(cpu: (&str, &str), memory: (&str, &str)) -> ResourceRequirements {
    let q = |v: &str| Quantity(v.to_string());
    ResourceRequirements {
        requests: Some([("cpu".to_string(), q(cpu.0)), ("memory".to_string(), q(memory.0))].into()),
        limits: Some([("cpu".to_string(), q(cpu.1)), ("memory".to_string(), q(memory.1))].into()),
        claims: None,
    }
}

/// Containers `c` (in place) and `r` (memory restarts), `restartPolicy: Never`.
fn pod(generation: i64, cpu: (&str, &str), memory: (&str, &str)) -> Pod {
    PodBuilder::new("web")
        .uid("u-web")
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .container("r", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| {
            p.metadata.generation = Some(generation);
            let spec = p.spec.as_mut().unwrap();
            spec.restart_policy = Some("Never".into());
            for c in &mut spec.containers {
                c.resources = Some(resources(cpu, memory));
            }
            spec.containers[1].resize_policy = Some(vec![ContainerResizePolicy {
                resource_name: "memory".into(),
                restart_policy: "RestartContainer".into(),
            }]);
        })
        .build()
}

fn memory_limit(mock: &MockRuntime, name: &str) -> Option<i64> {
    let c = mock.find_container("web", name)?;
    Some(c.status.resources?.linux?.memory_limit_in_bytes)
}

fn status_memory_limit(node: &TestNode, name: &str) -> Option<String> {
    let s = node.status("default", "web")?.container_statuses?;
    let c = s.into_iter().find(|c| c.name == name)?;
    Some(c.resources?.limits?.get("memory")?.0.clone())
}

fn resize_in_progress(node: &TestNode) -> bool {
    node.status("default", "web")
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "PodResizeInProgress" && c.status == "True")
}

#[test]
fn a_resize_is_applied_in_place_or_by_the_restart_its_policy_asks() {
    run_paused(async {
        let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
        let node = TestNode::builder().mock(mock.clone()).start();
        node.set_pods(vec![pod(1, ("20m", "30m"), ("35Mi", "45Mi"))]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(memory_limit(&mock, "c"), Some(45 * MI));
        let r_before = mock.find_container("web", "r").map(|c| c.status.id);

        // The runtime refuses the first updates: the resize is in progress.
        mock.fail_next("UpdateContainerResources", 1, Code::Internal, "cgroup busy");
        node.set_pods(vec![pod(2, ("25m", "35m"), ("40Mi", "50Mi"))]);
        wait_until(|| resize_in_progress(&node), Duration::from_secs(30))
            .await
            .unwrap_or_else(|_| panic!("no PodResizeInProgress: {}", node.describe("default", "web")));
        assert_eq!(
            status_memory_limit(&node, "c").as_deref(),
            Some("45Mi"),
            "old values while resizing"
        );

        wait_until(
            || memory_limit(&mock, "c") == Some(50 * MI) && !resize_in_progress(&node),
            Duration::from_secs(120),
        )
        .await
        .unwrap_or_else(|_| panic!("not resized: {}", node.describe("default", "web")));
        wait_until(
            || status_memory_limit(&node, "c").as_deref() == Some("50Mi"),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|_| panic!("status not updated: {}", node.describe("default", "web")));

        let created = |name: &str| {
            mock.calls_to("CreateContainer")
                .iter()
                .filter(|c| c.target.ends_with(&format!("/{name}")))
                .count()
        };
        assert_eq!(created("c"), 1, "resized in place, not restarted");
        assert_eq!(
            created("r"),
            2,
            "memory resize policy RestartContainer: restarted despite restartPolicy Never"
        );
        assert_ne!(mock.find_container("web", "r").map(|c| c.status.id), r_before);
        assert_eq!(memory_limit(&mock, "r"), Some(50 * MI));
        let statuses = node.status("default", "web").unwrap().container_statuses.unwrap();
        let restarts = |name: &str| statuses.iter().find(|c| c.name == name).map(|c| c.restart_count);
        assert_eq!((restarts("c"), restarts("r")), (Some(0), Some(1)));
        let cpu_quota = mock
            .find_container("web", "c")
            .and_then(|c| c.status.resources?.linux)
            .map(|l| l.cpu_quota);
        assert_eq!(cpu_quota, Some(3_500), "35m of a 100 ms period");

        // Settled: later syncs change nothing.
        let updates = mock.calls_to("UpdateContainerResources").len();
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert_eq!(mock.calls_to("UpdateContainerResources").len(), updates);
        assert!(!resize_in_progress(&node));
    });
}

/// Recorded events: (reason, message).
type Events = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// A node on a mock whose containers run until stopped, recording its events.
fn node_recording_events() -> (TestNode, MockRuntime, Events) {
    let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
    let events: Events = Events::default();
    let log = events.clone();
    let node = TestNode::builder()
        .mock(mock.clone())
        .customize(move |b| b.on_event(move |e| log.lock().unwrap().push((e.reason, e.message))))
        .start();
    (node, mock, events)
}

fn resize_condition(node: &TestNode) -> Option<(Option<String>, Option<String>)> {
    let conds = node.status("default", "web")?.conditions?;
    let c = conds.into_iter().find(|c| c.type_ == "PodResizeInProgress")?;
    Some((c.reason, c.message))
}

/// Upstream's "decrease memory limit below usage" (test/e2e/common/node
/// pod_resize.go): a limit under what the container uses is refused, the
/// container keeps its limit and is not restarted, `PodResizeInProgress`
/// says `Error` with upstream's message (never `PodResizePending`), one
/// `ResizeError` event; a limit above the usage is applied afterwards.
#[test]
fn a_memory_limit_is_never_lowered_below_what_the_container_uses() {
    run_paused(async {
        let (node, mock, events) = node_recording_events();
        node.set_pods(vec![pod(1, ("20m", "30m"), ("35Mi", "45Mi"))]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let id = mock.find_container("web", "c").unwrap().status.id;
        let usage = actlet::cri::mock::MockUsage {
            usage_bytes: 40 << 20,
            working_set_bytes: 38 << 20,
            ..Default::default()
        };
        assert!(mock.set_usage(&id, usage));
        let creates = mock.calls_to("CreateContainer").len();

        node.set_pods(vec![pod(2, ("20m", "30m"), ("30Mi", "30Mi"))]);
        wait_until(
            || resize_condition(&node).is_some_and(|(r, _)| r.as_deref() == Some("Error")),
            // r is restarted first (its policy), within its grace period
            Duration::from_secs(120),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no resize error: {} {:?} {:?}",
                node.describe("default", "web"),
                node.status("default", "web").map(|s| s.conditions),
                memory_limit(&mock, "c")
            )
        });
        let (_, message) = resize_condition(&node).unwrap();
        assert_eq!(
            message.as_deref(),
            Some(
                "cannot decrease memory limits: attempting to set container \"c\" memory limit (31457280) below current usage (41943040)"
            ),
            "container r restarts to resize (its policy) and is not checked"
        );
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(memory_limit(&mock, "c"), Some(45 * MI), "the limit stays");
        assert_eq!(status_memory_limit(&node, "c").as_deref(), Some("45Mi"));
        let conds = node.status("default", "web").unwrap().conditions.unwrap_or_default();
        assert!(!conds.iter().any(|c| c.type_ == "PodResizePending"), "{conds:?}");
        let resize_errors: Vec<_> = events
            .lock()
            .unwrap()
            .iter()
            .filter(|(r, _)| r == "ResizeError")
            .cloned()
            .collect();
        assert_eq!(
            resize_errors.len(),
            1,
            "one event, not one per retry: {resize_errors:?}"
        );
        assert!(
            resize_errors[0].1.starts_with("Pod resize error: {"),
            "{resize_errors:?}"
        );
        assert!(resize_errors[0].1.contains("below current usage"), "{resize_errors:?}");
        let c_restarts = mock
            .calls_to("CreateContainer")
            .iter()
            .skip(creates)
            .filter(|c| c.target.ends_with("/c"))
            .count();
        assert_eq!(c_restarts, 0, "c is neither resized nor restarted");

        // A limit above the usage goes through; the error clears.
        node.set_pods(vec![pod(3, ("20m", "30m"), ("42Mi", "42Mi"))]);
        wait_until(
            || memory_limit(&mock, "c") == Some(42 * MI) && resize_condition(&node).is_none(),
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|_| panic!("not resized: {}", node.describe("default", "web")));
    });
}

fn cpu_pod(name: &str, generation: i64, cpu: &str) -> Pod {
    PodBuilder::new(name)
        .uid(format!("u-{name}"))
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| {
            p.metadata.generation = Some(generation);
            let r = resources((cpu, cpu), ("32Mi", "32Mi"));
            p.spec.as_mut().unwrap().containers[0].resources = Some(r);
        })
        .build()
}

fn pending(node: &TestNode, name: &str) -> Option<(String, String)> {
    let conds = node.status("default", name)?.conditions?;
    let c = conds.into_iter().find(|c| c.type_ == "PodResizePending")?;
    Some((c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
}

fn cpu_quota(mock: &MockRuntime, name: &str) -> Option<i64> {
    let c = mock.find_container(name, "c")?;
    Some(c.status.resources?.linux?.cpu_quota)
}

/// Upstream's allocation check (`handlePodResourcesResize`): more than the
/// node has is `Infeasible`, more than is free now `Deferred`; the pod
/// keeps its allocated resources (runtime and `allocatedResources`), says
/// `PodResizePending` with upstream's message and a Warning event, and a
/// deferred resize is allocated and applied once the other pod is gone.
#[test]
fn resizes_the_node_cannot_allocate_are_infeasible_or_deferred_until_room_is_made() {
    run_paused(async {
        let (node, mock, events) = node_recording_events();
        let cpus = actlet::kubelet::NodeFacts::detect().cpus;
        let big = format!("{}m", cpus * 1000 - 600);
        node.set_pods(vec![cpu_pod("a", 1, "500m"), cpu_pod("b", 1, &big)]);
        for name in ["a", "b"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(60))
                .await
                .unwrap();
        }
        assert_eq!(cpu_quota(&mock, "a"), Some(50_000));

        // More CPU than the node has.
        node.set_pods(vec![cpu_pod("a", 2, "1000"), cpu_pod("b", 1, &big)]);
        wait_until(|| pending(&node, "a").is_some(), Duration::from_secs(30))
            .await
            .unwrap_or_else(|_| panic!("not pending: {}", node.describe("default", "a")));
        assert_eq!(
            pending(&node, "a"),
            Some((
                "Infeasible".to_string(),
                format!(
                    "Node didn't have enough capacity: cpu, requested: 1000000, capacity: {}",
                    cpus * 1000
                )
            ))
        );
        let allocated = |node: &TestNode| {
            let s = node.status("default", "a")?.container_statuses?;
            Some(s[0].allocated_resources.as_ref()?.get("cpu")?.0.clone())
        };
        assert_eq!(
            allocated(&node).as_deref(),
            Some("500m"),
            "allocatedResources as allocated"
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(cpu_quota(&mock, "a"), Some(50_000), "not applied");
        assert!(
            !node
                .status("default", "a")
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "PodResizeInProgress"),
            "nothing in progress while pending"
        );

        // Fits the node, not beside b.
        node.set_pods(vec![cpu_pod("a", 3, "700m"), cpu_pod("b", 1, &big)]);
        wait_until(
            || pending(&node, "a").is_some_and(|(r, _)| r == "Deferred"),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|_| panic!("not deferred: {:?}", pending(&node, "a")));
        let (_, message) = pending(&node, "a").unwrap();
        assert_eq!(
            message,
            format!(
                "Node didn't have enough resource: cpu, requested: 700, used: {}, capacity: {}",
                cpus * 1000 - 600,
                cpus * 1000
            )
        );
        let reasons: Vec<String> = events.lock().unwrap().iter().map(|(r, _)| r.clone()).collect();
        assert!(reasons.iter().any(|r| r == "ResizeInfeasible"), "{reasons:?}");
        assert!(reasons.iter().any(|r| r == "ResizeDeferred"), "{reasons:?}");

        // b goes: the deferred resize is allocated and applied.
        node.set_pods(vec![cpu_pod("a", 3, "700m")]);
        wait_until(
            || cpu_quota(&mock, "a") == Some(70_000) && pending(&node, "a").is_none(),
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|_| panic!("not resized: {:?} {:?}", pending(&node, "a"), cpu_quota(&mock, "a")));
        wait_until(|| allocated(&node).as_deref() == Some("700m"), Duration::from_secs(30))
            .await
            .unwrap();
        assert!(
            events
                .lock()
                .unwrap()
                .iter()
                .any(|(r, m)| r == "ResizeStarted" && m.starts_with("Pod resize started: {"))
        );
        let creates = mock
            .calls_to("CreateContainer")
            .iter()
            .filter(|c| c.target.contains("/c"))
            .count();
        assert_eq!(creates, 2, "a and b created once each; a resized in place");
    });
}
