//! Chaos: `kill -9` the real actlet binary mid-sync 10 times in a row, on real
//! containerd against a real kube-apiserver (tests/support/chaos_node.rs),
//! while pods are created and deleted through the API; actlet is started
//! again (same root dir, same node) after each kill.
//!
//! Afterwards the invariants of tests/support/invariants.rs hold: exactly one
//! sandbox per live pod, no healthy container restarted (same id,
//! restartCount 0), the API's statuses equal the runtime, every deleted pod
//! is gone from the API and from the runtime, and the node is Ready; and the
//! last actlet's `/metrics` show no per-pod table holding more than the pods
//! it knows, and no actor of its tree restarted or exhausted (each kill
//! starts a new process, whose counters start at 0; nothing in it is killed).
//!
//! Needs `ACTLET_CRI_ENDPOINT` and `KUBEBUILDER_ASSETS` (SKIPPED loudly
//! otherwise). `ACTLET_CHAOS_SOAK_MINUTES=N` repeats the ten kills for N minutes.

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

use std::collections::BTreeSet;
use std::time::Duration;

use chaos_node::ChaosNode;
use invariants::Expect;

const HEALTHY: usize = 4;
const KILLS: u32 = 10;
/// No actor of the running actlet may have restarted.
const NO_RESTARTS: daemon_metrics::Allowed<'static> = &[];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_sync_ten_times() {
    let Some(mut node) = ChaosNode::start("kill_9_mid_sync_ten_times").await else {
        return;
    };
    let healthy: Vec<String> = (0..HEALTHY).map(|i| format!("healthy-{i}")).collect();
    for name in &healthy {
        node.create_pod(name).await;
    }
    let mut expect = Expect {
        live: healthy.iter().cloned().collect(),
        one_sandbox: true,
    };
    let world = node
        .converge("healthy pods running", &expect, &Default::default())
        .await;
    let baseline = world.baseline(&healthy);
    assert_eq!(baseline.len(), HEALTHY, "{}", world.describe());
    node.settle_tables_and_actors("healthy pods running", &expect, NO_RESTARTS)
        .await;

    let mut churned: Vec<String> = Vec::new();
    invariants::rounds("kill_9_mid_sync_ten_times", async |round| {
        for i in 0..KILLS {
            // Churn: one pod created, the one created two kills ago deleted.
            let name = format!("churn-{round}-{i}");
            node.create_pod(&name).await;
            churned.push(name.clone());
            expect.live.insert(name);
            if churned.len() >= 3 {
                let old = churned[churned.len() - 3].clone();
                node.delete_pod(&old).await;
                expect.live.remove(&old);
            }
            // Kill at a different point of the sync each time (deterministic).
            let delay = Duration::from_millis(150 + u64::from(i * 173 % 900));
            tokio::time::sleep(delay).await;
            node.assert_alive();
            node.kill_9();
            node.note(format!("kill -9 #{} after {delay:?}", i + 1));
            node.spawn().await;
        }
        let world = node.converge("after the kills", &expect, &baseline).await;
        node.settle_tables_and_actors("after the kills", &expect, NO_RESTARTS)
            .await;
        node.note(format!("round {round}:\n{}", world.describe()));
        let live: BTreeSet<String> = world.pods.iter().map(|p| p.name.clone()).collect();
        assert_eq!(live, expect.live, "{}", world.describe());
    })
    .await;
}
