//! No leak under churn (issue #10): after 1,000 pods came and went on the
//! mock, every per-pod table of the kubelet holds only the live pods: the
//! pod manager, the status cache and store, the pod lifecycle records, the
//! PLEG's cache, the probe results, the volume store, admission, pending
//! resizes, the supervised pod workers, and the container restart and image
//! pull backoffs ([`Kubelet::pod_table_sizes`]). Before, nothing sent
//! `ForgetPodStatus`: the status cache grew with every pod the node ever ran.
//!
//! The pods are of four kinds, so that every table gets entries: plain
//! ones, crash-looping ones (restart backoff), ones whose image cannot be
//! pulled (image pull backoff) and ones with an emptyDir volume and a
//! readiness probe (volume store, probe results).

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::kubelet::{Kubelet, PodTableSizes};
use k8s_openapi::api::core::v1::Pod;
use support::{Node, pod, run_paused, uid_of};
use tokio::time::{Instant, sleep};

/// Twice the longest restart and pull delay (5 min): how long a backoff
/// entry may outlive its pod's last failure.
const BACKOFF_MAX_AGE: Duration = Duration::from_secs(600);

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    CrashLoop,
    NoImage,
    VolumeAndProbe,
}

fn kind(i: usize) -> Kind {
    [Kind::Plain, Kind::CrashLoop, Kind::NoImage, Kind::VolumeAndProbe][i % 4]
}

fn short_lived(i: usize) -> Pod {
    let head =
        format!("metadata: {{name: p{i}, namespace: churn, uid: u-{i}}}\nspec:\n  terminationGracePeriodSeconds: 1\n");
    let body = match kind(i) {
        Kind::Plain => r#"  containers: [{name: app, image: "busybox:1.36", command: [sleep, "3600"]}]"#,
        Kind::CrashLoop => r#"  containers: [{name: app, image: "busybox:1.36", command: [sh, -c, "exit 1"]}]"#,
        Kind::NoImage => r#"  containers: [{name: app, image: "registry.local/missing:1", command: [sleep, "3600"]}]"#,
        Kind::VolumeAndProbe => {
            r#"  volumes: [{name: scratch, emptyDir: {}}]
  containers:
    - name: app
      image: "busybox:1.36"
      command: [sleep, "3600"]
      volumeMounts: [{name: scratch, mountPath: /scratch}]
      readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}"#
        }
    };
    pod(&format!("{head}{body}\n"))
}

/// The pod got as far as its kind goes: running (and ready, with a probe),
/// restarted or backing off, or failing its pull.
fn settled(n: &Node, i: usize, p: &Pod) -> bool {
    let uid = uid_of(p);
    match kind(i) {
        Kind::Plain => n.is_running(&uid, "app"),
        Kind::CrashLoop => {
            n.restart_count(&uid, "app") >= 1 || n.waiting_reason(&uid, "app").as_deref() == Some("CrashLoopBackOff")
        }
        Kind::NoImage => matches!(
            n.waiting_reason(&uid, "app").as_deref(),
            Some("ErrImagePull" | "ImagePullBackOff")
        ),
        Kind::VolumeAndProbe => n.is_running(&uid, "app") && n.container_status(&uid, "app").is_some_and(|c| c.ready),
    }
}

/// What the node holds for the one live (plain) pod and nothing else.
fn only_the_live_pod() -> PodTableSizes {
    let mut s = PodTableSizes::default();
    (s.desired, s.statuses, s.lifecycle, s.runtime_cache) = (1, 1, 1, 1);
    (s.admitted, s.pod_workers) = (1, 1);
    // No probe entry: it has no probes (only probed containers are seeded
    // from a previous status).
    s
}

fn sizes(k: &Kubelet) -> PodTableSizes {
    k.pod_table_sizes()
}

#[test]
fn a_thousand_pods_come_and_go_and_only_the_live_ones_stay_known() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let live = short_lived(100_000);
        const WAVE: usize = 100;
        let mut peak = PodTableSizes::default();
        for wave in 0..10 {
            let pods: Vec<Pod> = (wave * WAVE..(wave + 1) * WAVE).map(short_lived).collect();
            let mut desired: Vec<&Pod> = pods.iter().collect();
            desired.push(&live);
            node.set_pods(&desired);
            node.wait_for(&format!("wave {wave} settled"), Duration::from_secs(120), |n| {
                pods.iter().enumerate().all(|(j, p)| settled(n, wave * WAVE + j, p))
            })
            .await;
            let now = sizes(&node.kubelet);
            peak.restart_backoffs = peak.restart_backoffs.max(now.restart_backoffs);
            peak.image_backoffs = peak.image_backoffs.max(now.image_backoffs);
            peak.probes = peak.probes.max(now.probes);
            peak.volumes = peak.volumes.max(now.volumes);
        }
        // Every table had entries of the churned pods: the check below means something.
        assert!(
            peak.restart_backoffs >= WAVE / 4
                && peak.image_backoffs >= WAVE / 4
                && peak.probes >= WAVE / 4
                && peak.volumes >= WAVE / 4,
            "the churn did not fill every table: {peak:?}"
        );

        node.set_pods(&[&live]);
        node.wait_for("only the live pod is known", Duration::from_secs(120), |n| {
            let k = &n.kubelet;
            k.statuses.len() == 1 && k.pod_sync_statuses.len() == 1
        })
        .await;
        // The PLEG's cache forgets a pod once it has nothing left in the
        // runtime (its sandbox goes at the container GC, every minute); the
        // backoffs drop an entry 10 min after its last failure, whether or
        // not another pod comes or goes meanwhile.
        sleep(BACKOFF_MAX_AGE).await;
        let deadline = Instant::now() + Duration::from_secs(180);
        while sizes(&node.kubelet) != only_the_live_pod() && Instant::now() < deadline {
            sleep(Duration::from_secs(1)).await;
        }
        let end = sizes(&node.kubelet);
        assert_eq!(
            end,
            only_the_live_pod(),
            "leftovers: {end:?}; probe entries of {:?}",
            node.kubelet.probes.pods(),
        );
        assert!(node.kubelet.statuses.get(&uid_of(&live)).is_some());
        println!("peak {peak:?}\nend {end:?}");
        assert!(node.is_running(&uid_of(&live), "app"));
    });
}
