//! The whole kubelet in cluster mode (every actor wired by `ActletBuilder`
//! with an API client) on the mock CRI: what issue #4's "done when" lists, end
//! to end through the real wiring.
//!
//! Each scenario runs twice (tests/support/backend.rs): against the test API
//! server, and as `*_on_envtest` against a real kube-apiserver v1.36 (TLS,
//! client certificates, Node authorizer, NodeRestriction), SKIPPED loudly
//! without `KUBEBUILDER_ASSETS`.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/backend.rs"]
mod backend;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime, OnTerm};
use backend::Backend;
use cluster::{NODE, bound_pod, eventually, run};
use k8s_openapi::api::core::v1::{Node, Pod};

const T: Duration = Duration::from_secs(30);

fn mock() -> MockRuntime {
    MockRuntime::builder().script("app", Behaviour::run_forever()).build()
}

fn fast(b: actlet::ActletBuilder) -> actlet::ActletBuilder {
    b.configure(|c| {
        c.node_status_update_frequency = Duration::from_millis(500);
        c.runtime_health_period = Duration::from_millis(500);
    })
}

fn node_condition(node: &Node, type_: &str) -> Option<(String, String, String)> {
    let c = cluster::node_condition(node, type_)?;
    Some((c.status, c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
}

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn node_ready_scenario(b: Backend) {
    let mock = mock();
    let node = b.start_node(mock.clone(), fast).await;
    let ready = backend::eventually("node Ready", T, || async {
        let n = b.node().await?;
        (node_condition(&n, "Ready")?.0 == "True").then_some(n)
    })
    .await;
    let labels = ready.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("kubernetes.io/hostname").map(String::as_str), Some(NODE));
    let status = ready.status.clone().unwrap_or_default();
    assert_eq!(
        status
            .capacity
            .as_ref()
            .and_then(|c| c.get("pods"))
            .map(|q| q.0.as_str()),
        Some("110")
    );
    assert!(
        status
            .node_info
            .as_ref()
            .is_some_and(|i| !i.container_runtime_version.is_empty()),
        "{status:?}"
    );
    for t in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        assert_eq!(node_condition(&ready, t).map(|c| c.0), Some("False".into()), "{t}");
    }

    mock.set_down(true);
    let (_, reason, message) = backend::eventually("node NotReady", T, || async {
        let c = node_condition(&b.node().await?, "Ready")?;
        (c.0 == "False").then_some(c)
    })
    .await;
    assert_eq!(reason, "KubeletNotReady");
    assert!(message.contains("container runtime"), "{message}");
    mock.set_down(false);
    backend::eventually("node Ready again", T, || async {
        (node_condition(&b.node().await?, "Ready")?.0 == "True").then_some(())
    })
    .await;
    let lease = backend::eventually("lease", T, || b.lease()).await;
    assert_eq!(lease.spec.and_then(|s| s.lease_duration_seconds), Some(40));
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn node_registers_reports_ready_and_not_ready_with_the_runtime_cause() {
    run(|| async { node_ready_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn node_registers_reports_ready_and_not_ready_with_the_runtime_cause_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            node_ready_scenario(b).await;
        }
    });
}

async fn bound_pod_scenario(b: Backend) {
    let node = b.start_node(mock(), fast).await;
    b.create_pod(&bound_pod("web", "sleep 3600")).await;
    let pod = backend::eventually("status Running+Ready in the API", T, || async {
        let p = b.pod("web").await?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running") && pod_ready(&p)).then_some(p)
    })
    .await;
    let st = pod.status.clone().unwrap_or_default();
    assert_eq!(st.host_ip.as_deref(), Some("10.0.0.1"));
    assert!(st.pod_ip.is_some(), "{st:?}");
    let cs = st.container_statuses.clone().unwrap_or_default();
    assert_eq!(cs.len(), 1);
    assert!(cs[0].ready && cs[0].container_id.is_some(), "{cs:?}");
    assert!(
        st.conditions.iter().flatten().any(|c| c.type_ == "PodScheduled"),
        "the scheduler's condition is kept"
    );
    let images = backend::eventually("the pod's image in the node status", T, || async {
        let images = b.node().await?.status?.images?;
        images
            .iter()
            .any(|i| i.names.iter().flatten().any(|n| n.contains("busybox:1.36")))
            .then_some(images)
    })
    .await;
    assert!(images.iter().all(|i| i.size_bytes.is_some()), "{images:?}");

    b.delete_pod("web", Some(1)).await;
    backend::eventually("the pod finalised (gone from the API)", T, || async {
        b.pod("web").await.is_none().then_some(())
    })
    .await;
    if let Some(server) = b.fake() {
        let delete = server
            .requests()
            .into_iter()
            .find(|r| {
                r.method == "DELETE"
                    && r.path == "/api/v1/namespaces/default/pods/web"
                    && r.user == format!("system:node:{NODE}")
            })
            .unwrap_or_else(|| panic!("no DELETE by the node"));
        let body = delete.body.clone().unwrap_or_default();
        assert_eq!(body["gracePeriodSeconds"], 0, "{body}");
        assert_eq!(
            body["preconditions"]["uid"],
            pod.metadata.uid.clone().unwrap_or_default().as_str()
        );
    }
    eventually("the pod gone locally", T, || {
        node.kubelet.phase_of_named("default", "web").is_none().then_some(())
    })
    .await;
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_bound_pod_runs_its_status_reaches_the_api_and_graceful_deletion_finalises_it() {
    run(|| async { bound_pod_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_bound_pod_runs_its_status_reaches_the_api_and_graceful_deletion_finalises_it_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            bound_pod_scenario(b).await;
        }
    });
}

/// The runtime restarts under a running pod: actlet makes a new sandbox (new IP) and the
/// API's podIP/podIPs name only the new IP (a real API server rejects two IPv4 podIPs).
async fn new_sandbox_scenario(b: Backend) {
    let node = b.start_node(mock(), fast).await;
    b.create_pod(&bound_pod("web", "sleep 3600")).await;
    let ip_of = |p: &Pod| {
        let st = p.status.clone().unwrap_or_default();
        let ips: Vec<String> = st.pod_ips.unwrap_or_default().into_iter().map(|i| i.ip).collect();
        (st.pod_ip, ips)
    };
    let first = backend::eventually("Running+Ready with a pod IP", T, || async {
        let p = b.pod("web").await?;
        (pod_ready(&p) && p.status.as_ref()?.pod_ip.is_some()).then_some(p)
    })
    .await;
    let (old_ip, old_ips) = ip_of(&first);
    assert_eq!(old_ips, old_ip.clone().into_iter().collect::<Vec<_>>());
    node.mock.simulate_restart();
    let (new_ip, new_ips) = backend::eventually("Ready again with a new pod IP", T, || async {
        let p = b.pod("web").await?;
        let (ip, ips) = ip_of(&p);
        (pod_ready(&p) && ip.is_some() && ip != old_ip).then_some((ip, ips))
    })
    .await;
    assert_eq!(node.mock.calls_to("RunPodSandbox").len(), 2);
    assert_eq!(
        new_ips,
        new_ip.into_iter().collect::<Vec<_>>(),
        "only the new sandbox's IP"
    );
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_new_sandbox_replaces_the_pod_ips_in_the_api() {
    run(|| async { new_sandbox_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_new_sandbox_replaces_the_pod_ips_in_the_api_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            new_sandbox_scenario(b).await;
        }
    });
}

async fn apiserver_down_scenario(b: Backend) {
    let mock = MockRuntime::builder()
        .script("app", Behaviour::exit_after(Duration::from_secs(2), 0))
        .build();
    let node = b.start_node(mock, fast).await;
    let mut job = bound_pod("job", "true");
    job["spec"]["restartPolicy"] = "Never".into();
    b.create_pod(&job).await;
    backend::eventually("Running in the API", T, || async {
        (b.pod("job").await?.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    b.set_down(true).await;
    eventually("Succeeded locally while the API server is down", T, || {
        (node.kubelet.phase_of_named("default", "job").as_deref() == Some("Succeeded")).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Some(server) = b.fake() {
        assert_eq!(
            server
                .store()
                .pod("default", "job")
                .and_then(|p| p.status?.phase)
                .as_deref(),
            Some("Running"),
            "nothing could be written"
        );
    }
    b.set_down(false).await;
    let p = backend::eventually("Succeeded in the API", T, || async {
        let p = b.pod("job").await?;
        (p.status.as_ref()?.phase.as_deref() == Some("Succeeded")).then_some(p)
    })
    .await;
    let term = p
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|cs| cs.into_iter().next())
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .unwrap_or_else(|| panic!("container not terminated in the API"));
    assert_eq!(term.exit_code, 0);
    assert_eq!(term.reason.as_deref(), Some("Completed"));
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn statuses_written_while_the_apiserver_is_down_converge_when_it_returns() {
    run(|| async { apiserver_down_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn statuses_written_while_the_apiserver_is_down_converge_when_it_returns_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            apiserver_down_scenario(b).await;
        }
    });
}

async fn mirror_pod_scenario(b: Backend) {
    let manifests = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    let manifest = |seconds: u32| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static-web\nspec:\n  terminationGracePeriodSeconds: 10\n  containers:\n  - name: app\n    image: busybox:1.36\n    command: [sleep, '{seconds}']\n"
        )
    };
    std::fs::write(manifests.path().join("web.yaml"), manifest(3600)).unwrap_or_else(|e| panic!("{e}"));
    let path = manifests.path().to_path_buf();
    let slow_stop = MockRuntime::builder()
        .script(
            "app",
            Behaviour::run_forever().on_sigterm(OnTerm::ExitAfter(Duration::from_secs(6), 0)),
        )
        .build();
    let node = b
        .start_node(slow_stop, move |builder| fast(builder).static_pod_path(path))
        .await;
    let name = format!("static-web-{NODE}");
    let mirror = backend::eventually("mirror pod Running in the API", T, || async {
        let p = b.pod(&name).await?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
    })
    .await;
    let ann = mirror.metadata.annotations.clone().unwrap_or_default();
    let hash = ann.get("kubernetes.io/config.mirror").cloned().unwrap_or_default();
    assert!(!hash.is_empty(), "{ann:?}");
    assert_eq!(ann.get("kubernetes.io/config.source").map(String::as_str), Some("file"));
    assert_eq!(
        node.mock.calls_to("RunPodSandbox").len(),
        1,
        "the mirror pod is not run"
    );

    // Deleted by an admin → recreated.
    let old_uid = mirror.metadata.uid.clone();
    b.delete_pod(&name, None).await;
    backend::eventually("mirror recreated", T, || async {
        let p = b.pod(&name).await?;
        (p.metadata.uid != old_uid).then_some(())
    })
    .await;

    // Manifest changed → the mirror is replaced with the new hash.
    std::fs::write(manifests.path().join("web.yaml"), manifest(7200)).unwrap_or_else(|e| panic!("{e}"));
    backend::eventually("mirror with the new hash", T, || async {
        let p = b.pod(&name).await?;
        let h = p.metadata.annotations?.get("kubernetes.io/config.mirror")?.clone();
        (h != hash).then_some(())
    })
    .await;

    eventually("the new static pod running", T, || {
        (node.kubelet.phase_of_named("default", &name).as_deref() == Some("Running")).then_some(())
    })
    .await;
    let stops = node.mock.calls_to("StopContainer").len();

    // Manifest removed → the mirror is deleted once the static pod has
    // stopped (its container takes 6 s to exit after SIGTERM), not before.
    std::fs::remove_file(manifests.path().join("web.yaml")).unwrap_or_else(|e| panic!("{e}"));
    eventually("the static pod being stopped", T, || {
        (node.mock.calls_to("StopContainer").len() > stops).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await; // > one mirror-pod pass (2 s)
    let running = |n: &cluster::ClusterNode| {
        n.mock
            .find_container(&name, "app")
            .is_some_and(|c| c.status.state == actlet::cri::v1::ContainerState::ContainerRunning as i32)
    };
    assert!(running(&node), "still terminating");
    assert!(
        b.pod(&name).await.is_some(),
        "the mirror stays while its static pod terminates"
    );
    backend::eventually("mirror deleted", T, || async {
        b.pod(&name).await.is_none().then_some(())
    })
    .await;
    assert!(!running(&node), "deleted only after the container stopped");
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_static_pod_gets_a_mirror_pod_with_its_status_and_the_mirror_follows_it() {
    run(|| async { mirror_pod_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_static_pod_gets_a_mirror_pod_with_its_status_and_the_mirror_follows_it_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            mirror_pod_scenario(b).await;
        }
    });
}
