//! The whole kubelet in cluster mode (mock CRI) with the status syncer and the
//! mirror pod manager wired into the tree: a bound pod's status reaches the
//! API; a graceful delete kills the pod and finalises it; a static pod gets a
//! mirror pod carrying its status; the API server going away loses nothing.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use apiserver::TestApiServer;
use cluster::{NODE, bound_pod, eventually, run, start_node};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

const T: Duration = Duration::from_secs(30);

fn api_pod(server: &TestApiServer, name: &str) -> Option<Pod> {
    server.store().pod("default", name)
}

fn api_phase(server: &TestApiServer, name: &str) -> Option<String> {
    api_pod(server, name)?.status?.phase
}

#[test]
fn a_bound_pod_reports_its_status_and_is_finalised_after_a_graceful_delete() {
    run(|| async {
        let server = TestApiServer::start();
        let store = server.store();
        let created = store
            .create("pods", "default", &bound_pod("web", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        let uid = created["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let _node = start_node(&server, mock.clone(), |b| b).await;

        let running = eventually("Running on the API", T, || {
            api_pod(&server, "web").filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        })
        .await;
        let status = running.status.unwrap_or_default();
        assert_eq!(status.host_ip.as_deref(), Some("10.0.0.1"));
        assert!(status.pod_ip.is_some(), "{status:?}");
        let cs = status.container_statuses.unwrap_or_default();
        assert_eq!(cs.first().map(|c| c.name.as_str()), Some("app"));
        let ready = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .unwrap_or_else(|| panic!("no Ready condition"));
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref(), ready.message.as_deref()),
            ("True", None, None),
            "the reason of the earlier not-ready condition is cleared"
        );

        // Deleted with a grace period: killed, then deleted for good by the node.
        store
            .delete("pods", "default", "web", Some(30))
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("the pod finalised", T, || {
            api_pod(&server, "web").is_none().then_some(())
        })
        .await;
        let delete = server
            .requests()
            .into_iter()
            .find(|r| r.method == "DELETE" && r.user == "system:node:test-node")
            .unwrap_or_else(|| panic!("no final delete by the node"));
        let body = delete.body.unwrap_or_default();
        assert_eq!(body["gracePeriodSeconds"], json!(0));
        assert_eq!(body["preconditions"]["uid"], json!(uid));
        assert!(
            !mock.calls_to("StopContainer").is_empty(),
            "the container was stopped first"
        );
    });
}

#[test]
fn a_static_pod_gets_a_mirror_pod_with_its_status() {
    run(|| async {
        let server = TestApiServer::start();
        server
            .store()
            .create("nodes", "", &json!({"metadata": {"name": NODE}}))
            .unwrap_or_else(|e| panic!("{e}"));
        let manifests = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            manifests.path().join("web.yaml"),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: static-web, namespace: default}\nspec:\n  containers:\n  - {name: app, image: \"busybox:1.36\", command: [sh, -c, \"sleep 3600\"]}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let dir = manifests.path().to_path_buf();
        let _node = start_node(&server, mock, |b| {
            b.configure(|c| {
                c.static_pod_path = Some(dir);
                c.file_check_frequency = Duration::from_secs(1);
            })
        })
        .await;

        let name = format!("static-web-{NODE}");
        let mirror = eventually("the mirror pod Running", T, || {
            api_pod(&server, &name).filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        })
        .await;
        let annotations = mirror.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.get("kubernetes.io/config.mirror"),
            annotations.get("kubernetes.io/config.hash")
        );

        // The static pod's manifest goes: so does the mirror pod.
        std::fs::remove_file(manifests.path().join("web.yaml")).unwrap_or_else(|e| panic!("{e}"));
        eventually("the mirror pod deleted", T, || {
            api_pod(&server, &name).is_none().then_some(())
        })
        .await;
    });
}

#[test]
fn a_status_change_while_the_api_server_is_down_arrives_when_it_returns() {
    run(|| async {
        let server = TestApiServer::start();
        server
            .store()
            .create("pods", "default", &bound_pod("job", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = start_node(&server, mock.clone(), |b| b).await;
        eventually("Running on the API", T, || {
            (api_phase(&server, "job").as_deref() == Some("Running")).then_some(())
        })
        .await;

        server.set_down(true);
        let container = mock
            .find_container("job", "app")
            .unwrap_or_else(|| panic!("no container"));
        assert!(mock.exit_container(&container.status.id, 1));
        eventually("the kubelet sees the exit", T, || {
            let uid = node.kubelet.pods.pods().into_iter().next()?.pod.metadata.uid.clone()?;
            let s = node.kubelet.statuses.get(&uid.as_str().into())?;
            let restarts = s.status.container_statuses.as_ref()?.first()?.restart_count;
            (restarts >= 1).then_some(())
        })
        .await;
        server.set_down(false);
        eventually("the restart on the API", T, || {
            let cs = api_pod(&server, "job")?.status?.container_statuses?;
            (cs.first()?.restart_count >= 1).then_some(())
        })
        .await;
    });
}

#[test]
fn a_force_deleted_pod_is_killed_at_once_and_its_status_dropped() {
    run(|| async {
        let server = TestApiServer::start();
        server
            .store()
            .create("pods", "default", &bound_pod("web", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = start_node(&server, mock.clone(), |b| b).await;
        eventually("Running on the API", T, || {
            (api_phase(&server, "web").as_deref() == Some("Running")).then_some(())
        })
        .await;

        server
            .store()
            .delete("pods", "default", "web", Some(0))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(api_pod(&server, "web").is_none(), "grace 0 removes it at once");
        eventually("the container stopped", T, || {
            (!mock.calls_to("StopContainer").is_empty()).then_some(())
        })
        .await;
        eventually("the pod forgotten", T, || node.kubelet.pods.is_empty().then_some(())).await;
        // The node never recreates nor finalises a pod that is gone.
        assert!(
            server
                .requests()
                .iter()
                .filter(|r| r.user == "system:node:test-node" && r.path.starts_with("/api/v1/namespaces/default/pods"))
                .all(|r| r.method != "DELETE" && r.method != "POST"),
            "no write for a gone pod"
        );
    });
}
