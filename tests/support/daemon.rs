//! Harness for the system tests: the real `actlet` binary against a real
//! containerd, driven and observed the way a user would.
//!
//! - [`endpoint`]: the gate (`ACTLET_CRI_ENDPOINT`; `ACTLET_REQUIRE_CONTAINERD=1`
//!   turns a missing endpoint into a failure instead of a loud SKIPPED line).
//! - [`Env::start`]: a temp dir (manifests, `--root-dir`, the daemon's log), a
//!   unique node name per test, and the daemon started on a free read-only port.
//! - Observation: `GET /pods` ([`Env::pods`], [`Env::wait_pod`]) and the CRI
//!   itself ([`Env::cri_view`]: only this test's sandboxes and containers).
//! - Control: [`Env::write_manifest`] / [`Env::remove_manifest`],
//!   [`Env::kill_9`], [`Env::stop`], [`Env::restart`].
//! - Cleanup ([`Drop`]): the daemon is killed (by its PID), then every sandbox
//!   and container of this test's node is stopped and removed through the CRI,
//!   and its log directories are deleted — also when the test failed, in
//!   which case the daemon's log tail is printed first.
//!
//! Several actlets on one containerd would fight: each one's housekeeping
//! kills every pod in the runtime that its own sources do not want (as the
//! upstream kubelet does). So the tests of a binary are serialized by
//! [`Env::start`] (a process-wide lock held until the `Env` is dropped).
//!
//! Included by the test files with `#[path]`; compiled alone it has no tests.
#![allow(dead_code)]

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use actlet::cri::{CriClient, Runtime, v1};
use actlet::kuberuntime::labels::{POD_NAME_LABEL, POD_UID_LABEL};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;
use tokio::sync::{Mutex, OwnedMutexGuard};

/// Node names of this harness start with this (stale pods of dead test
/// processes are recognised by it).
pub const NODE_PREFIX: &str = "actsys-";

/// Where actlet puts pod log directories (not configurable by flag).
const POD_LOGS_DIR: &str = "/var/log/pods";
/// Where actlet puts container log symlinks.
const CONTAINER_LOGS_DIR: &str = "/var/log/containers";

/// The containerd endpoint, or `None` (after saying so loudly) when the test must skip.
pub fn endpoint(test: &str) -> Option<String> {
    match std::env::var("ACTLET_CRI_ENDPOINT") {
        Ok(ep) if !ep.is_empty() => Some(ep),
        _ if std::env::var("ACTLET_REQUIRE_CONTAINERD").as_deref() == Ok("1") => {
            panic!(
                "ACTLET_REQUIRE_CONTAINERD=1 but ACTLET_CRI_ENDPOINT is not set (run: EP=$(sudo hack/containerd/up.sh))"
            )
        }
        _ => {
            // Straight to the stderr handle: libtest captures `eprintln!` of passing tests.
            let msg = format!(
                "\n*** SKIPPED {test}: set ACTLET_CRI_ENDPOINT=unix:///…/containerd.sock (hack/containerd/up.sh prints it) ***\n"
            );
            let _ = std::io::stderr().write_all(msg.as_bytes());
            None
        }
    }
}

/// One test's actlets run alone on the runtime (see the module docs).
static SERIAL: LazyLock<Arc<Mutex<()>>> = LazyLock::new(|| Arc::new(Mutex::new(())));

/// Prints progress straight to stderr (visible with `--nocapture`; cheap otherwise).
pub fn note(test: &str, msg: impl std::fmt::Display) {
    let line = format!("[{test}] {msg}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// A free TCP port on 127.0.0.1 (bound and released; the daemon binds it next).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind 127.0.0.1:0: {e}"));
    l.local_addr().unwrap_or_else(|e| panic!("local_addr: {e}")).port()
}

/// The sandboxes and containers of one node, as the CRI lists them.
#[derive(Clone, Debug, Default)]
pub struct CriView {
    /// This node's sandboxes (any state).
    pub sandboxes: Vec<v1::PodSandbox>,
    /// Their containers (any state).
    pub containers: Vec<v1::Container>,
}

impl CriView {
    /// Sandboxes of a pod UID.
    pub fn sandboxes_of(&self, uid: &str) -> Vec<&v1::PodSandbox> {
        self.sandboxes
            .iter()
            .filter(|s| label(&s.labels, POD_UID_LABEL) == Some(uid))
            .collect()
    }

    /// Ready sandboxes of a pod UID.
    pub fn ready_sandboxes_of(&self, uid: &str) -> usize {
        self.sandboxes_of(uid)
            .iter()
            .filter(|s| s.state == v1::PodSandboxState::SandboxReady as i32)
            .count()
    }

    /// Containers of a pod UID.
    pub fn containers_of(&self, uid: &str) -> Vec<&v1::Container> {
        self.containers
            .iter()
            .filter(|c| label(&c.labels, POD_UID_LABEL) == Some(uid))
            .collect()
    }

    /// Running containers of a pod UID.
    pub fn running_containers_of(&self, uid: &str) -> Vec<&v1::Container> {
        self.containers_of(uid)
            .into_iter()
            .filter(|c| c.state == v1::ContainerState::ContainerRunning as i32)
            .collect()
    }

    /// Containers of a pod UID with a given container name.
    pub fn named(&self, uid: &str, container: &str) -> Vec<&v1::Container> {
        self.containers_of(uid)
            .into_iter()
            .filter(|c| c.metadata.as_ref().is_some_and(|m| m.name == container))
            .collect()
    }

    /// A one-line summary per sandbox/container, for failure messages.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for s in &self.sandboxes {
            let name = label(&s.labels, POD_NAME_LABEL).unwrap_or("?");
            out += &format!(
                "  sandbox {} {name} state={}\n",
                short(&s.id),
                v1::PodSandboxState::try_from(s.state).map_or("?", |st| st.as_str_name())
            );
            for c in self.containers.iter().filter(|c| c.pod_sandbox_id == s.id) {
                out += &format!(
                    "    container {} {} attempt={} state={}\n",
                    short(&c.id),
                    c.metadata.as_ref().map_or("?", |m| m.name.as_str()),
                    c.metadata.as_ref().map_or(0, |m| m.attempt),
                    v1::ContainerState::try_from(c.state).map_or("?", |st| st.as_str_name())
                );
            }
        }
        out
    }
}

fn label<'a>(labels: &'a std::collections::HashMap<String, String>, key: &str) -> Option<&'a str> {
    labels.get(key).map(String::as_str)
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// A pod's API status, summarised for failure messages.
pub fn pod_summary(p: &Pod) -> String {
    let st = p.status.clone().unwrap_or_default();
    let cs = |list: &Option<Vec<ContainerStatus>>| {
        list.iter()
            .flatten()
            .map(|c| {
                let state = c.state.clone().unwrap_or_default();
                let s = if let Some(r) = &state.running {
                    format!("running since {:?}", r.started_at)
                } else if let Some(t) = &state.terminated {
                    format!("terminated {:?} exit {}", t.reason, t.exit_code)
                } else if let Some(w) = &state.waiting {
                    format!("waiting {:?}", w.reason)
                } else {
                    "no state".into()
                };
                format!(
                    "{}: {s}, restarts {}, ready {}, id {:?}",
                    c.name, c.restart_count, c.ready, c.container_id
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "{} uid={} phase={:?} podIP={:?} init=[{}] containers=[{}]",
        p.metadata.name.as_deref().unwrap_or("?"),
        p.metadata.uid.as_deref().unwrap_or("?"),
        st.phase,
        st.pod_ip,
        cs(&st.init_container_statuses),
        cs(&st.container_statuses)
    )
}

/// The status of container `name` in a pod (regular containers).
pub fn container_status<'a>(p: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

/// The status of init container `name` in a pod.
pub fn init_status<'a>(p: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    p.status
        .as_ref()?
        .init_container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

/// The pod's phase (`""` when unset).
pub fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// The pod's UID.
pub fn uid(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

/// One test's environment: its node, its daemon, its files.
pub struct Env {
    /// The test's name (messages).
    pub test: String,
    /// The node name (`--hostname-override`); static pods are `<name>-<node>`.
    pub node: String,
    /// The CRI endpoint.
    pub endpoint: String,
    /// A CRI client on the same runtime.
    pub cri: CriClient,
    dir: TempDir,
    port: u16,
    /// The authenticated HTTPS API's port (anonymous, AlwaysAllow: the flags' defaults).
    pub api_port: u16,
    child: Option<Child>,
    extra_args: Vec<String>,
    http: reqwest::Client,
    // Last: released after the cleanup in `drop`.
    _serial: OwnedMutexGuard<()>,
}

impl Env {
    /// Sets up the test `test` (node `actsys-<short>-<pid>`) and starts actlet,
    /// or returns `None` when containerd tests are skipped.
    pub async fn start(test: &str, short: &str) -> Option<Self> {
        Self::start_with(test, short, &[]).await
    }

    /// [`Env::start`] with extra actlet flags.
    pub async fn start_with(test: &str, short: &str, extra_args: &[&str]) -> Option<Self> {
        let endpoint = endpoint(test)?;
        let serial = SERIAL.clone().lock_owned().await;
        let dir = tempfile::Builder::new()
            .prefix(&format!("actlet-sys-{short}-"))
            .tempdir()
            .unwrap_or_else(|e| panic!("tempdir: {e}"));
        for sub in ["manifests", "root"] {
            fs::create_dir_all(dir.path().join(sub)).unwrap_or_else(|e| panic!("mkdir {sub}: {e}"));
        }
        let cri = CriClient::new(&endpoint, Duration::from_secs(60)).unwrap_or_else(|e| panic!("endpoint: {e}"));
        let node = format!("{NODE_PREFIX}{short}-{}", std::process::id());
        let mut env = Self {
            test: test.to_string(),
            node,
            endpoint,
            cri,
            dir,
            port: 0,
            api_port: 0,
            child: None,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap_or_else(|e| panic!("http client: {e}")),
            _serial: serial,
        };
        env.sweep_stale().await;
        env.spawn_daemon().await;
        Some(env)
    }

    /// The directory actlet reads manifests from.
    pub fn manifest_dir(&self) -> PathBuf {
        self.dir.path().join("manifests")
    }

    /// The daemon's log file (stdout and stderr of every start).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("actlet.log")
    }

    /// `<name>-<node>`: the name actlet gives the static pod `name`.
    pub fn pod_name(&self, name: &str) -> String {
        format!("{name}-{}", self.node)
    }

    /// Prints a progress line.
    pub fn note(&self, msg: impl std::fmt::Display) {
        note(&self.test, msg);
    }

    // ------------------------------------------------------------ the daemon

    async fn spawn_daemon(&mut self) {
        assert!(self.child.is_none(), "the daemon is already running");
        self.port = free_port();
        self.api_port = free_port();
        let log_path = self.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("open {}: {e}", log_path.display()));
        let _ = writeln!(log, "===== starting actlet (read-only port {}) =====", self.port);
        let err = log.try_clone().unwrap_or_else(|e| panic!("dup log: {e}"));
        let verbosity = std::env::var("ACTLET_SYSTEM_V").unwrap_or_else(|_| "2".into());
        let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
            .arg("--pod-manifest-path")
            .arg(self.manifest_dir())
            .arg("--container-runtime-endpoint")
            .arg(&self.endpoint)
            .arg("--root-dir")
            .arg(self.dir.path().join("root"))
            .args([
                "--address",
                "127.0.0.1",
                "--read-only-port",
                &self.port.to_string(),
                "--port",
                &self.api_port.to_string(),
            ])
            .args(["--healthz-port", "0", "--hostname-override", &self.node])
            .args(["--file-check-frequency", "1s", "--v", &verbosity])
            .args(&self.extra_args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", env!("CARGO_BIN_EXE_actlet")));
        self.note(format!("actlet started, pid {}, port {}", child.id(), self.port));
        self.child = Some(child);
        // Ready when /pods answers.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                panic!("actlet exited during startup: {status}\n{}", self.log_tail(40));
            }
            if self.try_pods().await.is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "actlet's /pods did not answer within 30 s\n{}",
                self.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The daemon's PID (it must be running).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the daemon is running").id()
    }

    /// `kill -9` the daemon (by its PID) and reap it. Its pods keep running.
    pub fn kill_9(&mut self) {
        let mut child = self.child.take().expect("the daemon is running");
        let pid = Pid::from_raw(child.id() as i32);
        kill(pid, Signal::SIGKILL).unwrap_or_else(|e| panic!("kill -9 {pid}: {e}"));
        let status = child.wait().unwrap_or_else(|e| panic!("wait {pid}: {e}"));
        self.note(format!("actlet killed with SIGKILL: {status}"));
    }

    /// SIGTERM the daemon (by its PID) and wait for it to exit (SIGKILL after `timeout`).
    pub fn stop(&mut self, timeout: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("the daemon is running");
        let pid = Pid::from_raw(child.id() as i32);
        kill(pid, Signal::SIGTERM).unwrap_or_else(|e| panic!("kill -TERM {pid}: {e}"));
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait {pid}: {e}")) {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = kill(pid, Signal::SIGKILL);
                let _ = child.wait();
                panic!(
                    "actlet did not stop within {timeout:?} of SIGTERM\n{}",
                    self.log_tail(40)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the daemon again with the same root dir, manifests and node name.
    pub async fn restart(&mut self) {
        self.spawn_daemon().await;
    }

    /// The last `n` lines of the daemon's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(n);
        format!(
            "----- last {} lines of {} -----\n{}\n-----",
            lines.len() - from,
            self.log_path().display(),
            lines[from..].join("\n")
        )
    }

    // ------------------------------------------------------------ manifests

    /// Writes (atomically: temp file + rename) the manifest `file` (e.g. `sleeper.yaml`).
    pub fn write_manifest(&self, file: &str, yaml: &str) {
        let dir = self.manifest_dir();
        let tmp = dir.join(format!(".{file}.tmp"));
        fs::write(&tmp, yaml).unwrap_or_else(|e| panic!("write {}: {e}", tmp.display()));
        fs::rename(&tmp, dir.join(file)).unwrap_or_else(|e| panic!("rename to {file}: {e}"));
    }

    /// Removes the manifest `file`.
    pub fn remove_manifest(&self, file: &str) {
        let path = self.manifest_dir().join(file);
        fs::remove_file(&path).unwrap_or_else(|e| panic!("remove {}: {e}", path.display()));
    }

    // ------------------------------------------------------------ observation

    async fn try_pods(&self) -> Result<Vec<Pod>, String> {
        let url = format!("http://127.0.0.1:{}/pods", self.port);
        let resp = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url}: {}", resp.status()));
        }
        let body = resp.text().await.map_err(|e| format!("GET {url}: body: {e}"))?;
        let list: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("GET {url}: {e}: {body}"))?;
        if list["kind"] != "PodList" {
            return Err(format!("GET {url}: not a PodList: {body}"));
        }
        let items = list["items"].as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .map(|p| serde_json::from_value::<Pod>(p).map_err(|e| format!("GET {url}: bad pod: {e}")))
            .collect()
    }

    /// `GET /pods` (panics when the daemon does not answer).
    pub async fn pods(&self) -> Vec<Pod> {
        self.try_pods()
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", self.log_tail(40)))
    }

    /// The static pod `name` (i.e. `<name>-<node>`) from `/pods`.
    pub async fn pod(&self, name: &str) -> Option<Pod> {
        let full = self.pod_name(name);
        self.pods()
            .await
            .into_iter()
            .find(|p| p.metadata.name.as_deref() == Some(full.as_str()))
    }

    /// This node's sandboxes and containers, straight from the CRI.
    pub async fn cri_view(&self) -> CriView {
        let sandboxes = self
            .cri
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
            .await
            .unwrap_or_else(|e| panic!("ListPodSandbox: {e}"))
            .items;
        let suffix = format!("-{}", self.node);
        let sandboxes: Vec<_> = sandboxes
            .into_iter()
            .filter(|s| label(&s.labels, POD_NAME_LABEL).is_some_and(|n| n.ends_with(&suffix)))
            .collect();
        let ids: HashSet<&str> = sandboxes.iter().map(|s| s.id.as_str()).collect();
        let containers = self
            .cri
            .list_containers(v1::ListContainersRequest { filter: None })
            .await
            .unwrap_or_else(|e| panic!("ListContainers: {e}"))
            .containers
            .into_iter()
            .filter(|c| ids.contains(c.pod_sandbox_id.as_str()))
            .collect();
        CriView { sandboxes, containers }
    }

    /// Polls `probe` every 200 ms until it returns `Some`, for at most
    /// `timeout` of real time; on timeout panics naming `what`, with the
    /// pods as `/pods` and the CRI see them.
    pub async fn wait_for<T>(&self, what: &str, timeout: Duration, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = probe().await {
                self.note(format!("{what}: after {:.1?}", start.elapsed()));
                return v;
            }
            if start.elapsed() >= timeout {
                let pods = self.try_pods().await.map_or_else(
                    |e| e,
                    |ps| ps.iter().map(|p| format!("  {}\n", pod_summary(p))).collect(),
                );
                let view = self.cri_view().await.summary();
                panic!("timed out after {timeout:?} waiting for: {what}\n/pods:\n{pods}CRI:\n{view}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the static pod `name` is in `/pods` and `cond` holds for it.
    pub async fn wait_pod(&self, name: &str, what: &str, timeout: Duration, cond: impl Fn(&Pod) -> bool) -> Pod {
        self.wait_for(&format!("{name}: {what}"), timeout, async || {
            self.pod(name).await.filter(|p| cond(p))
        })
        .await
    }

    /// Runs `f` to completion on a fresh runtime in another thread (usable from `Drop`).
    fn block_on_elsewhere<F: Future<Output = ()> + Send + 'static>(f: F) {
        let joined =
            std::thread::spawn(
                move || match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt.block_on(f),
                    Err(e) => note("cleanup", format!("cannot build a runtime: {e}")),
                },
            )
            .join();
        if joined.is_err() {
            note("cleanup", "the cleanup thread panicked");
        }
    }

    // ------------------------------------------------------------ cleanup

    /// Removes sandboxes left by earlier test processes of this harness (a
    /// run that was killed before its cleanup).
    async fn sweep_stale(&self) {
        let own = format!("-{}", std::process::id());
        let marker = format!("-{NODE_PREFIX}");
        let Ok(list) = self
            .cri
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
            .await
        else {
            return;
        };
        for s in list.items {
            let name = label(&s.labels, POD_NAME_LABEL).unwrap_or_default();
            if name.contains(&marker) && !name.ends_with(&own) {
                self.note(format!("removing stale sandbox {} of {name}", short(&s.id)));
                remove_sandbox(&self.cri, &s.id).await;
            }
        }
    }
}

/// Stops (no grace) and removes a sandbox and its containers; errors are reported, not fatal.
async fn remove_sandbox(cri: &CriClient, id: &str) {
    let filter = v1::ContainerFilter {
        pod_sandbox_id: id.to_string(),
        ..Default::default()
    };
    if let Ok(list) = cri
        .list_containers(v1::ListContainersRequest { filter: Some(filter) })
        .await
    {
        for c in list.containers {
            // Errors are expected for containers exiting meanwhile; the
            // sandbox removal below reports anything that really stays.
            let _ = cri
                .stop_container(v1::StopContainerRequest {
                    container_id: c.id.clone(),
                    timeout: 0,
                })
                .await;
        }
    }
    if let Err(e) = cri
        .stop_pod_sandbox(v1::StopPodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        })
        .await
    {
        note("cleanup", format!("StopPodSandbox {}: {e}", short(id)));
    }
    // Removes the sandbox's containers too.
    if let Err(e) = cri
        .remove_pod_sandbox(v1::RemovePodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        })
        .await
    {
        note("cleanup", format!("RemovePodSandbox {}: {e}", short(id)));
    }
}

/// Removes the entries of `dir` whose name contains `needle`.
fn remove_entries_containing(dir: &Path, needle: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().contains(needle) {
            let path = e.path();
            let _ = if path.is_dir() && !path.is_symlink() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::io::stderr().write_all(format!("[{}] FAILED\n{}\n", self.test, self.log_tail(80)).as_bytes());
        }
        // The daemon first, so it cannot recreate what is removed below.
        if let Some(mut child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
        let (endpoint, node, test) = (self.endpoint.clone(), self.node.clone(), self.test.clone());
        Self::block_on_elsewhere(async move {
            let Ok(cri) = CriClient::new(&endpoint, Duration::from_secs(30)) else {
                return;
            };
            let suffix = format!("-{node}");
            match cri.list_pod_sandbox(v1::ListPodSandboxRequest { filter: None }).await {
                Ok(list) => {
                    for s in list.items {
                        if label(&s.labels, POD_NAME_LABEL).is_some_and(|n| n.ends_with(&suffix)) {
                            remove_sandbox(&cri, &s.id).await;
                        }
                    }
                }
                Err(e) => note(&test, format!("cleanup: ListPodSandbox: {e}")),
            }
        });
        // Pod log dirs are `<ns>_<pod>_<uid>`, container links `<pod>_<ns>_<container>-<id>.log`.
        remove_entries_containing(Path::new(POD_LOGS_DIR), &format!("-{}_", self.node));
        remove_entries_containing(Path::new(CONTAINER_LOGS_DIR), &format!("-{}_", self.node));
        if std::env::var("ACTLET_SYSTEM_KEEP").as_deref() == Ok("1") {
            let kept = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")));
            note(&self.test, format!("kept {}", kept.keep().display()));
        }
    }
}
