//! Cluster mode (issue 16 item 7): the release actlet against a real
//! kube-apiserver v1.36 (envtest: `etcd` and `kube-apiserver` from
//! `$KUBEBUILDER_ASSETS`, on loopback) with the benchmark's containerd.
//!
//! - start → Node Ready: `spawn()` of a fresh actlet (a node name never seen
//!   before) → a watch on that Node shows condition Ready=True;
//! - one pod: pod created through the API (`POST`, nodeName set) → a watch on
//!   pods shows phase Running with Ready=True; rounds alternate with the raw
//!   CRI floor of one pod on the same containerd (the three CRI calls, see
//!   `containerd.rs`), so noise hits both. The pod is what an API pod is: the
//!   ServiceAccount admission adds the projected `kube-api-access` volume, so
//!   the path includes the TokenRequest and the ConfigMap read (the raw floor
//!   has neither);
//! - a batch of N pods created at once through the API (same measure), beside
//!   a raw batch of N;
//! - footprint in cluster mode: RSS and CPU of the actlet process idle with 0
//!   pods and with the batch (the P3 goals), i.e. what the kube client, TLS and
//!   the watches cost on top of P3's file-only figures.
//!
//! Without `KUBEBUILDER_ASSETS` the part says SKIPPED and gives no figures.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Map, Value, json};

use crate::common::{
    Figure, Footprint, IMAGE, free_port, kill_if_running, max, measure_footprint, median, percentile, reset_dir,
    running_and_ready_json, terminate,
};
use crate::containerd;
use crate::envtest::EnvTest;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, BoxError>;

/// How long a node or a pod may take before the benchmark gives up.
const DEADLINE: Duration = Duration::from_secs(120);

/// Settings of the cluster-mode benchmark.
#[derive(Clone, Debug)]
pub struct Opts {
    /// The containerd settings (endpoint, binary, work dir) shared with P1.
    pub cri: containerd::Opts,
    /// One-pod rounds (each a fresh actlet and node).
    pub rounds: usize,
    /// Pods of the batch session.
    pub batch: usize,
    /// Idle window of the footprint figures.
    pub idle: Duration,
}

/// A running actlet process in cluster mode, killed (by PID) when dropped.
struct ActletProc {
    child: Child,
    spawned: Instant,
}

impl ActletProc {
    fn spawn(o: &Opts, kubeconfig: &Path, node: &str, root: &Path, log: &Path) -> Result<Self> {
        let log_file = std::fs::File::create(log)?;
        let mut cmd = Command::new(&o.cri.actlet_bin);
        cmd.arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--container-runtime-endpoint={}", o.cri.endpoint))
            .arg(format!("--root-dir={}", root.display()))
            .arg(format!("--hostname-override={node}"))
            .arg("--node-ip=127.0.0.1")
            .arg("--address=127.0.0.1")
            .arg("--read-only-port=0")
            .arg(format!("--healthz-port={}", free_port()))
            .arg(format!("--port={}", free_port()))
            // Eviction reads the real disk: a full build disk must not put
            // the benchmark node under DiskPressure.
            .arg("--eviction-hard=memory.available<100Mi,nodefs.available<64Mi,imagefs.available<64Mi")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file));
        let spawned = Instant::now();
        let child = cmd.spawn()?;
        Ok(Self { child, spawned })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then SIGKILL after 40 s. The pods stay in the runtime.
    fn stop(mut self) {
        terminate(&mut self.child);
    }
}

impl Drop for ActletProc {
    fn drop(&mut self) {
        kill_if_running(&mut self.child);
    }
}

/// An API pod like P1's manifest: busybox `sleep 3600`, BestEffort, bound to `node`.
fn api_pod(name: &str, node: &str, session: &str) -> Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"app": "bench", "bench-session": session}},
        "spec": {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "sleep", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                            "command": ["sleep", "3600"]}]
        }
    }))?)
}

/// Whether a Node has condition Ready=True.
fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Watches the Node `name` (the watch is open when this returns) and
/// resolves with the instant it is first seen Ready=True.
async fn watch_node_ready(api: Api<Node>, name: &str) -> Result<tokio::task::JoinHandle<Option<Instant>>> {
    let wp = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut stream = api.watch(&wp, "0").await?.boxed();
    Ok(tokio::spawn(async move {
        while let Some(ev) = stream.next().await {
            if let Ok(WatchEvent::Added(n) | WatchEvent::Modified(n)) = ev
                && node_ready(&n)
            {
                return Some(Instant::now());
            }
        }
        None
    }))
}

/// Watches the pods of `session` (the watch is open when this returns) and
/// resolves with the instant each of `names` is first seen Running + Ready.
async fn watch_pods_ready(
    api: Api<Pod>,
    session: &str,
    names: Vec<String>,
) -> Result<tokio::task::JoinHandle<Vec<Option<Instant>>>> {
    let wp = WatchParams::default().labels(&format!("bench-session={session}"));
    let mut stream = api.watch(&wp, "0").await?.boxed();
    Ok(tokio::spawn(async move {
        let mut seen: Vec<Option<Instant>> = vec![None; names.len()];
        while seen.iter().any(Option::is_none) {
            let Some(ev) = stream.next().await else { break };
            let now = Instant::now();
            if let Ok(WatchEvent::Added(p) | WatchEvent::Modified(p)) = ev {
                let name = p.metadata.name.as_deref().unwrap_or("");
                let status = p.status.as_ref().and_then(|s| serde_json::to_value(s).ok());
                if let Some(i) = names.iter().position(|n| n == name)
                    && seen[i].is_none()
                    && running_and_ready_json(status.as_ref())
                {
                    seen[i] = Some(now);
                }
            }
        }
        seen
    }))
}

/// What one actlet session gave.
#[derive(Default)]
struct Session {
    node_ready: f64,
    /// Per pod, API create → seen Running + Ready (s).
    latencies: Vec<f64>,
    /// Whole batch (s).
    total: f64,
    idle0: Option<Footprint>,
    with_pods: Option<Footprint>,
}

struct Bench<'a> {
    o: &'a Opts,
    rt: tokio::runtime::Runtime,
    env: EnvTest,
    admin: kube::Client,
}

impl Bench<'_> {
    /// A fresh actlet for a new node; `pods` created at once after Node
    /// Ready + 2 s; with `footprints`, idle windows before and after them.
    fn session(&self, tag: &str, pods: usize, footprints: bool) -> Result<Session> {
        let o = self.o;
        let node = format!("bench-{tag}");
        let dir = o.cri.work_dir.join("cluster");
        let root = dir.join("kubelet");
        reset_dir(&root)?;
        std::fs::create_dir_all(dir.join("logs"))?;
        let log = dir.join("logs").join(format!("actlet-{tag}.log"));
        let kubeconfig = self.env.node_kubeconfig(&node);
        let nodes: Api<Node> = Api::all(self.admin.clone());
        let ready = self.rt.block_on(watch_node_ready(nodes.clone(), &node))?;
        let proc = ActletProc::spawn(o, &kubeconfig, &node, &root, &log)?;
        let at = self
            .rt
            .block_on(async { tokio::time::timeout(DEADLINE, ready).await })
            .map_err(|_| format!("{node}: not Ready within {DEADLINE:?} (log: {})", log.display()))?
            .map_err(|e| format!("node watch: {e}"))?
            .ok_or_else(|| format!("{node}: the watch ended before Ready (log: {})", log.display()))?;
        let mut s = Session {
            node_ready: at.duration_since(proc.spawned).as_secs_f64(),
            ..Default::default()
        };
        std::thread::sleep(Duration::from_secs(2));
        if footprints {
            s.idle0 = Some(measure_footprint(proc.pid(), o.idle, || {}));
        }
        let api: Api<Pod> = Api::namespaced(self.admin.clone(), "default");
        let names: Vec<String> = (0..pods).map(|i| format!("{tag}-{i}")).collect();
        let specs = names
            .iter()
            .map(|n| api_pod(n, &node, tag))
            .collect::<Result<Vec<_>>>()?;
        let result: Result<(Vec<Instant>, Vec<Option<Instant>>)> = self.rt.block_on(async {
            let watch = watch_pods_ready(api.clone(), tag, names.clone()).await?;
            let creates = specs.iter().map(|p| {
                let api = api.clone();
                async move {
                    let t = Instant::now();
                    api.create(&PostParams::default(), p).await.map(|_| t)
                }
            });
            let created = futures::future::try_join_all(creates).await?;
            let seen = tokio::time::timeout(DEADLINE, watch)
                .await
                .map_err(|_| format!("{tag}: pods not Running + Ready within {DEADLINE:?}"))??;
            Ok((created, seen))
        });
        let (created, seen) = result.map_err(|e| format!("{e} (log: {})", log.display()))?;
        let t0 = created.iter().min().copied();
        for (c, s_) in created.iter().zip(&seen) {
            let at =
                s_.ok_or_else(|| format!("{tag}: a pod was never seen Running + Ready (log: {})", log.display()))?;
            s.latencies.push(at.duration_since(*c).as_secs_f64());
        }
        s.total = t0
            .zip(seen.iter().flatten().max())
            .map_or(0.0, |(a, b)| b.duration_since(a).as_secs_f64());
        if footprints {
            std::thread::sleep(Duration::from_secs(5));
            s.with_pods = Some(measure_footprint(proc.pid(), o.idle, || {}));
        }
        proc.stop();
        self.rt.block_on(async {
            let dp = DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            };
            let lp = ListParams::default().labels(&format!("bench-session={tag}"));
            let _ = api.delete_collection(&dp, &lp).await;
            let _ = nodes.delete(&node, &DeleteParams::default()).await;
        });
        Ok(s)
    }
}

/// Runs the cluster-mode benchmark; no figures (SKIPPED) without `KUBEBUILDER_ASSETS`.
pub fn run(o: &Opts) -> Result<Vec<Figure>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let Some(env) = rt.block_on(EnvTest::start()) else {
        eprintln!("== cluster SKIPPED: KUBEBUILDER_ASSETS unset (a dir with kube-apiserver and etcd)");
        return Ok(vec![]);
    };
    rt.block_on(env.prepare_namespace("default"));
    let admin = rt.block_on(env.admin_client());
    let cri = containerd::Env::new(&o.cri)?;
    cri.clean()?;
    let b = Bench { o, rt, env, admin };
    let (mut raw1, mut act1, mut ready) = (vec![], vec![], vec![]);
    for r in 0..o.rounds {
        for step in 0..2 {
            if (step == 0) == (r % 2 == 0) {
                let batch = cri.raw_batch(&o.cri, &[format!("raw-c1-r{r}")], None)?;
                eprintln!("  cluster N=1 round {r}: raw    {:.3} s", batch.total);
                raw1.extend(batch.latencies);
            } else {
                let s = b.session(&format!("c1-r{r}"), 1, false)?;
                eprintln!(
                    "  cluster N=1 round {r}: actlet {:.3} s (API create -> watch Running+Ready); start -> Node Ready {:.3} s",
                    s.total, s.node_ready
                );
                act1.extend(s.latencies);
                ready.push(s.node_ready);
            }
            cri.clean()?;
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let n = o.batch;
    let raw_n = cri.raw_batch(&o.cri, &(0..n).map(|i| format!("raw-cn-{i}")).collect::<Vec<_>>(), None)?;
    eprintln!("  cluster N={n}: raw    total {:.3} s", raw_n.total);
    cri.clean()?;
    std::thread::sleep(Duration::from_secs(1));
    let s = b.session(&format!("cn{n}"), n, true)?;
    eprintln!(
        "  cluster N={n}: actlet total {:.3} s, p50 {:.3} s; start -> Node Ready {:.3} s",
        s.total,
        median(&s.latencies),
        s.node_ready
    );
    ready.push(s.node_ready);
    cri.clean()?;
    let mut base = Map::new();
    base.insert(
        "api_server".into(),
        json!("kube-apiserver v1.36 + etcd (envtest, loopback, TLS)"),
    );
    base.insert("endpoint".into(), json!(o.cri.endpoint));
    base.insert("image".into(), json!(IMAGE));
    base.insert(
        "cpus".into(),
        json!(std::thread::available_parallelism().map_or(0, |n| n.get())),
    );
    Ok(figures(
        o,
        &base,
        &Measured {
            raw1,
            act1,
            ready,
            raw_n: raw_n.total,
            batch: s,
        },
    ))
}

/// Everything [`run`] measured.
struct Measured {
    raw1: Vec<f64>,
    act1: Vec<f64>,
    ready: Vec<f64>,
    raw_n: f64,
    batch: Session,
}

fn figures(o: &Opts, base: &Map<String, Value>, m: &Measured) -> Vec<Figure> {
    let n = o.batch;
    let ms = |xs: &[f64]| json!(xs.iter().map(|s| (s * 1e4).round() / 10.0).collect::<Vec<_>>());
    let api_measure = "pod POSTed to the API server (nodeName set) -> a pod watch shows Running + Ready=True";
    let mut v = vec![
        Figure::new("cluster.start_to_node_ready.p50", "ms", median(&m.ready) * 1000.0)
            .with_all(base)
            .with("starts", m.ready.len())
            .with("all_ms", ms(&m.ready))
            .with(
                "measure",
                "spawn() of actlet for a new node -> a Node watch shows Ready=True",
            )
            .target_max(1000.0, "<= 1 s (Go ~11 s)"),
        Figure::new("cluster.n1.p50", "s", median(&m.act1))
            .with_all(base)
            .with("rounds", m.act1.len())
            .with("all_ms", ms(&m.act1))
            .with("measure", api_measure),
        Figure::new("cluster.raw.n1.p50", "s", median(&m.raw1))
            .with_all(base)
            .with("rounds", m.raw1.len())
            .with(
                "measure",
                "raw CRI floor: RunPodSandbox -> CreateContainer -> StartContainer returned",
            ),
        Figure::new(
            "cluster.n1.over_raw",
            "ms",
            (median(&m.act1) - median(&m.raw1)) * 1000.0,
        )
        .with_all(base)
        .with(
            "measure",
            "median API pod -> Running+Ready minus median raw CRI floor, same run",
        )
        .target_max(100.0, "<= raw floor + 100 ms"),
        Figure::new(format!("cluster.n{n}.total"), "s", m.batch.total)
            .with_all(base)
            .with("pods", n)
            .with(
                "measure",
                "first POST -> last pod seen Running + Ready (all POSTed at once)",
            ),
        Figure::new(format!("cluster.n{n}.p50"), "s", median(&m.batch.latencies))
            .with_all(base)
            .with("pods", n)
            .with("p99", percentile(&m.batch.latencies, 99.0))
            .with("max", max(&m.batch.latencies))
            .with("measure", api_measure),
        Figure::new(format!("cluster.raw.n{n}.total"), "s", m.raw_n)
            .with_all(base)
            .with("pods", n)
            .with("measure", "raw CRI floor, all pods at once"),
        Figure::new(
            format!("cluster.ratio.n{n}.total"),
            "x",
            m.batch.total / m.raw_n.max(1e-9),
        )
        .with_all(base)
        .with("measure", "actlet batch through the API / raw batch"),
    ];
    let foot = |pods: usize, f: &Footprint, rss: (f64, &str), cpu: (f64, &str)| {
        let c = |fig: Figure| {
            fig.with_all(base)
                .with("pods", pods)
                .with("window_s", (f.window_s * 10.0).round() / 10.0)
                .with(
                    "measure",
                    "actlet process only, cluster mode (kube client, TLS, watches), idle",
                )
        };
        vec![
            c(Figure::new(
                format!("cluster.pods{pods}.rss_mean"),
                "MiB",
                f.rss_mean_mib,
            ))
            .target_max(rss.0, rss.1),
            c(Figure::new(format!("cluster.pods{pods}.vmhwm"), "MiB", f.hwm_mib)),
            c(Figure::new(format!("cluster.pods{pods}.cpu"), "%core", f.cpu_pct)).target_max(cpu.0, cpu.1),
        ]
    };
    if let Some(f) = &m.batch.idle0 {
        v.extend(foot(0, f, (15.0, "<= 15 MiB (P3 goal)"), (0.2, "<= 0.2% (P3 goal)")));
    }
    if let Some(f) = &m.batch.with_pods {
        v.extend(foot(
            n,
            f,
            (25.0, "<= 25 MiB at 50 pods (P3 goal)"),
            (1.0, "<= 1% (P3 goal)"),
        ));
    }
    v
}
