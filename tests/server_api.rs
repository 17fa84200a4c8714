//! The kubelet API (HTTPS, anonymous + AlwaysAllow) on a whole mock-backed
//! node: container logs (tailLines, limitBytes, timestamps, sinceTime,
//! previous, follow), `/run`, exec/attach proxied to the mock runtime's
//! streaming server over WebSocket (v4 and v5), `/spec/`, `/runningpods/`,
//! `/debug/actors`; the read-only port refuses exec and logs but serves stats and metrics; a panic while
//! serving a request does not reach the node.

#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actlet::testing::{HookedRuntime, PodBuilder, TestNode, TestSystem, wait_until};
use kubelet_api::{https, ws_session};

const WAIT: Duration = Duration::from_secs(30);

fn node_with_api(runtime: Option<HookedRuntime<actlet::cri::mock::MockRuntime>>) -> TestNode {
    let mock = actlet::cri::mock::MockRuntime::new();
    let mut b = TestNode::builder().mock(mock.clone());
    if let Some(rt) = runtime {
        b = b.runtime(rt);
    }
    b.customize(|b| {
        b.configure(|c| {
            c.server_addr = Some("127.0.0.1:0".parse().unwrap());
            c.read_only_addr = Some("127.0.0.1:0".parse().unwrap());
        })
    })
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

async fn web_pod(node: &TestNode, command: &str) {
    node.set_pods(vec![
        PodBuilder::new("web")
            .container("c", "busybox:1.36", ["sh", "-c", command])
            .build(),
    ]);
    node.wait_for_phase("default", "web", "Running", WAIT).await.unwrap();
}

#[test]
fn container_logs_select_lines_as_asked() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        let addr = api_addr(&node).await;
        web_pod(&node, "echo one; echo two; echo three; sleep 3600").await;
        let logs = "/containerLogs/default/web/c";
        wait_until_body(addr, logs, "one\ntwo\nthree\n").await;
        assert_eq!(get(addr, &format!("{logs}?tailLines=1")).await, (200, "three\n".into()));
        assert_eq!(get(addr, &format!("{logs}?tail=2")).await, (200, "two\nthree\n".into()));
        assert_eq!(
            get(addr, &format!("{logs}?limitBytes=6")).await,
            (200, "one\ntw".into())
        );
        let (code, stamped) = get(addr, &format!("{logs}?timestamps=true&tailLines=1")).await;
        assert_eq!(code, 200);
        let (ts, rest) = stamped.split_once(' ').unwrap();
        assert_eq!(rest, "three\n");
        assert_eq!(ts.len(), "2024-01-01T00:00:00.000000000Z".len(), "{ts}");
        assert!(ts.parse::<jiff::Timestamp>().is_ok(), "{ts}");
        // sinceTime after the last line: nothing
        let later = (ts.parse::<jiff::Timestamp>().unwrap() + jiff::SignedDuration::from_secs(1)).to_string();
        assert_eq!(
            get(addr, &format!("{logs}?sinceTime={later}")).await,
            (200, String::new())
        );
        assert_eq!(get(addr, &format!("{logs}?sinceSeconds=0")).await.0, 422);
        let (code, body) = get(addr, &format!("{logs}?previous=true")).await;
        assert_eq!(code, 400);
        assert!(
            body.contains("previous terminated container \"c\" in pod \"web\" not found"),
            "{body}"
        );
        let (code, body) = get(addr, "/containerLogs/default/web/nope").await;
        assert_eq!(
            (code, body.as_str()),
            (404, "container \"nope\" not found in pod \"web\"")
        );
        assert_eq!(get(addr, "/containerLogs/default/ghost/c").await.0, 404);
    });
}

async fn wait_until_body(addr: SocketAddr, path: &str, want: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (code, body) = get(addr, path).await;
        if code == 200 && body == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path}: {code} {body:?}, wanted {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn follow_streams_lines_written_later() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        let addr = api_addr(&node).await;
        web_pod(&node, "echo first; sleep 3600").await;
        wait_until_body(addr, "/containerLogs/default/web/c", "first\n").await;
        let log_path = node.mock().find_container("web", "c").unwrap().status.log_path;
        let mut resp = https(None)
            .get(format!("https://{addr}/containerLogs/default/web/c?follow=true"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let mut got = String::new();
        let mut f = std::fs::OpenOptions::new().append(true).open(&log_path).unwrap();
        writeln!(f, "{} stdout P writ", jiff::Timestamp::now()).unwrap();
        writeln!(f, "{} stdout F ten later", jiff::Timestamp::now()).unwrap();
        f.flush().unwrap();
        let deadline = tokio::time::Instant::now() + WAIT;
        while !got.contains("written later\n") {
            let chunk = tokio::time::timeout_at(deadline, resp.chunk())
                .await
                .expect("follow delivered nothing");
            got.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("stream ended early")));
        }
        assert_eq!(got, "first\nwritten later\n");
    });
}

#[test]
fn previous_logs_are_the_last_instances() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        let addr = api_addr(&node).await;
        node.set_pods(vec![
            PodBuilder::new("crash")
                .container("c", "busybox:1.36", ["sh", "-c", "echo attempt; exit 1"])
                .build(),
        ]);
        node.wait_for_restart_count("default", "crash", "c", 1, WAIT)
            .await
            .unwrap();
        let (code, body) = get(addr, "/containerLogs/default/crash/c?previous=true").await;
        assert_eq!((code, body.as_str()), (200, "attempt\n"));
    });
}

#[test]
fn exec_and_attach_reach_the_runtimes_stream() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        let addr = api_addr(&node).await;
        web_pod(&node, "sleep 3600").await;
        for proto in ["v5.channel.k8s.io", "v4.channel.k8s.io"] {
            let s = ws_session(addr, "/exec/default/web/c?command=echo&command=hi&output=1&error=1", proto, None, None)
                .await
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&s.stdout), "hi\n", "{proto}");
            assert!(s.status.contains("\"Success\""), "{}", s.status);
        }
        let s = ws_session(
            addr,
            "/exec/default/web/c?command=sh&command=-c&command=echo%20out%3B%20echo%20err%20%3E%262%3B%20exit%203&output=1&error=1",
            "v5.channel.k8s.io",
            None,
            None,
        )
        .await
        .unwrap();
        assert_eq!((s.stdout.as_slice(), s.stderr.as_slice()), (b"out\n".as_slice(), b"err\n".as_slice()));
        assert!(s.status.contains("NonZeroExitCode") && s.status.contains("\"3\""), "{}", s.status);
        // stdin is proxied the other way
        let s = ws_session(addr, "/exec/default/web/c?command=cat&input=1&output=1", "v5.channel.k8s.io", None, Some(b"ping"))
            .await
            .unwrap();
        assert_eq!(s.stdout, b"ping");
        let s = ws_session(addr, "/attach/default/web/c?input=1&output=1", "v5.channel.k8s.io", None, Some(b"typed"))
            .await
            .unwrap();
        assert_eq!(s.stdout, b"typed");
        // port-forward: the mock echoes what reaches a port
        let echoed = kubelet_api::ws_port_forward(addr, "/portForward/default/web?port=8080", 8080, b"over the port")
            .await
            .unwrap();
        assert_eq!(echoed, b"over the port");
        // refusals before any upgrade
        let (code, body) = get(addr, "/exec/default/web/c?command=ls").await;
        assert_eq!((code, body.as_str()), (400, "you must specify at least 1 of stdin, stdout, stderr"));
        assert_eq!(get(addr, "/exec/default/web/c?command=ls&output=1").await, (400, "Upgrade request required".into()));
        assert_eq!(get(addr, "/exec/default/ghost/c?command=ls&output=1").await.0, 404);
        let (code, body) = get(addr, "/exec/default/web/other?command=ls&output=1").await;
        assert_eq!((code, body.as_str()), (500, "container not found (\"other\")"));
    });
}

#[test]
fn run_spec_runningpods_and_actors() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        let addr = api_addr(&node).await;
        web_pod(&node, "sleep 3600").await;
        let resp = https(None)
            .post(format!("https://{addr}/run/default/web/c?cmd=echo%20hello"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(resp.text().await.unwrap(), "hello\n");
        let (code, spec) = get(addr, "/spec/").await;
        let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
        assert_eq!(code, 200);
        assert!(spec["num_cores"].as_i64().unwrap() >= 1 && spec["memory_capacity"].as_i64().unwrap() > 0);
        let (_, running) = get(addr, "/runningpods/").await;
        let running: serde_json::Value = serde_json::from_str(&running).unwrap();
        assert_eq!(running["items"][0]["metadata"]["name"], "web");
        assert_eq!(running["items"][0]["spec"]["containers"][0]["name"], "c");
        let (_, actors) = get(addr, "/debug/actors").await;
        let actors: serde_json::Value = serde_json::from_str(&actors).unwrap();
        let api = actors
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["path"] == "root/kubelet-api")
            .unwrap();
        assert_eq!(
            (api["kind"].as_str(), api["state"].as_str()),
            (Some("ApiServer"), Some("Running"))
        );
        assert!(api["mailboxCapacity"].as_u64().is_some_and(|c| c >= 1), "{api}");
        assert!(api["mailboxDepth"].as_u64().is_some(), "{api}");
        assert_eq!(api["critical"], false, "the API server is a non-critical child");
        assert_eq!(get(addr, "/healthz/ping").await, (200, "ok".into()));
        let (code, configz) = get(addr, "/configz").await;
        let configz: serde_json::Value = serde_json::from_str(&configz).unwrap();
        assert_eq!(
            (code, &configz["kubeletconfig"]["authorization"]["mode"]),
            (200, &serde_json::json!("AlwaysAllow"))
        );
        assert_eq!(get(addr, "/nothing-here").await.0, 404);
    });
}

#[test]
fn read_only_port_refuses_exec_and_logs() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        web_pod(&node, "echo x; sleep 3600").await;
        let ro = node.kubelet().read_only_addrs.get()[0];
        let plain = reqwest::Client::new();
        let status = |p: &'static str| {
            let plain = plain.clone();
            async move {
                plain
                    .get(format!("http://{ro}{p}"))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            }
        };
        assert_eq!(status("/pods").await, 200);
        assert_eq!(status("/containerLogs/default/web/c").await, 404);
        assert_eq!(status("/exec/default/web/c?command=ls&output=1").await, 404);
        assert_eq!(status("/run/default/web/c").await, 404);
        assert_eq!(status("/debug/actors").await, 404);
        // The unauthenticated subset upstream serves: Summary API and Prometheus endpoints.
        let get = |p: &'static str| {
            let plain = plain.clone();
            async move {
                let resp = plain.get(format!("http://{ro}{p}")).send().await.unwrap();
                (resp.status().as_u16(), resp.text().await.unwrap())
            }
        };
        let (code, summary) = get("/stats/summary").await;
        let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(
            (code, &summary["node"]["nodeName"]),
            (200, &serde_json::json!(TestNode::NODE_NAME))
        );
        assert_eq!(summary["pods"][0]["podRef"]["name"], "web");
        let (code, metrics) = get("/metrics").await;
        assert_eq!(code, 200);
        assert!(metrics.contains("kubelet_running_pods 1"), "{metrics}");
        let (code, resource) = get("/metrics/resource").await;
        assert!(code == 200 && resource.contains("scrape_error 0"), "{resource}");
        assert_eq!(get("/metrics/cadvisor").await.0, 200);
    });
}

#[test]
fn a_panic_while_serving_does_not_reach_the_node() {
    TestSystem::real_time().block_on(async {
        let armed = Arc::new(AtomicBool::new(true));
        let a = armed.clone();
        let mock = actlet::cri::mock::MockRuntime::new();
        let hooked = HookedRuntime::new(mock.clone(), move |call| {
            if call.method == "Exec" && a.swap(false, Ordering::SeqCst) {
                panic!("injected panic in Exec");
            }
        });
        let node = TestNode::builder()
            .mock(mock)
            .runtime(hooked)
            .customize(|b| b.configure(|c| c.server_addr = Some("127.0.0.1:0".parse().unwrap())))
            .start();
        let addr = api_addr(&node).await;
        web_pod(&node, "sleep 3600").await;
        let path = "/exec/default/web/c?command=echo&command=again&output=1";
        assert!(
            ws_session(addr, path, "v5.channel.k8s.io", None, None).await.is_err(),
            "the panicking request fails"
        );
        assert!(!armed.load(Ordering::SeqCst));
        let s = ws_session(addr, path, "v5.channel.k8s.io", None, None).await.unwrap();
        assert_eq!(s.stdout, b"again\n");
        let tree = node.kubelet().tree().snapshot();
        assert!(
            tree.iter().all(|c| c.restarts == 0 && c.last_failure.is_none()),
            "{tree:?}"
        );
        assert_eq!(
            node.kubelet().phase_of_named("default", "web").as_deref(),
            Some("Running")
        );
        assert!(node.kubelet().health.check().is_ok());
    });
}

#[test]
fn metrics_parse_and_carry_upstream_names() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        let addr = api_addr(&node).await;
        web_pod(&node, "sleep 3600").await;
        // At least two relists (1 s period), so an interval was observed.
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        let (code, text) = get(addr, "/metrics").await;
        assert_eq!(code, 200);
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        let value = |name: &str, label: Option<(&str, &str)>| {
            scrape
                .samples
                .iter()
                .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
                .map(|s| match s.value {
                    prometheus_parse::Value::Counter(v)
                    | prometheus_parse::Value::Gauge(v)
                    | prometheus_parse::Value::Untyped(v) => v,
                    _ => -1.0,
                })
                .unwrap_or_else(|| panic!("no {name} {label:?} in\n{text}"))
        };
        assert_eq!(value("kubelet_running_pods", None), 1.0);
        assert_eq!(
            value("kubelet_running_containers", Some(("container_state", "running"))),
            1.0
        );
        assert_eq!(value("kubelet_node_name", Some(("node", TestNode::NODE_NAME))), 1.0);
        assert!(
            value(
                "kubelet_runtime_operations_total",
                Some(("operation_type", "run_podsandbox"))
            ) >= 1.0
        );
        assert!(
            value(
                "kubelet_runtime_operations_total",
                Some(("operation_type", "list_podsandbox"))
            ) >= 1.0
        );
        assert_eq!(value("actlet_actor_restarts_total", Some(("actor", "root/pleg"))), 0.0);
        assert_eq!(value("actlet_actor_exhausted", Some(("actor", "root/pleg"))), 0.0);
        let capacity = value("actlet_actor_mailbox_capacity", Some(("actor", "root/sync-loop")));
        let depth = value("actlet_actor_mailbox_depth", Some(("actor", "root/sync-loop")));
        assert!(
            capacity >= 1.0 && (0.0..=capacity).contains(&depth),
            "{depth}/{capacity}"
        );
        let relists = scrape
            .samples
            .iter()
            .find(|s| s.metric == "kubelet_pleg_relist_duration_seconds")
            .unwrap_or_else(|| panic!("no relist histogram in\n{text}"));
        match &relists.value {
            prometheus_parse::Value::Histogram(buckets) => {
                assert!(buckets.last().is_some_and(|b| b.count >= 1.0), "{buckets:?}")
            }
            other => panic!("relist duration is not a histogram: {other:?}"),
        }
        // The PLEG relists every second: after a few, intervals are observed too.
        let intervals = scrape
            .samples
            .iter()
            .find(|s| s.metric == "kubelet_pleg_relist_interval_seconds")
            .unwrap_or_else(|| panic!("no relist interval histogram in\n{text}"));
        match &intervals.value {
            prometheus_parse::Value::Histogram(buckets) => {
                assert!(buckets.last().is_some_and(|b| b.count >= 1.0), "{buckets:?}")
            }
            other => panic!("relist interval is not a histogram: {other:?}"),
        }
        assert!(
            text.contains("kubelet_runtime_operations_duration_seconds_bucket{"),
            "{text}"
        );
    });
}

/// The read-only server is a supervised actor: killed mid-flight, it is
/// rebuilt (binding again), serves pods and stats again, and the node does
/// not notice (the pod keeps running, no other actor restarts).
#[test]
fn read_only_server_restart_goes_unnoticed() {
    TestSystem::real_time().block_on(async {
        let node = node_with_api(None);
        web_pod(&node, "sleep 3600").await;
        let first = node.kubelet().read_only_addrs.get()[0];
        node.kubelet()
            .root
            .addr()
            .send(actlet::actors::supervisor::KillChild("read-only".into()))
            .await
            .expect("root reachable")
            .unwrap_or_else(|e| panic!("kill read-only: {e}"));
        let tree = node.kubelet().tree().clone();
        let rebuilt = || {
            tree.get("root/read-only")
                .is_some_and(|c| c.restarts == 1 && c.state == actlet::actors::supervisor::ChildState::Running)
        };
        wait_until(rebuilt, Duration::from_secs(30)).await.unwrap();
        // Bound again (port 0: possibly another port than the first
        // instance had); the address is published once the new one listens.
        let plain = reqwest::Client::new();
        let mut answered = None;
        for _ in 0..100 {
            let ro = node.kubelet().read_only_addrs.get()[0];
            if let Ok(r) = plain.get(format!("http://{ro}/stats/summary")).send().await {
                answered = Some((ro, r.status().as_u16()));
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (ro, code) = answered.unwrap_or_else(|| panic!("the read-only port never came back (was {first})"));
        assert_eq!(code, 200);
        let pods = plain.get(format!("http://{ro}/pods")).send().await.unwrap();
        assert!(pods.text().await.unwrap().contains("\"web\""));
        let others: Vec<_> = tree
            .snapshot()
            .into_iter()
            .filter(|c| c.path != "root/read-only" && c.restarts > 0)
            .collect();
        assert!(others.is_empty(), "{others:?}");
        let status = node.status("default", "web").unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.container_statuses.unwrap()[0].restart_count, 0);
    });
}
