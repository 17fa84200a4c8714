//! Chaos: the API server goes away for 60 s under the real actlet binary on
//! real containerd (tests/support/chaos_node.rs), with pod churn around and
//! during the outage:
//! - just before it goes: two pods are deleted (their kill and final
//!   deletion fall into the outage) and two are created;
//! - while it is away: a static pod is added and another removed (their
//!   mirror pods can only follow later);
//! - after it returns: the API equals the runtime (tests/support/invariants.rs),
//!   nothing lost or duplicated, the healthy pods untouched, node Ready again
//!   and its Lease renewed; actlet's `/metrics` show no per-pod table holding
//!   more than the pods it knows, and no actor restarted or exhausted.
//!
//! Needs `ACTLET_CRI_ENDPOINT` and `KUBEBUILDER_ASSETS` (SKIPPED loudly
//! otherwise). `ACTLET_CHAOS_SOAK_MINUTES=N` repeats the outage for N minutes.

#[path = "support/chaos_node.rs"]
mod chaos_node;
#[path = "support/daemon.rs"]
mod daemon;
#[path = "support/daemon_metrics.rs"]
mod daemon_metrics;
#[path = "support/envtest.rs"]
mod envtest;
#[path = "support/invariants.rs"]
mod invariants;

use std::time::Duration;

use chaos_node::ChaosNode;
use invariants::Expect;

/// How long the API server stays away.
const OUTAGE: Duration = Duration::from_secs(60);
/// No actor may have restarted (an API outage is an error actors handle).
const NO_RESTARTS: daemon_metrics::Allowed<'static> = &[];

/// The renew time of the node's Lease (the heartbeat).
async fn heartbeat(node: &ChaosNode) -> Option<String> {
    let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(node.admin.clone(), "kube-node-lease");
    let lease = leases.get_opt(&node.node).await.ok().flatten()?;
    Some(format!("{:?}", lease.spec?.renew_time?.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_down_60s_with_churn() {
    let Some(mut node) = ChaosNode::start("apiserver_down_60s_with_churn").await else {
        return;
    };
    let healthy: Vec<String> = (0..4).map(|i| format!("healthy-{i}")).collect();
    for name in &healthy {
        node.create_pod(name).await;
    }
    node.write_static("static-keep");
    let mut expect = Expect {
        live: healthy.iter().cloned().collect(),
        one_sandbox: true,
    };
    expect.live.insert(node.mirror_name("static-keep"));
    let world = node
        .converge("healthy pods running", &expect, &Default::default())
        .await;
    let mut stable = healthy.clone();
    stable.push(node.mirror_name("static-keep"));
    let baseline = world.baseline(&stable);
    node.settle_tables_and_actors("healthy pods running", &expect, NO_RESTARTS)
        .await;

    invariants::rounds("apiserver_down_60s_with_churn", async |round| {
        let doomed = [format!("doomed-{round}-a"), format!("doomed-{round}-b")];
        let static_gone = format!("static-gone-{round}");
        for name in &doomed {
            node.create_pod(name).await;
            expect.live.insert(name.clone());
        }
        node.write_static(&static_gone);
        expect.live.insert(node.mirror_name(&static_gone));
        node.converge("churn pods running", &expect, &baseline).await;
        node.settle_tables_and_actors("churn pods running", &expect, NO_RESTARTS)
            .await;
        let before = heartbeat(&node).await;

        // Churn right before the outage: deletions and creations in flight.
        for name in &doomed {
            node.delete_pod(name).await;
            expect.live.remove(name);
        }
        let fresh = [format!("fresh-{round}-a"), format!("fresh-{round}-b")];
        for name in &fresh {
            node.create_pod(name).await;
            expect.live.insert(name.clone());
        }
        node.env.stop_apiserver();
        node.note("API server stopped");
        // Churn during the outage: static pods come and go.
        let static_new = format!("static-new-{round}");
        node.write_static(&static_new);
        expect.live.insert(node.mirror_name(&static_new));
        node.remove_static(&static_gone);
        expect.live.remove(&node.mirror_name(&static_gone));
        tokio::time::sleep(OUTAGE).await;
        node.assert_alive();
        node.env.start_apiserver().await;
        node.note("API server back");

        node.converge("after the outage", &expect, &baseline).await;
        // Ready again (checked by converge) and the Lease renewed after the outage.
        let start = std::time::Instant::now();
        loop {
            let now = heartbeat(&node).await;
            if now.is_some() && now != before {
                break;
            }
            assert!(
                start.elapsed() < chaos_node::CONVERGE,
                "no Lease renewal after the outage (still {now:?})\n{}",
                node.log_tail(60)
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        node.settle_tables_and_actors("after the outage", &expect, NO_RESTARTS)
            .await;
        // Leave the next round a clean slate of static pods to churn.
        node.remove_static(&static_new);
        expect.live.remove(&node.mirror_name(&static_new));
    })
    .await;
}
