//! P1 (overhead over raw CRI) and P3 (footprint of the actlet process), both
//! on a real containerd.
//!
//! - raw: the same three CRI calls a kubelet makes per pod (RunPodSandbox →
//!   CreateContainer → StartContainer), with the exact configs actlet builds
//!   (`kuberuntime::{sandbox_config, container_config}` on the pod actlet's
//!   file source would produce), all pods at once (actlet's concurrency: one
//!   worker per pod), or capped (`--raw-caps`).
//! - actlet: the release `actlet` binary as a separate process on a manifest
//!   directory; per-pod latency = manifest renamed into the directory →
//!   `/pods` shows phase Running with Ready=True (polled every 10–20 ms).
//!
//! Rounds alternate (raw, actlet), (actlet, raw), … so machine noise hits both.
//! Between runs every sandbox of the benchmark's own containerd is stopped
//! and removed (and its pod cgroup directories deleted), and the harness
//! waits until the runtime lists nothing.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use actlet::config::static_pod::{ManifestOrigin, load_static_pods};
use actlet::cri::{CriClient, Runtime, v1};
use actlet::kuberuntime::RuntimeManagerConfig;
use actlet::kuberuntime::container_config::{ContainerConfigInput, generate_container_config};
use actlet::kuberuntime::dns::HostDns;
use actlet::kuberuntime::image::image_user;
use actlet::kuberuntime::sandbox_config::generate_pod_sandbox_config;
use actlet::kuberuntime::security_context::ImageUser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};

use crate::common::{
    Figure, Footprint, IMAGE, NODE, USER_HZ, cpu_ticks, free_port, http_get, kill_if_running, manifest, max,
    measure_footprint, median, percentile, reset_dir, running_and_ready_json, terminate, write_manifests,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, BoxError>;

/// Settings of the containerd benchmarks.
#[derive(Clone, Debug)]
pub struct Opts {
    pub endpoint: String,
    pub actlet_bin: PathBuf,
    pub work_dir: PathBuf,
    /// Pod counts for P1.
    pub sizes: Vec<usize>,
    /// A/B rounds per size: (size, rounds).
    pub rounds: Vec<(usize, usize)>,
    /// Extra raw-only runs with at most this many pods in flight (reference floors).
    pub raw_caps: Vec<usize>,
    /// P3 idle window.
    pub idle: Duration,
    /// P3: how many starts to time up to `/healthz` ok.
    pub healthz_starts: usize,
    /// P3 pod count "with pods".
    pub p3_pods: usize,
}

/// A running actlet process.
struct ActletProc {
    child: Child,
    pid: u32,
    read_only: SocketAddr,
    healthz: SocketAddr,
    spawned: Instant,
}

impl ActletProc {
    fn spawn(o: &Opts, manifests: &Path, log: &Path) -> Result<Self> {
        let (ro, hz) = (free_port(), free_port());
        let log_file = std::fs::File::create(log)?;
        let mut cmd = Command::new(&o.actlet_bin);
        cmd.arg(format!("--pod-manifest-path={}", manifests.display()))
            .arg(format!("--container-runtime-endpoint={}", o.endpoint))
            .arg(format!("--root-dir={}", o.work_dir.join("kubelet").display()))
            .arg(format!("--read-only-port={ro}"))
            .arg("--address=127.0.0.1")
            .arg(format!("--healthz-port={hz}"))
            .arg(format!("--hostname-override={NODE}"))
            .env("RUST_LOG", PHASE_LOG)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file));
        let spawned = Instant::now();
        let child = cmd.spawn()?;
        Ok(Self {
            pid: child.id(),
            child,
            read_only: SocketAddr::from(([127, 0, 0, 1], ro)),
            healthz: SocketAddr::from(([127, 0, 0, 1], hz)),
            spawned,
        })
    }

    /// Polls `/healthz` every millisecond; returns the time from spawn to the first `ok`.
    fn wait_healthz(&mut self, timeout: Duration) -> Result<Duration> {
        while self.spawned.elapsed() < timeout {
            if let Ok((200, body)) = http_get(self.healthz, "/healthz", Duration::from_millis(500))
                && body == b"ok"
            {
                return Ok(self.spawned.elapsed());
            }
            if let Some(status) = self.child.try_wait()? {
                return Err(format!("actlet exited before /healthz was ok: {status}").into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Err(format!("/healthz not ok within {timeout:?}").into())
    }

    fn pods(&self) -> Result<Vec<Value>> {
        let (code, body) = http_get(self.read_only, "/pods", Duration::from_secs(5))?;
        if code != 200 {
            return Err(format!("/pods answered {code}").into());
        }
        let v: Value = serde_json::from_slice(&body)?;
        Ok(v.get("items").and_then(Value::as_array).cloned().unwrap_or_default())
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

/// What one batch of N pods gave: per-pod latencies and the whole batch (s).
#[derive(Clone, Debug, Default)]
pub(crate) struct Batch {
    pub(crate) latencies: Vec<f64>,
    pub(crate) total: f64,
    /// Per pod, seconds from its start to RunPodSandbox / CreateContainer /
    /// StartContainer returning (actlet: read from its log).
    phases: Vec<[f64; 3]>,
    /// CPU time (utime+stime) of the actlet process over the batch, s.
    cpu_s: Option<f64>,
}

/// The CRI steps of a pod start, as actlet logs them (at debug: the bench
/// turns on exactly those two modules' debug lines, [`PHASE_LOG`]).
const PHASES: [&str; 3] = ["created pod sandbox", "created container", "started container"];

/// actlet's default filter (`-v 0`) plus the debug lines of [`PHASES`].
const PHASE_LOG: &str = "warn,actlet=info,actlet::kuberuntime::sync_pod=debug,actlet::kuberuntime::start=debug";

/// Medians of the per-pod phase times, by phase name.
fn phase_medians(batches: &[Batch]) -> Value {
    let mut m = Map::new();
    for (i, name) in ["RunPodSandbox", "CreateContainer", "StartContainer"]
        .iter()
        .enumerate()
    {
        let v: Vec<f64> = batches.iter().flat_map(|b| b.phases.iter().map(|p| p[i])).collect();
        if !v.is_empty() {
            m.insert(
                format!("{name} done p50 s"),
                json!((median(&v) * 1000.0).round() / 1000.0),
            );
        }
    }
    Value::Object(m)
}

/// Per-pod phase times from an actlet log (`<RFC 3339 UTC> LEVEL … pod=<name>_… <message>`),
/// relative to the wall time each pod's manifest appeared.
fn phases_from_log(log: &Path, names: &[String], written: &[SystemTime]) -> Vec<[f64; 3]> {
    let Ok(text) = std::fs::read_to_string(log) else {
        return vec![];
    };
    let mut at: Vec<[Option<f64>; 3]> = vec![[None; 3]; names.len()];
    for line in text.lines() {
        let Some(phase) = PHASES.iter().position(|p| line.contains(p)) else {
            continue;
        };
        let Some(ts) = line
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        else {
            continue;
        };
        let Some(i) = names.iter().position(|n| line.contains(&format!("pod={n}-{NODE}_"))) else {
            continue;
        };
        let t = SystemTime::UNIX_EPOCH + Duration::from_nanos(ts.as_nanosecond().max(0) as u64);
        let since = t.duration_since(written[i]).map_or(0.0, |d| d.as_secs_f64());
        at[i][phase].get_or_insert(since);
    }
    at.into_iter().filter_map(|p| Some([p[0]?, p[1]?, p[2]?])).collect()
}

pub(crate) struct Env {
    rt: tokio::runtime::Runtime,
    client: Arc<CriClient>,
    cfg: Arc<RuntimeManagerConfig>,
    image_ref: String,
    user: ImageUser,
    runtime_version: String,
}

impl Env {
    pub(crate) fn new(o: &Opts) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let (client, image, runtime_version) = rt.block_on(async {
            let client = CriClient::new(&o.endpoint, Duration::from_secs(120))?;
            let v = client.version(v1::VersionRequest { version: "v1".into() }).await?;
            let image = client
                .image_status(v1::ImageStatusRequest {
                    image: Some(v1::ImageSpec {
                        image: IMAGE.into(),
                        ..Default::default()
                    }),
                    verbose: false,
                })
                .await?
                .image
                .filter(|i| !i.id.is_empty())
                .ok_or_else(|| format!("{IMAGE} is not in the runtime (hack/containerd/up.sh imports it)"))?;
            Ok::<_, BoxError>((client, image, format!("{} {}", v.runtime_name, v.runtime_version)))
        })?;
        let cfg = RuntimeManagerConfig {
            pod_logs_dir: o.work_dir.join("raw-logs"),
            container_logs_dir: None,
            host_dns: std::fs::read_to_string("/etc/resolv.conf")
                .ok()
                .map(|s| HostDns::parse(&s)),
            node_name: NODE.into(),
            ..RuntimeManagerConfig::default()
        };
        Ok(Self {
            rt,
            client: Arc::new(client),
            cfg: Arc::new(cfg),
            image_ref: image.id.clone(),
            user: image_user(Some(&image)),
            runtime_version,
        })
    }

    /// Stops and removes every sandbox and container of the benchmark's
    /// containerd, deletes their pod cgroups, and waits until nothing is listed.
    pub(crate) fn clean(&self) -> Result<()> {
        let client = self.client.clone();
        self.rt.block_on(async move {
            let t0 = Instant::now();
            loop {
                let sandboxes = client
                    .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
                    .await?
                    .items;
                let containers = client
                    .list_containers(v1::ListContainersRequest { filter: None })
                    .await?
                    .containers;
                if sandboxes.is_empty() && containers.is_empty() {
                    return Ok(());
                }
                if t0.elapsed() > Duration::from_secs(180) {
                    return Err(format!(
                        "cleanup: {} sandboxes / {} containers still listed after 180 s",
                        sandboxes.len(),
                        containers.len()
                    )
                    .into());
                }
                futures::stream::iter(sandboxes)
                    .map(|s| {
                        let client = client.clone();
                        async move {
                            let id = s.id.clone();
                            let _ = client
                                .stop_pod_sandbox(v1::StopPodSandboxRequest {
                                    pod_sandbox_id: id.clone(),
                                })
                                .await;
                            let _ = client
                                .remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: id })
                                .await;
                            if let Some(uid) = s.metadata.map(|m| m.uid) {
                                remove_pod_leftovers(&uid);
                            }
                        }
                    })
                    .buffer_unordered(8)
                    .collect::<Vec<_>>()
                    .await;
                for c in containers {
                    let _ = client
                        .remove_container(v1::RemoveContainerRequest { container_id: c.id })
                        .await;
                }
            }
        })
    }

    /// The raw path: N pods, at most `cap` in flight (`None`: all at once).
    pub(crate) fn raw_batch(&self, o: &Opts, names: &[String], cap: Option<usize>) -> Result<Batch> {
        let pods: Vec<Pod> = names
            .iter()
            .map(|n| {
                let origin = o.work_dir.join("raw-manifests").join(format!("{n}.yaml"));
                let origin = origin.display().to_string();
                load_static_pods(&manifest(n), ManifestOrigin::File(&origin), NODE)
                    .map_err(|e| -> BoxError { e.reason().into() })
                    .and_then(|mut p| p.pop().ok_or_else(|| "empty manifest".into()))
            })
            .collect::<Result<_>>()?;
        let (client, cfg) = (self.client.clone(), self.cfg.clone());
        let (image_ref, user) = (self.image_ref.clone(), self.user.clone());
        let cap = cap.unwrap_or(pods.len()).max(1);
        let phases = self.rt.block_on(async move {
            let t0 = Instant::now();
            let results: Vec<Result<[f64; 3]>> = futures::stream::iter(pods)
                .map(|pod| {
                    let (client, cfg, image_ref, user) = (client.clone(), cfg.clone(), image_ref.clone(), user.clone());
                    tokio::spawn(async move { raw_pod(&client, &cfg, &pod, &image_ref, &user, t0).await })
                })
                .buffer_unordered(cap)
                .map(|joined| joined.unwrap_or_else(|e| Err(e.to_string().into())))
                .collect()
                .await;
            results.into_iter().collect::<Result<Vec<[f64; 3]>>>()
        })?;
        let latencies: Vec<f64> = phases.iter().map(|p| p[2]).collect();
        let total = max(&latencies);
        Ok(Batch {
            latencies,
            total,
            phases,
            cpu_s: None,
        })
    }
}

/// RunPodSandbox → CreateContainer → StartContainer for one pod, with the
/// configs actlet would send.
async fn raw_pod(
    client: &CriClient,
    cfg: &RuntimeManagerConfig,
    pod: &Pod,
    image_ref: &str,
    user: &ImageUser,
    t0: Instant,
) -> Result<[f64; 3]> {
    let since = || t0.elapsed().as_secs_f64();
    let sandbox_config = generate_pod_sandbox_config(pod, 0, cfg)?;
    tokio::fs::create_dir_all(&sandbox_config.log_directory).await?;
    let sandbox_id = client
        .run_pod_sandbox(v1::RunPodSandboxRequest {
            config: Some(sandbox_config.clone()),
            runtime_handler: String::new(),
        })
        .await?
        .pod_sandbox_id;
    let sandbox_done = since();
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .ok_or("pod without containers")?;
    let input = ContainerConfigInput {
        pod,
        container,
        restart_count: 0,
        image_ref,
        image_user: user,
        pod_ips: &[],
        mounts: vec![],
        volumes: None,
    };
    let config = generate_container_config(input, cfg)?;
    let id = client
        .create_container(v1::CreateContainerRequest {
            pod_sandbox_id: sandbox_id,
            config: Some(config),
            sandbox_config: Some(sandbox_config),
        })
        .await?
        .container_id;
    let created = since();
    client
        .start_container(v1::StartContainerRequest { container_id: id })
        .await?;
    Ok([sandbox_done, created, since()])
}

/// Deletes what a benchmark pod leaves behind once its sandbox is removed:
/// the (empty) pod cgroup directories runc created (runc never removes a
/// `cgroup_parent`; that is the kubelet's job), and the pod's log directory
/// under /var/log/pods and its /var/log/containers links (actlet's defaults).
fn remove_pod_leftovers(uid: &str) {
    if uid.len() < 16 || uid.contains('/') {
        return;
    }
    for dir in ["/var/log/pods", "/var/log/containers"] {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for e in entries.filter_map(|e| e.ok()) {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(&format!("_{uid}")) && path.is_dir() {
                let _ = std::fs::remove_dir_all(&path);
            } else if std::fs::read_link(&path).is_ok_and(|t| t.to_string_lossy().contains(uid)) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let mut bases = vec![PathBuf::from("/sys/fs/cgroup")];
    if let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup") {
        bases.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    for base in bases {
        for qos in ["", "burstable/", "besteffort/"] {
            let _ = std::fs::remove_dir(base.join(format!("kubepods/{qos}pod{uid}")));
        }
    }
}

/// One actlet batch: a fresh actlet process on an empty manifest directory;
/// after `/healthz` is ok and 2 s of settling, N manifests appear at once.
/// With `idle`, the process is then also measured idle with its pods (P3).
fn actlet_batch(o: &Opts, tag: &str, n: usize, idle: Option<Duration>) -> Result<(Batch, Option<Footprint>)> {
    let dir = o.work_dir.join("manifests");
    let staging = o.work_dir.join("staging");
    reset_dir(&dir)?;
    reset_dir(&staging)?;
    let log = o.work_dir.join("logs").join(format!("actlet-{tag}.log"));
    let mut proc = ActletProc::spawn(o, &dir, &log)?;
    proc.wait_healthz(Duration::from_secs(30))?;
    std::thread::sleep(Duration::from_secs(2));
    let names: Vec<String> = (0..n).map(|i| format!("{tag}-{i}")).collect();
    let items: Vec<(String, String)> = names.iter().map(|n| (format!("{n}.yaml"), manifest(n))).collect();
    let poll = if n > 10 {
        Duration::from_millis(20)
    } else {
        Duration::from_millis(10)
    };
    let (t0, sys0) = (Instant::now(), SystemTime::now());
    let cpu0 = cpu_ticks(proc.pid);
    let written = write_manifests(&staging, &dir, &items)?;
    let mut done: Vec<Option<f64>> = vec![None; n];
    let full: Vec<String> = names.iter().map(|n| format!("{n}-{NODE}")).collect();
    let deadline = Duration::from_secs(180);
    while done.iter().any(Option::is_none) {
        if t0.elapsed() > deadline {
            let left = done.iter().filter(|d| d.is_none()).count();
            return Err(format!(
                "{tag}: {left} of {n} pods not Running+Ready after {deadline:?} (log: {})",
                log.display()
            )
            .into());
        }
        let now = Instant::now();
        if let Ok(items) = proc.pods() {
            for item in &items {
                let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
                if let Some(i) = full.iter().position(|f| f == name)
                    && done[i].is_none()
                    && running_and_ready_json(item.get("status"))
                {
                    done[i] = Some(now.duration_since(written[i]).as_secs_f64());
                }
            }
        }
        std::thread::sleep(poll.saturating_sub(now.elapsed()));
    }
    let total = t0.elapsed().as_secs_f64();
    let cpu_s = cpu0
        .zip(cpu_ticks(proc.pid))
        .map(|(a, b)| b.saturating_sub(a) as f64 / USER_HZ);
    let latencies: Vec<f64> = done.into_iter().flatten().collect();
    let foot = idle.map(|w| {
        std::thread::sleep(Duration::from_secs(5));
        measure_footprint(proc.pid, w, || {})
    });
    proc.stop();
    let written_sys: Vec<SystemTime> = written.iter().map(|w| sys0 + w.duration_since(t0)).collect();
    let phases = phases_from_log(&log, &names, &written_sys);
    let batch = Batch {
        latencies,
        total,
        phases,
        cpu_s,
    };
    Ok((batch, foot))
}

fn conditions(env: &Env, o: &Opts) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("runtime".into(), json!(env.runtime_version));
    m.insert("image".into(), json!(IMAGE));
    m.insert("pod".into(), json!("busybox sleep 3600, BestEffort"));
    m.insert(
        "cpus".into(),
        json!(std::thread::available_parallelism().map_or(0, |n| n.get())),
    );
    m.insert("endpoint".into(), json!(o.endpoint));
    m
}

/// P1: raw vs actlet for each size, interleaved; figures with targets.
pub fn p1(o: &Opts, p3_with_pods: bool) -> Result<(Vec<Figure>, Option<Footprint>)> {
    let env = Env::new(o)?;
    std::fs::create_dir_all(o.work_dir.join("logs"))?;
    env.clean()?;
    let base = conditions(&env, o);
    let mut figures = vec![];
    let mut foot = None;
    let last = *o.sizes.iter().max().unwrap_or(&1);
    for &n in &o.sizes {
        let rounds = o.rounds.iter().find(|(s, _)| *s == n).map_or(3, |(_, r)| *r);
        let (mut raw, mut act) = (vec![], vec![]);
        for r in 0..rounds {
            let raw_first = r % 2 == 0;
            for step in 0..2 {
                if (step == 0) == raw_first {
                    let names: Vec<String> = (0..n).map(|i| format!("raw-n{n}-r{r}-{i}")).collect();
                    let b = env.raw_batch(o, &names, None)?;
                    eprintln!(
                        "  P1 N={n} round {r}: raw    total {:.3} s  p50 {:.3} s  {}",
                        b.total,
                        median(&b.latencies),
                        phase_medians(std::slice::from_ref(&b))
                    );
                    raw.push(b);
                } else {
                    let tag = format!("act-n{n}-r{r}");
                    let idle = (p3_with_pods && n == last && r + 1 == rounds && o.p3_pods == n).then_some(o.idle);
                    let (b, f) = actlet_batch(o, &tag, n, idle)?;
                    eprintln!(
                        "  P1 N={n} round {r}: actlet total {:.3} s  p50 {:.3} s  {}  cpu {:?} s",
                        b.total,
                        median(&b.latencies),
                        phase_medians(std::slice::from_ref(&b)),
                        b.cpu_s
                    );
                    if f.is_some() {
                        foot = f;
                    }
                    act.push(b);
                }
                env.clean()?;
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        figures.extend(p1_figures(n, rounds, &raw, &act, &base));
    }
    for &cap in &o.raw_caps {
        let n = last;
        let mut totals = vec![];
        for r in 0..2 {
            let names: Vec<String> = (0..n).map(|i| format!("raw-cap{cap}-r{r}-{i}")).collect();
            let b = env.raw_batch(o, &names, Some(cap))?;
            eprintln!("  P1 N={n} raw, {cap} at a time, round {r}: total {:.3} s", b.total);
            totals.push(b.total);
            env.clean()?;
            std::thread::sleep(Duration::from_secs(1));
        }
        figures.push(
            Figure::new(format!("p1.raw.n{n}.{cap}_at_a_time.total"), "s", median(&totals))
                .with_all(&base)
                .with("pods", n)
                .with("concurrency", cap)
                .with("rounds", totals.len())
                .with("note", "reference floor (anchors: 4 at a time / one by one)"),
        );
    }
    Ok((figures, foot))
}

fn p1_figures(n: usize, rounds: usize, raw: &[Batch], act: &[Batch], base: &Map<String, Value>) -> Vec<Figure> {
    let all = |bs: &[Batch]| bs.iter().flat_map(|b| b.latencies.iter().copied()).collect::<Vec<_>>();
    let (raw_l, act_l) = (all(raw), all(act));
    let raw_tot: Vec<f64> = raw.iter().map(|b| b.total).collect();
    let act_tot: Vec<f64> = act.iter().map(|b| b.total).collect();
    let cond = |f: Figure, path: &str| {
        f.with_all(base)
            .with("pods", n)
            .with("rounds", rounds)
            .with("path", path)
            .with("concurrency", "all pods at once (one worker per pod)")
    };
    let mut out = vec![];
    for (path, l, tot) in [("raw", &raw_l, &raw_tot), ("actlet", &act_l, &act_tot)] {
        for p in [50.0, 90.0, 99.0] {
            let mut f = cond(
                Figure::new(format!("p1.{path}.n{n}.p{p}"), "s", percentile(l, p)),
                path,
            )
            .with("measure", if path == "raw" {
                "batch start -> StartContainer returned, per pod"
            } else {
                "manifest renamed into --pod-manifest-path -> /pods shows Running + Ready=True, per pod (polled 10-20 ms)"
            });
            if path == "actlet" && n == 1 && p == 50.0 {
                f = f.target_max(0.30, "<= 0.30 s (Go 0.89)");
            }
            out.push(f);
        }
        let batches = if path == "raw" { raw } else { act };
        let mut f = cond(Figure::new(format!("p1.{path}.n{n}.total"), "s", median(tot)), path)
            .with("measure", "whole batch, median over rounds")
            .with("totals", json!(tot))
            .with("phases", phase_medians(batches));
        let cpu: Vec<f64> = batches.iter().filter_map(|b| b.cpu_s).collect();
        if !cpu.is_empty() {
            f = f.with("actlet_cpu_s_per_batch", json!(median(&cpu)));
        }
        if path == "actlet" {
            f = f.floor(median(&raw_tot), "p1.raw total, same run");
        }
        if path == "actlet" && n == 10 {
            f = f.target_max(1.40, "<= 1.40 s (Go 2.44)");
        }
        out.push(f);
    }
    let ratio = median(&act_tot) / median(&raw_tot).max(1e-9);
    let mut f = cond(Figure::new(format!("p1.ratio.n{n}.total"), "x", ratio), "actlet/raw")
        .with("measure", "median actlet batch total / median raw batch total")
        .floor(median(&raw_tot), "p1.raw total (s), same run");
    // Issue #16: 1 and 10 pods within 10 % of raw, 50 pods within 5 %.
    f = match n {
        50 => f.target_max(1.05, "<= 1.05 x raw"),
        1 | 10 => f.target_max(1.10, "<= 1.10 x raw"),
        _ => f,
    };
    out.push(f);
    let r50 = median(&act_l) / median(&raw_l).max(1e-9);
    out.push(
        cond(Figure::new(format!("p1.ratio.n{n}.p50"), "x", r50), "actlet/raw")
            .with("measure", "actlet per-pod p50 / raw per-pod p50"),
    );
    out
}

/// P3: start → /healthz ok (median of several starts), idle footprint with
/// 0 pods; the "with pods" footprint comes from P1's last actlet round.
pub fn p3(o: &Opts, with_pods: Option<Footprint>) -> Result<Vec<Figure>> {
    let dir = o.work_dir.join("manifests");
    std::fs::create_dir_all(o.work_dir.join("logs"))?;
    let mut starts = vec![];
    for i in 0..o.healthz_starts {
        reset_dir(&dir)?;
        let mut proc = ActletProc::spawn(
            o,
            &dir,
            &o.work_dir.join("logs").join(format!("actlet-healthz-{i}.log")),
        )?;
        let t = proc.wait_healthz(Duration::from_secs(30))?;
        starts.push(t.as_secs_f64());
        proc.stop();
        std::thread::sleep(Duration::from_millis(300));
    }
    eprintln!("  P3 start -> /healthz ok: {starts:?}");
    let base = |f: Figure| {
        f.with("binary", o.actlet_bin.display().to_string())
            .with("endpoint", o.endpoint.clone())
    };
    let mut figures = vec![
        base(Figure::new("p3.start_to_healthz.p50", "ms", median(&starts) * 1000.0))
            .with("starts", starts.len())
            .with(
                "all_ms",
                json!(starts.iter().map(|s| (s * 1e4).round() / 10.0).collect::<Vec<_>>()),
            )
            .with("measure", "spawn() -> first GET /healthz = 200 ok (polled every 1 ms)")
            .target_max(50.0, "<= 50 ms (Go 700)"),
    ];
    reset_dir(&dir)?;
    let mut proc = ActletProc::spawn(o, &dir, &o.work_dir.join("logs").join("actlet-idle0.log"))?;
    proc.wait_healthz(Duration::from_secs(30))?;
    std::thread::sleep(Duration::from_secs(5));
    let idle0 = measure_footprint(proc.pid, o.idle, || {});
    proc.stop();
    figures.extend(footprint_figures(
        0,
        &idle0,
        o,
        (15.0, "<= 15 MiB (Go 64.7)"),
        (0.2, "<= 0.2% (Go 1.0%)"),
    ));
    if let Some(f) = with_pods {
        figures.extend(footprint_figures(
            o.p3_pods,
            &f,
            o,
            (25.0, "<= 25 MiB (Go 83.0)"),
            (1.0, "<= 1% (Go 4.7%)"),
        ));
    }
    Ok(figures)
}

fn footprint_figures(pods: usize, f: &Footprint, o: &Opts, rss_t: (f64, &str), cpu_t: (f64, &str)) -> Vec<Figure> {
    let c = |fig: Figure| {
        fig.with("pods", pods)
            .with("window_s", (f.window_s * 10.0).round() / 10.0)
            .with("binary", o.actlet_bin.display().to_string())
            .with(
                "measure",
                "actlet process only (not containerd or shims), idle after all pods Running + 5 s",
            )
    };
    let mut v = vec![
        c(Figure::new(format!("p3.pods{pods}.rss_mean"), "MiB", f.rss_mean_mib)).target_max(rss_t.0, rss_t.1),
        c(Figure::new(format!("p3.pods{pods}.rss_max"), "MiB", f.rss_max_mib)),
        c(Figure::new(format!("p3.pods{pods}.vmhwm"), "MiB", f.hwm_mib)),
        c(Figure::new(format!("p3.pods{pods}.cpu"), "%core", f.cpu_pct)).target_max(cpu_t.0, cpu_t.1),
    ];
    if pods > 0 {
        for fig in &mut v {
            fig.conditions.insert(
                "source".into(),
                json!("the last P1 actlet round of this size, after it"),
            );
        }
    }
    v
}
