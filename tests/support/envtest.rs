//! A real Kubernetes API server for tests (the controller-runtime "envtest" convention):
//! `etcd` and `kube-apiserver` v1.36 from `$KUBEBUILDER_ASSETS`, on loopback, in a fresh
//! temp dir, with real TLS and client-certificate identities.
//!
//! Include it with `#[path = "support/envtest.rs"] mod envtest;`.
//!
//! # Expected use
//!
//! ```ignore
//! let Some(env) = envtest::EnvTest::start().await else { return };  // SKIPPED when unset
//! env.prepare_namespace("default").await;        // default ServiceAccount + kube-root-ca.crt
//! let admin = env.admin_client().await;           // system:masters
//! let node = env.node_client("n1").await;         // system:node:n1, group system:nodes
//! let kubeconfig = env.node_kubeconfig("n1");     // for `actlet --kubeconfig`
//! ```
//!
//! The API server runs like a real control plane's: `--authorization-mode Node,RBAC
//! --enable-admission-plugins NodeRestriction`, a service-account issuer and signing key,
//! `--service-cluster-ip-range 10.96.0.0/16`, and a serving certificate from the same CA
//! as the clients' ([`EnvTest::pki`]; valid for 127.0.0.1, localhost and the
//! `kubernetes.default.svc` names). [`EnvTestBuilder::arg`] and
//! [`EnvTestBuilder::args_with`] add flags (the latter with the PKI at hand, e.g. to give
//! it `--kubelet-client-certificate`).
//!
//! No kube-controller-manager runs: nothing creates ServiceAccounts or `kube-root-ca.crt`
//! (see [`EnvTest::prepare_namespace`]), approves or signs CSRs (see
//! [`EnvTest::approve_and_sign_csr`]), garbage-collects or evicts.
//!
//! When `KUBEBUILDER_ASSETS` is unset, [`EnvTestBuilder::start`] prints a loud `SKIPPED`
//! line and returns `None` (the test then passes); when it is set but the server does not
//! come up, the test fails with the logs' tails. [`EnvTest::stop_apiserver`] and
//! [`EnvTest::start_apiserver`] take the API server away and bring it back (same port,
//! same etcd). Both processes are killed by PID when the
//! [`EnvTest`] is dropped (also while a panicking test unwinds) and die with the thread
//! that started them (`PR_SET_PDEATHSIG`) if the test process is killed; the temp dir is
//! removed with them (kept, with `etcd.log` and `kube-apiserver.log`, when a test panics
//! with `ENVTEST_KEEP` set). Start-up takes 2–4 s here (etcd runs with `--unsafe-no-fsync`).
#![allow(dead_code)]

#[path = "envtest_csr.rs"]
mod csr;
#[path = "envtest_pki.rs"]
mod pki;

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::Api;
use kube::api::PostParams;
use tempfile::TempDir;

pub use pki::{CertPair, Pki};

/// How long the API server may take to become ready (2 cores shared with other builds).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

type ArgsFn = Box<dyn FnOnce(&Pki) -> Vec<String>>;

/// Options for [`EnvTest`]: extra kube-apiserver flags.
#[derive(Default)]
pub struct EnvTestBuilder {
    args: Vec<String>,
    args_with: Vec<ArgsFn>,
}

/// A running etcd + kube-apiserver pair; stopped (by PID) and deleted on drop.
pub struct EnvTest {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    pki: Pki,
    apiserver: Mutex<Option<Child>>,
    etcd: Mutex<Option<Child>>,
    /// The kube-apiserver binary and its flags, to start it again.
    apiserver_cmd: (PathBuf, Vec<String>),
    dir: Option<TempDir>,
}

/// `KUBEBUILDER_ASSETS`, or `None` after the loud SKIPPED line.
fn assets() -> Option<PathBuf> {
    match std::env::var_os("KUBEBUILDER_ASSETS") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => {
            let test = std::thread::current().name().unwrap_or("this test").to_string();
            // CI (`.ci/run`) sets this with the assets: a test that finds them
            // missing there fails instead of passing as SKIPPED.
            assert!(
                std::env::var_os("ACTLET_REQUIRE_ENVTEST").is_none(),
                "{test}: KUBEBUILDER_ASSETS unset, but ACTLET_REQUIRE_ENVTEST is set"
            );
            // Straight to stderr, past libtest's output capture: a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED {test}: KUBEBUILDER_ASSETS unset (point it at a directory with kube-apiserver \
                 and etcd, e.g. ../shared/envtest/bin, to run it against a real API server) ***\n"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(lines).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// Spawns `bin` with `args`, output appended to `log`, dying with the spawning thread.
fn spawn(bin: &Path, args: &[String], log: &Path) -> Child {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap_or_else(|e| panic!("open {}: {e}", log.display()));
    let err = out.try_clone().unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let mut cmd = Command::new(bin);
    cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    cmd.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()))
}

/// etcd on loopback `client`/`peer` ports, data in `root/etcd`, no fsync (tests only).
fn etcd_args(root: &Path, client: u16, peer: u16) -> Vec<String> {
    let (client_url, peer_url) = (format!("http://127.0.0.1:{client}"), format!("http://127.0.0.1:{peer}"));
    vec![
        "--name=envtest".into(),
        format!("--data-dir={}", root.join("etcd").display()),
        format!("--listen-client-urls={client_url}"),
        format!("--advertise-client-urls={client_url}"),
        format!("--listen-peer-urls={peer_url}"),
        format!("--initial-advertise-peer-urls={peer_url}"),
        format!("--initial-cluster=envtest={peer_url}"),
        "--unsafe-no-fsync=true".into(),
        "--log-level=warn".into(),
    ]
}

/// kube-apiserver as a control plane runs it, serving on loopback `secure` with a
/// certificate from the cluster CA, its state in the etcd on `etcd_port`.
fn apiserver_args(pki: &Pki, root: &Path, etcd_port: u16, secure: u16) -> Vec<String> {
    let serving = pki.serving_cert(
        "kube-apiserver",
        &[
            "127.0.0.1",
            "localhost",
            "10.96.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
    );
    let (tls_crt, tls_key) = pki.write("apiserver", &serving);
    let (sa_key, sa_pub) = pki.service_account_keys();
    vec![
        format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--secure-port={secure}"),
        format!("--cert-dir={}", root.join("certs").display()),
        format!("--tls-cert-file={}", tls_crt.display()),
        format!("--tls-private-key-file={}", tls_key.display()),
        format!("--client-ca-file={}", pki.ca_cert_path().display()),
        "--authorization-mode=Node,RBAC".into(),
        "--enable-admission-plugins=NodeRestriction".into(),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        format!("--service-account-key-file={}", sa_pub.display()),
        format!("--service-account-signing-key-file={}", sa_key.display()),
        "--service-cluster-ip-range=10.96.0.0/16".into(),
        "--allow-privileged=true".into(),
    ]
}

fn kill(child: &Mutex<Option<Child>>) {
    if let Some(mut c) = child.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A kubeconfig with the server, the CA and the client certificate embedded.
fn kubeconfig(url: &str, ca_pem: &str, user: &str, pair: &CertPair) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {url}\n    \
         certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    client-certificate-data: {crt}\n    \
         client-key-data: {key}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: {user}\n\
         current-context: envtest\n",
        ca = STANDARD.encode(ca_pem),
        crt = STANDARD.encode(&pair.cert_pem),
        key = STANDARD.encode(&pair.key_pem),
    )
}

fn ignore_conflict<T>(what: &str, r: Result<T, kube::Error>) {
    match r {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("{what}: {e}"),
    }
}

impl EnvTestBuilder {
    /// Adds one kube-apiserver flag (e.g. `"--feature-gates=..."`); later flags win.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds kube-apiserver flags computed from the cluster's PKI (write files with [`Pki::write`]).
    pub fn args_with(mut self, f: impl FnOnce(&Pki) -> Vec<String> + 'static) -> Self {
        self.args_with.push(Box::new(f));
        self
    }

    /// Starts etcd and kube-apiserver and waits for `/readyz`; `None` (SKIPPED) without
    /// `KUBEBUILDER_ASSETS`.
    pub async fn start(self) -> Option<EnvTest> {
        let assets = assets()?;
        for bin in ["etcd", "kube-apiserver"] {
            assert!(
                assets.join(bin).is_file(),
                "KUBEBUILDER_ASSETS={} has no {bin}",
                assets.display()
            );
        }
        let dir = TempDir::with_prefix("envtest-").unwrap_or_else(|e| panic!("tempdir: {e}"));
        let pki = Pki::new(&dir.path().join("pki"));
        let mut extra = self.args;
        for f in self.args_with {
            extra.extend(f(&pki));
        }
        let mut env = EnvTest {
            url: String::new(),
            pki,
            apiserver: Mutex::new(None),
            etcd: Mutex::new(None),
            apiserver_cmd: (assets.join("kube-apiserver"), Vec::new()),
            dir: Some(dir),
        };
        let admin = env.pki.client_cert("envtest-admin", &["system:masters"]);
        // A port taken between probing and binding makes a process exit: try again.
        for attempt in 1..=3 {
            let (client, peer, secure) = (free_port(), free_port(), free_port());
            let root = env.dir().to_path_buf();
            let _ = std::fs::remove_dir_all(root.join("etcd"));
            *env.etcd.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(spawn(
                &assets.join("etcd"),
                &etcd_args(&root, client, peer),
                &root.join("etcd.log"),
            ));
            let mut args = apiserver_args(&env.pki, &root, client, secure);
            args.extend(extra.iter().cloned());
            env.url = format!("https://127.0.0.1:{secure}");
            let log = root.join("kube-apiserver.log");
            env.apiserver_cmd.1 = args;
            env.spawn_apiserver();
            let kc = root.join("admin.kubeconfig");
            std::fs::write(&kc, kubeconfig(&env.url, &env.pki.ca_cert_pem(), "admin", &admin))
                .unwrap_or_else(|e| panic!("write {}: {e}", kc.display()));
            match env.wait_ready().await {
                Ok(()) => return Some(env),
                Err(why) => {
                    let logs = format!(
                        "{why}\n--- kube-apiserver.log (tail) ---\n{}\n--- etcd.log (tail) ---\n{}",
                        log_tail(&log, 30),
                        log_tail(&root.join("etcd.log"), 15)
                    );
                    kill(&env.apiserver);
                    kill(&env.etcd);
                    if attempt == 3 || !logs.contains("address already in use") {
                        panic!("envtest: the API server did not become ready: {logs}");
                    }
                }
            }
        }
        unreachable!("the loop returns or panics")
    }
}

impl EnvTest {
    /// Starts a cluster with the default flags ([`EnvTestBuilder`] for more).
    pub async fn start() -> Option<EnvTest> {
        EnvTestBuilder::default().start().await
    }

    /// Options for a cluster with extra flags.
    pub fn builder() -> EnvTestBuilder {
        EnvTestBuilder::default()
    }

    fn spawn_apiserver(&self) {
        let (bin, args) = &self.apiserver_cmd;
        let child = spawn(bin, args, &self.dir().join("kube-apiserver.log"));
        *self.apiserver.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
    }

    /// Stops kube-apiserver (SIGKILL, by PID); etcd keeps the cluster's state.
    pub fn stop_apiserver(&self) {
        kill(&self.apiserver);
    }

    /// Starts kube-apiserver again (same port and flags, same etcd) and waits for `/readyz`.
    pub async fn start_apiserver(&self) {
        self.spawn_apiserver();
        if let Err(why) = self.wait_ready().await {
            panic!(
                "envtest: the restarted API server did not become ready: {why}\n{}",
                self.apiserver_log_tail(30)
            );
        }
    }

    async fn wait_ready(&self) -> Result<(), String> {
        let started = Instant::now();
        let client = self.admin_client().await;
        loop {
            for (name, child) in [("etcd", &self.etcd), ("kube-apiserver", &self.apiserver)] {
                let mut child = child.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(Ok(Some(status))) = child.as_mut().map(|c| c.try_wait()) {
                    return Err(format!("{name} exited: {status}"));
                }
            }
            // Ask only once it listens (the client logs every failed request as an error).
            let addr = self.url.trim_start_matches("https://").to_string();
            let listening = tokio::net::TcpStream::connect(addr).await.is_ok();
            let req = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| e.to_string())?;
            if listening && client.request_text(req).await.is_ok_and(|body| body.trim() == "ok") {
                eprintln!("envtest: {} ready after {:?}", self.url, started.elapsed());
                return Ok(());
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(format!("no /readyz = ok within {READY_TIMEOUT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The temp dir holding etcd's data, the PKI, the kubeconfigs and the logs.
    pub fn dir(&self) -> &Path {
        self.dir
            .as_ref()
            .map(TempDir::path)
            .unwrap_or(Path::new("/nonexistent"))
    }

    /// The cluster's CA and service-account keys.
    pub fn pki(&self) -> &Pki {
        &self.pki
    }

    /// PIDs of (etcd, kube-apiserver).
    pub fn pids(&self) -> (Option<u32>, Option<u32>) {
        (
            self.etcd
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map(Child::id),
            self.apiserver
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map(Child::id),
        )
    }

    /// The admin kubeconfig (`O=system:masters`, certificates embedded).
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir().join("admin.kubeconfig")
    }

    /// A kubeconfig for `system:node:<node>` (`O=system:nodes`), written on first use.
    pub fn node_kubeconfig(&self, node: &str) -> PathBuf {
        let path = self.dir().join(format!("node-{node}.kubeconfig"));
        if !path.exists() {
            let pair = self.pki.client_cert(&format!("system:node:{node}"), &["system:nodes"]);
            let text = kubeconfig(
                &self.url,
                &self.pki.ca_cert_pem(),
                &format!("system:node:{node}"),
                &pair,
            );
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        }
        path
    }

    /// A kubeconfig for any user `cn` in the groups `orgs`, written to `<file>` in [`EnvTest::dir`].
    pub fn user_kubeconfig(&self, file: &str, cn: &str, orgs: &[&str]) -> PathBuf {
        self.write_kubeconfig(file, cn, &self.pki.client_cert(cn, orgs))
    }

    /// A kubeconfig that authenticates with `pair` (e.g. signed by [`Pki::sign_csr`]).
    pub fn write_kubeconfig(&self, file: &str, user: &str, pair: &CertPair) -> PathBuf {
        let path = self.dir().join(file);
        std::fs::write(&path, kubeconfig(&self.url, &self.pki.ca_cert_pem(), user, pair))
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// A client from `kubeconfig`, built as the actlet binary builds its own.
    pub async fn client_from(&self, kubeconfig: &Path) -> kube::Client {
        actlet::cluster::client_from_kubeconfig(kubeconfig, actlet::cluster::Qps::default())
            .await
            .unwrap_or_else(|e| panic!("client from {}: {e}", kubeconfig.display()))
    }

    /// The admin client.
    pub async fn admin_client(&self) -> kube::Client {
        self.client_from(&self.admin_kubeconfig()).await
    }

    /// A client as `system:node:<node>`.
    pub async fn node_client(&self, node: &str) -> kube::Client {
        self.client_from(&self.node_kubeconfig(node)).await
    }

    /// What kube-controller-manager would do for a namespace: creates it (unless it
    /// exists), its `default` ServiceAccount (without which pods are rejected) and the
    /// `kube-root-ca.crt` ConfigMap with the cluster CA, as admin (and OpenShift's
    /// `openshift-service-ca.crt`, which this build's admission projects into pods).
    pub async fn prepare_namespace(&self, ns: &str) {
        let admin = self.admin_client().await;
        let pp = PostParams::default();
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap_or_else(|e| panic!("{e}"));
        ignore_conflict(
            "create namespace",
            Api::all(admin.clone()).create(&pp, &namespace).await,
        );
        let sa: ServiceAccount = serde_json::from_value(serde_json::json!({"metadata": {"name": "default"}}))
            .unwrap_or_else(|e| panic!("{e}"));
        ignore_conflict(
            "create ServiceAccount default",
            Api::namespaced(admin.clone(), ns).create(&pp, &sa).await,
        );
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kube-root-ca.crt"},
            "data": {"ca.crt": self.pki.ca_cert_pem()}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        ignore_conflict(
            "create ConfigMap kube-root-ca.crt",
            Api::namespaced(admin.clone(), ns).create(&pp, &cm).await,
        );
        // This kube-apiserver is OpenShift's build: its ServiceAccount admission also
        // projects `openshift-service-ca.crt` (not optional), which OpenShift's
        // service-ca operator publishes in every namespace. A kubelet that mounts
        // the pod's volumes needs it.
        let service_ca: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "openshift-service-ca.crt"},
            "data": {"service-ca.crt": self.pki.ca_cert_pem()}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        ignore_conflict(
            "create ConfigMap openshift-service-ca.crt",
            Api::namespaced(admin, ns).create(&pp, &service_ca).await,
        );
    }

    /// The tail of the API server's log (for a failing test's message).
    pub fn apiserver_log_tail(&self, lines: usize) -> String {
        log_tail(&self.dir().join("kube-apiserver.log"), lines)
    }
}

impl Drop for EnvTest {
    fn drop(&mut self) {
        kill(&self.apiserver);
        kill(&self.etcd);
        if std::thread::panicking() && std::env::var_os("ENVTEST_KEEP").is_some() {
            if let Some(dir) = self.dir.take() {
                eprintln!("envtest: kept {} (ENVTEST_KEEP)", dir.keep().display());
            }
        }
    }
}
