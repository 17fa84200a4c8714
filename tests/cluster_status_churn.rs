//! No leak in the status syncer (issue #10, "Done when" 3): 1,000 pods'
//! statuses go through the real status manager and syncer to the test API
//! server, a third of the pods are deleted from the API meanwhile (the syncer
//! marks them done), then every pod but one is forgotten. The syncer's
//! per-pod sets (`dirty`, `in_flight`, `backing_off`, `failures`, `written`,
//! `done`) end up holding only the live pod, both when the status manager's
//! `Forgotten` reaches the syncer and when it is lost (the next resync drops
//! pods without a status).
//!
//! Real time (the API server runs on real sockets); the syncer's periodic
//! resync is an hour, so each way of forgetting is seen on its own.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Addr};
use actlet::actors::supervisor::SupervisedRecipient;
use actlet::cluster::status_sync::{GetSyncerPods, SyncerPods};
use actlet::cluster::{MirrorPods, Qps, StatusSyncDeps, StatusSyncSink, StatusSyncer, client_from_kubeconfig};
use actlet::messages::PodUid;
use actlet::messages::pod_update::PodSource;
use actlet::messages::status::{ForgetPodStatus, ResyncStatuses, StatusSyncEvent, UpdatePodStatus};
use actlet::pleg::cache::PodCache;
use actlet::pod_manager::PodManager;
use actlet::status::{StatusCache, StatusManager};
use apiserver::{Identity, TestApiServer};
use cluster::{NODE, bound_pod, eventually, run};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use serde_json::json;
use tempfile::TempDir;

const PODS: usize = 1000;
const T: Duration = Duration::from_secs(120);

fn status(restarts: i32) -> PodStatus {
    serde_json::from_value(json!({
        "phase": "Running",
        "hostIP": "10.0.0.1",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{
            "name": "app", "image": "busybox:1.36", "imageID": "", "ready": true,
            "restartCount": restarts, "started": true,
            "state": {"running": {"startedAt": "2026-11-21T11:11:28Z"}}
        }]
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

async fn sizes(syncer: &Addr<StatusSyncer>) -> SyncerPods {
    syncer
        .send(GetSyncerPods)
        .await
        .unwrap_or_else(|e| panic!("syncer: {e}"))
}

async fn wait_sizes(syncer: &Addr<StatusSyncer>, what: &str, cond: impl Fn(&SyncerPods) -> bool) -> SyncerPods {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let s = sizes(syncer).await;
        if cond(&s) {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_thousand_pods_forgotten_leave_only_the_live_one_in_the_syncer() {
    run(|| async {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, server.kubeconfig(&Identity::node(NODE))).unwrap_or_else(|e| panic!("{e}"));
        let fast = Qps {
            qps: 10_000,
            burst: 10_000,
        };
        let client = client_from_kubeconfig(&kubeconfig, fast)
            .await
            .unwrap_or_else(|e| panic!("client: {e}"));
        let (pods, statuses) = (PodManager::new(), StatusCache::new());
        let mut deps = StatusSyncDeps::new(
            client,
            pods.clone(),
            statuses.clone(),
            PodCache::new(),
            MirrorPods::new(),
        );
        deps.resync_interval = Duration::from_secs(3600);
        deps.initial_backoff = Duration::from_millis(100);
        deps.max_backoff = Duration::from_millis(500);
        let syncer = StatusSyncer::new(deps).start();
        // The sink loses the `Forgotten` of these pods (as if the syncer was
        // restarting when the status manager told it).
        let lose: Arc<Mutex<HashSet<PodUid>>> = Arc::default();
        let (to, lost) = (syncer.clone(), lose.clone());
        let sink = SupervisedRecipient::from_fn(move |e: StatusSyncEvent| {
            if let StatusSyncEvent::Forgotten(uid) = &e
                && lost.lock().unwrap_or_else(|p| p.into_inner()).contains(uid)
            {
                return;
            }
            to.do_send(e);
        });
        let manager = StatusManager::with_cache(statuses.clone())
            .with_sink(StatusSyncSink::new(sink))
            .start();

        let mut all: Vec<Arc<Pod>> = Vec::new();
        for i in 0..=PODS {
            let created = server
                .store()
                .create("pods", "default", &bound_pod(&format!("p{i}"), "sleep 3600"))
                .unwrap_or_else(|e| panic!("create p{i}: {e}"));
            let pod: Arc<Pod> = Arc::new(serde_json::from_value(created).unwrap_or_else(|e| panic!("{e}")));
            pods.upsert(pod.clone(), PodSource::Api);
            manager.do_send(UpdatePodStatus {
                pod: pod.clone(),
                status: status(0),
            });
            all.push(pod);
        }
        let live = all.pop().unwrap_or_else(|| panic!("no pods"));
        let uid = |p: &Pod| PodUid::from(p.metadata.uid.as_deref().unwrap_or_default());
        let written = wait_sizes(&syncer, "every status written", |s| s.written == PODS + 1).await;
        assert_eq!(written.total, PODS + 1, "{written:?}");

        // A third are deleted from the API behind the node's back; their next
        // status finds them gone: done.
        for (i, p) in all.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
            server
                .store()
                .delete("pods", "default", &format!("p{i}"), None)
                .unwrap_or_else(|e| panic!("delete p{i}: {e}"));
            manager.do_send(UpdatePodStatus {
                pod: p.clone(),
                status: status(1),
            });
        }
        let gone = PODS.div_ceil(3);
        let done = wait_sizes(&syncer, "the deleted pods done", |s| s.done == gone).await;
        assert_eq!(done.total, PODS + 1, "{done:?}");

        // Every pod but the live one goes; half the `Forgotten`s are lost.
        let (heard, unheard): (Vec<_>, Vec<_>) = all.iter().enumerate().partition(|(i, _)| i % 2 == 0);
        lose.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(unheard.iter().map(|(_, p)| uid(p)));
        for (_, p) in heard.iter().chain(&unheard) {
            pods.remove(&uid(p));
            manager.do_send(ForgetPodStatus { uid: uid(p) });
        }
        eventually("the status cache holds the live pod", T, || {
            (statuses.len() == 1).then_some(())
        })
        .await;
        let told = wait_sizes(&syncer, "the told pods forgotten", |s| s.total == 1 + unheard.len()).await;
        assert_eq!(told.total, 1 + unheard.len(), "only the unheard pods stay: {told:?}");

        // The resync drops pods without a status.
        syncer.do_send(ResyncStatuses);
        let end = wait_sizes(&syncer, "only the live pod", |s| s.total == 1 && s.in_flight == 0).await;
        assert_eq!(
            end,
            SyncerPods {
                written: 1,
                total: 1,
                ..SyncerPods::default()
            },
            "only the live pod's written status stays"
        );
        assert!(statuses.get(&uid(&live)).is_some());
    });
}
