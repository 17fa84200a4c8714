//! Chaos: containerd is killed (SIGKILL, by the PID in its state dir) under
//! 20 running pods of the real actlet binary (tests/support/chaos_node.rs)
//! and started again with `hack/containerd/up.sh`; afterwards the pods run,
//! no sandbox is duplicated, no healthy container was restarted (the shims
//! outlive containerd) and the API's statuses equal the runtime; actlet's
//! `/metrics` show no per-pod table holding more than the pods it knows, and
//! no actor restarted or exhausted (a runtime outage is an error actors
//! handle, not a crash).
//!
//! Needs `ACTLET_CRI_ENDPOINT`, `KUBEBUILDER_ASSETS` and
//! `ACTLET_CONTAINERD_DIR` naming the state dir of the containerd behind the
//! endpoint (the test restarts that one only; SKIPPED loudly otherwise).
//! `ACTLET_CHAOS_SOAK_MINUTES=N` repeats the restart for N minutes.

#[path = "support/chaos_node.rs"]
mod chaos_node;
#[path = "support/daemon.rs"]
mod daemon;
#[path = "support/daemon_metrics.rs"]
mod daemon_metrics;
#[path = "support/envtest.rs"]
mod envtest;
#[path = "support/invariants.rs"]
mod invariants;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chaos_node::ChaosNode;
use invariants::Expect;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const PODS: usize = 20;
/// No actor may have restarted.
const NO_RESTARTS: daemon_metrics::Allowed<'static> = &[];

/// The state dir of the containerd behind the endpoint, or `None` (SKIPPED).
fn containerd_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var("ACTLET_CONTAINERD_DIR").ok().filter(|d| !d.is_empty());
    let ep = std::env::var("ACTLET_CRI_ENDPOINT").unwrap_or_default();
    match dir {
        Some(d) if ep == format!("unix://{d}/containerd.sock") => Some(PathBuf::from(d)),
        _ if ep.is_empty() => None, // the endpoint gate of ChaosNode says why
        _ => {
            let msg = format!(
                "\n*** SKIPPED {test}: set ACTLET_CONTAINERD_DIR to the state dir of the containerd at \
                 ACTLET_CRI_ENDPOINT={ep} (hack/containerd/up.sh) so the test may restart it ***\n"
            );
            let _ = std::io::stderr().write_all(msg.as_bytes());
            None
        }
    }
}

/// The PID of our containerd: the one in `<dir>/containerd.pid`, checked to be
/// `containerd --config <dir>/config.toml`.
fn containerd_pid(dir: &Path) -> i32 {
    let text = std::fs::read_to_string(dir.join("containerd.pid")).unwrap_or_else(|e| panic!("containerd.pid: {e}"));
    let pid: i32 = text
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("containerd.pid {text:?}: {e}"));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let config = dir.join("config.toml").display().to_string();
    assert!(
        args.first().is_some_and(|a| a.ends_with("containerd")) && args.contains(&config),
        "pid {pid} is not our containerd: {args:?}"
    );
    pid
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// SIGKILLs our containerd and waits until it is gone.
fn kill_containerd(dir: &Path) {
    let pid = containerd_pid(dir);
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap_or_else(|e| panic!("kill -9 containerd {pid}: {e}"));
    let start = Instant::now();
    while alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "containerd {pid} survived SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts our containerd again with hack/containerd/up.sh.
fn try_start_containerd(dir: &Path) -> Result<(), String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/containerd/up.sh");
    let out = std::process::Command::new(&script)
        .env("ACTLET_CONTAINERD_DIR", dir)
        .env("ACTLET_CONTAINERD_NO_INSTALL", "1")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{} failed: {}", script.display(), out.status))
    }
}

fn start_containerd(dir: &Path) {
    try_start_containerd(dir).unwrap_or_else(|e| panic!("{e}"));
}

/// Starts our containerd again if a failing test left it dead (the next tests need it).
struct Revive(PathBuf);

impl Drop for Revive {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(self.0.join("containerd.pid")).unwrap_or_default();
        if !pid.trim().parse().is_ok_and(alive) {
            if let Err(e) = try_start_containerd(&self.0) {
                daemon::note("cleanup", format!("containerd left down: {e}"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containerd_restart_under_20_pods() {
    const TEST: &str = "containerd_restart_under_20_pods";
    let Some(dir) = containerd_dir(TEST) else {
        let _ = daemon::endpoint(TEST); // says SKIPPED (or fails with ACTLET_REQUIRE_CONTAINERD=1)
        return;
    };
    let Some(mut node) = ChaosNode::start(TEST).await else {
        return;
    };
    let names: Vec<String> = (0..PODS).map(|i| format!("pod-{i:02}")).collect();
    for name in &names {
        node.create_pod(name).await;
    }
    let expect = Expect {
        live: names.iter().cloned().collect(),
        one_sandbox: true,
    };
    let world = node.converge("20 pods running", &expect, &Default::default()).await;
    let baseline = world.baseline(&names);
    assert_eq!(baseline.len(), PODS, "{}", world.describe());
    node.settle_tables_and_actors("20 pods running", &expect, NO_RESTARTS)
        .await;

    let _revive = Revive(dir.clone());
    invariants::rounds(TEST, async |round| {
        let d = dir.clone();
        tokio::task::spawn_blocking(move || kill_containerd(&d))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        node.note(format!("round {round}: containerd killed"));
        // Down long enough for actlet's PLEG and runtime health to notice.
        tokio::time::sleep(Duration::from_secs(5)).await;
        node.assert_alive();
        let d = dir.clone();
        tokio::task::spawn_blocking(move || start_containerd(&d))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        node.note(format!("round {round}: containerd started again"));
        node.converge("after the containerd restart", &expect, &baseline).await;
        node.settle_tables_and_actors("after the containerd restart", &expect, NO_RESTARTS)
            .await;
    })
    .await;
}
