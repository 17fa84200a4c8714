//! The CPU cost of probing (real time, mock CRI): 100 pods × 3 exec probes
//! (startup, readiness, liveness) at `periodSeconds: 1`, against the same
//! 100 pods without probes. Ignored by default (it runs for a minute):
//!
//! ```sh
//! cargo test --release --test system_mock_probes_cost -- --ignored --nocapture
//! ```

use std::time::Duration;

use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
use actlet::testing::{PodBuilder, TestNode, TestSystem, wait_until};
use k8s_openapi::api::core::v1::{ExecAction, Pod, Probe};

const PODS: usize = 100;
const WINDOW: Duration = Duration::from_secs(20);

/// CPU seconds (user + system) this process used so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    // after the command: state(0) … utime(11) stime(12), in clock ticks
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

fn probe() -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(vec!["check".into()]),
        }),
        period_seconds: Some(1),
        ..Default::default()
    }
}

fn pods(with_probes: bool) -> Vec<Pod> {
    (0..PODS)
        .map(|i| {
            PodBuilder::new(format!("p{i}"))
                .uid(format!("u{i}"))
                .container("app", "busybox:1.36", ["sleep", "3600"])
                .modify(|p| {
                    if with_probes {
                        let c = &mut p.spec.as_mut().unwrap().containers[0];
                        (c.startup_probe, c.readiness_probe, c.liveness_probe) =
                            (Some(probe()), Some(probe()), Some(probe()));
                    }
                })
                .build()
        })
        .collect()
}

/// CPU share of one core used during the window, once every pod is Ready.
async fn measure(with_probes: bool) -> (f64, u64) {
    let behaviour = Behaviour::run_forever().exec_reply(&["check"], ExecResult::exit(0));
    let node = TestNode::with_mock(MockRuntime::builder().script("app", behaviour).build());
    node.set_pods(pods(with_probes));
    let ready = || {
        node.kubelet()
            .statuses
            .snapshot()
            .values()
            .filter(|v| {
                v.status
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
            .count()
    };
    wait_until(|| ready() == PODS, Duration::from_secs(120)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let execs = node.mock().call_count("ExecSync");
    let cpu = cpu_seconds();
    tokio::time::sleep(WINDOW).await;
    let used = cpu_seconds() - cpu;
    let execs = node.mock().call_count("ExecSync") - execs;
    assert_eq!(ready(), PODS, "every pod stayed Ready");
    node.shutdown().await.unwrap();
    (used / WINDOW.as_secs_f64(), execs)
}

#[test]
#[ignore = "a one-minute measurement; run with --ignored --nocapture"]
fn cpu_cost_of_300_probes_per_second() {
    TestSystem::real_time().block_on(async {
        let (base, _) = measure(false).await;
        let (probed, execs) = measure(true).await;
        let per_sec = execs as f64 / WINDOW.as_secs_f64();
        println!(
            "100 pods without probes: {:.2}% of a core; with 3 probes each at 1 s: {:.2}% ({per_sec:.0} ExecSync/s); probes cost {:.2}% of a core",
            base * 100.0,
            probed * 100.0,
            (probed - base) * 100.0
        );
        assert!(per_sec >= 180.0, "readiness and liveness of 100 pods every second: {per_sec}");
    });
}
