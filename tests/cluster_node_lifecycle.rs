//! The Node object's life as a real API server's NodeRestriction sees it, on both
//! API servers (tests/support/backend.rs; `*_on_envtest` SKIPPED loudly without
//! `KUBEBUILDER_ASSETS`): registration with `--node-labels` and
//! `--register-with-taints`, and an admin deleting the Node under a running node:
//! it is registered again (new UID, same labels and taints, Ready) and its pod
//! keeps running untouched. An admin tainting (`NoExecute`) and labelling the
//! Node: admission follows the Node object, as upstream's informer-fed
//! admission does: a pod that does not tolerate the taint is rejected
//! (`TaintToleration`), one that does and selects the new label runs.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/backend.rs"]
mod backend;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use backend::{Backend, eventually};
use cluster::{NODE, bound_pod, run};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};

const T: Duration = Duration::from_secs(60);

fn ready(n: &Node) -> bool {
    cluster::node_condition(n, "Ready").is_some_and(|c| c.status == "True")
}

fn check_registration(n: &Node) {
    let labels = n.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("pool").map(String::as_str), Some("edge"), "{labels:?}");
    assert_eq!(
        labels.get("node.kubernetes.io/instance-type").map(String::as_str),
        Some("small")
    );
    let taints = n.spec.clone().and_then(|s| s.taints).unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == "dedicated" && t.value.as_deref() == Some("edge") && t.effect == "NoSchedule"),
        "{taints:?}"
    );
}

async fn deleted_node_scenario(b: Backend) {
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let node = b
        .start_node(mock.clone(), |builder| {
            builder.configure(|c| {
                c.node_status_update_frequency = Duration::from_millis(500);
                c.node_labels.insert("pool".into(), "edge".into());
                c.node_labels
                    .insert("node.kubernetes.io/instance-type".into(), "small".into());
                c.register_with_taints.push(Taint {
                    key: "dedicated".into(),
                    value: Some("edge".into()),
                    effect: "NoSchedule".into(),
                    ..Default::default()
                });
            })
        })
        .await;
    let first = eventually("node Ready", T, || async { b.node().await.filter(ready) }).await;
    check_registration(&first);
    let mut pod = bound_pod("web", "sleep 3600");
    pod["spec"]["tolerations"] = serde_json::json!([{"operator": "Exists"}]);
    b.create_pod(&pod).await;
    eventually("the pod Running in the API", T, || async {
        (b.pod("web").await?.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    let creates = mock.call_count("CreateContainer");

    Api::<Node>::all(b.admin.clone())
        .delete(NODE, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("delete node: {e}"));
    let again = eventually("the Node registered again and Ready", T, || async {
        let n = b.node().await?;
        (n.metadata.uid != first.metadata.uid && ready(&n)).then_some(n)
    })
    .await;
    check_registration(&again);
    assert_eq!(mock.call_count("CreateContainer"), creates, "the pod was not restarted");
    assert_eq!(
        b.pod("web").await.and_then(|p| p.status?.phase).as_deref(),
        Some("Running")
    );
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_deleted_node_is_registered_again_with_its_labels_and_taints() {
    run(|| async { deleted_node_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_deleted_node_is_registered_again_with_its_labels_and_taints_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            deleted_node_scenario(b).await;
        }
    });
}

async fn admin_taint_scenario(b: Backend) {
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let node = b
        .start_node(mock.clone(), |builder| {
            builder.configure(|c| c.node_status_update_frequency = Duration::from_millis(500))
        })
        .await;
    eventually("node Ready", T, || async { b.node().await.filter(ready) }).await;
    let patch = serde_json::json!({
        "metadata": {"labels": {"zone": "b"}},
        "spec": {"taints": [{"key": "maintenance", "value": "kernel", "effect": "NoExecute"}]}
    });
    Api::<Node>::all(b.admin.clone())
        .patch(NODE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("taint the node: {e}"));
    let handle = node.kubelet.node.clone();
    eventually("the kubelet read the taint", T, || async {
        handle
            .object()
            .filter(|o| o.taints.iter().any(|t| t.key == "maintenance"))
            .map(|_| ())
    })
    .await;

    b.create_pod(&bound_pod("intolerant", "sleep 3600")).await;
    let mut tolerant = bound_pod("tolerant", "sleep 3600");
    tolerant["spec"]["tolerations"] =
        serde_json::json!([{"key": "maintenance", "operator": "Equal", "value": "kernel", "effect": "NoExecute"}]);
    tolerant["spec"]["nodeSelector"] = serde_json::json!({"zone": "b"});
    b.create_pod(&tolerant).await;
    let status = eventually("the intolerant pod rejected", T, || async {
        let st = b.pod("intolerant").await?.status?;
        (st.phase.as_deref() == Some("Failed")).then_some(st)
    })
    .await;
    assert_eq!(status.reason.as_deref(), Some("TaintToleration"));
    assert_eq!(
        status.message.as_deref(),
        Some("Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate")
    );
    eventually("the tolerant pod Running", T, || async {
        (b.pod("tolerant").await?.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn admission_follows_the_taints_and_labels_an_admin_gives_the_node() {
    run(|| async { admin_taint_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn admission_follows_the_taints_and_labels_an_admin_gives_the_node_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            admin_taint_scenario(b).await;
        }
    });
}
