//! Static pods as control planes write them (kube-system, hostNetwork,
//! `priorityClassName: system-node-critical`), mirrored to the API — on the test API
//! server and on a real one (`*_on_envtest`, SKIPPED loudly without
//! `KUBEBUILDER_ASSETS`), whose admission (Priority, ServiceAccount, NodeRestriction)
//! checks the mirror pod actlet creates.

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
use cluster::{NODE, run};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

const T: Duration = Duration::from_secs(60);

const MANIFEST: &str = "apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
  labels: {component: etcd, tier: control-plane}
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: etcd
    image: busybox:1.36
    command: [sleep, '3600']
";

async fn control_plane_static_pod_scenario(b: Backend) {
    let manifests = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(manifests.path().join("etcd.yaml"), MANIFEST).unwrap_or_else(|e| panic!("{e}"));
    let path = manifests.path().to_path_buf();
    let mock = MockRuntime::builder().script("etcd", Behaviour::run_forever()).build();
    let node = b
        .start_node(mock, move |builder| {
            builder
                .static_pod_path(path)
                .configure(|c| c.node_status_update_frequency = Duration::from_millis(500))
        })
        .await;
    let pods: Api<Pod> = Api::namespaced(b.admin.clone(), "kube-system");
    let name = format!("etcd-{NODE}");
    let mirror = eventually("the mirror pod Running and Ready in kube-system", T, || async {
        let p = pods.get_opt(&name).await.ok().flatten()?;
        let st = p.status.as_ref()?;
        let ready = st
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        (st.phase.as_deref() == Some("Running") && ready).then_some(p)
    })
    .await;
    let spec = mirror.spec.clone().unwrap_or_default();
    assert_eq!(spec.priority_class_name.as_deref(), Some("system-node-critical"));
    assert_eq!(spec.priority, Some(2_000_001_000), "the API's priority for the class");
    let st = mirror.status.clone().unwrap_or_default();
    assert_eq!(st.pod_ip.as_deref(), Some("10.0.0.1"), "hostNetwork: the node's IP");
    let owner = mirror.metadata.owner_references.clone().unwrap_or_default();
    assert!(owner.iter().any(|o| o.kind == "Node" && o.name == NODE), "{owner:?}");
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_control_plane_static_pod_is_mirrored_in_kube_system() {
    run(|| async { control_plane_static_pod_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_control_plane_static_pod_is_mirrored_in_kube_system_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            control_plane_static_pod_scenario(b).await;
        }
    });
}
