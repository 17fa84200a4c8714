//! actlet's benchmark harness (issue 6). Prints figures; never asserts timings.
//!
//! ```text
//! bench all [--quick] --endpoint unix:///…/containerd.sock --actlet target/release/actlet
//!           [--work-dir /var/lib/actlet-bench/work] [--out bench-results.json] [--only p1,p2,p3,cluster]
//! bench p2-case --pods N --latency instant|real --source file|custom|mock --idle-secs S --work-dir DIR
//! bench churn --pods 10000 --wave 500 --minutes 30 --work-dir DIR
//! ```
//! - P1: pod-start overhead of actlet over raw CRI calls on a real containerd;
//! - P2: 1k / 10k pods on the in-process mock CRI (one process per case);
//! - P3: footprint of the actlet process (RSS, CPU idle; start → /healthz ok);
//! - cluster: actlet against a real kube-apiserver (envtest, `$KUBEBUILDER_ASSETS`)
//!   on the same containerd: start → Node Ready, API pod → Running + Ready
//!   beside the raw CRI floor, footprint in cluster mode;
//! - churn: the memory soak on the mock (`--only churn`: 30 min at 10k pods,
//!   `--quick`: 1 min at 1k; not in the default set).
//!
//! `hack/bench.sh` builds everything in release mode, starts a private
//! containerd and runs `bench all`. See docs/performance.md.

/// The daemon's allocator (src/main.rs): the in-process P2 cases and the
/// churn soak measure the kubelet as the `actlet` binary runs it.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod churn;
mod cluster;
mod common;
mod containerd;
mod derived;
// The tests' envtest harness (a real kube-apiserver + etcd on loopback).
#[path = "../../tests/support/envtest.rs"]
mod envtest;
mod indexed;
mod mock;
mod mock_floor;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

use crate::common::{Figure, print_table, write_json};

#[derive(Parser)]
#[command(
    name = "bench",
    about = "actlet benchmarks: P1 overhead over raw CRI, P2 mock scale, P3 footprint"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs the benchmarks, writes the JSON summary and prints the table.
    All(AllArgs),
    /// Internal: one P2 case in this process (prints `FIGURES <json>`).
    P2Case(CaseArgs),
    /// The churn soak in this process (prints `FIGURES <json>`).
    Churn(ChurnArgs),
    /// Prints the table of an existing bench-results.json.
    Table {
        /// The JSON file.
        #[arg(default_value = "bench-results.json")]
        file: PathBuf,
    },
}

#[derive(clap::Args)]
struct AllArgs {
    /// Small N and short idle windows (a smoke run).
    #[arg(long)]
    quick: bool,
    /// CRI endpoint of the benchmark's own containerd (P1, P3).
    #[arg(long)]
    endpoint: Option<String>,
    /// The release actlet binary (P1, P3).
    #[arg(long, default_value = "target/release/actlet")]
    actlet: PathBuf,
    /// Scratch directory (manifests, logs, kubelet root).
    #[arg(long, default_value = "/var/lib/actlet-bench/work")]
    work_dir: PathBuf,
    /// Where the JSON summary goes.
    #[arg(long, default_value = "bench-results.json")]
    out: PathBuf,
    /// Comma-separated subset of p1,p2,p3,cluster,churn.
    #[arg(long, default_value = "p1,p2,p3,cluster")]
    only: String,
    /// P1 pod counts instead of the defaults (1,10,50; --quick: 1,5), e.g. `--sizes 50`.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// P1 A/B rounds per size instead of the defaults.
    #[arg(long)]
    rounds: Option<usize>,
    /// Minutes of churn (`--only churn`; default 30, --quick 1).
    #[arg(long)]
    churn_minutes: Option<u64>,
}

#[derive(clap::Args)]
struct ChurnArgs {
    /// Pods alive at any time.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// Pods replaced per wave.
    #[arg(long, default_value_t = 500)]
    wave: usize,
    #[arg(long, default_value_t = 30)]
    minutes: u64,
    /// Pause between waves.
    #[arg(long, default_value_t = 10)]
    pause_secs: u64,
    #[arg(long)]
    work_dir: PathBuf,
    /// Feature gate `EventedPLEG`.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    evented: bool,
}

impl ChurnArgs {
    fn args(&self) -> Vec<String> {
        vec![
            "churn".into(),
            format!("--pods={}", self.pods),
            format!("--wave={}", self.wave),
            format!("--minutes={}", self.minutes),
            format!("--pause-secs={}", self.pause_secs),
            format!("--work-dir={}", self.work_dir.display()),
            format!("--evented={}", self.evented),
        ]
    }
}

#[derive(clap::Args)]
struct CaseArgs {
    #[arg(long)]
    pods: usize,
    /// `instant` or `real` (latencies of real-runtime.md).
    #[arg(long, default_value = "instant")]
    latency: String,
    /// `file`, `custom` or `mock`.
    #[arg(long, default_value = "file")]
    source: String,
    /// `mock` or `indexed`.
    #[arg(long, default_value = "mock")]
    runtime: String,
    #[arg(long, default_value_t = 0)]
    idle_secs: u64,
    #[arg(long, default_value_t = 600)]
    deadline_secs: u64,
    #[arg(long)]
    work_dir: PathBuf,
    /// Feature gate `EventedPLEG` (the mock's container events).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    evented: bool,
    /// Arbiters the pod workers run on besides the main one.
    #[arg(long, default_value_t = 0)]
    worker_threads: usize,
    /// `--max-concurrent-pod-syncs` of the kubelet (default: the kubelet's default; 0: unbounded).
    #[arg(long)]
    max_concurrent_pod_syncs: Option<usize>,
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Cmd::All(a) => match all(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::P2Case(a) => {
            let case = mock::Case {
                pods: a.pods,
                latency: a.latency == "real",
                source: a.source,
                runtime: a.runtime,
                idle: Duration::from_secs(a.idle_secs),
                deadline: Duration::from_secs(a.deadline_secs),
                work_dir: a.work_dir,
                evented: a.evented,
                worker_threads: a.worker_threads,
                max_syncs: a.max_concurrent_pod_syncs,
            };
            match mock::run_case(case) {
                Ok(()) => {
                    // Skip tearing down thousands of actors and tasks.
                    std::process::exit(0)
                }
                Err(e) => {
                    eprintln!("bench p2-case: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Churn(a) => {
            let soak = churn::Soak {
                pods: a.pods,
                wave: a.wave,
                duration: Duration::from_secs(a.minutes * 60),
                pause: Duration::from_secs(a.pause_secs),
                work_dir: a.work_dir,
                evented: a.evented,
            };
            match actix_rt::System::new().block_on(churn::run(soak)) {
                Ok(figures) => {
                    let v = serde_json::Value::Array(figures.iter().map(Figure::to_json).collect());
                    println!("FIGURES {v}");
                    std::process::exit(0)
                }
                Err(e) => {
                    eprintln!("bench churn: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Table { file } => {
            let figures = std::fs::read_to_string(&file)
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| {
                    v.as_array()
                        .map(|a| a.iter().filter_map(Figure::from_json).collect::<Vec<_>>())
                });
            match figures {
                Some(f) => {
                    print_table(&f);
                    ExitCode::SUCCESS
                }
                None => {
                    eprintln!("bench: cannot read {}", file.display());
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn all(a: AllArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let started = Instant::now();
    let only: Vec<&str> = a.only.split(',').map(str::trim).collect();
    std::fs::create_dir_all(&a.work_dir)?;
    let mut figures: Vec<Figure> = vec![];
    let (idle, p3_pods) = if a.quick {
        (Duration::from_secs(5), 5)
    } else {
        (Duration::from_secs(60), 50)
    };
    let wants_cri = only.contains(&"p1") || only.contains(&"p3") || only.contains(&"cluster");
    match (&a.endpoint, wants_cri) {
        (Some(endpoint), true) => {
            let mut opts = containerd::Opts {
                endpoint: endpoint.clone(),
                actlet_bin: std::fs::canonicalize(&a.actlet)?,
                work_dir: a.work_dir.join("cri"),
                sizes: if a.quick { vec![1, 5] } else { vec![1, 10, 50] },
                rounds: if a.quick {
                    vec![(1, 2), (5, 1)]
                } else {
                    vec![(1, 5), (10, 3), (50, 3)]
                },
                raw_caps: if a.quick { vec![] } else { vec![4, 1] },
                idle,
                healthz_starts: if a.quick { 3 } else { 7 },
                p3_pods,
            };
            if !a.sizes.is_empty() {
                opts.sizes = a.sizes.clone();
                opts.p3_pods = *opts.sizes.iter().max().unwrap_or(&1);
            }
            if let Some(r) = a.rounds {
                opts.rounds = opts.sizes.iter().map(|&n| (n, r)).collect();
            }
            let mut with_pods = None;
            if only.contains(&"p1") {
                eprintln!("== P1: overhead over raw CRI on {endpoint}");
                let (f, foot) = containerd::p1(&opts, only.contains(&"p3"))?;
                figures.extend(f);
                with_pods = foot;
            }
            if only.contains(&"p3") {
                eprintln!("== P3: footprint of the actlet process");
                figures.extend(containerd::p3(&opts, with_pods)?);
            }
            if only.contains(&"cluster") {
                eprintln!("== cluster: actlet against a real kube-apiserver (envtest) on {endpoint}");
                let c = cluster::Opts {
                    rounds: if a.quick { 2 } else { 5 },
                    batch: opts.p3_pods,
                    idle,
                    cri: opts,
                };
                figures.extend(cluster::run(&c)?);
            }
        }
        (None, true) => {
            eprintln!("== P1/P3/cluster SKIPPED: no --endpoint (needs root and a containerd: hack/bench.sh)")
        }
        _ => {}
    }
    if only.contains(&"p2") {
        eprintln!("== P2: scale on the mock CRI (one process per case)");
        // On tmpfs when there is one: the pod log directories of 10k pods are
        // then not disk I/O (the mock and the kubelet both create files there).
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.join("actlet-bench")
        } else {
            a.work_dir.join("mock")
        };
        let case = |pods: usize, latency: bool, source: &str, runtime: &str, idle: u64, deadline: u64| mock::Case {
            evented: false,
            worker_threads: 0,
            max_syncs: None,
            pods,
            latency,
            source: source.into(),
            runtime: runtime.into(),
            idle: Duration::from_secs(idle),
            deadline: Duration::from_secs(deadline),
            work_dir: dir.join(format!(
                "{source}-{runtime}-{pods}-{}",
                if latency { "real" } else { "instant" }
            )),
        };
        let cases = if a.quick {
            vec![
                case(1_000, false, "file", "mock", 5, 120),
                mock::Case {
                    evented: true,
                    ..case(1_000, false, "file", "mock", 5, 120)
                },
                case(1_000, false, "file", "indexed", 0, 120),
                case(1_000, true, "file", "mock", 0, 120),
                case(1_000, false, "custom", "mock", 0, 120),
                case(1_000, false, "mock", "mock", 0, 120),
            ]
        } else {
            vec![
                case(1_000, false, "file", "mock", 60, 300),
                case(10_000, false, "file", "mock", 60, 240),
                // A 240 s idle window: `idle_cpu.steady` reads its last 150 s.
                mock::Case {
                    evented: true,
                    ..case(10_000, false, "file", "mock", 240, 240)
                },
                case(10_000, false, "file", "indexed", 60, 300),
                case(10_000, false, "custom", "indexed", 0, 300),
                case(1_000, true, "file", "mock", 0, 300),
                case(10_000, true, "file", "indexed", 0, 300),
                case(10_000, false, "mock", "mock", 0, 300),
            ]
        };
        figures.extend(mock::p2(&cases)?);
    }
    if only.contains(&"churn") {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.join("actlet-bench")
        } else {
            a.work_dir.join("mock")
        };
        let args = ChurnArgs {
            pods: if a.quick { 1_000 } else { 10_000 },
            wave: if a.quick { 100 } else { 500 },
            minutes: a.churn_minutes.unwrap_or(if a.quick { 1 } else { 30 }),
            pause_secs: if a.quick { 1 } else { 10 },
            work_dir: dir.join("churn"),
            evented: false,
        };
        eprintln!(
            "== churn: {} pods, waves of {} for {} min (one process)",
            args.pods, args.wave, args.minutes
        );
        figures.extend(mock::run_subcommand(&args.args())?);
    }
    write_json(&a.out, &figures)?;
    print_table(&figures);
    eprintln!(
        "bench: {} figures written to {} in {:.0} s{}",
        figures.len(),
        a.out.display(),
        started.elapsed().as_secs_f64(),
        if a.quick {
            " (--quick: small N, short windows)"
        } else {
            ""
        }
    );
    Ok(())
}
