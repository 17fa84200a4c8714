//! Harness for the `system_mock_*` tests: the whole kubelet
//! ([`actlet::kubelet::start`]) on the mock CRI runtime, inside an actix
//! `System` whose tokio runtime starts with **paused** time, fed pods by a
//! custom source (no file IO) unless a test asks for the file source.
//!
//! Included by the test files with `#[path]`; compiled alone it has no tests.
#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actlet::cri::SharedRuntime;
use actlet::cri::mock::{CallRecord, ContainerSnapshot, MockRuntime};
use actlet::kubelet::{Kubelet, KubeletConfig, WallClock};
use actlet::kuberuntime::convert::timestamp_from_system_time;
use actlet::messages::PodUid;
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};
use tempfile::TempDir;
use tokio::time::{Instant, sleep};

/// The name of the custom pod source the tests feed.
pub const SOURCE: &str = "test";

/// How often [`wait_for`] looks again (virtual time).
pub const POLL: Duration = Duration::from_millis(100);

/// Runs `test` inside an actix `System` on a current-thread tokio runtime
/// with paused time (timers fire as soon as everything is idle).
pub fn run_paused<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    init_tracing();
    let system = actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
    });
    system.block_on(test());
}

/// Runs `test` inside an actix `System` on real time.
pub fn run_real<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    init_tracing();
    actix_rt::System::new().block_on(test());
}

/// Logs to the test output when `RUST_LOG` is set.
fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// A pod from inline YAML with the API server's defaults applied
/// (`restartPolicy: Always`, grace period 30 s, pull policies …).
pub fn pod(yaml: &str) -> Pod {
    let mut p: Pod = serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad pod YAML: {e}\n{yaml}"));
    actlet::config::pod_defaults::apply_api_defaults(&mut p);
    p
}

/// The UID of `pod`.
pub fn uid_of(pod: &Pod) -> PodUid {
    PodUid::new(pod.metadata.uid.clone().unwrap_or_default())
}

/// How a [`Node`] is configured before it starts.
pub struct NodeBuilder {
    mock: MockRuntime,
    runtime: Option<SharedRuntime>,
    static_pod_path: Option<PathBuf>,
    file_check_frequency: Duration,
    static_pod_url: Option<(String, Duration)>,
    custom_source: bool,
    pod_worker_threads: usize,
    evented_pleg: bool,
}

impl NodeBuilder {
    /// Runs the kubelet on `runtime` (e.g. a wrapper around the mock)
    /// instead of the mock itself; the mock stays the thing observed.
    pub fn runtime(mut self, runtime: SharedRuntime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Reads static pods from `dir` every `every` (and on inotify events);
    /// no custom source then.
    pub fn static_pods(mut self, dir: PathBuf, every: Duration) -> Self {
        self.static_pod_path = Some(dir);
        self.file_check_frequency = every;
        self.custom_source = false;
        self
    }

    /// Reads static pods from `url` every `every`; no custom source then.
    pub fn static_pod_url(mut self, url: String, every: Duration) -> Self {
        self.static_pod_url = Some((url, every));
        self.custom_source = false;
        self
    }

    /// Runs the pod workers on `n` arbiters of their own (real time only:
    /// their timers are not the test runtime's paused clock).
    pub fn pod_worker_threads(mut self, n: usize) -> Self {
        self.pod_worker_threads = n;
        self
    }

    /// Turns the `EventedPLEG` feature on: the PLEG follows the mock's
    /// container events, the global relist runs every 300 s.
    pub fn evented_pleg(mut self) -> Self {
        self.evented_pleg = true;
        self
    }

    /// Starts the kubelet in the current actix `System`.
    pub fn start(self) -> Node {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut cfg = KubeletConfig::new("node-a");
        cfg.root_dir = dir.path().join("root");
        cfg.pod_logs_dir = dir.path().join("logs");
        cfg.container_logs_dir = None;
        // image GC sees a roomy disk holding only the mock's images
        cfg.image_fs = actlet::gc::ImageFsSource(Arc::new(actlet::gc::FixedCapacity(1 << 40)));
        cfg.node_ip = Some("10.0.0.1".into());
        if self.custom_source {
            cfg.custom_sources = vec![SOURCE.into()];
        }
        cfg.static_pod_path = self.static_pod_path;
        cfg.file_check_frequency = self.file_check_frequency;
        if let Some((url, every)) = self.static_pod_url {
            cfg.static_pod_url = Some(url);
            cfg.http_check_frequency = every;
        }
        cfg.pod_worker_threads = self.pod_worker_threads;
        cfg.evented_pleg = self.evented_pleg;
        let clock = self.mock.clock().clone();
        cfg.wall_clock = WallClock(Arc::new(move || timestamp_from_system_time(clock.now())));
        let runtime = self.runtime.unwrap_or_else(|| Arc::new(self.mock.clone()));
        let kubelet = actlet::kubelet::start(cfg, runtime).unwrap_or_else(|e| panic!("kubelet start: {e}"));
        Node {
            mock: self.mock,
            kubelet,
            dir,
        }
    }
}

/// A running kubelet on the mock runtime.
pub struct Node {
    /// The runtime (observe and script it).
    pub mock: MockRuntime,
    /// The kubelet.
    pub kubelet: Kubelet,
    /// Root and log directories.
    pub dir: TempDir,
}

impl Node {
    /// Configures a node on `mock`.
    pub fn builder(mock: MockRuntime) -> NodeBuilder {
        NodeBuilder {
            mock,
            runtime: None,
            static_pod_path: None,
            file_check_frequency: Duration::from_secs(20),
            static_pod_url: None,
            custom_source: true,
            pod_worker_threads: 0,
            evented_pleg: false,
        }
    }

    /// A node on `mock`, fed by the custom source [`SOURCE`].
    pub fn start(mock: MockRuntime) -> Self {
        Self::builder(mock).start()
    }

    /// The custom source now holds exactly `pods`.
    pub fn set_pods(&self, pods: &[&Pod]) {
        let snapshot = SourceSnapshot {
            source: PodSource::Custom(SOURCE.into()),
            pods: pods.iter().map(|p| Arc::new((*p).clone())).collect(),
            errors: vec![],
        };
        self.kubelet
            .pod_config
            .do_send(snapshot)
            .unwrap_or_else(|e| panic!("pod-config unavailable: {e}"));
    }

    /// The API status of `uid`, if any.
    pub fn status(&self, uid: &PodUid) -> Option<Arc<PodStatus>> {
        self.kubelet.statuses.get(uid).map(|v| v.status)
    }

    /// The API phase of `uid` (`""` when there is no status).
    pub fn phase(&self, uid: &PodUid) -> String {
        self.status(uid).and_then(|s| s.phase.clone()).unwrap_or_default()
    }

    /// The API status of container `name` of `uid` (init containers too).
    pub fn container_status(&self, uid: &PodUid, name: &str) -> Option<ContainerStatus> {
        let status = self.status(uid)?;
        status
            .container_statuses
            .iter()
            .flatten()
            .chain(status.init_container_statuses.iter().flatten())
            .find(|c| c.name == name)
            .cloned()
    }

    /// The API restart count of container `name` (0 when unknown).
    pub fn restart_count(&self, uid: &PodUid, name: &str) -> i32 {
        self.container_status(uid, name).map_or(0, |c| c.restart_count)
    }

    /// The waiting reason of container `name`, if it is waiting.
    pub fn waiting_reason(&self, uid: &PodUid, name: &str) -> Option<String> {
        self.container_status(uid, name)?.state?.waiting?.reason
    }

    /// Whether container `name` is running according to the API status.
    pub fn is_running(&self, uid: &PodUid, name: &str) -> bool {
        self.container_status(uid, name)
            .and_then(|c| c.state)
            .is_some_and(|s| s.running.is_some())
    }

    /// The exit code of container `name` if its API state is terminated.
    pub fn exit_code(&self, uid: &PodUid, name: &str) -> Option<i32> {
        Some(self.container_status(uid, name)?.state?.terminated?.exit_code)
    }

    /// The mock's containers of pod `pod_name` named `container`, oldest
    /// first (by sandbox, then attempt: creation times can be equal under
    /// paused time).
    pub fn containers(&self, pod_name: &str, container: &str) -> Vec<ContainerSnapshot> {
        let sandboxes: Vec<String> = self.sandboxes(pod_name).into_iter().map(|s| s.id).collect();
        let mut found: Vec<ContainerSnapshot> = self
            .mock
            .snapshot()
            .containers
            .into_iter()
            .filter(|c| c.pod_name == pod_name && c.name() == container)
            .collect();
        found.sort_by_key(|c| (sandboxes.iter().position(|s| *s == c.sandbox_id), c.attempt()));
        found
    }

    /// The mock's sandboxes of pod `pod_name`, oldest (lowest attempt) first.
    pub fn sandboxes(&self, pod_name: &str) -> Vec<actlet::cri::v1::PodSandboxStatus> {
        let mut found: Vec<_> = self
            .mock
            .snapshot()
            .sandboxes
            .into_iter()
            .filter(|s| s.metadata.as_ref().is_some_and(|m| m.name == pod_name))
            .collect();
        found.sort_by_key(|s| s.metadata.as_ref().map_or(0, |m| m.attempt));
        found
    }

    /// The calls of `method`, in arrival order.
    pub fn calls(&self, method: &str) -> Vec<CallRecord> {
        self.mock.calls_to(method)
    }

    /// A one-line summary of the mock and the API statuses, for failure messages.
    pub fn describe(&self) -> String {
        let snap = self.mock.snapshot();
        let sandboxes: Vec<String> = snap
            .sandboxes
            .iter()
            .map(|s| {
                let m = s.metadata.clone().unwrap_or_default();
                format!("{}#{}:{:?}", m.name, m.attempt, s.state())
            })
            .collect();
        let containers: Vec<String> = snap
            .containers
            .iter()
            .map(|c| {
                format!(
                    "{}/{}#{}:{:?}({})",
                    c.pod_name,
                    c.name(),
                    c.attempt(),
                    c.state(),
                    c.status.exit_code
                )
            })
            .collect();
        let statuses: Vec<String> = self
            .kubelet
            .statuses
            .snapshot()
            .values()
            .map(|v| {
                let s = &v.status;
                let ctrs: Vec<String> = s
                    .init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
                    .map(|c| {
                        let st = c.state.clone().unwrap_or_default();
                        let what = if st.running.is_some() {
                            "running".to_string()
                        } else if let Some(t) = st.terminated {
                            format!("terminated({})", t.exit_code)
                        } else if let Some(w) = st.waiting {
                            format!("waiting({})", w.reason.unwrap_or_default())
                        } else {
                            "?".to_string()
                        };
                        format!("{}:{what}:restarts={}", c.name, c.restart_count)
                    })
                    .collect();
                format!("{}: {} {ctrs:?}", v.pod_name, s.phase.clone().unwrap_or_default())
            })
            .collect();
        format!("sandboxes {sandboxes:?}; containers {containers:?}; statuses {statuses:?}")
    }

    /// Waits (virtual time) until `cond` holds; panics naming `what` and
    /// describing the node after `timeout`. Returns the time waited.
    pub async fn wait_for(&self, what: &str, timeout: Duration, mut cond: impl FnMut(&Self) -> bool) -> Duration {
        let start = Instant::now();
        loop {
            if cond(self) {
                return start.elapsed();
            }
            if start.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}: {}", self.describe());
            }
            sleep(POLL).await;
        }
    }

    /// Checks that `cond` holds at every poll for `duration` (virtual time).
    pub async fn holds_for(&self, what: &str, duration: Duration, mut cond: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while start.elapsed() <= duration {
            assert!(cond(self), "{what} stopped holding: {}", self.describe());
            sleep(POLL).await;
        }
    }
}

/// An orphan: a sandbox with the kubelet's labels for a pod no source wants.
pub async fn orphan(mock: &MockRuntime, name: &str) {
    let uid = format!("u-{name}");
    let labels: std::collections::HashMap<String, String> = [
        ("io.kubernetes.pod.uid", uid.as_str()),
        ("io.kubernetes.pod.name", name),
        ("io.kubernetes.pod.namespace", "default"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    actlet::cri::Runtime::run_pod_sandbox(
        mock,
        actlet::cri::v1::RunPodSandboxRequest {
            config: Some(actlet::cri::v1::PodSandboxConfig {
                metadata: Some(actlet::cri::v1::PodSandboxMetadata {
                    name: name.into(),
                    uid,
                    namespace: "default".into(),
                    attempt: 0,
                }),
                labels,
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("orphan sandbox {name}: {e}"));
}
