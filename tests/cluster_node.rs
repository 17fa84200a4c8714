//! The node actor against the test API server (Node authorizer and
//! NodeRestriction): the Node is registered Ready with its labels, capacity
//! and nodeInfo; its status is patched only when it changes (or the report
//! period passed); a runtime or network that is not ready makes it NotReady
//! with the cause and back; an existing Node is reconciled, a deleted one
//! registered again.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/node.rs"]
mod node;

use std::time::Duration;

use actix::Actor;
use actlet::cluster::node::NodeActor;
use apiserver::TestApiServer;
use cluster::{NODE, eventually, run};
use k8s_openapi::api::core::v1::Taint;
use node::{STATUS_PATH, T, condition, count, harness, ready_is};
use serde_json::json;

#[test]
fn node_registers_ready_patches_only_changes_and_follows_the_runtime() {
    run(|| async {
        let server = TestApiServer::start();
        let h = harness(&server).await;
        let handle = h.deps.handle.clone();
        NodeActor::new(h.deps.clone()).start();

        let ready = eventually("the node is registered Ready", T, || ready_is(&server, "True")).await;
        assert_eq!(ready.reason.as_deref(), Some("KubeletReady"));
        assert_eq!(ready.message.as_deref(), Some("kubelet is posting ready status"));
        let node = server.store().node(NODE).unwrap_or_else(|| panic!("no node"));
        let labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("kubernetes.io/hostname").map(String::as_str), Some(NODE));
        assert_eq!(labels.get("kubernetes.io/os").map(String::as_str), Some("linux"));
        assert_eq!(
            labels.get("kubernetes.io/arch").map(String::as_str),
            Some(actlet::kubelet::go_arch())
        );
        assert_eq!(labels.get("pool").map(String::as_str), Some("blue"));
        let status = node.status.clone().unwrap_or_default();
        let cap = status.capacity.unwrap_or_default();
        let alloc = status.allocatable.unwrap_or_default();
        assert_eq!(cap.get("cpu").map(|q| q.0.as_str()), Some("2"));
        assert_eq!(cap.get("memory").map(|q| q.0.as_str()), Some("4Gi"));
        assert_eq!(cap.get("pods").map(|q| q.0.as_str()), Some("110"));
        assert_eq!(cap.get("ephemeral-storage").map(|q| q.0.as_str()), Some("100Gi"));
        assert_eq!(alloc.get("cpu").map(|q| q.0.as_str()), Some("1900m"));
        assert_eq!(alloc.get("memory").map(|q| q.0.as_str()), Some("3996Mi"));
        let info = status.node_info.unwrap_or_default();
        assert_eq!(
            info.container_runtime_version,
            format!("{}://{}", actlet::cri::mock::RUNTIME_NAME, env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(info.kubelet_version, actlet::cluster::node::status::KUBELET_VERSION);
        assert_eq!(
            (info.kernel_version.as_str(), info.os_image.as_str()),
            ("6.1.0-test", "Test Linux")
        );
        let addresses: Vec<_> = status
            .addresses
            .unwrap_or_default()
            .into_iter()
            .map(|a| (a.type_, a.address))
            .collect();
        assert_eq!(
            addresses,
            [
                ("InternalIP".into(), "10.0.0.1".into()),
                ("Hostname".into(), NODE.to_string())
            ]
        );
        assert_eq!(
            status.daemon_endpoints.and_then(|d| d.kubelet_endpoint).map(|e| e.port),
            Some(10250)
        );
        for c in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
            assert_eq!(condition(&node, c).map(|c| c.status), Some("False".into()), "{c}");
        }
        eventually("the handle knows the UID", T, || {
            (handle.uid() == node.metadata.uid && handle.ready() == Some(true)).then_some(())
        })
        .await;
        assert_eq!(h.seen.reasons().first().map(String::as_str), Some("Starting"));
        assert!(h.seen.reasons().contains(&"NodeHasSufficientMemory".to_string()));

        // Status writes are strategic merge patches, and only happen on change.
        let patches = server
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path == STATUS_PATH)
            .collect::<Vec<_>>();
        for p in &patches {
            assert_eq!(
                p.content_type.as_deref(),
                Some("application/strategic-merge-patch+json")
            );
            assert_eq!(p.status, 200, "{:?}", p.body);
        }
        // (The first sync after registration may write a heartbeat, as upstream's does.)
        let gets = count(&server, "GET", "/api/v1/nodes/test-node");
        eventually("two more status syncs", T, || {
            (count(&server, "GET", "/api/v1/nodes/test-node") >= gets + 2).then_some(())
        })
        .await;
        let patched = count(&server, "PATCH", STATUS_PATH);
        assert!(patched <= patches.len() + 1, "{patched} patches");
        let gets = count(&server, "GET", "/api/v1/nodes/test-node");
        eventually("five more status syncs", T, || {
            (count(&server, "GET", "/api/v1/nodes/test-node") >= gets + 5).then_some(())
        })
        .await;
        assert_eq!(
            count(&server, "PATCH", STATUS_PATH),
            patched,
            "an unchanged status is not written"
        );

        // The runtime goes down: NotReady with the cause, then Ready again.
        h.mock.set_down(true);
        let not_ready = eventually("NotReady", T, || ready_is(&server, "False")).await;
        assert_eq!(not_ready.reason.as_deref(), Some("KubeletNotReady"));
        let msg = not_ready.message.unwrap_or_default();
        assert!(msg.contains("container runtime is down"), "{msg}");
        let patch = server
            .requests()
            .into_iter()
            .rfind(|r| r.method == "PATCH" && r.path == STATUS_PATH)
            .and_then(|r| r.body)
            .unwrap_or_default();
        assert_eq!(
            patch["status"]["$setElementOrder/conditions"][3],
            json!({"type": "Ready"})
        );
        // Observers and the handle learn of the change once the patch's answer is back,
        // a moment after the API server shows it.
        eventually("observers told of NotReady", T, || {
            h.seen
                .changes()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "False" && c.reason == "KubeletNotReady")
                .then_some(())
        })
        .await;
        eventually("the handle knows NotReady", T, || {
            (handle.ready() == Some(false)).then_some(())
        })
        .await;
        h.mock.set_down(false);
        let again = eventually("Ready again", T, || ready_is(&server, "True")).await;
        assert_eq!(
            again
                .last_transition_time
                .map(|t| t.0 >= not_ready.last_transition_time.map(|t| t.0).unwrap_or_default()),
            Some(true)
        );
        let reasons = h.seen.reasons();
        assert!(reasons.contains(&"NodeNotReady".to_string()), "{reasons:?}");
        eventually("NodeReady event", T, || {
            h.seen.reasons().contains(&"NodeReady".to_string()).then_some(())
        })
        .await;

        // A network that is not ready is a cause too.
        h.mock.set_network_ready(false);
        let net = eventually("NotReady for the network", T, || ready_is(&server, "False")).await;
        let msg = net.message.unwrap_or_default();
        assert!(msg.contains("container runtime network not ready"), "{msg}");
        h.mock.set_network_ready(true);
        eventually("Ready after the network", T, || ready_is(&server, "True")).await;
        assert_eq!(count(&server, "POST", "/api/v1/nodes"), 1);
    });
}

#[test]
fn an_existing_node_is_reconciled_not_duplicated() {
    run(|| async {
        let server = TestApiServer::start();
        let store = server.store();
        let existing = store
            .create(
                "nodes",
                "",
                &json!({
                    "metadata": {"name": NODE, "labels": {"kubernetes.io/arch": "wrong", "team": "x"}},
                    "spec": {"taints": [{"key": "admin", "effect": "NoSchedule"}]}
                }),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let mut h = harness(&server).await;
        h.deps.taints = vec![Taint {
            key: "dedicated".into(),
            value: Some("gpu".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }];
        NodeActor::new(h.deps.clone()).start();
        eventually("the existing node turns Ready", T, || ready_is(&server, "True")).await;
        let node = store.node(NODE).unwrap_or_else(|| panic!("no node"));
        assert_eq!(
            node.metadata.uid.as_deref(),
            existing["metadata"]["uid"].as_str(),
            "same Node"
        );
        let labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("kubernetes.io/arch").map(String::as_str),
            Some(actlet::kubelet::go_arch())
        );
        assert_eq!(labels.get("team").map(String::as_str), Some("x"), "other labels kept");
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations
                .get("volumes.kubernetes.io/controller-managed-attach-detach")
                .map(String::as_str),
            Some("true")
        );
        let taints: Vec<String> = node
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.key)
            .collect();
        assert!(taints.contains(&"admin".to_string()), "{taints:?}");
        assert!(
            !taints.contains(&"dedicated".to_string()),
            "taints only at first registration: {taints:?}"
        );
        let posts: Vec<u16> = server
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path == "/api/v1/nodes")
            .map(|r| r.status)
            .collect();
        assert_eq!(posts, [409]);
        assert_eq!(
            count(&server, "PATCH", "/api/v1/nodes/test-node"),
            1,
            "one reconcile patch"
        );
        assert_eq!(store.list("nodes", None).len(), 1);
    });
}

#[test]
fn an_unchanged_status_is_still_reported_every_report_period() {
    run(|| async {
        let server = TestApiServer::start();
        let mut h = harness(&server).await;
        h.deps.report_frequency = Duration::from_millis(600);
        NodeActor::new(h.deps.clone()).start();
        eventually("registered Ready", T, || ready_is(&server, "True")).await;
        let patched = count(&server, "PATCH", STATUS_PATH);
        eventually("two reports", T, || {
            (count(&server, "PATCH", STATUS_PATH) >= patched + 2).then_some(())
        })
        .await;
        let last = server
            .requests()
            .into_iter()
            .rfind(|r| r.method == "PATCH" && r.path == STATUS_PATH)
            .unwrap_or_else(|| panic!("no status patch"));
        let body = last.body.unwrap_or_default();
        let conditions = body["status"]["conditions"].as_array().cloned().unwrap_or_default();
        assert_eq!(conditions.len(), 4, "{body}");
        for c in &conditions {
            let mut keys: Vec<&str> = c
                .as_object()
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default();
            keys.sort();
            assert_eq!(keys, ["lastHeartbeatTime", "type"], "only heartbeats: {body}");
        }
    });
}

#[test]
fn without_registration_only_the_status_of_an_existing_node_is_written() {
    run(|| async {
        let server = TestApiServer::start();
        let mut h = harness(&server).await;
        h.deps.register_node = false;
        NodeActor::new(h.deps.clone()).start();
        eventually("status syncs find no node", T, || {
            (count(&server, "GET", "/api/v1/nodes/test-node") >= 3).then_some(())
        })
        .await;
        assert_eq!(count(&server, "POST", "/api/v1/nodes"), 0);
        server
            .store()
            .create("nodes", "", &json!({"metadata": {"name": NODE}}))
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("the admin's node turns Ready", T, || ready_is(&server, "True")).await;
        assert_eq!(count(&server, "POST", "/api/v1/nodes"), 0);
    });
}

#[test]
fn a_deleted_node_is_registered_again() {
    run(|| async {
        let server = TestApiServer::start();
        let h = harness(&server).await;
        let handle = h.deps.handle.clone();
        NodeActor::new(h.deps.clone()).start();
        let first = eventually("registered", T, || server.store().node(NODE)).await;
        server.store().remove("nodes", "", NODE);
        let second = eventually("registered again", T, || {
            server
                .store()
                .node(NODE)
                .filter(|n| n.metadata.uid != first.metadata.uid)
        })
        .await;
        eventually("the handle has the new UID", T, || {
            (handle.uid() == second.metadata.uid).then_some(())
        })
        .await;
        eventually("Ready", T, || ready_is(&server, "True")).await;
    });
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    k.sort();
    k
}

#[test]
fn the_registration_has_the_shape_of_the_recorded_kubelet() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apiserver/02-create-node.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    let fixture: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let want = &fixture["request"]["body"];
    run(|| async {
        let server = TestApiServer::start();
        let h = harness(&server).await;
        let health = h.deps.runtime_health.clone();
        eventually("the runtime's features", T, || health.borrow().features).await;
        NodeActor::new(h.deps.clone()).start();
        eventually("registered", T, || server.store().node(NODE)).await;
        let post = server
            .requests()
            .into_iter()
            .find(|r| r.method == "POST" && r.path == "/api/v1/nodes")
            .unwrap_or_else(|| panic!("no POST"));
        assert_eq!(post.content_type.as_deref(), Some("application/json"));
        let got = post.body.unwrap_or_default();
        assert_eq!(got["kind"], "Node");
        assert_eq!(got["apiVersion"], "v1");
        let mut label_keys = keys(&want["metadata"]["labels"]);
        label_keys.push("pool".into());
        label_keys.sort();
        assert_eq!(keys(&got["metadata"]["labels"]), label_keys);
        assert_eq!(got["metadata"]["annotations"], want["metadata"]["annotations"]);
        // The recorded node had no images yet (an empty list is omitted); the mock has some.
        // It also predates NodeFeatures (1.31); the mock reports its runtime's features.
        assert_eq!(got["status"]["features"]["supplementalGroupsPolicy"], true);
        let status_keys: Vec<String> = keys(&got["status"])
            .into_iter()
            .filter(|k| k != "images" && k != "features")
            .collect();
        assert_eq!(status_keys, keys(&want["status"]));
        assert_eq!(keys(&got["status"]["capacity"]), keys(&want["status"]["capacity"]));
        assert_eq!(
            keys(&got["status"]["allocatable"]),
            keys(&want["status"]["allocatable"])
        );
        assert_eq!(keys(&got["status"]["nodeInfo"]), keys(&want["status"]["nodeInfo"]));
        assert_eq!(got["status"]["daemonEndpoints"], want["status"]["daemonEndpoints"]);
        let conditions = |v: &serde_json::Value| -> Vec<(String, Vec<String>)> {
            v["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| (c["type"].as_str().unwrap_or_default().to_string(), keys(c)))
                .collect()
        };
        assert_eq!(conditions(&got), conditions(want));
        for i in 0..3 {
            let (g, w) = (&got["status"]["conditions"][i], &want["status"]["conditions"][i]);
            assert_eq!((&g["reason"], &g["message"]), (&w["reason"], &w["message"]));
        }
        let types: Vec<&str> = got["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["type"].as_str())
            .collect();
        assert_eq!(types, ["InternalIP", "Hostname"]);
    });
}
