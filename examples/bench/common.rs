//! Shared pieces of the benchmark harness: figures and their JSON/table
//! output, statistics, `/proc` readers, a tiny HTTP client, free ports and
//! the pod manifest every benchmark uses.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on Linux).
pub const USER_HZ: f64 = 100.0;

/// The container image of every benchmark pod.
pub const IMAGE: &str = "docker.io/library/busybox:1.36";

/// The node name actlet runs under in the benchmarks (pod names get `-bench-node`).
pub const NODE: &str = "bench-node";

/// One measured figure: `{ name, unit, value, conditions }` in `bench-results.json`.
/// A target, when the issue sets one, lives in `conditions.target` (text) and
/// `conditions.target_max` (number, same unit as `value`).
#[derive(Clone, Debug)]
pub struct Figure {
    pub name: String,
    pub unit: String,
    pub value: f64,
    pub conditions: Map<String, Value>,
}

impl Figure {
    pub fn new(name: impl Into<String>, unit: &str, value: f64) -> Self {
        Self {
            name: name.into(),
            unit: unit.to_string(),
            value,
            conditions: Map::new(),
        }
    }

    /// Adds a condition.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.conditions.insert(key.to_string(), value.into());
        self
    }

    /// Adds every condition of `conds`.
    pub fn with_all(mut self, conds: &Map<String, Value>) -> Self {
        for (k, v) in conds {
            self.conditions.insert(k.clone(), v.clone());
        }
        self
    }

    /// The value must be at most `max` (`text` is shown in the table).
    pub fn target_max(self, max: f64, text: &str) -> Self {
        self.with("target", text).with("target_max", max)
    }

    /// The floor this figure is compared with, measured in the same run
    /// (`conditions.floor`, `conditions.floor_of`; the table's floor column).
    pub fn floor(self, value: f64, of: &str) -> Self {
        self.with("floor", value).with("floor_of", of)
    }

    pub fn to_json(&self) -> Value {
        json!({ "name": self.name, "unit": self.unit, "value": round(self.value), "conditions": self.conditions })
    }

    pub fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            name: v.get("name")?.as_str()?.to_string(),
            unit: v.get("unit")?.as_str()?.to_string(),
            value: v.get("value")?.as_f64()?,
            conditions: v.get("conditions")?.as_object()?.clone(),
        })
    }

    /// `Some(true)` when a target is set and met.
    pub fn met(&self) -> Option<bool> {
        self.conditions
            .get("target_max")
            .and_then(Value::as_f64)
            .map(|max| self.value <= max)
    }
}

/// Rounds to 4 significant decimals so the JSON stays readable.
fn round(v: f64) -> f64 {
    if v.is_finite() {
        (v * 10_000.0).round() / 10_000.0
    } else {
        0.0
    }
}

/// Nearest-rank percentile of `xs` (sorted or not); 0 for an empty slice.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

pub fn median(xs: &[f64]) -> f64 {
    percentile(xs, 50.0)
}

pub fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(0.0, f64::max)
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// utime + stime of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces: fields are counted after its ')'.
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime is field 14, stime field 15.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// CPU use and memory of a process sampled over a window.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    /// CPU time over the window / wall time, in percent of one core.
    pub cpu_pct: f64,
    /// Mean and max `VmRSS` over the window, MiB.
    pub rss_mean_mib: f64,
    pub rss_max_mib: f64,
    /// `VmHWM` at the end, MiB.
    pub hwm_mib: f64,
    pub window_s: f64,
}

/// Samples `pid` once a second for `window`; `on_tick` runs after each sample.
pub fn measure_footprint(pid: u32, window: Duration, mut on_tick: impl FnMut()) -> Footprint {
    let t0 = Instant::now();
    let c0 = cpu_ticks(pid).unwrap_or(0);
    let mut rss = vec![];
    while t0.elapsed() < window {
        if let Some((r, _)) = rss_kib(pid) {
            rss.push(r as f64 / 1024.0);
        }
        on_tick();
        let left = window.saturating_sub(t0.elapsed());
        std::thread::sleep(left.min(Duration::from_secs(1)));
    }
    let c1 = cpu_ticks(pid).unwrap_or(c0);
    let wall = t0.elapsed().as_secs_f64();
    let (last, hwm) = rss_kib(pid).unwrap_or((0, 0));
    rss.push(last as f64 / 1024.0);
    Footprint {
        cpu_pct: (c1.saturating_sub(c0)) as f64 / USER_HZ / wall * 100.0,
        rss_mean_mib: rss.iter().sum::<f64>() / rss.len() as f64,
        rss_max_mib: max(&rss),
        hwm_mib: hwm as f64 / 1024.0,
        window_s: wall,
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// `GET path` over HTTP/1.0; returns (status code, body). Blocking, with a timeout.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    s.set_nodelay(true)?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut buf = Vec::with_capacity(64 * 1024);
    s.read_to_end(&mut buf)?;
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP header end"))?;
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("bad status line"))?;
    Ok((code, buf[head_end + 4..].to_vec()))
}

/// The benchmark pod: busybox `sleep 3600`, BestEffort, as a static manifest.
pub fn manifest(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels:\n    app: bench\nspec:\n  containers:\n    - name: sleep\n      image: {IMAGE}\n      imagePullPolicy: IfNotPresent\n      command: [\"sleep\", \"3600\"]\n"
    )
}

/// Whether a v1 PodStatus (as JSON) is phase Running with condition Ready=True.
pub fn running_and_ready_json(status: Option<&Value>) -> bool {
    let Some(st) = status else { return false };
    st.get("phase").and_then(Value::as_str) == Some("Running")
        && st.get("conditions").and_then(Value::as_array).is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Writes each manifest to `staging` first, then renames them into `dir`
/// one after another (a rename is atomic: a scan never sees half a file).
/// Returns the instant each manifest appeared, in input order.
pub fn write_manifests(staging: &Path, dir: &Path, items: &[(String, String)]) -> std::io::Result<Vec<Instant>> {
    std::fs::create_dir_all(staging)?;
    std::fs::create_dir_all(dir)?;
    for (file, body) in items {
        std::fs::write(staging.join(file), body)?;
    }
    let mut at = Vec::with_capacity(items.len());
    for (file, _) in items {
        std::fs::rename(staging.join(file), dir.join(file))?;
        at.push(Instant::now());
    }
    Ok(at)
}

/// Empties a directory (creates it if missing).
pub fn reset_dir(dir: &Path) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)
}

/// Prints the figures as a table with their targets.
pub fn print_table(figures: &[Figure]) {
    println!();
    println!(
        "{:<50} {:>12}  {:<8} {:<26} {:>12}  status",
        "figure", "value", "unit", "target", "floor (run)"
    );
    println!("{}", "-".repeat(124));
    for f in figures {
        let target = f.conditions.get("target").and_then(Value::as_str).unwrap_or("");
        let floor = f
            .conditions
            .get("floor")
            .and_then(Value::as_f64)
            .map(format_value)
            .unwrap_or_default();
        let status = match f.met() {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        println!(
            "{:<50} {:>12}  {:<8} {:<26} {floor:>12}  {status}",
            f.name,
            format_value(f.value),
            f.unit,
            target
        );
    }
    println!();
}

fn format_value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Writes `bench-results.json`.
pub fn write_json(path: &Path, figures: &[Figure]) -> std::io::Result<()> {
    let v = Value::Array(figures.iter().map(Figure::to_json).collect());
    let text = serde_json::to_string_pretty(&v).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

/// SIGTERM to `child`, then SIGKILL after 40 s. A stopped actlet leaves its
/// pods running.
pub fn terminate(child: &mut std::process::Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(40) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_if_running(child);
}

/// Kills `child` (by PID) and reaps it, if it still runs.
pub fn kill_if_running(child: &mut std::process::Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
        let _ = child.wait();
    }
}
