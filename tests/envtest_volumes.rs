//! Volumes against a real kube-apiserver (tests/support/envtest.rs; SKIPPED
//! loudly without `KUBEBUILDER_ASSETS`): the token actlet projects into the
//! admission-added `kube-api-access-*` volume is accepted by a TokenReview
//! as the pod's service account, bound to the pod; `ca.crt` and `namespace`
//! are there; a ConfigMap edit reaches the mounted file within the sync
//! period; a secret the pod does not reference is forbidden by the Node
//! authorizer and reported as a pod event.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/backend.rs"]
mod backend;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::path::PathBuf;
use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use backend::{Backend, eventually};
use cluster::{ClusterNode, NODE, run};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const T: Duration = Duration::from_secs(60);

fn volume_dir(node: &ClusterNode, pod: &Pod, plugin: &str, name: &str) -> PathBuf {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    node.dir
        .path()
        .join("root/pods")
        .join(uid)
        .join("volumes")
        .join(plugin)
        .join(name)
}

fn sa_volume(pod: &Pod) -> String {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .map(|v| v.name.clone())
        .find(|n| n.starts_with("kube-api-access-"))
        .unwrap_or_else(|| panic!("no kube-api-access volume"))
}

#[test]
fn projected_token_passes_a_token_review_and_config_map_edits_propagate_on_envtest() {
    run(|| async {
        let Some(b) = Backend::real().await else { return };
        let cms: Api<ConfigMap> = Api::namespaced(b.admin.clone(), "default");
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "app-config"}, "data": {"mode": "fast"}}))
                .unwrap_or_else(|e| panic!("{e}"));
        cms.create(&PostParams::default(), &cm)
            .await
            .unwrap_or_else(|e| panic!("create configmap: {e}"));
        let node = b
            .start_node(MockRuntime::new(), |builder| {
                builder.configure(|c| c.sync.sync_frequency = Duration::from_secs(2))
            })
            .await;
        let pod = b
            .create_pod(&json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 2,
                    "containers": [{"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]}],
                    "volumes": [{"name": "cfg", "configMap": {"name": "app-config"}}]}}))
            .await;
        eventually("web Running", T, || async {
            let p = b.pod("web").await?;
            (p.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;

        let sa = volume_dir(&node, &pod, "kubernetes.io~projected", &sa_volume(&pod));
        let token = std::fs::read_to_string(sa.join("token")).unwrap_or_else(|e| panic!("token: {e}"));
        assert_eq!(
            std::fs::read_to_string(sa.join("namespace")).ok().as_deref(),
            Some("default")
        );
        let ca = std::fs::read_to_string(sa.join("ca.crt")).unwrap_or_default();
        assert!(ca.contains("BEGIN CERTIFICATE"), "{ca}");

        let review = TokenReview {
            spec: TokenReviewSpec {
                token,
                ..Default::default()
            },
            ..Default::default()
        };
        let reviewed = Api::<TokenReview>::all(b.admin.clone())
            .create(&PostParams::default(), &review)
            .await
            .unwrap_or_else(|e| panic!("TokenReview: {e}"));
        let status = reviewed.status.unwrap_or_default();
        assert_eq!(status.authenticated, Some(true), "{status:?}");
        let user = status.user.unwrap_or_default();
        assert_eq!(user.username.as_deref(), Some("system:serviceaccount:default:default"));
        let extra = user.extra.unwrap_or_default();
        assert_eq!(
            extra.get("authentication.kubernetes.io/pod-uid"),
            Some(&vec![pod.metadata.uid.clone().unwrap_or_default()]),
            "bound to the pod: {extra:?}"
        );

        let file = volume_dir(&node, &pod, "kubernetes.io~configmap", "cfg").join("mode");
        assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("fast"));
        cms.patch(
            "app-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"mode": "slow"}})),
        )
        .await
        .unwrap_or_else(|e| panic!("patch: {e}"));
        eventually("the edit in the mounted file", Duration::from_secs(15), || {
            let file = file.clone();
            async move { (std::fs::read_to_string(&file).ok().as_deref() == Some("slow")).then_some(()) }
        })
        .await;
    });
}

#[test]
fn an_unreferenced_secret_is_forbidden_and_reported_on_envtest() {
    run(|| async {
        let Some(b) = Backend::real().await else { return };
        let manifests = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            manifests.path().join("s.yaml"),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: s, namespace: default}\nspec:\n  containers: [{name: app, image: busybox:1.36, command: [sleep, '3600']}]\n  volumes: [{name: sec, secret: {secretName: db}}]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let path = manifests.path().to_path_buf();
        let node = b
            .start_node(MockRuntime::new(), move |builder| builder.static_pod_path(path))
            .await;
        let events: Api<Event> = Api::namespaced(b.admin.clone(), "default");
        let name = format!("s-{NODE}");
        let message = eventually("FailedMount (forbidden)", T, || {
            let (events, name) = (events.clone(), name.clone());
            async move {
                let list = events.list(&ListParams::default()).await.ok()?;
                list.items.into_iter().find_map(|e| {
                    (e.involved_object.name.as_deref() == Some(name.as_str())
                        && e.reason.as_deref() == Some("FailedMount"))
                    .then(|| e.message.unwrap_or_default())
                })
            }
        })
        .await;
        assert!(message.contains("secrets \"db\" is forbidden"), "{message}");
        let vm = node
            .kubelet
            .tree()
            .get("root/volume-manager")
            .unwrap_or_else(|| panic!("no volume manager"));
        assert_eq!(vm.restarts, 0);
    });
}
