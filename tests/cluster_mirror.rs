//! Mirror pods against the test API server (Node authorizer + NodeRestriction):
//! a static pod gets a mirror pod owned by the Node; it is recreated after an
//! admin deletes it and after the static pod changes; orphans are deleted;
//! the static pod's status lands on its mirror pod.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use actlet::actors::supervisor::SupervisedRecipient;
use actlet::cluster::{
    ApiSource, MirrorPodDeps, MirrorPodManager, MirrorPods, StatusSyncDeps, StatusSyncSink, StatusSyncer,
};
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use actlet::messages::status::UpdatePodStatus;
use actlet::pleg::cache::PodCache;
use actlet::pod_manager::PodManager;
use actlet::status::{StatusCache, StatusManager};
use apiserver::{Identity, RecordedRequest, TestApiServer};
use cluster::{NODE, client, eventually, run};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde_json::json;
use tempfile::TempDir;

const T: Duration = Duration::from_secs(30);
const NAME: &str = "static-web-test-node";

fn static_pod(hash: &str) -> Arc<Pod> {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": NAME, "namespace": "default", "uid": hash,
            "annotations": {
                "kubernetes.io/config.hash": hash,
                "kubernetes.io/config.seen": "2026-11-21T11:11:28.000000000Z",
                "kubernetes.io/config.source": "file"
            }
        },
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "web", "image": "nginx:1.25"}],
            "tolerations": [{"operator": "Exists", "effect": "NoExecute"}]
        }
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(pod)
}

fn register_node(server: &TestApiServer) -> String {
    let node = server
        .store()
        .create("nodes", "", &json!({"metadata": {"name": NODE}}))
        .unwrap_or_else(|e| panic!("create node: {e}"));
    node["metadata"]["uid"].as_str().unwrap_or_default().to_string()
}

/// The API source (feeding `mirrors`) and the mirror pod manager.
async fn start_mirroring(server: &TestApiServer, dir: &TempDir, pods: &PodManager, mirrors: &MirrorPods) {
    let client = client(server, &Identity::node(NODE), dir).await;
    let ignore: SupervisedRecipient<SourceSnapshot> = SupervisedRecipient::from_fn(|_| {});
    ApiSource::new(client.clone(), NODE.into(), ignore, mirrors.clone()).start();
    let mut deps = MirrorPodDeps::new(client, NODE, pods.clone(), mirrors.clone());
    deps.interval = Duration::from_millis(200);
    MirrorPodManager::new(deps).start();
}

fn mirror_on_api(server: &TestApiServer) -> Option<Pod> {
    server.store().pod("default", NAME)
}

fn annotation(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.annotations.as_ref()?.get(key).cloned()
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

fn node_requests(server: &TestApiServer, method: &str, path: &str) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == method && r.path == path && r.user == "system:node:test-node")
        .collect()
}

#[test]
fn mirror_pods_follow_their_static_pods() {
    run(|| async {
        let server = TestApiServer::start();
        let node_uid = register_node(&server);
        let store = server.store();
        // A mirror pod left over from a static pod that no longer exists.
        store
            .create(
                "pods",
                "default",
                &json!({
                    "metadata": {"name": "gone-test-node", "namespace": "default",
                        "annotations": {"kubernetes.io/config.mirror": "old"}},
                    "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox:1.36"}]}
                }),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let pods = PodManager::new();
        pods.upsert(static_pod("h1"), PodSource::File);
        let mirrors = MirrorPods::new();
        start_mirroring(&server, &dir, &pods, &mirrors).await;

        // Created, with the mirror annotation and owned by the Node.
        let first = eventually("the mirror pod", T, || mirror_on_api(&server)).await;
        assert_eq!(annotation(&first, "kubernetes.io/config.mirror").as_deref(), Some("h1"));
        assert_eq!(annotation(&first, "kubernetes.io/config.hash").as_deref(), Some("h1"));
        let owner = first
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default()
            .pop()
            .unwrap_or_else(|| panic!("no owner reference"));
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("Node", NODE, node_uid.as_str(), Some(true))
        );
        assert_eq!(first.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some(NODE));
        eventually("the orphan deleted", T, || {
            store.pod("default", "gone-test-node").is_none().then_some(())
        })
        .await;

        // An admin removes it: recreated.
        store.remove("pods", "default", NAME);
        let second = eventually("a new mirror pod", T, || {
            mirror_on_api(&server).filter(|p| uid(p) != uid(&first))
        })
        .await;

        // An admin deletes it gracefully: the kubelet deletes it (grace 0, its UID)
        // and creates a new one.
        store
            .delete("pods", "default", NAME, None)
            .unwrap_or_else(|e| panic!("{e}"));
        let third = eventually("a mirror pod replacing the deleted one", T, || {
            mirror_on_api(&server).filter(|p| uid(p) != uid(&second) && p.metadata.deletion_timestamp.is_none())
        })
        .await;
        let path = format!("/api/v1/namespaces/default/pods/{NAME}");
        let deletes = node_requests(&server, "DELETE", &path);
        let delete = deletes
            .iter()
            .find(|r| {
                r.body
                    .as_ref()
                    .is_some_and(|b| b["preconditions"]["uid"] == json!(uid(&second)))
            })
            .unwrap_or_else(|| panic!("no delete of the deleting mirror: {deletes:?}"));
        assert_eq!(
            delete.body.as_ref().map(|b| b["gracePeriodSeconds"].clone()),
            Some(json!(0))
        );

        // The static pod changes (new hash, new UID): the mirror is replaced.
        pods.remove(&"h1".into());
        pods.upsert(static_pod("h2"), PodSource::File);
        let fourth = eventually("the mirror of the new static pod", T, || {
            mirror_on_api(&server).filter(|p| annotation(p, "kubernetes.io/config.mirror").as_deref() == Some("h2"))
        })
        .await;
        assert_ne!(uid(&fourth), uid(&third));

        // The static pod is gone: its mirror is an orphan.
        pods.remove(&"h2".into());
        eventually("the orphaned mirror deleted", T, || {
            mirror_on_api(&server).is_none().then_some(())
        })
        .await;

        // Never created twice: every create by the node succeeded.
        let creates = node_requests(&server, "POST", "/api/v1/namespaces/default/pods");
        assert_eq!(creates.len(), 4, "{creates:?}");
        assert!(creates.iter().all(|r| r.status == 201), "{creates:?}");
    });
}

fn running_status() -> PodStatus {
    serde_json::from_value(json!({
        "phase": "Running",
        "hostIP": "10.0.0.1",
        "podIP": "10.0.0.1",
        "startTime": "2026-11-21T11:11:28Z",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{
            "name": "web", "image": "nginx:1.25", "imageID": "", "ready": true, "restartCount": 0,
            "containerID": "mock://web", "state": {"running": {"startedAt": "2026-11-21T11:11:28Z"}}
        }]
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_static_pods_status_lands_on_its_mirror_pod() {
    run(|| async {
        let server = TestApiServer::start();
        register_node(&server);
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let pods = PodManager::new();
        let pod = static_pod("h1");
        pods.upsert(pod.clone(), PodSource::File);
        let mirrors = MirrorPods::new();
        let statuses = StatusCache::new();
        let client = client(&server, &Identity::node(NODE), &dir).await;
        let mut deps = StatusSyncDeps::new(client, pods.clone(), statuses.clone(), PodCache::new(), mirrors.clone());
        deps.initial_backoff = Duration::from_millis(100);
        deps.max_backoff = Duration::from_millis(500);
        deps.resync_interval = Duration::from_millis(300);
        let syncer = StatusSyncer::new(deps).start();
        let manager = StatusManager::with_cache(statuses)
            .with_sink(StatusSyncSink::new(syncer.recipient()))
            .start();
        // The status comes before the mirror pod exists: it waits for it.
        manager.do_send(UpdatePodStatus {
            pod: pod.clone(),
            status: running_status(),
        });
        start_mirroring(&server, &dir, &pods, &mirrors).await;

        let mirror = eventually("the status on the mirror pod", T, || {
            mirror_on_api(&server).filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        })
        .await;
        let patches = node_requests(
            &server,
            "PATCH",
            &format!("/api/v1/namespaces/default/pods/{NAME}/status"),
        );
        let last = patches.last().unwrap_or_else(|| panic!("no status patch"));
        assert_eq!(
            last.body.as_ref().map(|b| b["metadata"]["uid"].clone()),
            Some(json!(uid(&mirror))),
            "written with the mirror pod's UID"
        );
        assert_eq!(
            mirror
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .map(|c| c.len()),
            Some(1)
        );

        // The mirror pod is removed and recreated: the resync writes the
        // (unchanged) status to the new one.
        server.store().remove("pods", "default", NAME);
        eventually("the status on the recreated mirror pod", T, || {
            mirror_on_api(&server)
                .filter(|p| uid(p) != uid(&mirror))
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        })
        .await;
    });
}

#[test]
fn mirror_pods_wait_for_the_node_to_register() {
    run(|| async {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let pods = PodManager::new();
        pods.upsert(static_pod("h1"), PodSource::File);
        let mirrors = MirrorPods::new();
        start_mirroring(&server, &dir, &pods, &mirrors).await;
        eventually("the node looked up", T, || {
            node_requests(&server, "GET", &format!("/api/v1/nodes/{NODE}"))
                .iter()
                .any(|r| r.status == 404)
                .then_some(())
        })
        .await;
        assert!(
            node_requests(&server, "POST", "/api/v1/namespaces/default/pods").is_empty(),
            "no mirror pod without its owner"
        );
        let node_uid = register_node(&server);
        let mirror = eventually("the mirror pod", T, || mirror_on_api(&server)).await;
        let owner = mirror.metadata.owner_references.unwrap_or_default();
        assert_eq!(owner.first().map(|o| o.uid.as_str()), Some(node_uid.as_str()));
    });
}

/// An API server that accepts connections and never answers: each accepted
/// connection is counted and held open.
fn black_hole() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    (port, accepted)
}

#[test]
fn a_hanging_api_call_is_abandoned_at_the_action_deadline_and_retried() {
    run(|| async {
        let (port, accepted) = black_hole();
        let url: http::Uri = format!("http://127.0.0.1:{port}")
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        let client = kube::Client::try_from(kube::Config::new(url)).unwrap_or_else(|e| panic!("client: {e}"));
        let pods = PodManager::new();
        pods.upsert(static_pod("h1"), PodSource::File);
        let mut deps = MirrorPodDeps::new(client, NODE, pods, MirrorPods::new());
        deps.interval = Duration::from_millis(100);
        deps.action_deadline = Duration::from_millis(500);
        MirrorPodManager::new(deps).start();
        // The first action hangs on its first call; without a deadline its
        // name's slot stays taken and no second call is ever made.
        let n = eventually("a retried action after the deadline", T, || {
            let n = accepted.load(std::sync::atomic::Ordering::SeqCst);
            (n >= 3).then_some(n)
        })
        .await;
        assert!(n >= 3);
    });
}
