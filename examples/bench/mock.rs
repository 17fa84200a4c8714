//! P2: scale on the mock CRI, in-process (`kubelet::start` on `MockRuntime`,
//! real time). Each case runs in a fresh process (`bench p2-case …`, spawned
//! by [`p2`]) so its memory figures start clean.
//!
//! Sources:
//! - `file`: the static pod directory (`--pod-manifest-path`): N manifests are
//!   written to a staging directory first, then renamed into the watched
//!   directory; the clock starts before the first rename. This is "from
//!   manifests to Running" as the issue asks, including inotify, the 100 ms
//!   debounce and the YAML parsing of N files.
//! - `custom`: the same N pods (parsed and defaulted beforehand) sent as one
//!   `SourceSnapshot` of a custom source: the kubelet core alone.
//! - `mock`: no kubelet; the same three CRI calls per pod made directly on the
//!   mock, to tell the mock's own memory and CPU from the kubelet's.
//!
//! Runtimes: `mock` (the mock as it is: a label-filtered List scans every
//! sandbox/container, as containerd's does) or `indexed` (UID-filtered Lists
//! answered from an index, see [`crate::indexed`]).
//!
//! "Running" = the status cache shows phase Running with Ready=True.
//! The mock's call log (a test aid that grows with every call) is cleared
//! every second so it does not count as kubelet memory; the mock's sandboxes,
//! containers and their tokio tasks do count (see the `mock` source).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actlet::config::static_pod::{ManifestOrigin, load_static_pods};
use actlet::cri::SharedRuntime;
use actlet::cri::mock::{Fault, MockRuntime};
use actlet::kubelet::{KubeletConfig, start};
use actlet::messages::PodUid;
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use k8s_openapi::api::core::v1::PodStatus;
use serde_json::{Map, Value, json};

use crate::common::{
    Figure, NODE, USER_HZ, cpu_ticks, manifest, max, median, percentile, reset_dir, rss_kib, write_manifests,
};
use crate::indexed::Counting;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BoxError>;

/// Realistic per-call latencies from real-runtime.md (containerd 1.6 here).
pub const REAL_LATENCIES: [(&str, u64); 3] = [("RunPodSandbox", 130), ("CreateContainer", 25), ("StartContainer", 95)];

/// One P2 case.
#[derive(Clone, Debug)]
pub struct Case {
    pub pods: usize,
    /// Realistic latencies (else instant mock operations).
    pub latency: bool,
    /// `file`, `custom` or `mock`.
    pub source: String,
    /// `mock` or `indexed`.
    pub runtime: String,
    /// Idle window after all pods run (CPU, relist); 0: only 5 s of relist sampling.
    pub idle: Duration,
    /// Give up waiting for Running after this long (the figures say how many made it).
    pub deadline: Duration,
    pub work_dir: PathBuf,
    /// `EventedPLEG`: the mock's container events, global relist every 300 s.
    pub evented: bool,
    /// Arbiters the pod workers run on besides the main one.
    pub worker_threads: usize,
    /// The kubelet's `--max-concurrent-pod-syncs` (none: its default).
    pub max_syncs: Option<usize>,
}

impl Case {
    pub fn name(&self) -> String {
        let lat = if self.latency { "real_lat" } else { "instant" };
        let rt = if self.runtime == "indexed" { ".indexed" } else { "" };
        let ev = if self.evented { ".evented" } else { "" };
        let wt = if self.worker_threads > 0 {
            format!(".workers{}", self.worker_threads)
        } else {
            String::new()
        };
        let syncs = self.max_syncs.map_or(String::new(), |n| format!(".syncs{n}"));
        format!("p2.{}.{}.n{}{rt}{ev}{wt}{syncs}", self.source, lat, self.pods)
    }

    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "p2-case".into(),
            format!("--pods={}", self.pods),
            format!("--latency={}", if self.latency { "real" } else { "instant" }),
            format!("--source={}", self.source),
            format!("--runtime={}", self.runtime),
            format!("--idle-secs={}", self.idle.as_secs()),
            format!("--deadline-secs={}", self.deadline.as_secs()),
            format!("--work-dir={}", self.work_dir.display()),
            format!("--evented={}", self.evented),
            format!("--worker-threads={}", self.worker_threads),
        ];
        if let Some(n) = self.max_syncs {
            args.push(format!("--max-concurrent-pod-syncs={n}"));
        }
        args
    }
}

/// Runs every case in its own process (this binary, `p2-case`) and collects the figures.
pub fn p2(cases: &[Case]) -> Result<Vec<Figure>> {
    let mut figures = vec![];
    for c in cases {
        eprintln!("  P2 {} (idle {:?}) …", c.name(), c.idle);
        figures.extend(run_subcommand(&c.args())?);
    }
    let derived = crate::derived::p2(&figures);
    figures.extend(derived);
    Ok(figures)
}

/// Runs this binary with `args` in a fresh process (its memory figures start
/// clean) and returns the figures it prints on its `FIGURES ` line.
pub fn run_subcommand(args: &[String]) -> Result<Vec<Figure>> {
    let out = std::process::Command::new(std::env::current_exe()?)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(line) = stdout.lines().find_map(|l| l.strip_prefix("FIGURES ")) else {
        return Err(format!("{}: no figures (exit {}); stdout: {stdout}", args.join(" "), out.status).into());
    };
    let v: Value = serde_json::from_str(line)?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Figure::from_json)
        .collect())
}

/// The `p2-case` subcommand: one case in this process; prints `FIGURES <json>`.
pub fn run_case(c: Case) -> Result<()> {
    reset_dir(&c.work_dir)?;
    let log = std::fs::File::create(c.work_dir.join("kubelet.log"))?;
    // The actlet binary logs at info by default; so does the in-process kubelet (to a file).
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn,actlet=info"))
        .with_ansi(false)
        .with_writer(Mutex::new(log))
        .init();
    // The pod worker step futures of this build (a pod with a step in flight holds one).
    for (name, bytes) in actlet::pod_workers::sync::step_future_sizes() {
        eprintln!("  step future {name}: {bytes} B");
    }
    let figures = actix_rt::System::new().block_on(case(c.clone()))?;
    let v = Value::Array(figures.iter().map(Figure::to_json).collect());
    println!("FIGURES {v}");
    Ok(())
}

/// The heap this process uses, in MiB (jemalloc's `stats.allocated`, the
/// bytes the application holds; 0 if the statistics cannot be read): what of
/// its RSS is live allocations rather than free memory the allocator kept,
/// code and stacks. Without the `jemalloc` feature the process runs on
/// the system allocator and this reads 0.
fn heap_in_use_mib() -> f64 {
    use tikv_jemalloc_ctl::{epoch, stats};
    if !cfg!(feature = "jemalloc") {
        return 0.0;
    }
    // The statistics are a snapshot refreshed by advancing the epoch.
    match epoch::advance().and_then(|_| stats::allocated::read()) {
        Ok(bytes) => bytes as f64 / 1048576.0,
        Err(e) => {
            eprintln!("  jemalloc stats unreadable: {e}");
            0.0
        }
    }
}

/// jemalloc's view of this process's memory, in MiB: `allocated` (what the
/// program holds), `active` (the pages those allocations sit on),
/// `resident` (what the allocator has resident, metadata and unpurged
/// dirty pages included) and `retained` (virtual memory kept for reuse,
/// not resident). `None` without the `jemalloc` feature or when the
/// statistics cannot be read.
pub fn jemalloc_mib() -> Option<[(&'static str, f64); 4]> {
    use tikv_jemalloc_ctl::{epoch, stats};
    if !cfg!(feature = "jemalloc") {
        return None;
    }
    epoch::advance().ok()?;
    let mib = |b: usize| b as f64 / 1048576.0;
    Some([
        ("allocated", mib(stats::allocated::read().ok()?)),
        ("active", mib(stats::active::read().ok()?)),
        ("resident", mib(stats::resident::read().ok()?)),
        ("retained", mib(stats::retained::read().ok()?)),
    ])
}

/// (VmRSS, VmHWM) of this process in MiB.
pub fn self_rss_mib() -> (f64, f64) {
    let (rss, hwm) = rss_kib(std::process::id()).unwrap_or((0, 0));
    (rss as f64 / 1024.0, hwm as f64 / 1024.0)
}

/// The slice of the idle window CPU ticks are read at.
const SLICE: Duration = Duration::from_secs(30);

/// The idle window's steady state: the mean of its 30 s slices after the
/// first three (the first container GC round that finds the sources ready
/// and the first wave of periodic resyncs fall in those), when at least two
/// slices are left (a window of 150 s or more).
fn steady_cpu(slices: &[f64]) -> Option<f64> {
    let rest = slices.get(3..).filter(|r| r.len() >= 2)?;
    Some(rest.iter().sum::<f64>() / rest.len() as f64)
}

pub fn self_cpu_pct_since(ticks0: u64, since: Instant) -> f64 {
    let ticks = cpu_ticks(std::process::id()).unwrap_or(ticks0);
    ticks.saturating_sub(ticks0) as f64 / USER_HZ / since.elapsed().as_secs_f64() * 100.0
}

fn build_mock(latency: bool) -> MockRuntime {
    let mut b = MockRuntime::builder();
    if latency {
        for (method, ms) in REAL_LATENCIES {
            b = b.fault(method, Fault::latency(Duration::from_millis(ms)));
        }
    }
    b.build()
}

/// Phase Running with Ready=True.
pub fn is_running_ready(s: &PodStatus) -> bool {
    s.phase.as_deref() == Some("Running")
        && s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn base_conditions(c: &Case) -> Map<String, Value> {
    let mut cond = Map::new();
    cond.insert("pods".into(), json!(c.pods));
    cond.insert("source".into(), json!(c.source));
    let latency = if c.latency {
        json!(
            REAL_LATENCIES
                .iter()
                .map(|(m, ms)| format!("{m} {ms} ms"))
                .collect::<Vec<_>>()
        )
    } else {
        json!("instant")
    };
    cond.insert("mock_latency".into(), latency);
    cond.insert("evented_pleg".into(), json!(c.evented));
    cond.insert("pod_worker_threads".into(), json!(c.worker_threads));
    let runtime = if c.runtime == "indexed" {
        "MockRuntime in-process, real time; UID-filtered List* answered from an index (what-if)"
    } else {
        "MockRuntime in-process, real time"
    };
    cond.insert("runtime".into(), json!(runtime));
    cond.insert(
        "cpus".into(),
        json!(std::thread::available_parallelism().map_or(0, |n| n.get())),
    );
    cond
}

async fn case(c: Case) -> Result<Vec<Figure>> {
    let mock = build_mock(c.latency);
    let clear = mock.clone();
    actix_rt::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            clear.clear_calls();
        }
    });
    let mut cond = base_conditions(&c);
    if c.source == "mock" {
        return crate::mock_floor::mock_only(&c, mock, cond).await;
    }
    cond.insert("max_pods".into(), json!(c.pods + 10));
    cond.insert("log".into(), json!("warn,actlet=info to a file (the binary's default)"));

    let dir = c.work_dir.join("manifests");
    let staging = c.work_dir.join("staging");
    reset_dir(&dir)?;
    let mut config = KubeletConfig::new(NODE);
    config.root_dir = c.work_dir.join("kubelet");
    config.pod_logs_dir = c.work_dir.join("pods");
    config.container_logs_dir = None;
    // maxPods defaults to 110 (upstream); admission would reject the rest.
    config.max_pods = c.pods as i64 + 10;
    config.evented_pleg = c.evented;
    config.pod_worker_threads = c.worker_threads;
    if let Some(n) = c.max_syncs {
        config.max_concurrent_pod_syncs = n;
    }
    cond.insert(
        "max_concurrent_pod_syncs".into(),
        json!(config.max_concurrent_pod_syncs),
    );
    if c.source == "file" {
        config.static_pod_path = Some(dir.clone());
    } else {
        config.custom_sources = vec!["bench".into()];
    }
    let counting = Arc::new(Counting::new(mock.clone(), c.runtime == "indexed"));
    let runtime: SharedRuntime = counting.clone();
    let kubelet = start(config, runtime)?;
    if c.source == "custom" {
        // Housekeeping waits for every source's first snapshot.
        kubelet.pod_config.do_send(SourceSnapshot {
            source: PodSource::Custom("bench".into()),
            pods: vec![],
            errors: vec![],
        })?;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (rss_before, _) = self_rss_mib();

    // The pods, and the UIDs the file source will give them.
    let items: Vec<(String, String)> = (0..c.pods)
        .map(|i| {
            let n = format!("p{i}");
            (format!("{n}.yaml"), manifest(&n))
        })
        .collect();
    let mut pods = Vec::with_capacity(c.pods);
    for (file, body) in &items {
        let origin = dir.join(file).display().to_string();
        let mut p = load_static_pods(body, ManifestOrigin::File(&origin), NODE).map_err(|e| e.reason())?;
        pods.push(Arc::new(p.pop().ok_or("empty manifest")?));
    }
    let uids: Vec<PodUid> = pods
        .iter()
        .map(|p| PodUid::new(p.metadata.uid.clone().unwrap_or_default()))
        .collect();
    let calls_before: u64 = counting.counts().iter().map(|(_, n)| n).sum();
    // The file source parses its own copies: do not count the harness's.
    let pods = if c.source == "file" { vec![] } else { pods };

    let t0 = Instant::now();
    if c.source == "file" {
        let (staging, dir, items) = (staging.clone(), dir.clone(), items);
        // Written to the staging directory first; the renames are timed.
        tokio::task::spawn_blocking(move || write_manifests(&staging, &dir, &items)).await??;
    } else {
        kubelet.pod_config.do_send(SourceSnapshot {
            source: PodSource::Custom("bench".into()),
            pods,
            errors: vec![],
        })?;
    }
    // Polled from a thread of its own (not the kubelet's arbiter), every
    // 10 ms while few pods are left, every 50 ms while many are: each poll
    // reads every pending pod's status pointer (it still competes with the
    // kubelet for the same two cores).
    let (statuses, deadline) = (kubelet.statuses.clone(), c.deadline);
    let poll_uids = uids.clone();
    let lat: Vec<f64> = tokio::task::spawn_blocking(move || {
        let mut pending: Vec<usize> = (0..poll_uids.len()).collect();
        let mut lat = Vec::with_capacity(poll_uids.len());
        while !pending.is_empty() && t0.elapsed() < deadline {
            let every = if pending.len() > 1000 { 50 } else { 10 };
            std::thread::sleep(Duration::from_millis(every));
            let now = t0.elapsed().as_secs_f64();
            pending.retain(|i| {
                let ok = statuses.status(&poll_uids[*i]).is_some_and(|s| is_running_ready(&s));
                if ok {
                    lat.push(now);
                }
                !ok
            });
        }
        lat
    })
    .await?;
    let pending_left = c.pods - lat.len();
    let wall = t0.elapsed().as_secs_f64();
    let complete = pending_left == 0;
    let start_calls = counting.counts();
    let total_calls: u64 = start_calls.iter().map(|(_, n)| n).sum::<u64>() - calls_before;
    if complete {
        eprintln!("    {}: all Running in {wall:.3} s", c.name());
    } else {
        eprintln!(
            "    {}: only {} of {} Running after {wall:.0} s (deadline)",
            c.name(),
            lat.len(),
            c.pods
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_after, _) = self_rss_mib();

    // Idle: CPU of the whole process (kubelet + mock) and PLEG relists.
    let window = if c.idle.is_zero() || !complete {
        Duration::from_secs(5)
    } else {
        c.idle
    };
    let cpu0 = cpu_ticks(std::process::id()).unwrap_or(0);
    let ti = Instant::now();
    let window_start = tokio::time::Instant::now();
    let mut relists: std::collections::HashMap<tokio::time::Instant, f64> = Default::default();
    // CPU ticks at every 30 s of the window: the steady state is read from
    // its later part (see `steady_cpu`).
    let mut slices = vec![cpu0];
    while ti.elapsed() < window {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if ti.elapsed() >= SLICE * slices.len() as u32 {
            slices.push(cpu_ticks(std::process::id()).unwrap_or(cpu0));
        }
        if let Some((at, took)) = kubelet.health.pleg.last_relist().filter(|(at, _)| *at >= window_start) {
            relists.insert(at, took.as_secs_f64() * 1000.0);
        }
    }
    let idle_cpu = self_cpu_pct_since(cpu0, ti);
    let slice_pcts: Vec<f64> = slices
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]) as f64 / USER_HZ / SLICE.as_secs_f64() * 100.0)
        .collect();
    let (rss_settled, _) = self_rss_mib();
    let heap_settled = heap_in_use_mib();
    let relist_ms: Vec<f64> = relists.into_values().collect();
    let (_, hwm) = self_rss_mib();
    let tree = kubelet.tree().snapshot();
    let restarts: u64 = tree.iter().map(|i| i.restarts).sum();
    let root_queued = kubelet.root.addr().queued();

    let name = c.name();
    let with_targets = c.pods >= 10_000 && !c.latency;
    let f = |n: &str, unit: &str, v: f64| Figure::new(format!("{name}.{n}"), unit, v).with_all(&cond);
    let mut out = vec![];
    if complete {
        let measure = if c.source == "file" {
            "first manifest renamed into the directory -> every pod Running + Ready=True in the status cache"
        } else {
            "one SourceSnapshot sent -> every pod Running + Ready=True in the status cache"
        };
        let mut wall_f = f("wall", "s", wall).with("measure", measure);
        if with_targets {
            wall_f = wall_f.target_max(2.0, "<= 2 s");
        }
        out.push(wall_f);
        out.push(f("pods_per_s", "pods/s", c.pods as f64 / wall));
        out.push(f("pod_latency.p50", "s", percentile(&lat, 50.0)));
        out.push(f("pod_latency.p99", "s", percentile(&lat, 99.0)));
    } else {
        let mut wall_f = f("wall", "s", wall)
            .with("incomplete", true)
            .with("running_at_deadline", lat.len())
            .with("measure", "DID NOT FINISH: the deadline; see running_at_deadline");
        if with_targets {
            wall_f = wall_f.target_max(2.0, "<= 2 s");
        }
        out.push(wall_f);
        out.push(f("running_at_deadline", "pods", lat.len() as f64).with("deadline_s", c.deadline.as_secs()));
        out.push(f("pods_per_s", "pods/s", lat.len() as f64 / wall).with("incomplete", true));
    }
    // The 150 MiB target is the kubelet's: see `derived::p2`, which takes
    // the mock's own state (measured alone in the same run) out of this.
    out.push(f("peak_rss", "MiB", hwm).with("measure", "VmHWM of the whole process (kubelet + mock + bench)"));
    out.push(f("rss_before", "MiB", rss_before).with("measure", "VmRSS after start, 0 pods"));
    out.push(f("rss_after", "MiB", rss_after).with("measure", "VmRSS 2 s after all pods Running"));
    out.push(
        f("rss_settled", "MiB", rss_settled)
            .with("measure", "VmRSS at the end of the idle window")
            .with("window_s", window.as_secs()),
    );
    out.push(f("heap_in_use_settled", "MiB", heap_settled).with(
        "measure",
        "jemalloc stats.allocated at the end of the idle window (kubelet + mock + bench)",
    ));
    out.push(
        f("mem_per_pod", "KiB", (rss_after - rss_before) * 1024.0 / c.pods as f64)
            .with("measure", "(VmRSS after - VmRSS before) / pods; kubelet + mock state"),
    );
    let mut relist_f = f("pleg_relist.p50", "ms", median(&relist_ms))
        .with("containers", c.pods)
        .with("sandboxes", c.pods)
        .with("samples", relist_ms.len())
        .with(
            "measure",
            "PlegHealthHandle::last_relist() in steady state: ListPodSandbox + ListContainers (mock) + diff",
        );
    if c.evented {
        // The global relist is a 300 s safety net here: its cost is paid
        // once per 300 s, not per second.
        relist_f = relist_f
            .with("global_relist_period_s", 300)
            .with("relists_in_idle_window", relist_ms.len());
    }
    if relist_ms.is_empty() {
        // No global relist in the window (EventedPLEG: one per 300 s): a
        // median of nothing is no figure, and certainly no "met".
        relist_f = relist_f.with("no_samples", true);
    } else if with_targets {
        relist_f = relist_f.target_max(5.0, "<= 5 ms");
    }
    out.push(relist_f);
    out.push(f("pleg_relist.max", "ms", max(&relist_ms)).with("containers", c.pods));
    if !c.idle.is_zero() && complete {
        let mut cpu_f = f("idle_cpu", "%core", idle_cpu)
            .with("window_s", window.as_secs())
            .with(
                "measure",
                "utime+stime of the whole process (kubelet + mock) while idle, all pods running",
            );
        if with_targets {
            cpu_f = cpu_f.target_max(2.0, "<= 2%");
        }
        out.push(cpu_f);
        if let Some(steady) = steady_cpu(&slice_pcts) {
            let mut steady_f = f("idle_cpu.steady", "%core", steady)
                .with("window_s", window.as_secs())
                .with(
                    "slices_pct",
                    slice_pcts
                        .iter()
                        .map(|p| (p * 100.0).round() / 100.0)
                        .collect::<Vec<_>>(),
                )
                .with(
                    "measure",
                    "utime+stime of the whole process over the idle window's 30 s slices after the first 90 s \
                     (past the first container GC round and the first wave of periodic resyncs)",
                );
            if with_targets {
                steady_f = steady_f.target_max(2.0, "<= 2%");
            }
            out.push(steady_f);
        }
    }
    let by_method: Map<String, Value> = start_calls
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(m, n)| ((*m).to_string(), json!(n)))
        .collect();
    out.push(
        f("cri_calls_per_pod", "calls", total_calls as f64 / c.pods as f64)
            .with(
                "measure",
                "CRI calls from the first manifest until all pods Running (or the deadline), / pods",
            )
            .with("by_method_since_start", Value::Object(by_method)),
    );
    out.push(
        f("tree.children", "actors", tree.len() as f64)
            .with("restarts", restarts)
            .with("root_mailbox_queued", root_queued)
            .with(
                "note",
                "mailbox depths of pod-workers-manager / sync-loop are not reachable through Kubelet",
            ),
    );
    Ok(out)
}
