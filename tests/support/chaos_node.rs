//! Harness for the chaos scenarios on real components: the real `actlet`
//! binary in cluster mode (`--kubeconfig`, as `system:node:<node>`) on the
//! containerd at `ACTLET_CRI_ENDPOINT`, against a real kube-apiserver + etcd
//! (tests/support/envtest.rs). Pods are created and deleted through the API as
//! admin in a namespace of the test's own; static pods (with mirror pods) come
//! from a manifest directory.
//!
//! Gates: `ACTLET_CRI_ENDPOINT` (SKIPPED loudly when unset, a failure with
//! `ACTLET_REQUIRE_CONTAINERD=1`, see support/daemon.rs) and
//! `KUBEBUILDER_ASSETS` (SKIPPED loudly when unset).
//!
//! Cleanup on drop: actlet is killed by its PID, then every sandbox of the
//! test's namespace is stopped and removed through the CRI and its log
//! directories are deleted; the API server goes with the [`EnvTest`].
//! `ACTLET_SYSTEM_KEEP=1` keeps the temp dir (actlet's log included).
//!
//! After each convergence, [`ChaosNode::settle_tables_and_actors`] checks
//! the daemon's own `/metrics` (its read-only port, unauthenticated, on
//! 127.0.0.1): no per-pod table leaks, no actor restarted beyond what the
//! scenario explains, none exhausted (tests/support/daemon_metrics.rs).
//!
//! Include after `daemon` (for the gate and `note`), `daemon_metrics`,
//! `envtest` and `invariants`.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actlet::cri::{CriClient, Runtime, v1};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::daemon;
use crate::daemon_metrics::{self, Allowed, Known, Scrape};
use crate::envtest::EnvTest;
use crate::invariants::{Baseline, Expect, PodView, World};

/// The image every chaos pod runs.
pub const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// How long convergence may take (2 shared cores, 20 pods).
pub const CONVERGE: Duration = Duration::from_secs(180);

/// How long the tables and the tree may take to settle once the API and the
/// runtime have converged (a deleted pod's watch event, its status forgotten,
/// a PLEG relist after the GC removed a sandbox).
pub const SETTLE: Duration = Duration::from_secs(60);

/// A real actlet on real containerd against a real API server.
pub struct ChaosNode {
    pub test: String,
    pub node: String,
    pub ns: String,
    pub endpoint: String,
    pub env: EnvTest,
    pub admin: kube::Client,
    pub cri: CriClient,
    dir: TempDir,
    child: Option<Child>,
    healthz: u16,
    /// The read-only port (`/metrics`) of the running actlet.
    read_only: u16,
    /// Pods created so far (API and static): the bound of the backoff tables.
    created: AtomicUsize,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// A pod bound to `node` whose container exits at once on SIGTERM.
pub fn pod_json(name: &str, node: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 5,
            "automountServiceAccountToken": false,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{
                "name": "app",
                "image": BUSYBOX,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
            }]
        }
    })
}

impl ChaosNode {
    /// Starts the API server and actlet and waits for the node to be Ready;
    /// `None` (SKIPPED) without containerd or `KUBEBUILDER_ASSETS`.
    pub async fn start(test: &str) -> Option<ChaosNode> {
        let endpoint = daemon::endpoint(test)?;
        let env = EnvTest::start().await?;
        let ns = format!("chaos-{}-{}", std::process::id(), test.replace('_', "-"));
        let ns: String = ns
            .chars()
            .take(63)
            .collect::<String>()
            .trim_end_matches('-')
            .to_string();
        env.prepare_namespace(&ns).await;
        let admin = env.admin_client().await;
        let cri = CriClient::new(&endpoint, Duration::from_secs(30)).unwrap_or_else(|e| panic!("CRI client: {e}"));
        let dir = TempDir::with_prefix("chaos-").unwrap_or_else(|e| panic!("tempdir: {e}"));
        fs::create_dir_all(dir.path().join("manifests")).unwrap_or_else(|e| panic!("manifests dir: {e}"));
        let mut node = ChaosNode {
            test: test.into(),
            node: format!("chaos-{}", std::process::id()),
            ns,
            endpoint,
            env,
            admin,
            cri,
            dir,
            child: None,
            healthz: 0,
            read_only: 0,
            created: AtomicUsize::new(0),
        };
        node.spawn().await;
        node.wait_node_ready("node Ready after start").await;
        Some(node)
    }

    /// Prints a progress line.
    pub fn note(&self, msg: impl std::fmt::Display) {
        daemon::note(
            &self.test,
            format!("{} {msg}", chrono::Utc::now().format("%H:%M:%S%.3f")),
        );
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("actlet.log")
    }

    /// The manifest directory of `--pod-manifest-path`.
    pub fn manifest_dir(&self) -> PathBuf {
        self.dir.path().join("manifests")
    }

    /// Starts the actlet process and waits for its `/healthz`.
    pub async fn spawn(&mut self) {
        assert!(self.child.is_none(), "actlet already runs");
        self.healthz = free_port();
        self.read_only = free_port();
        let (read_only, port) = (self.read_only.to_string(), free_port().to_string());
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap_or_else(|e| panic!("log: {e}"));
        let err = log.try_clone().unwrap_or_else(|e| panic!("dup log: {e}"));
        let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
            .arg("--kubeconfig")
            .arg(self.env.node_kubeconfig(&self.node))
            // Eviction runs on the real node stats, but no test here may depend on
            // how full the host disk is (upstream defaults evict at 10-15% free, and
            // a CI machine full of build output once had under 1% of 252 GiB free).
            .arg("--eviction-hard=memory.available<100Mi,nodefs.available<64Mi,imagefs.available<64Mi")
            .args(["--hostname-override", &self.node, "--node-ip", "127.0.0.1"])
            .args(["--container-runtime-endpoint", &self.endpoint])
            .arg("--root-dir")
            .arg(self.dir.path().join("root"))
            .arg("--pod-manifest-path")
            .arg(self.manifest_dir())
            // /metrics on the read-only port; both servers on loopback, and on
            // ports of their own (not 10250, which another node may hold: its
            // server would then exhaust its restarts, a violation here).
            .args(["--file-check-frequency", "1s", "--address", "127.0.0.1"])
            .args(["--read-only-port", &read_only, "--port", &port])
            .args(["--healthz-port", &self.healthz.to_string(), "-v", "2"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn actlet: {e}"));
        self.note(format!("actlet started, pid {}", child.id()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = format!("http://127.0.0.1:{}/healthz", self.healthz);
        let http = reqwest::Client::new();
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                panic!("actlet exited during start-up: {status}\n{}", self.log_tail(40));
            }
            if http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no /healthz within 60 s\n{}",
                self.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `kill -9` actlet (by its PID) and reap it; its pods keep running.
    pub fn kill_9(&mut self) {
        let mut child = self.child.take().expect("actlet runs");
        let pid = Pid::from_raw(child.id() as i32);
        kill(pid, Signal::SIGKILL).unwrap_or_else(|e| panic!("kill -9 {pid}: {e}"));
        let _ = child.wait();
    }

    /// Whether actlet is still running (it must not exit by itself).
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
            panic!("actlet exited by itself: {status}\n{}", self.log_tail(60));
        }
    }

    /// The last `n` lines of actlet's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "----- actlet log (last {n} lines) -----\n{}",
            lines[lines.len().saturating_sub(n)..].join("\n")
        )
    }

    // ------------------------------------------------------------ API

    /// Pods of the test's namespace, as admin.
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.admin.clone(), &self.ns)
    }

    /// Creates the pod `name` bound to this node.
    pub async fn create_pod(&self, name: &str) {
        self.created.fetch_add(1, Ordering::Relaxed);
        let pod: Pod = serde_json::from_value(pod_json(name, &self.node)).unwrap_or_else(|e| panic!("{e}"));
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
    }

    /// Deletes the pod `name` gracefully (the kubelet finishes the deletion).
    pub async fn delete_pod(&self, name: &str) {
        self.pods()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete pod {name}: {e}"));
    }

    /// Writes the static pod `name` into the manifest directory.
    pub fn write_static(&self, name: &str) {
        self.created.fetch_add(1, Ordering::Relaxed);
        let mut pod = pod_json(name, &self.node);
        pod["metadata"]["namespace"] = self.ns.clone().into();
        let yaml = serde_yaml_ng::to_string(&pod).unwrap_or_else(|e| panic!("{e}"));
        let tmp = self.manifest_dir().join(format!(".{name}.tmp"));
        fs::write(&tmp, yaml).unwrap_or_else(|e| panic!("write {}: {e}", tmp.display()));
        fs::rename(&tmp, self.manifest_dir().join(format!("{name}.yaml"))).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Removes the static pod `name`.
    pub fn remove_static(&self, name: &str) {
        let path = self.manifest_dir().join(format!("{name}.yaml"));
        fs::remove_file(&path).unwrap_or_else(|e| panic!("remove {}: {e}", path.display()));
    }

    /// `<name>-<node>`: the mirror pod name of the static pod `name`.
    pub fn mirror_name(&self, name: &str) -> String {
        format!("{name}-{}", self.node)
    }

    /// The Node object.
    pub async fn node_object(&self) -> Option<Node> {
        Api::<Node>::all(self.admin.clone())
            .get_opt(&self.node)
            .await
            .ok()
            .flatten()
    }

    /// Waits until the Node is Ready.
    pub async fn wait_node_ready(&mut self, what: &str) {
        let start = Instant::now();
        loop {
            self.assert_alive();
            let node = self.node_object().await;
            match crate::invariants::node_ready(node.as_ref()) {
                Ok(()) => return self.note(format!("{what}: after {:.1?}", start.elapsed())),
                Err(why) if start.elapsed() > CONVERGE => {
                    panic!(
                        "{what}: node not Ready after {CONVERGE:?}: {why}\n{}",
                        self.log_tail(60)
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }

    // ------------------------------------------------------------ the world

    /// The API's pods of the namespace and the runtime's sandboxes and containers of it.
    pub async fn world(&self) -> Result<World, String> {
        let pods = self
            .pods()
            .list(&Default::default())
            .await
            .map_err(|e| format!("list pods: {e}"))?
            .items;
        let sandboxes = self
            .cri
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
            .await
            .map_err(|e| format!("ListPodSandbox: {e}"))?
            .items;
        let containers = self
            .cri
            .list_containers(v1::ListContainersRequest { filter: None })
            .await
            .map_err(|e| format!("ListContainers: {e}"))?
            .containers;
        let views = pods.iter().map(PodView::from_pod).collect();
        Ok(World::new(views, &sandboxes, &containers, |ns| ns == self.ns))
    }

    /// Waits until every invariant holds (and the node is Ready); panics with
    /// the violations and the whole picture after [`CONVERGE`].
    pub async fn converge(&mut self, what: &str, expect: &Expect, baseline: &Baseline) -> World {
        let start = Instant::now();
        let mut last_report = Instant::now();
        loop {
            self.assert_alive();
            let (world, mut violations) = match self.world().await {
                Ok(w) => {
                    let v = w.violations(expect, baseline);
                    (Some(w), v)
                }
                Err(e) => (None, vec![e]),
            };
            if let Err(why) = crate::invariants::node_ready(self.node_object().await.as_ref()) {
                violations.push(format!("node: {why}"));
            }
            match world {
                Some(w) if violations.is_empty() => {
                    self.note(format!("{what}: converged after {:.1?}", start.elapsed()));
                    return w;
                }
                w if start.elapsed() > CONVERGE => panic!(
                    "{what}: no convergence within {CONVERGE:?}:\n  {}\n{}\n{}",
                    violations.join("\n  "),
                    w.map(|w| w.describe()).unwrap_or_default(),
                    self.log_tail(60)
                ),
                _ => {
                    if last_report.elapsed() > Duration::from_secs(10) {
                        last_report = Instant::now();
                        self.note(format!("{what}: still waiting for:\n  {}", violations.join("\n  ")));
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await
                }
            }
        }
    }
}

impl ChaosNode {
    // ------------------------------------------------------------ the daemon's /metrics

    /// The running actlet's `/metrics` (its read-only port).
    pub async fn scrape(&self) -> Result<Scrape, String> {
        let url = format!("http://127.0.0.1:{}/metrics", self.read_only);
        let resp = reqwest::Client::new()
            .get(&url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url}: {}", resp.status()));
        }
        let text = resp.text().await.map_err(|e| format!("GET {url}: {e}"))?;
        Scrape::parse(&text)
    }

    /// How many pods the node should know now: the live ones of `expect`,
    /// those and every pod with a sandbox in the runtime (any namespace:
    /// the PLEG lists them all), and every pod created so far.
    async fn known(&self, expect: &Expect) -> Result<Known, String> {
        let world = self.world().await?;
        let mut uids: BTreeSet<String> = (expect.live.iter())
            .filter_map(|n| world.pod(n))
            .map(|p| p.uid.clone())
            .collect();
        let sandboxes = self
            .cri
            .list_pod_sandbox(v1::ListPodSandboxRequest { filter: None })
            .await
            .map_err(|e| format!("ListPodSandbox: {e}"))?
            .items;
        uids.extend(
            sandboxes
                .iter()
                .filter_map(|s| s.labels.get("io.kubernetes.pod.uid").cloned()),
        );
        Ok(Known {
            live: expect.live.len(),
            in_runtime: uids.len(),
            ever: self.created.load(Ordering::Relaxed),
        })
    }

    /// After a convergence: waits (at most [`SETTLE`]) until the daemon's
    /// per-pod tables hold only the pods the node knows (no leak), no actor
    /// is exhausted and none was restarted beyond `allowed` (the restarts the
    /// scenario explains; the counters start at 0 with each actlet process);
    /// panics with the violations, the scrape and the log otherwise.
    pub async fn settle_tables_and_actors(&mut self, what: &str, expect: &Expect, allowed: Allowed<'_>) {
        let start = Instant::now();
        loop {
            self.assert_alive();
            // The runtime is read before the tables: a sandbox the GC removes
            // in between is still counted, so a PLEG entry for it is no leak.
            let (scrape, violations) = match self.known(expect).await {
                Ok(known) => match self.scrape().await {
                    Ok(scrape) => {
                        let mut v = daemon_metrics::table_violations(&scrape.pod_tables(), &known);
                        v.extend(daemon_metrics::supervision_violations(&scrape, allowed));
                        (Some(scrape), v)
                    }
                    Err(e) => (None, vec![e]),
                },
                Err(e) => (None, vec![e]),
            };
            match scrape {
                Some(scrape) if violations.is_empty() => {
                    return self.note(format!(
                        "{what}: tables and actors settled after {:.1?}: {}",
                        start.elapsed(),
                        daemon_metrics::summary(&scrape)
                    ));
                }
                scrape if start.elapsed() > SETTLE => panic!(
                    "{what}: leak or supervision violation, still after {SETTLE:?}:\n  {}\n{}\n{}",
                    violations.join("\n  "),
                    scrape.map(|s| daemon_metrics::summary(&s)).unwrap_or_default(),
                    self.log_tail(60)
                ),
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
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

/// Stops and removes every sandbox of namespace `ns` (errors reported, not fatal).
pub async fn remove_namespace_sandboxes(cri: &CriClient, ns: &str) {
    let Ok(list) = cri.list_pod_sandbox(v1::ListPodSandboxRequest { filter: None }).await else {
        return;
    };
    for s in list.items {
        if s.labels.get("io.kubernetes.pod.namespace").map(String::as_str) != Some(ns) {
            continue;
        }
        let filter = v1::ContainerFilter {
            pod_sandbox_id: s.id.clone(),
            ..Default::default()
        };
        if let Ok(cs) = cri
            .list_containers(v1::ListContainersRequest { filter: Some(filter) })
            .await
        {
            for c in cs.containers {
                let _ = cri
                    .stop_container(v1::StopContainerRequest {
                        container_id: c.id,
                        timeout: 0,
                    })
                    .await;
            }
        }
        let id = s.id.clone();
        if let Err(e) = cri
            .stop_pod_sandbox(v1::StopPodSandboxRequest {
                pod_sandbox_id: id.clone(),
            })
            .await
        {
            daemon::note("cleanup", format!("StopPodSandbox {id}: {e}"));
        }
        if let Err(e) = cri
            .remove_pod_sandbox(v1::RemovePodSandboxRequest {
                pod_sandbox_id: id.clone(),
            })
            .await
        {
            daemon::note("cleanup", format!("RemovePodSandbox {id}: {e}"));
        }
    }
}

impl Drop for ChaosNode {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::io::stderr().write_all(format!("[{}] FAILED\n{}\n", self.test, self.log_tail(80)).as_bytes());
        }
        if let Some(mut child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
        let (endpoint, ns) = (self.endpoint.clone(), self.ns.clone());
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                rt.block_on(async {
                    if let Ok(cri) = CriClient::new(&endpoint, Duration::from_secs(30)) {
                        remove_namespace_sandboxes(&cri, &ns).await;
                    }
                });
            }
        })
        .join();
        // Pod log dirs are `<ns>_<pod>_<uid>`, container links `<pod>_<ns>_<container>-<id>.log`.
        remove_entries_containing(Path::new("/var/log/pods"), &format!("{}_", self.ns));
        remove_entries_containing(Path::new("/var/log/containers"), &format!("_{}_", self.ns));
        if std::env::var("ACTLET_SYSTEM_KEEP").as_deref() == Ok("1") {
            let kept = std::mem::replace(&mut self.dir, TempDir::new().unwrap_or_else(|e| panic!("{e}")));
            self.note(format!("kept {} (actlet.log)", kept.keep().display()));
        }
    }
}
