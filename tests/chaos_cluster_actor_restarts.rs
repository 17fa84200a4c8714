//! Chaos, actor by actor, in cluster mode: each cluster actor (status
//! syncer, node, node lease, API source, mirror pods, event recorder) is
//! killed mid-flight (its instance dropped, as a panic would) while the
//! kubelet runs against the test API server on the mock CRI, and the cluster
//! must not notice: pods bound before and after the restart run and their
//! status reaches the API, a graceful delete is finalised, the Lease keeps
//! being renewed, the Node stays Ready, nothing is started twice.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/kill_child.rs"]
mod kill_child;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use apiserver::TestApiServer;
use cluster::{NODE, bound_pod, eventually, node_condition, run, start_node};
use kill_child::{assert_restarted_after_kills, kill_child};

const T: Duration = Duration::from_secs(30);

fn phase(server: &TestApiServer, name: &str) -> Option<String> {
    server.store().pod("default", name)?.status?.phase
}

fn renew_time(server: &TestApiServer) -> Option<k8s_openapi::jiff::Timestamp> {
    server.store().lease(NODE)?.spec?.renew_time.map(|t| t.0)
}

async fn survives_restart_of(actor: &str) {
    let server = TestApiServer::start();
    let store = server.store();
    store
        .create("pods", "default", &bound_pod("before", "sleep 3600"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let node = start_node(&server, mock.clone(), |b| b).await;
    eventually("before Running in the API", T, || {
        (phase(&server, "before")? == "Running").then_some(())
    })
    .await;
    eventually("node Ready", T, || {
        let n = server.store().node(NODE)?;
        (node_condition(&n, "Ready")?.status == "True").then_some(())
    })
    .await;

    kill_child(&node.kubelet, actor).await;

    // The cluster keeps changing around the restart.
    store
        .create("pods", "default", &bound_pod("after", "sleep 3600"))
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .delete("pods", "default", "before", Some(5))
        .unwrap_or_else(|e| panic!("{e}"));
    eventually("after Running in the API", T, || {
        (phase(&server, "after")? == "Running").then_some(())
    })
    .await;
    eventually("before finalised (deleted by the node)", T, || {
        server.store().pod("default", "before").is_none().then_some(())
    })
    .await;
    let renewed = renew_time(&server);
    eventually("lease renewed after the restart", Duration::from_secs(25), || {
        (renew_time(&server) > renewed).then_some(())
    })
    .await;
    let n = server.store().node(NODE).expect("node");
    assert_eq!(node_condition(&n, "Ready").map(|c| c.status), Some("True".into()));

    assert_eq!(mock.calls_to("RunPodSandbox").len(), 2, "{actor}: one sandbox per pod");
    assert_eq!(mock.calls_to("StartContainer").len(), 2, "{actor}: one start per pod");
    assert_restarted_after_kills(&node.kubelet, actor, 1);
}

macro_rules! chaos {
    ($($test:ident => $actor:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            run(|| survives_restart_of($actor));
        }
    )*};
}

chaos! {
    status_syncer_restart_goes_unnoticed => "status-syncer",
    node_restart_goes_unnoticed => "node",
    node_lease_restart_goes_unnoticed => "node-lease",
    api_source_restart_goes_unnoticed => "api-source",
    mirror_pods_restart_goes_unnoticed => "mirror-pods",
    events_restart_goes_unnoticed => "events",
}
