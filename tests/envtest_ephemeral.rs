//! Ephemeral containers (`kubectl debug`) through a real kube-apiserver
//! (tests/support/envtest.rs; SKIPPED loudly without `KUBEBUILDER_ASSETS`),
//! the way upstream's conformance tests "will start an ephemeral container
//! in an existing pod" and "should update the ephemeral containers in an
//! existing pod" drive them: a strategic merge patch of the
//! `ephemeralcontainers` subresource (what `kubectl debug` sends) adds one
//! to the running pod; actlet, watching as `system:node:<NODE>`, starts it
//! in the pod's sandbox and reports it running in
//! `ephemeralContainerStatuses`; a replace (PUT) of the subresource adds a
//! second; the pod's own container is never restarted.

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
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(60);

fn running_ephemeral(pod: &Pod) -> Vec<String> {
    pod.status
        .iter()
        .flat_map(|s| s.ephemeral_container_statuses.iter().flatten())
        .filter(|c| c.state.as_ref().and_then(|s| s.running.as_ref()).is_some())
        .map(|c| c.name.clone())
        .collect()
}

#[test]
fn ephemeral_containers_added_through_the_subresource_start_on_envtest() {
    run(|| async {
        let Some(b) = Backend::real().await else { return };
        let mock = MockRuntime::builder().script("*", Behaviour::run_forever()).build();
        let node = b.start_node(mock.clone(), |builder| builder).await;
        b.create_pod(&json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 2,
                "containers": [{"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}))
            .await;
        eventually("web Running", T, || async {
            (b.pod("web").await?.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;
        let app_id = mock.find_container("web", "app").map(|c| c.status.id);

        // kubectl debug -it web --image=busybox:1.36 --target=app
        let patch = json!({"spec": {"ephemeralContainers": [{
            "name": "debugger", "image": "busybox:1.36", "command": ["sh", "-c", "echo polo; sleep 3600"],
            "stdin": true, "tty": true, "targetContainerName": "app",
            "terminationMessagePolicy": "File"}]}});
        b.pods()
            .patch_subresource(
                "ephemeralcontainers",
                "web",
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
            .unwrap_or_else(|e| panic!("patch ephemeralcontainers: {e}"));
        eventually("debugger running in the API status", T, || async {
            let p = b.pod("web").await?;
            running_ephemeral(&p).contains(&"debugger".to_string()).then_some(())
        })
        .await;
        let debugger = mock
            .find_container("web", "debugger")
            .unwrap_or_else(|| panic!("debugger not created in the runtime"));
        let sandbox = mock.find_container("web", "app").map(|c| c.sandbox_id);
        assert_eq!(Some(debugger.sandbox_id.clone()), sandbox, "in the pod's sandbox");

        // The conformance test's second step: GET the subresource, add one, PUT it back.
        let mut current: Pod = b
            .pods()
            .get_subresource("ephemeralcontainers", "web")
            .await
            .unwrap_or_else(|e| panic!("get ephemeralcontainers: {e}"));
        let mut list = current
            .spec
            .as_ref()
            .and_then(|s| s.ephemeral_containers.clone())
            .unwrap_or_default();
        assert_eq!(list.len(), 1);
        let mut second = list[0].clone();
        second.name = "debugger2".into();
        second.target_container_name = None;
        list.push(second);
        if let Some(spec) = current.spec.as_mut() {
            spec.ephemeral_containers = Some(list);
        }
        b.pods()
            .replace_subresource("ephemeralcontainers", "web", &PostParams::default(), &current)
            .await
            .unwrap_or_else(|e| panic!("replace ephemeralcontainers: {e}"));
        eventually("both ephemeral containers running", T, || async {
            let p = b.pod("web").await?;
            let mut names = running_ephemeral(&p);
            names.sort();
            (names == ["debugger", "debugger2"]).then_some(())
        })
        .await;
        assert_eq!(
            mock.find_container("web", "app").map(|c| c.status.id),
            app_id,
            "the pod's container is not restarted"
        );
        let p = b.pod("web").await.unwrap_or_else(|| panic!("web gone"));
        let restarts: Vec<i32> = p
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .map(|c| c.restart_count)
            .collect();
        assert_eq!(restarts, vec![0]);
        node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
    });
}
