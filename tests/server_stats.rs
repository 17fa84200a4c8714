//! `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor` over real
//! HTTPS against the mock runtime with known usage: the Summary JSON is
//! decoded by a mirror of upstream's `stats/v1alpha1` types that refuses
//! unknown fields, `usageNanoCores` is computed from two samples, the pod
//! falls back to its containers' sums without `ListPodSandboxStats`, and the
//! metrics text is parsed by a Prometheus parser with upstream's names.

#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use actlet::cri::Runtime;
use actlet::cri::mock::{Clock, Fault, MockNetwork, MockRuntime, MockUsage};
use actlet::cri::v1;
use actlet::server::auth::{KubeletAnonymousAuthentication, KubeletAuthentication, KubeletAuthorization};
use actlet::server::secure::{ApiServerSettings, SecureServer};
use actlet::server::{ApiState, HealthState, ServerState};
use actlet::stats::{CpuUsageCache, StatsProvider, StatsSettings};
use kubelet_api::https;

/// Upstream's `stats/v1alpha1` JSON as the fields are spelled there; any
/// field actlet adds or misspells fails decoding.
#[allow(dead_code)] // decoded to check the names; not every field is asserted
mod upstream {
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct Summary {
        pub node: NodeStats,
        pub pods: Vec<PodStats>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct NodeStats {
        #[serde(rename = "nodeName")]
        pub node_name: String,
        #[serde(rename = "systemContainers", default)]
        pub system_containers: Vec<ContainerStats>,
        #[serde(rename = "startTime")]
        pub start_time: String,
        pub cpu: Option<CpuStats>,
        pub memory: Option<MemoryStats>,
        pub network: Option<NetworkStats>,
        pub fs: Option<FsStats>,
        pub runtime: Option<RuntimeStats>,
        pub rlimit: Option<RlimitStats>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct RlimitStats {
        pub time: String,
        pub maxpid: Option<i64>,
        pub curproc: Option<i64>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct RuntimeStats {
        #[serde(rename = "imageFs")]
        pub image_fs: Option<FsStats>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct PodStats {
        #[serde(rename = "podRef")]
        pub pod_ref: PodReference,
        #[serde(rename = "startTime")]
        pub start_time: String,
        pub containers: Vec<ContainerStats>,
        pub cpu: Option<CpuStats>,
        pub memory: Option<MemoryStats>,
        pub network: Option<NetworkStats>,
        #[serde(default)]
        pub volume: Vec<serde_json::Value>,
        #[serde(rename = "ephemeral-storage")]
        pub ephemeral_storage: Option<FsStats>,
        pub process_stats: Option<ProcessStats>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct ProcessStats {
        pub process_count: Option<u64>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct ContainerStats {
        pub name: String,
        #[serde(rename = "startTime")]
        pub start_time: String,
        pub cpu: Option<CpuStats>,
        pub memory: Option<MemoryStats>,
        pub rootfs: Option<FsStats>,
        pub logs: Option<FsStats>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    pub struct PodReference {
        pub name: String,
        pub namespace: String,
        pub uid: String,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct NetworkStats {
        pub time: String,
        pub name: String,
        #[serde(rename = "rxBytes")]
        pub rx_bytes: Option<u64>,
        #[serde(rename = "rxErrors")]
        pub rx_errors: Option<u64>,
        #[serde(rename = "txBytes")]
        pub tx_bytes: Option<u64>,
        #[serde(rename = "txErrors")]
        pub tx_errors: Option<u64>,
        #[serde(default)]
        pub interfaces: Vec<serde_json::Value>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct CpuStats {
        pub time: String,
        #[serde(rename = "usageNanoCores")]
        pub usage_nano_cores: Option<u64>,
        #[serde(rename = "usageCoreNanoSeconds")]
        pub usage_core_nano_seconds: Option<u64>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct MemoryStats {
        pub time: String,
        #[serde(rename = "availableBytes")]
        pub available_bytes: Option<u64>,
        #[serde(rename = "usageBytes")]
        pub usage_bytes: Option<u64>,
        #[serde(rename = "workingSetBytes")]
        pub working_set_bytes: Option<u64>,
        #[serde(rename = "rssBytes")]
        pub rss_bytes: Option<u64>,
        #[serde(rename = "pageFaults")]
        pub page_faults: Option<u64>,
        #[serde(rename = "majorPageFaults")]
        pub major_page_faults: Option<u64>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    pub struct FsStats {
        pub time: String,
        #[serde(rename = "availableBytes")]
        pub available_bytes: Option<u64>,
        #[serde(rename = "capacityBytes")]
        pub capacity_bytes: Option<u64>,
        #[serde(rename = "usedBytes")]
        pub used_bytes: Option<u64>,
        #[serde(rename = "inodesFree")]
        pub inodes_free: Option<u64>,
        pub inodes: Option<u64>,
        #[serde(rename = "inodesUsed")]
        pub inodes_used: Option<u64>,
    }
}

/// The mock's clock starts here (Unix seconds) and moves only when told.
const T0: u64 = 1_700_000_000;

struct Node {
    addr: SocketAddr,
    mock: MockRuntime,
    clock: Arc<AtomicU64>,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

impl Node {
    fn advance(&self, d: Duration) {
        self.clock.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }

    async fn get(&self, path: &str) -> (u16, String, String) {
        let resp = https(None)
            .get(format!("https://{}{path}", self.addr))
            .send()
            .await
            .unwrap();
        let ct = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (resp.status().as_u16(), ct, resp.text().await.unwrap())
    }

    async fn summary(&self) -> upstream::Summary {
        let (code, _, body) = self.get("/stats/summary").await;
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

/// An anonymous-allowed kubelet API over a mock whose clock is `T0`.
fn node() -> Node {
    let clock = Arc::new(AtomicU64::new(T0 * 1_000_000_000));
    let c = clock.clone();
    let mock = MockRuntime::builder()
        .clock(Clock::from_fn(move || {
            UNIX_EPOCH + Duration::from_nanos(c.load(Ordering::SeqCst))
        }))
        .build();
    let dir = tempfile::tempdir().unwrap();
    let state = ServerState {
        pods: Default::default(),
        statuses: Default::default(),
        health: HealthState {
            sync_loop: Default::default(),
            pleg: Default::default(),
            started: tokio::time::Instant::now(),
            sync_loop_threshold: Duration::from_secs(300),
        },
        manifest_errors: Default::default(),
    };
    let stats = StatsProvider::new(
        StatsSettings {
            node_name: "node-a".into(),
            root_dir: dir.path().to_path_buf(),
            pod_logs_dir: dir.path().join("pods"),
            proc_root: "/proc".into(),
            cgroup_mount: "/sys/fs/cgroup".into(),
        },
        Arc::new(mock.clone()),
        state.pods.clone(),
        None,
        CpuUsageCache::default(),
    );
    let api = ApiState {
        node_name: "node-a".into(),
        runtime: Arc::new(mock.clone()),
        cache: Default::default(),
        spec: serde_json::json!({}),
        tree: Default::default(),
        pod_logs_dir: dir.path().join("pods"),
        node_logs_dir: dir.path().join("log"),
        configz: serde_json::json!({}),
        metrics: None,
        stats: Some(stats),
    };
    let settings = ApiServerSettings {
        tls: Default::default(),
        authentication: KubeletAuthentication {
            anonymous: KubeletAnonymousAuthentication { enabled: true },
            ..Default::default()
        },
        authorization: KubeletAuthorization::default(),
        root_dir: dir.path().to_path_buf(),
        node_ip: Some("127.0.0.1".into()),
        serving_cert: None,
    };
    let built = SecureServer::build(&settings, state, api, None).unwrap();
    let (addr, stop) = actlet::server::secure::spawn("127.0.0.1:0".parse().unwrap(), built).unwrap();
    Node {
        addr,
        mock,
        clock,
        _stop: stop,
        _dir: dir,
    }
}

/// Runs pod `ns/name` (uid `uid-<name>`) with running `sleep` containers.
async fn run_pod(rt: &MockRuntime, name: &str, containers: &[&str]) -> (String, Vec<String>) {
    let config = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: name.into(),
            uid: format!("uid-{name}"),
            namespace: "ns".into(),
            attempt: 0,
        }),
        ..Default::default()
    };
    let req = v1::RunPodSandboxRequest {
        config: Some(config.clone()),
        runtime_handler: String::new(),
    };
    let sandbox = rt.run_pod_sandbox(req).await.unwrap().pod_sandbox_id;
    let mut ids = vec![];
    for c in containers {
        let req = v1::CreateContainerRequest {
            pod_sandbox_id: sandbox.clone(),
            config: Some(v1::ContainerConfig {
                metadata: Some(v1::ContainerMetadata {
                    name: c.to_string(),
                    attempt: 0,
                }),
                image: Some(v1::ImageSpec {
                    image: "busybox".into(),
                    ..Default::default()
                }),
                command: vec!["sleep".into(), "3600".into()],
                ..Default::default()
            }),
            sandbox_config: Some(config.clone()),
        };
        let id = rt.create_container(req).await.unwrap().container_id;
        rt.start_container(v1::StartContainerRequest {
            container_id: id.clone(),
        })
        .await
        .unwrap();
        ids.push(id);
    }
    (sandbox, ids)
}

fn usage(cpu_ns: u64, nano_cores: Option<u64>, ws: u64) -> MockUsage {
    MockUsage {
        cpu_core_nano_seconds: Some(cpu_ns),
        usage_nano_cores: nano_cores,
        working_set_bytes: ws,
        usage_bytes: ws + (20 << 20),
        rss_bytes: ws / 2,
        page_faults: 10,
        major_page_faults: 2,
        writable_layer_bytes: 8192,
        writable_layer_inodes: 3,
    }
}

#[tokio::test]
async fn summary_has_upstreams_fields_and_computes_usage_nano_cores() {
    let n = node();
    let (sandbox, ids) = run_pod(&n.mock, "web", &["app"]).await;
    assert!(n.mock.set_usage(&ids[0], usage(1_000_000_000, None, 100 << 20)));
    assert!(n.mock.set_pod_network(
        &sandbox,
        MockNetwork {
            rx_bytes: 1000,
            tx_bytes: 2000,
            ..Default::default()
        }
    ));

    let s = n.summary().await;
    assert_eq!(s.node.node_name, "node-a");
    assert!(s.node.cpu.as_ref().unwrap().usage_core_nano_seconds.unwrap() > 0);
    assert!(s.node.memory.as_ref().unwrap().working_set_bytes.unwrap() > 0);
    let fs = s.node.fs.as_ref().unwrap();
    assert!(fs.capacity_bytes.unwrap() > 0 && fs.inodes.unwrap() > 0);
    let image_fs = s.node.runtime.as_ref().unwrap().image_fs.as_ref().unwrap();
    assert!(image_fs.used_bytes.unwrap() > 0 && image_fs.capacity_bytes.unwrap() > 0);
    assert!(s.node.rlimit.as_ref().unwrap().maxpid.unwrap() > 0);
    assert!(s.node.start_time.ends_with('Z'));

    assert_eq!(s.pods.len(), 1);
    let pod = &s.pods[0];
    assert_eq!(
        pod.pod_ref,
        upstream::PodReference {
            name: "web".into(),
            namespace: "ns".into(),
            uid: "uid-web".into()
        }
    );
    assert_eq!(pod.start_time, "2023-11-14T22:13:20Z");
    let c = &pod.containers[0];
    assert_eq!(c.name, "app");
    let cpu = c.cpu.as_ref().unwrap();
    assert_eq!(cpu.usage_core_nano_seconds, Some(1_000_000_000));
    assert_eq!(cpu.usage_nano_cores, None, "one sample has no rate");
    assert_eq!(cpu.time, "2023-11-14T22:13:20Z");
    let mem = c.memory.as_ref().unwrap();
    assert_eq!(mem.working_set_bytes, Some(100 << 20));
    assert_eq!(mem.usage_bytes, Some(120 << 20));
    assert_eq!(mem.rss_bytes, Some(50 << 20));
    assert_eq!((mem.page_faults, mem.major_page_faults), (Some(10), Some(2)));
    let rootfs = c.rootfs.as_ref().unwrap();
    assert_eq!((rootfs.used_bytes, rootfs.inodes_used), (Some(8192), Some(3)));
    assert!(c.logs.as_ref().unwrap().capacity_bytes.is_some());
    let net = pod.network.as_ref().unwrap();
    assert_eq!(
        (net.name.as_str(), net.rx_bytes, net.tx_bytes),
        ("eth0", Some(1000), Some(2000))
    );
    assert_eq!(pod.process_stats.as_ref().unwrap().process_count, Some(2));
    assert!(pod.ephemeral_storage.as_ref().unwrap().used_bytes.unwrap() >= 8192);

    // ten seconds and five core-seconds later: half a core
    n.advance(Duration::from_secs(10));
    n.mock.set_usage(&ids[0], usage(6_000_000_000, None, 100 << 20));
    let s = n.summary().await;
    let pod = &s.pods[0];
    assert_eq!(
        pod.containers[0].cpu.as_ref().unwrap().usage_nano_cores,
        Some(500_000_000)
    );
    assert_eq!(pod.cpu.as_ref().unwrap().usage_nano_cores, Some(500_000_000));
    assert_eq!(pod.cpu.as_ref().unwrap().usage_core_nano_seconds, Some(6_000_000_000));

    // the runtime's own value wins
    n.mock.set_usage(&ids[0], usage(7_000_000_000, Some(42), 100 << 20));
    let s = n.summary().await;
    assert_eq!(s.pods[0].containers[0].cpu.as_ref().unwrap().usage_nano_cores, Some(42));
}

#[tokio::test]
async fn without_list_pod_sandbox_stats_the_pod_sums_its_containers() {
    let n = node();
    n.mock.inject(
        "ListPodSandboxStats",
        Fault::error(tonic::Code::Unimplemented, "unknown method ListPodSandboxStats"),
    );
    let (_, ids) = run_pod(&n.mock, "two", &["a", "b"]).await;
    n.mock.set_usage(&ids[0], usage(1_000, Some(100), 10 << 20));
    n.mock.set_usage(&ids[1], usage(2_000, Some(200), 30 << 20));
    let s = n.summary().await;
    let pod = &s.pods[0];
    let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let cpu = pod.cpu.as_ref().unwrap();
    assert_eq!(
        (cpu.usage_nano_cores, cpu.usage_core_nano_seconds),
        (Some(300), Some(3_000))
    );
    assert_eq!(pod.memory.as_ref().unwrap().working_set_bytes, Some(40 << 20));
    assert!(pod.network.is_none());
    // asked once, remembered
    n.summary().await;
    assert_eq!(n.mock.call_count("ListPodSandboxStats"), 1);
}

#[tokio::test]
async fn a_failing_list_pod_sandbox_stats_degrades_one_collection_only() {
    let n = node();
    let (sandbox, _) = run_pod(&n.mock, "web", &["app"]).await;
    n.mock.set_pod_network(
        &sandbox,
        MockNetwork {
            rx_bytes: 5,
            ..Default::default()
        },
    );
    n.mock.inject(
        "ListPodSandboxStats",
        Fault::error(tonic::Code::Unknown, "failed to decode sandbox container metrics").times(1),
    );
    let s = n.summary().await;
    assert!(s.pods[0].network.is_none(), "this time from the containers' sums");
    assert!(s.pods[0].cpu.is_some());
    let s = n.summary().await;
    assert_eq!(
        s.pods[0].network.as_ref().unwrap().rx_bytes,
        Some(5),
        "asked again next time"
    );
}

#[tokio::test]
async fn only_cpu_and_memory_leaves_out_the_rest() {
    let n = node();
    run_pod(&n.mock, "web", &["app"]).await;
    let (code, _, body) = n.get("/stats/summary?only_cpu_and_memory=true").await;
    assert_eq!(code, 200, "{body}");
    let s: upstream::Summary = serde_json::from_str(&body).unwrap();
    assert!(s.node.cpu.is_some() && s.node.memory.is_some());
    assert!(s.node.fs.is_none() && s.node.network.is_none() && s.node.runtime.is_none());
    let c = &s.pods[0].containers[0];
    assert!(c.cpu.is_some() && c.rootfs.is_none() && c.logs.is_none());
    assert!(s.pods[0].ephemeral_storage.is_none());
}

fn parse(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

fn find<'a>(scrape: &'a prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> &'a prometheus_parse::Sample {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no {name}{labels:?}"))
}

fn value(s: &prometheus_parse::Sample) -> f64 {
    match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => panic!("unexpected {:?}", s.value),
    }
}

#[tokio::test]
async fn metrics_resource_has_upstreams_names_labels_and_timestamps() {
    let n = node();
    let (_, ids) = run_pod(&n.mock, "web", &["app"]).await;
    n.mock.set_usage(&ids[0], usage(2_500_000_000, None, 64 << 20));
    let (code, ct, text) = n.get("/metrics/resource").await;
    assert_eq!(code, 200, "{text}");
    assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
    let scrape = parse(&text);
    let mut names: Vec<&str> = scrape.samples.iter().map(|s| s.metric.as_str()).collect();
    names.dedup();
    assert_eq!(
        names,
        [
            "node_cpu_usage_seconds_total",
            "node_memory_working_set_bytes",
            "container_start_time_seconds",
            "container_cpu_usage_seconds_total",
            "container_memory_working_set_bytes",
            "pod_cpu_usage_seconds_total",
            "pod_memory_working_set_bytes",
            "scrape_error",
            "resource_scrape_error",
        ]
    );
    assert!(
        text.contains("# TYPE container_cpu_usage_seconds_total counter\n"),
        "{text}"
    );
    let labels = [("container", "app"), ("pod", "web"), ("namespace", "ns")];
    let cpu = find(&scrape, "container_cpu_usage_seconds_total", &labels);
    assert_eq!(value(cpu), 2.5);
    assert_eq!(
        cpu.timestamp.timestamp_millis(),
        (T0 * 1000) as i64,
        "the sample's time"
    );
    let mem = find(&scrape, "container_memory_working_set_bytes", &labels);
    assert_eq!(value(mem), (64u64 << 20) as f64);
    assert_eq!(value(find(&scrape, "container_start_time_seconds", &labels)), T0 as f64);
    let pod = find(
        &scrape,
        "pod_memory_working_set_bytes",
        &[("pod", "web"), ("namespace", "ns")],
    );
    assert_eq!(value(pod), (64u64 << 20) as f64);
    assert_eq!(value(find(&scrape, "scrape_error", &[])), 0.0);

    // the runtime down: still 200, only the error
    n.mock.set_down(true);
    let (code, _, text) = n.get("/metrics/resource").await;
    assert_eq!(code, 200);
    let scrape = parse(&text);
    assert_eq!(value(find(&scrape, "resource_scrape_error", &[])), 1.0);
    assert!(!text.contains("container_cpu"), "{text}");
    assert_eq!(n.get("/stats/summary").await.0, 500);
}

#[tokio::test]
async fn metrics_cadvisor_has_cadvisors_labels() {
    let n = node();
    let (sandbox, ids) = run_pod(&n.mock, "web", &["app"]).await;
    n.mock.set_usage(&ids[0], usage(1_000_000_000, None, 64 << 20));
    n.mock.set_pod_network(
        &sandbox,
        MockNetwork {
            rx_bytes: 1000,
            tx_bytes: 2000,
            ..Default::default()
        },
    );
    let (code, _, text) = n.get("/metrics/cadvisor").await;
    assert_eq!(code, 200, "{text}");
    let scrape = parse(&text);
    let labels = [
        ("container", "app"),
        ("pod", "web"),
        ("namespace", "ns"),
        ("name", ids[0].as_str()),
        ("image", "busybox"),
    ];
    for (name, want) in [
        ("container_cpu_usage_seconds_total", 1.0),
        ("container_memory_working_set_bytes", (64u64 << 20) as f64),
        ("container_memory_usage_bytes", (84u64 << 20) as f64),
        ("container_memory_rss", (32u64 << 20) as f64),
        ("container_fs_usage_bytes", 8192.0),
        ("container_spec_memory_limit_bytes", 0.0),
        ("container_start_time_seconds", T0 as f64),
    ] {
        let s = find(&scrape, name, &labels);
        assert_eq!(value(s), want, "{name}");
        assert_eq!(s.labels.get("id"), Some(format!("/{}", ids[0]).as_str()));
    }
    let net = [("pod", "web"), ("namespace", "ns"), ("interface", "eth0")];
    assert_eq!(
        value(find(&scrape, "container_network_receive_bytes_total", &net)),
        1000.0
    );
    assert_eq!(
        value(find(&scrape, "container_network_transmit_bytes_total", &net)),
        2000.0
    );
}
