//! `/stats/summary` and `/metrics/resource` on a whole mock-backed node
//! (HTTPS, anonymous + AlwaysAllow): the Summary carries the node, the pod
//! and its containers with upstream's JSON names and the mock's numbers
//! (CPU rate from two readings, working sets summed per pod); the resource
//! metrics parse as Prometheus text with upstream's names and labels.

#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::time::Duration;

use actlet::stats::Summary;
use actlet::testing::{PodBuilder, TestNode, TestSystem, wait_until};
use kubelet_api::https;

const WAIT: Duration = Duration::from_secs(30);

fn node() -> TestNode {
    TestNode::builder()
        .mock(actlet::cri::mock::MockRuntime::new())
        .customize(|b| b.configure(|c| c.server_addr = Some("127.0.0.1:0".parse().unwrap())))
        .start()
}

async fn api_addr(node: &TestNode) -> SocketAddr {
    let addrs = node.kubelet().api_addrs.clone();
    wait_until(|| !addrs.get().is_empty(), WAIT).await.unwrap();
    addrs.get()[0]
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let resp = https(None).get(format!("https://{addr}{path}")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[test]
fn summary_and_resource_metrics_describe_the_node_and_its_pods() {
    TestSystem::real_time().block_on(async {
        let node = node();
        let addr = api_addr(&node).await;
        node.set_pods(vec![
            PodBuilder::new("web")
                .container("app", "busybox:1.36", ["sleep", "3600"])
                .container("side", "busybox:1.36", ["sleep", "3600"])
                .build(),
        ]);
        node.wait_for_phase("default", "web", "Running", WAIT).await.unwrap();

        let (code, body) = get(addr, "/stats/summary").await;
        assert_eq!(code, 200, "{body}");
        let raw: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(raw["node"]["nodeName"], TestNode::NODE_NAME);
        assert!(raw["node"]["memory"]["workingSetBytes"].as_u64().is_some(), "{raw:#}");
        assert!(raw["node"]["fs"]["capacityBytes"].as_u64().is_some(), "{raw:#}");
        assert!(raw["node"]["runtime"]["imageFs"]["usedBytes"].as_u64().is_some(), "{raw:#}");
        let summary: Summary = serde_json::from_value(raw).unwrap();
        assert_eq!(summary.pods.len(), 1);
        let pod = &summary.pods[0];
        assert_eq!((pod.pod_ref.name.as_str(), pod.pod_ref.namespace.as_str()), ("web", "default"));
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["app", "side"]);
        // The mock reports a 4 MiB working set and 1% of a core per container.
        assert_eq!(pod.memory.as_ref().and_then(|m| m.working_set_bytes), Some(8 << 20));
        assert_eq!(pod.cpu.as_ref().and_then(|c| c.usage_nano_cores), Some(20_000_000));

        let (code, text) = get(addr, "/metrics/resource").await;
        assert_eq!(code, 200);
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        let find = |name: &str, container: Option<&str>| {
            scrape.samples.iter().find(|s| {
                s.metric == name && container.is_none_or(|c| s.labels.get("container") == Some(c))
            })
        };
        for name in ["node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "resource_scrape_error"] {
            assert!(find(name, None).is_some(), "no {name} in\n{text}");
        }
        let ws = find("container_memory_working_set_bytes", Some("app")).unwrap_or_else(|| panic!("{text}"));
        assert_eq!((ws.labels.get("pod"), ws.labels.get("namespace")), (Some("web"), Some("default")));
        assert!(matches!(ws.value, prometheus_parse::Value::Gauge(v) if v == f64::from(4 << 20)));
        assert!(find("container_cpu_usage_seconds_total", Some("side")).is_some());
        assert!(find("container_start_time_seconds", Some("app")).is_some());
        assert!(find("pod_memory_working_set_bytes", None).is_some());
        assert!(
            matches!(find("resource_scrape_error", None).map(|s| &s.value), Some(prometheus_parse::Value::Gauge(v)) if *v == 0.0)
        );
    });
}
