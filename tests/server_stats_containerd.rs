//! `/stats/summary` and `/metrics/resource` from a real containerd (the
//! `actlet` binary, anonymous + AlwaysAllow): a busy container's CPU and
//! memory, containerd's own `usageNanoCores`, the image filesystem, and
//! whether containerd answers `ListPodSandboxStats` (the pod's network and
//! process count come from it; without it, from the pod cgroup).
//! Skipped loudly without `ACTLET_CRI_ENDPOINT` (see tests/support/daemon.rs).

#[path = "support/daemon.rs"]
mod daemon;
#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::time::Duration;

use actlet::cri::Runtime;
use daemon::{Env, phase};
use kubelet_api::https;

const START: Duration = Duration::from_secs(60);

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let resp = https(None).get(format!("https://{addr}{path}")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_and_resource_metrics_on_containerd() {
    let Some(env) = Env::start("summary_and_resource_metrics_on_containerd", "stats").await else {
        return;
    };
    let addr: SocketAddr = format!("127.0.0.1:{}", env.api_port).parse().unwrap();
    env.write_manifest(
        "busy.yaml",
        r#"apiVersion: v1
kind: Pod
metadata:
  name: busy
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: docker.io/library/busybox:1.36
      imagePullPolicy: IfNotPresent
      command: ["sh", "-c", "while true; do :; done"]
"#,
    );
    env.wait_pod("busy", "Running", START, |p| phase(p) == "Running").await;
    let pod_name = env.pod_name("busy");

    let sandbox_stats = env.cri.list_pod_sandbox_stats(Default::default()).await;
    env.note(format!(
        "containerd ListPodSandboxStats: {}",
        match &sandbox_stats {
            Ok(r) => format!("OK, {} sandboxes", r.stats.len()),
            Err(e) => format!("{e}"),
        }
    ));

    // poll until the container has been sampled twice (a rate exists: containerd
    // answers usageNanoCores 0 until it has two samples of its own, and upstream
    // passes a runtime's value through as it is)
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (summary, pod) = loop {
        let (code, body) = get(addr, "/stats/summary").await;
        assert_eq!(code, 200, "{body}");
        let s: serde_json::Value = serde_json::from_str(&body).unwrap();
        let pod = s["pods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["podRef"]["name"] == pod_name.as_str())
            .cloned();
        if let Some(p) = &pod
            && p["containers"][0]["cpu"]["usageNanoCores"]
                .as_u64()
                .is_some_and(|n| n > 0)
        {
            break (s, pod.unwrap());
        }
        assert!(tokio::time::Instant::now() < deadline, "no rate in {body}");
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let c = &pod["containers"][0];
    assert_eq!(c["name"], "main");
    assert!(c["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap() > 0, "{c}");
    assert!(
        c["cpu"]["usageNanoCores"].as_u64().unwrap() > 100_000_000,
        "a busy loop uses more than 0.1 core: {c}"
    );
    assert!(c["memory"]["workingSetBytes"].as_u64().unwrap() > 0, "{c}");
    assert!(c["rootfs"]["usedBytes"].as_u64().is_some(), "{c}");
    assert!(pod["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap() > 0, "{pod}");
    assert!(pod["memory"]["workingSetBytes"].as_u64().unwrap() > 0, "{pod}");
    if sandbox_stats.is_ok() {
        assert!(pod["network"]["interfaces"].as_array().is_some(), "{pod}");
    }
    let node = &summary["node"];
    assert!(node["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap() > 0);
    assert!(node["runtime"]["imageFs"]["usedBytes"].as_u64().unwrap() > 0, "{node}");
    assert!(node["fs"]["capacityBytes"].as_u64().unwrap() > 0);

    let (code, text) = get(addr, "/metrics/resource").await;
    assert_eq!(code, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let cpu = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == "container_cpu_usage_seconds_total"
                && s.labels.get("pod") == Some(pod_name.as_str())
                && s.labels.get("container") == Some("main")
        })
        .unwrap_or_else(|| panic!("{text}"));
    let age = chrono::Utc::now() - cpu.timestamp;
    assert!(
        age.num_seconds().abs() < 60,
        "timestamp is the sample's: {:?}",
        cpu.timestamp
    );
}
