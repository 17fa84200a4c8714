//! Static pods are gated by full name (upstream `allowStaticPodStart`): when
//! a manifest changes and the pod gets a new UID, the new pod starts only
//! once the old one has stopped, so a control-plane pod's old and new
//! instance never hold the same ports or data directory at once.

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use support::{Node, pod, run_paused, uid_of};
use tokio::time::Instant;

#[test]
fn a_replaced_static_pod_starts_after_its_predecessor_stopped() {
    run_paused(|| async {
        let mock = MockRuntime::new();
        mock.script("old-app", Behaviour::run_forever().ignore_sigterm());
        let node = Node::start(mock.clone());
        let old = pod(r#"
metadata: {name: etcd, namespace: kube-system, uid: u-old}
spec:
  terminationGracePeriodSeconds: 10
  containers: [{name: old-app, image: "busybox:1.36", command: [sleep, "3600"]}]
"#);
        let new = pod(r#"
metadata: {name: etcd, namespace: kube-system, uid: u-new}
spec:
  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]
"#);
        node.set_pods(&[&old]);
        node.wait_for("old running", Duration::from_secs(30), |n| {
            n.is_running(&uid_of(&old), "old-app")
        })
        .await;
        let replaced = Instant::now();
        node.set_pods(&[&new]);
        node.wait_for("new running", Duration::from_secs(60), |n| {
            n.is_running(&uid_of(&new), "app")
        })
        .await;
        let old_ctr = &node.containers("etcd", "old-app")[0].status;
        let new_ctr = &node.containers("etcd", "app")[0].status;
        assert!(
            new_ctr.created_at >= old_ctr.finished_at,
            "the new pod's container was created before the old one stopped: {}",
            node.describe()
        );
        assert!(
            replaced.elapsed() >= Duration::from_secs(9),
            "the old pod had 10 s of grace: {:?}",
            replaced.elapsed()
        );
    });
}
