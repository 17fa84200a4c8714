//! The status syncer against the test API server: the real StatusManager with
//! the syncer's sink; statuses reach `pods/status` with the UID check; an API
//! server that is down loses nothing and gets only the latest status; a pod
//! deleted with a grace period is finalised (grace 0, UID precondition) once
//! nothing of it runs.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};
use actlet::cluster::{MirrorPods, StatusSyncDeps, StatusSyncSink, StatusSyncer};
use actlet::kuberuntime::pod_status::{RuntimePodStatus, SandboxState, SandboxStatus};
use actlet::messages::PodUid;
use actlet::messages::pod_update::PodSource;
use actlet::messages::status::UpdatePodStatus;
use actlet::pleg::cache::PodCache;
use actlet::pod_manager::PodManager;
use actlet::status::{StatusCache, StatusManager};
use apiserver::{Identity, RecordedRequest, TestApiServer};
use cluster::{NODE, bound_pod, client, eventually, run};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde_json::json;
use tempfile::TempDir;

const T: Duration = Duration::from_secs(30);

/// The syncer, the status manager feeding it, and the shared state.
struct Harness {
    manager: Addr<StatusManager>,
    pods: PodManager,
    runtime: PodCache,
    _dir: TempDir,
}

async fn start(server: &TestApiServer, resync: Duration) -> Harness {
    let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let client = client(server, &Identity::node(NODE), &dir).await;
    let pods = PodManager::new();
    let statuses = StatusCache::new();
    let runtime = PodCache::new();
    let mut deps = StatusSyncDeps::new(
        client,
        pods.clone(),
        statuses.clone(),
        runtime.clone(),
        MirrorPods::new(),
    );
    deps.resync_interval = resync;
    deps.initial_backoff = Duration::from_millis(100);
    deps.max_backoff = Duration::from_millis(500);
    let syncer = StatusSyncer::new(deps).start();
    let manager = StatusManager::with_cache(statuses)
        .with_sink(StatusSyncSink::new(syncer.recipient()))
        .start();
    Harness {
        manager,
        pods,
        runtime,
        _dir: dir,
    }
}

/// Creates `name` bound to the node as admin and puts it in the pod manager.
fn create_api_pod(server: &TestApiServer, h: &Harness, name: &str) -> Arc<Pod> {
    let created = server
        .store()
        .create("pods", "default", &bound_pod(name, "sleep 3600"))
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
    let pod: Pod = serde_json::from_value(created).unwrap_or_else(|e| panic!("{e}"));
    let pod = Arc::new(pod);
    h.pods.upsert(pod.clone(), PodSource::Api);
    pod
}

fn running_status(restarts: i32) -> PodStatus {
    serde_json::from_value(json!({
        "phase": "Running",
        "hostIP": "10.0.0.1",
        "podIP": "10.244.1.5",
        "podIPs": [{"ip": "10.244.1.5"}],
        "startTime": "2026-11-21T11:11:28Z",
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True"},
            {"type": "ContainersReady", "status": "True"},
            {"type": "PodScheduled", "status": "True"}
        ],
        "containerStatuses": [{
            "name": "app", "image": "busybox:1.36", "imageID": "", "ready": true,
            "restartCount": restarts, "started": true,
            "containerID": format!("mock://c{restarts}"),
            "state": {"running": {"startedAt": "2026-11-21T11:11:28Z"}}
        }]
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn send(h: &Harness, pod: &Arc<Pod>, status: PodStatus) {
    h.manager.do_send(UpdatePodStatus {
        pod: pod.clone(),
        status,
    });
}

fn status_patches(server: &TestApiServer, name: &str) -> Vec<RecordedRequest> {
    let path = format!("/api/v1/namespaces/default/pods/{name}/status");
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path == path)
        .collect()
}

fn api_restarts(server: &TestApiServer, name: &str) -> Option<i32> {
    let pod = server.store().pod("default", name)?;
    pod.status?.container_statuses?.first().map(|c| c.restart_count)
}

#[test]
fn status_reaches_the_api_with_the_uid_check() {
    run(|| async {
        let server = TestApiServer::start();
        let h = start(&server, Duration::from_secs(10)).await;
        let pod = create_api_pod(&server, &h, "web");
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut not_ready = running_status(0);
        not_ready.phase = Some("Pending".into());
        for c in not_ready.conditions.iter_mut().flatten() {
            if c.type_ == "Ready" {
                c.status = "False".into();
                c.reason = Some("ContainersNotReady".into());
                c.message = Some("containers with unready status: [app]".into());
            }
        }
        send(&h, &pod, not_ready);
        eventually("Pending on the API", T, || {
            (server
                .store()
                .pod("default", "web")?
                .status?
                .conditions?
                .iter()
                .any(|c| c.reason.is_some()))
            .then_some(())
        })
        .await;
        send(&h, &pod, running_status(0));

        let on_api = eventually("the status on the API", T, || {
            let p = server.store().pod("default", "web")?;
            (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
        })
        .await;
        let status = on_api.status.unwrap_or_default();
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.1.5"));
        assert_eq!(status.host_ip.as_deref(), Some("10.0.0.1"));
        let types: Vec<String> = status.conditions.iter().flatten().map(|c| c.type_.clone()).collect();
        assert_eq!(types, ["Initialized", "Ready", "ContainersReady", "PodScheduled"]);
        let ready = status.conditions.iter().flatten().find(|c| c.type_ == "Ready");
        assert_eq!(
            ready.map(|c| (c.status.as_str(), c.reason.as_deref(), c.message.as_deref())),
            Some(("True", None, None)),
            "the not-ready reason is cleared"
        );
        let cs = status.container_statuses.unwrap_or_default();
        assert_eq!(cs.len(), 1);
        assert!(cs[0].state.as_ref().and_then(|s| s.running.as_ref()).is_some());

        let patches = status_patches(&server, "web");
        let patch = patches.last().unwrap_or_else(|| panic!("no status patch"));
        assert_eq!(patch.status, 200);
        assert_eq!(patch.user, "system:node:test-node");
        assert_eq!(
            patch.content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        let body = patch.body.clone().unwrap_or_default();
        assert_eq!(body["metadata"]["uid"], json!(uid), "the UID check");
        assert_eq!(
            body["status"]["$setElementOrder/conditions"][0],
            json!({"type": "Initialized"})
        );
        let ready_patch = body["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(ready_patch["reason"], json!(null), "{body}");
        assert!(ready_patch.get("reason").is_some(), "cleared explicitly: {body}");

        // An unchanged status is not written again.
        let writes = patches.len();
        send(&h, &pod, running_status(0));
        send(&h, &pod, running_status(1));
        eventually("the new status on the API", T, || {
            (api_restarts(&server, "web") == Some(1)).then_some(())
        })
        .await;
        assert_eq!(status_patches(&server, "web").len(), writes + 1);
    });
}

#[test]
fn the_resync_restores_a_status_changed_behind_our_back() {
    run(|| async {
        let server = TestApiServer::start();
        let h = start(&server, Duration::from_millis(300)).await;
        let pod = create_api_pod(&server, &h, "web");
        send(&h, &pod, running_status(2));
        eventually("the status on the API", T, || {
            (api_restarts(&server, "web") == Some(2)).then_some(())
        })
        .await;

        // Someone else rewrites the status; the watch brings it to the pod manager.
        let patched = server
            .store()
            .patch(
                "pods",
                "default",
                "web",
                Some("status"),
                "application/merge-patch+json",
                &json!({"status": {"phase": "Pending", "containerStatuses": []}}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let seen: Pod = serde_json::from_value(patched).unwrap_or_else(|e| panic!("{e}"));
        h.pods.upsert(Arc::new(seen), PodSource::Api);

        eventually("our status back on the API", T, || {
            let p = server.store().pod("default", "web")?;
            (p.status?.phase.as_deref() == Some("Running") && api_restarts(&server, "web") == Some(2)).then_some(())
        })
        .await;

        // Once equal, resyncs read but do not write.
        let writes = status_patches(&server, "web").len();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let all = status_patches(&server, "web");
        assert_eq!(all.len(), writes, "resyncs patched an equal status");
    });
}

#[test]
fn a_recreated_pod_does_not_get_the_old_pods_status() {
    run(|| async {
        let server = TestApiServer::start();
        let h = start(&server, Duration::from_secs(10)).await;
        let pod = create_api_pod(&server, &h, "web");
        // Deleted and recreated under the same name before the status is sent.
        server.store().remove("pods", "default", "web");
        server
            .store()
            .create("pods", "default", &bound_pod("web", "sleep 1"))
            .unwrap_or_else(|e| panic!("{e}"));
        send(&h, &pod, running_status(0));
        let marker = create_api_pod(&server, &h, "marker");
        send(&h, &marker, running_status(0));
        eventually("a later pod's status on the API", T, || {
            api_restarts(&server, "marker").map(|_| ())
        })
        .await;
        assert_eq!(
            server
                .store()
                .pod("default", "web")
                .and_then(|p| p.status?.phase)
                .as_deref(),
            Some("Pending"),
            "the new pod's status is untouched"
        );
        assert!(status_patches(&server, "web").is_empty());
    });
}

#[test]
fn statuses_sent_while_the_api_server_is_down_converge_to_the_latest() {
    run(|| async {
        let server = TestApiServer::start();
        let h = start(&server, Duration::from_secs(10)).await;
        let pod = create_api_pod(&server, &h, "web");
        send(&h, &pod, running_status(0));
        eventually("the first status", T, || {
            (api_restarts(&server, "web") == Some(0)).then_some(())
        })
        .await;

        server.set_down(true);
        for restarts in 1..=4 {
            send(&h, &pod, running_status(restarts));
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        // Let a few retries fail.
        tokio::time::sleep(Duration::from_millis(700)).await;
        server.clear_requests();
        server.set_down(false);

        eventually("the latest status after the API server returns", T, || {
            (api_restarts(&server, "web") == Some(4)).then_some(())
        })
        .await;
        let patches = status_patches(&server, "web");
        assert!(!patches.is_empty());
        for p in &patches {
            let body = p.body.clone().unwrap_or_default();
            assert_eq!(
                body["status"]["containerStatuses"][0]["restartCount"],
                json!(4),
                "only the latest status is written: {body}"
            );
        }
    });
}

fn runtime_with_sandbox(uid: &str, state: SandboxState) -> Arc<RuntimePodStatus> {
    let mut s = RuntimePodStatus::empty(PodUid::from(uid), "web", "default");
    s.sandboxes.push(SandboxStatus {
        id: "sandbox-1".into(),
        state,
        created_at: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        attempt: 0,
        ips: vec!["10.244.1.5".into()],
        host_network: false,
    });
    Arc::new(s)
}

#[test]
fn a_gracefully_deleted_pod_is_finalised_once_stopped() {
    run(|| async {
        let server = TestApiServer::start();
        let h = start(&server, Duration::from_millis(300)).await;
        let pod = create_api_pod(&server, &h, "web");
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let key = PodUid::from(uid.as_str());
        h.runtime.set(
            key.clone(),
            Some(runtime_with_sandbox(&uid, SandboxState::Ready)),
            None,
            tokio::time::Instant::now(),
        );
        send(&h, &pod, running_status(0));
        eventually("the status on the API", T, || api_restarts(&server, "web").map(|_| ())).await;

        // The admin deletes it with a grace period; the sync loop gets the pod
        // with its deletionTimestamp.
        server
            .store()
            .delete("pods", "default", "web", Some(30))
            .unwrap_or_else(|e| panic!("{e}"));
        let deleting = server
            .store()
            .pod("default", "web")
            .unwrap_or_else(|| panic!("graceful delete keeps the pod"));
        assert!(deleting.metadata.deletion_timestamp.is_some());
        let deleting = Arc::new(deleting);
        h.pods.upsert(deleting.clone(), PodSource::Api);
        // Several resyncs while the sandbox is still ready: never deleted.
        let deletes = || {
            server
                .requests()
                .into_iter()
                .filter(|r| r.method == "DELETE" && r.path == "/api/v1/namespaces/default/pods/web")
                .collect::<Vec<_>>()
        };
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert!(deletes().is_empty(), "the pod still runs");
        assert!(server.store().pod("default", "web").is_some());

        // Killed: the final status, and nothing left in the runtime.
        h.runtime.set(
            key,
            Some(runtime_with_sandbox(&uid, SandboxState::NotReady)),
            None,
            tokio::time::Instant::now(),
        );
        let mut stopped = running_status(0);
        stopped.phase = Some("Failed".into());
        stopped.container_statuses = Some(
            serde_json::from_value(json!([{
                "name": "app", "image": "busybox:1.36", "imageID": "", "ready": false,
                "restartCount": 0, "started": false, "containerID": "mock://c0",
                "state": {"terminated": {"exitCode": 137, "reason": "Error",
                    "startedAt": "2026-11-21T11:11:28Z", "finishedAt": "2026-11-21T11:11:40Z"}}
            }]))
            .unwrap_or_else(|e| panic!("{e}")),
        );
        send(&h, &deleting, stopped);

        eventually("the pod deleted from the API", T, || {
            server.store().pod("default", "web").is_none().then_some(())
        })
        .await;
        let deletes = deletes();
        assert_eq!(deletes.len(), 1, "{deletes:?}");
        let body = deletes[0].body.clone().unwrap_or_default();
        assert_eq!(body["gracePeriodSeconds"], json!(0));
        assert_eq!(body["preconditions"]["uid"], json!(uid));
        assert_eq!(deletes[0].status, 200);
        // The final status was written before the delete.
        let log = server.requests();
        let last_patch = log
            .iter()
            .rposition(|r| r.method == "PATCH" && r.path.ends_with("/pods/web/status"))
            .unwrap_or_else(|| panic!("no status patch"));
        let delete_at = log
            .iter()
            .position(|r| r.method == "DELETE")
            .unwrap_or_else(|| panic!("no delete"));
        assert!(last_patch < delete_at);
        let final_phase = log[last_patch].body.clone().unwrap_or_default()["status"]["phase"].clone();
        assert_eq!(final_phase, json!("Failed"));
    });
}
