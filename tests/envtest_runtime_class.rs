//! RuntimeClasses from a real kube-apiserver (`KUBEBUILDER_ASSETS`,
//! tests/support/envtest.rs; SKIPPED loudly when unset): a pod naming a
//! RuntimeClass runs in a sandbox with the class's handler; the
//! `runtime-classes` actor killed mid-flight is rebuilt, lists again, and a
//! class created after the restart is used — nothing else restarts.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::time::Duration;

use actlet::actors::supervisor::{ChildState, KillChild};
use actlet::cri::mock::{Behaviour, MockRuntime};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::PostParams;

const T: Duration = Duration::from_secs(60);

async fn create_class(admin: &kube::Client, name: &str, handler: &str) {
    let rc: RuntimeClass = serde_json::from_value(serde_json::json!({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": name}, "handler": handler
    }))
    .unwrap();
    Api::<RuntimeClass>::all(admin.clone())
        .create(&PostParams::default(), &rc)
        .await
        .unwrap_or_else(|e| panic!("create RuntimeClass {name}: {e}"));
}

async fn create_pod(admin: &kube::Client, name: &str, class: &str) {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": cluster::NODE,
            "runtimeClassName": class,
            "automountServiceAccountToken": false,
            "containers": [{"name": "app", "image": "docker.io/library/busybox:1.36", "command": ["sleep", "3600"]}]
        }
    }))
    .unwrap();
    Api::<Pod>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
}

fn handler_of(mock: &MockRuntime, pod: &str) -> Option<String> {
    mock.snapshot()
        .sandboxes
        .into_iter()
        .find(|s| s.metadata.as_ref().is_some_and(|m| m.name == pod))
        .map(|s| s.runtime_handler)
}

#[test]
fn pods_run_with_their_runtime_class_handler_across_a_watch_restart() {
    cluster::run(|| async {
        let Some(env) = envtest::EnvTest::start().await else {
            return;
        };
        env.prepare_namespace("default").await;
        let admin = env.admin_client().await;
        create_class(&admin, "gvisor", "runsc").await;
        let mock = MockRuntime::builder()
            .runtime_handler("runsc")
            .runtime_handler("kata-qemu")
            .script("app", Behaviour::run_forever())
            .build();
        let client = env.node_client(cluster::NODE).await;
        let dir = tempfile::tempdir().unwrap();
        let node = cluster::start_node_with(client, dir, mock.clone(), |b| b);
        create_pod(&admin, "sandboxed", "gvisor").await;
        cluster::eventually("sandboxed has a sandbox", T, || handler_of(&mock, "sandboxed")).await;
        assert_eq!(handler_of(&mock, "sandboxed").as_deref(), Some("runsc"));

        node.kubelet
            .root
            .addr()
            .send(KillChild("runtime-classes".into()))
            .await
            .expect("root reachable")
            .unwrap_or_else(|e| panic!("kill runtime-classes: {e}"));
        cluster::eventually("runtime-classes rebuilt", T, || {
            let info = node.kubelet.tree().get("root/runtime-classes")?;
            (info.state == ChildState::Running && info.restarts == 1).then_some(())
        })
        .await;
        create_class(&admin, "kata", "kata-qemu").await;
        create_pod(&admin, "vm", "kata").await;
        cluster::eventually("vm has a sandbox", T, || handler_of(&mock, "vm")).await;
        assert_eq!(handler_of(&mock, "vm").as_deref(), Some("kata-qemu"));
        let others: Vec<_> = node
            .kubelet
            .tree()
            .snapshot()
            .into_iter()
            .filter(|c| c.path != "root/runtime-classes" && c.restarts > 0)
            .collect();
        assert!(others.is_empty(), "{others:?}");
    });
}
