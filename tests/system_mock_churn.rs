//! No leak under churn (issue #10): after 1,000 pods came and went on the
//! mock, every per-pod map of the kubelet — the status cache and store, the
//! pod lifecycle records, the PLEG's cache — holds only the live pods.
//! Before, nothing sent `ForgetPodStatus`: the status cache grew with every
//! pod the node ever ran.

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use k8s_openapi::api::core::v1::Pod;
use support::{Node, pod, run_paused, uid_of};

fn short_lived(i: usize) -> Pod {
    pod(&format!(
        r#"
metadata: {{name: p{i}, namespace: churn, uid: u-{i}}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{{name: app, image: "busybox:1.36", command: [sleep, "3600"]}}]
"#
    ))
}

#[test]
fn a_thousand_pods_come_and_go_and_only_the_live_ones_stay_known() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let live = short_lived(100_000);
        const WAVE: usize = 100;
        for wave in 0..10 {
            let pods: Vec<Pod> = (wave * WAVE..(wave + 1) * WAVE).map(short_lived).collect();
            let mut desired: Vec<&Pod> = pods.iter().collect();
            desired.push(&live);
            node.set_pods(&desired);
            node.wait_for(&format!("wave {wave} running"), Duration::from_secs(120), |n| {
                pods.iter().all(|p| n.is_running(&uid_of(p), "app"))
            })
            .await;
        }
        node.set_pods(&[&live]);
        node.wait_for("only the live pod is known", Duration::from_secs(120), |n| {
            let k = &n.kubelet;
            k.statuses.len() == 1 && k.pod_sync_statuses.len() == 1
        })
        .await;
        // The PLEG's cache forgets a pod once it has nothing left in the
        // runtime: its sandbox goes at the container GC (every minute).
        node.wait_for(
            "the PLEG cache holds only the live pod",
            Duration::from_secs(180),
            |n| n.kubelet.cache.len() == 1,
        )
        .await;
        assert!(node.kubelet.statuses.get(&uid_of(&live)).is_some());
        println!(
            "statuses {} lifecycle records {} pod cache {}",
            node.kubelet.statuses.len(),
            node.kubelet.pod_sync_statuses.len(),
            node.kubelet.cache.len()
        );
        assert!(node.is_running(&uid_of(&live), "app"));
    });
}
