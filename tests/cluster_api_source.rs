//! The `api` pod source against the test API server: pods bound to the node
//! run; a watch expiry (410) or an API server restart re-lists without
//! disturbing running pods; the API server going away and coming back loses
//! nothing.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use apiserver::TestApiServer;
use cluster::{bound_pod, eventually, run, start_node};

const T: Duration = Duration::from_secs(30);

fn running(node: &cluster::ClusterNode, name: &str) -> Option<()> {
    (node.kubelet.phase_of_named("default", name).as_deref() == Some("Running")).then_some(())
}

#[test]
fn bound_pods_run_and_survive_watch_expiry_and_apiserver_restart() {
    run(|| async {
        let server = TestApiServer::start();
        let store = server.store();
        store
            .create("pods", "default", &bound_pod("before", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut other = bound_pod("elsewhere", "sleep 3600");
        other["spec"]["nodeName"] = "other-node".into();
        store
            .create("pods", "default", &other)
            .unwrap_or_else(|e| panic!("{e}"));

        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = start_node(&server, mock.clone(), |b| b).await;
        eventually("the listed pod runs", T, || running(&node, "before")).await;

        store
            .create("pods", "default", &bound_pod("during", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("the watched pod runs", T, || running(&node, "during")).await;
        assert_eq!(node.kubelet.phase_of_named("default", "elsewhere"), None, "not ours");

        // The watch request carries the field selector.
        let watch = server
            .requests()
            .into_iter()
            .find(|r| r.is_watch() && r.path == "/api/v1/pods")
            .unwrap_or_else(|| panic!("no pod watch"));
        assert_eq!(
            watch.query_param("fieldSelector").as_deref(),
            Some("spec.nodeName=test-node")
        );

        // An API server restart breaks the watch mid-stream: it resumes.
        let starts = mock.calls_to("StartContainer").len();
        server.restart();
        store
            .create("pods", "default", &bound_pod("after-restart", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("the pod created after the restart runs", T, || {
            running(&node, "after-restart")
        })
        .await;

        // Down for a while, with writes the watch misses and a watch cache that
        // starts over: the watch gets 410 Gone and the source re-lists.
        let lists = || {
            server
                .requests()
                .iter()
                .filter(|r| r.path == "/api/v1/pods" && !r.is_watch())
                .count()
        };
        let lists_before = lists();
        server.set_down(true);
        store
            .create("pods", "default", &bound_pod("while-down", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        store.remove("pods", "default", "during");
        server.expire_watch_cache();
        tokio::time::sleep(Duration::from_secs(1)).await;
        server.set_down(false);
        eventually("the pod created while down runs", T, || running(&node, "while-down")).await;
        eventually("the pod removed while down is killed", T, || {
            node.kubelet.phase_of_named("default", "during").is_none().then_some(())
        })
        .await;
        assert!(lists() > lists_before, "re-listed after 410");
        assert_eq!(
            mock.calls_to("StartContainer").len(),
            starts + 2,
            "only the two new pods started"
        );
        assert_eq!(
            mock.calls_to("StopContainer").len(),
            1,
            "only the removed pod was killed"
        );
        assert!(running(&node, "before").is_some() && running(&node, "after-restart").is_some());
        node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
    });
}

/// After an outage the pod watch resumes when the node's heartbeat gets
/// through again, not when its backoff ends: with a 10 min watch backoff the
/// pod created while the API server was away still runs within seconds of
/// its return (without the Lease's signal it would wait the 10 min).
#[test]
fn the_pod_watch_restarts_when_the_heartbeat_gets_through_again() {
    run(|| async {
        let server = TestApiServer::start();
        let store = server.store();
        store
            .create("pods", "default", &bound_pod("before", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = start_node(&server, mock.clone(), |b| {
            b.configure(|c| {
                c.api_watch_backoff = actlet::cluster::WatchBackoffPolicy {
                    initial: Duration::from_secs(600),
                    max: Duration::from_secs(600),
                };
            })
        })
        .await;
        eventually("the listed pod runs", T, || running(&node, "before")).await;
        let lists = || {
            server
                .requests()
                .iter()
                .filter(|r| r.path == "/api/v1/pods" && !r.is_watch())
                .count()
        };
        let lists_before = lists();

        server.set_down(true);
        store
            .create("pods", "default", &bound_pod("while-down", "sleep 3600"))
            .unwrap_or_else(|e| panic!("{e}"));
        // Long enough for the watch to fail and the Lease (renewed every 10 s)
        // to miss a renewal.
        tokio::time::sleep(Duration::from_secs(12)).await;
        server.set_down(false);
        eventually("the pod created while down runs", T, || running(&node, "while-down")).await;
        assert!(lists() > lists_before, "the restarted watch re-listed");
        assert!(running(&node, "before").is_some(), "the running pod is untouched");
        assert_eq!(mock.calls_to("StartContainer").len(), 2, "no container restarted");
        node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
    });
}
