//! [`MockRuntime`]: an in-process CRI runtime that behaves like containerd 1.6.
//!
//! It implements [`Runtime`](crate::cri::Runtime) with the same states,
//! error codes and messages containerd gives (see the table below), keeps
//! its containers' "processes" as tokio tasks driven by scripts, writes real
//! CRI-format log files, and lets tests inject faults and observe calls.
//! Everything runs on **tokio time**, so tests can use
//! `#[tokio::test(start_paused = true)]`: a container that exits after an hour
//! does so instantly, and timestamps ([`Clock`]) move with the virtual clock.
//! Serve it over gRPC with [`CriServer`](crate::cri::server::CriServer) to
//! test the tonic client (that is what `actlet mock-cri` does).
//!
//! # Using it
//! ```
//! # use std::time::Duration;
//! use actlet::cri::mock::{Behaviour, Fault, MockRuntime, Script};
//! use tonic::Code;
//!
//! let mock = MockRuntime::builder()
//!     // container "web": crash twice, then run until stopped
//!     .script("web", Script::PerAttempt(vec![
//!         Behaviour::crash_on_start(1),
//!         Behaviour::crash_on_start(1),
//!         Behaviour::run_forever().stdout("listening"),
//!     ]))
//!     // the first two RunPodSandbox calls fail
//!     .fault("RunPodSandbox", Fault::error(Code::Unknown, "boom").times(2))
//!     .build();
//! mock.set_network_ready(false);
//! ```
//!
//! - **Scripts** ([`Script`], [`Behaviour`], [`Match`]): chosen per container at
//!   `CreateContainer` by container name (optionally pod name/namespace);
//!   the default interprets the command as a [tiny busybox `sh`
//!   subset](#the-tiny-busybox-sh-subset) (`echo`, `sleep`, `exit`,
//!   `trap "" TERM`…), so `sh -c 'echo hi; sleep 3600'` behaves as on a node.
//! - **Faults** ([`Fault`], [`MockRuntime::inject`], [`MockRuntime::set_down`]):
//!   per-method errors, latency, hangs; a global "runtime down" switch.
//! - **Outside events**: [`MockRuntime::exit_container`],
//!   [`MockRuntime::oom_kill_container`], [`MockRuntime::simulate_restart`].
//! - **Observation**: [`MockRuntime::calls`], [`MockRuntime::call_count`],
//!   [`MockRuntime::snapshot`], [`MockRuntime::subscribe`].
//!
//! # The tiny busybox `sh` subset
//! Without a script ([`Script::Busybox`], the default), a container runs its
//! command line (`command` + `args`, or the image entrypoint + cmd) like this.
//!
//! Understood: `sh -c '<script>'` (also `/bin/sh`, `ash`) and the commands
//! below, alone or as statements of the script separated by `;`, newlines or
//! `&&` (treated like `;`), with `'…'`, `"…"` and `\` quoting:
//!
//! | statement | container process | exec |
//! |---|---|---|
//! | `echo [-n] words… [>&2]` | writes the line to the log | stdout / stderr |
//! | `sleep N` (seconds, fractions ok; `infinity`) | waits N | delays the reply |
//! | `exit [N]` | exits with N (default: last status) | exit code N |
//! | `true`, `:`, `false` | status 0 / 1 | status 0 / 1 |
//! | `trap "" TERM` | SIGTERM ignored | – |
//! | `trap "exit N" TERM` | on SIGTERM, exits N when the current `sleep` ends | – |
//! | another busybox applet (`httpd`, `nc`, `cat`…) | runs forever | status 0, no output |
//! | anything else | `sh: X: not found`, status 127 | same |
//!
//! Outside `sh -c`, an unknown program fails the start like runc does
//! (`exec: "X": executable file not found in $PATH`) — only for busybox-like
//! images; for other images it just runs forever.
//!
//! Signals follow the kernel's rule for PID 1: a process that is PID 1 of its
//! PID namespace (the container's `namespace_options.pid` is `CONTAINER`) and
//! has no handler ignores SIGTERM, so `StopContainer` waits the whole timeout
//! and kills it (exit 137), as observed on containerd; otherwise (`POD`,
//! `NODE`) SIGTERM kills it at once with exit code 143. Programs the subset
//! does not know (on other images) and scripted [`Behaviour`]s are assumed to
//! handle SIGTERM: they exit 143 at once unless [`OnTerm`] says otherwise.
//!
//! # Behaviour (observed on containerd 1.6.20 + runc 1.1.5, and mirrored here)
//! | call / situation | gRPC code | message (containerd) |
//! |---|---|---|
//! | RunPodSandbox, same (name, ns, uid, attempt) twice | UNKNOWN | `failed to reserve sandbox name "<name>_<ns>_<uid>_<attempt>": name "…" is reserved for "<id>"` |
//! | RunPodSandbox, hostNetwork pod | OK | sandbox IP is `""` |
//! | PodSandboxStatus, unknown id | NOT_FOUND | `an error occurred when try to find sandbox: not found` |
//! | StopPodSandbox, unknown id | NOT_FOUND | `an error occurred when try to find sandbox "<id>": not found` |
//! | StopPodSandbox | OK | running containers SIGKILLed at once (137, `Error`); created ones stay CREATED; NOTREADY, IP `""`; again: OK |
//! | RemovePodSandbox, READY sandbox | OK | stops it first, removes its containers; unknown id: OK |
//! | CreateContainer, unknown sandbox | NOT_FOUND | `failed to find sandbox id "<id>": not found` |
//! | CreateContainer, stopped sandbox | NOT_FOUND | `failed to get sandbox container task: no running task found: task <id> not found: not found` |
//! | CreateContainer, image missing | NOT_FOUND | `failed to resolve image "<name as given>": not found` |
//! | CreateContainer, same (name, attempt) in pod | UNKNOWN | `failed to reserve container name "<ctr>_<pod>_<ns>_<uid>_<attempt>": name "…" is reserved for "<id>"` |
//! | StartContainer, not CREATED | UNKNOWN | `failed to set starting state for container "<id>": container is in CONTAINER_RUNNING state` |
//! | StartContainer, sandbox stopped | UNKNOWN | `sandbox container "<sandbox id>" is not running`; container → EXITED 128 `StartError` + message |
//! | StartContainer, program missing | UNKNOWN | `failed to create containerd task: … exec: "X": executable file not found in $PATH: unknown`; EXITED 128 `StartError` |
//! | StartContainer / StopContainer / ContainerStatus / ReopenContainerLog, unknown id | NOT_FOUND | `an error occurred when try to find container "<id>": not found` |
//! | StopContainer, PID 1 ignores TERM (`sleep`, `trap "" TERM`, pid ns CONTAINER) | OK | after the whole timeout; 137 `Error` |
//! | StopContainer, not PID 1 (pid ns POD) | OK | at once; 143 `Error`; `trap "exit 0" TERM` + loop: 0 `Completed` |
//! | StopContainer, exited container | OK | – |
//! | RemoveContainer, running | OK | killed (SIGKILL) and removed; unknown id: OK |
//! | Container exits by itself | – | EXITED, exit code, reason `Completed` (0) / `Error`, message `""`; an instant exit can have `finished_at < started_at` |
//! | Container over its memory limit | – | EXITED 137, reason `OOMKilled`, message `""` |
//! | ExecSync `echo hi` / `sh -c 'exit 3'` / `sh -c nosuch` | OK | `hi\n` 0 / 3 / stderr `sh: nosuch: not found` 127 |
//! | ExecSync, program missing | UNKNOWN | `failed to exec in container: failed to start exec "<exec id>": OCI runtime exec failed: … executable file not found in $PATH: unknown` |
//! | ExecSync, timeout exceeded | DEADLINE_EXCEEDED | `failed to exec in container: timeout 1s exceeded: context deadline exceeded` (after the timeout) |
//! | ExecSync, container CREATED / EXITED | UNKNOWN | `failed to exec in container: container is in CONTAINER_EXITED state` |
//! | ExecSync, unknown id | NOT_FOUND | `failed to exec in container: failed to find container "<id>" in store: not found` |
//! | ReopenContainerLog, not running | UNKNOWN | `container is not running` |
//! | UpdateContainerResources / ContainerStats, unknown id | NOT_FOUND | `failed to find container: not found` |
//! | ContainerStats, not running | UNKNOWN | `unexpected metrics response: []` |
//! | ImageStatus, missing image / invalid name | OK | `image` unset |
//! | ImageStatus by `busybox`, `library/busybox`, id, id prefix | OK | found |
//! | PullImage without registry (even if present) | UNKNOWN | `failed to pull and unpack image "docker.io/nope/nope:1": failed to resolve reference … dial tcp: lookup registry-1.docker.io … no such host` |
//! | RemoveImage `busybox:latest` | OK | removes the whole image (all its tags); missing: OK |
//! | containerd + shims killed, containerd restarted | – | sandboxes NOTREADY (IP kept), running containers EXITED 255 `Unknown` |
//! | containerd alone killed and restarted | – | nothing changes (shims keep containers running) |
//! | Log file | – | created at StartContainer (parents too): `<RFC3339Nano> stdout F <line>`, `P` for an unterminated last line |
//! | ContainerStatus | – | `image` = first repo tag, `image_ref` = image id (`sha256:…`), `image_id` `""`; ListContainers keeps the image as given |
//! | Ids | – | 64 lowercase hex; any unique prefix is accepted |
//! | Client deadline (`CriClient` timeout) passes first | CANCELLED | `Timeout expired` (tonic's client timer, not containerd's DEADLINE_EXCEEDED); same for the mock behind `CriServer` |
//!
//! `tests/cri_containerd.rs` re-checks this table: it runs one scenario
//! against containerd and against the mock and compares every code and
//! message (ids normalized).
//!
//! The mock differs on purpose in: `Version` (`runtime_name` is
//! [`RUNTIME_NAME`]), pod IPs (10.88.0.0/16, never exhausted), stats numbers,
//! and log files with a relative path (not written).

#![warn(missing_docs)]

mod busybox;
mod clock;
mod container_ops;
mod control;
mod cri_events;
mod exec;
mod faults;
mod images;
mod index;
mod logs;
mod observe;
mod process;
mod runtime_impl;
mod sandbox_ops;
mod script;
mod state;
mod stats;
mod streaming;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use clock::Clock;
pub use exec::{ExecHandler, ExecResult};
pub use faults::{CRI_METHODS, Fault, FaultKind};
pub use images::{MockImage, normalize_image_name};
pub use logs::{CriLogLine, LogStream, parse_cri_log_line, rfc3339_nano};
pub use observe::{CallOutcome, CallRecord, ContainerSnapshot, MockEvent, MockSnapshot};
pub use script::{Behaviour, ContainerInfo, Match, OnTerm, Script, Step};
pub use stats::{MockNetwork, MockUsage};

use self::faults::cri_method;
use self::state::{Shared, State};
use crate::cri::v1;

/// `runtime_name` in the mock's `Version` answer.
///
/// ```
/// use actlet::cri::{Runtime, mock::{MockRuntime, RUNTIME_NAME}};
/// # actlet::testing::run_paused(async {
/// let version = MockRuntime::new().version(Default::default()).await.unwrap();
/// assert_eq!(version.runtime_name, RUNTIME_NAME);
/// # });
/// ```
pub const RUNTIME_NAME: &str = "actlet-mock";

/// The sandbox (pause) image the mock uses, preloaded by default.
///
/// ```
/// use actlet::cri::{Runtime, mock::{DEFAULT_SANDBOX_IMAGE, MockRuntime}};
/// use actlet::cri::v1::{ImageSpec, ImageStatusRequest};
/// # actlet::testing::run_paused(async {
/// let image = Some(ImageSpec { image: DEFAULT_SANDBOX_IMAGE.into(), ..Default::default() });
/// let status = MockRuntime::new().image_status(ImageStatusRequest { image, verbose: false }).await.unwrap();
/// assert!(status.image.is_some()); // preloaded
/// # });
/// ```
pub const DEFAULT_SANDBOX_IMAGE: &str = "registry.k8s.io/pause:3.9";

/// The default bound of a hung call (upstream's `runtimeRequestTimeout`).
///
/// ```
/// use actlet::cri::{Runtime, mock::{DEFAULT_REQUEST_TIMEOUT, Fault, MockRuntime}};
/// # actlet::testing::run_paused(async {
/// let mock = MockRuntime::builder().fault("Version", Fault::hang()).build();
/// let start = tokio::time::Instant::now();
/// let err = mock.version(Default::default()).await.unwrap_err();
/// assert!(err.is_deadline_exceeded());
/// assert_eq!(start.elapsed(), DEFAULT_REQUEST_TIMEOUT); // virtual time: instant in real time
/// # });
/// ```
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The image filesystem `ImageFsInfo` and container stats report by default
/// (containerd's; see [`MockRuntimeBuilder::image_fs_mountpoint`]).
pub const SNAPSHOTTER_MOUNTPOINT: &str = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";

/// An in-process CRI runtime faithful to containerd 1.6; cheap to clone
/// (clones share the same runtime).
///
/// ```
/// use actlet::cri::mock::MockRuntime;
/// let mock = MockRuntime::new();
/// let handle = mock.clone(); // e.g. one for the kubelet, one for the test
/// handle.set_down(true);
/// assert!(mock.is_down());
/// println!("{mock:?}"); // MockRuntime { sandboxes: 0, containers: 0, down: true }
/// ```
#[derive(Clone)]
pub struct MockRuntime {
    shared: Arc<Shared>,
}

impl MockRuntime {
    /// A mock with the default images (busybox 1.36/latest, pause 3.9),
    /// ready conditions, no scripts and no faults.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let images = MockRuntime::new().list_images(Default::default()).await.unwrap().images;
    /// let tags: Vec<&str> = images.iter().flat_map(|i| &i.repo_tags).map(String::as_str).collect();
    /// assert!(tags.contains(&"docker.io/library/busybox:1.36"));
    /// assert!(tags.contains(&"registry.k8s.io/pause:3.9"));
    /// # });
    /// ```
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts configuring a mock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::mock::{Behaviour, Fault, MockRuntime};
    /// let mock = MockRuntime::builder()
    ///     .script("app", Behaviour::exit_after(Duration::from_secs(5), 1))
    ///     .fault("PullImage", Fault::error(tonic::Code::Unavailable, "registry down").times(1))
    ///     .network_ready(false)
    ///     .build();
    /// assert!(!mock.is_down());
    /// ```
    pub fn builder() -> MockRuntimeBuilder {
        MockRuntimeBuilder::default()
    }
}

impl Default for MockRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MockRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("MockRuntime")
            .field("sandboxes", &st.sandboxes.len())
            .field("containers", &st.containers.len())
            .field("down", &st.faults.is_down())
            .finish()
    }
}

/// Configures a [`MockRuntime`].
///
/// ```
/// use std::time::Duration;
/// use actlet::cri::{Runtime, mock::{MockImage, MockRuntime}};
/// # actlet::testing::run_paused(async {
/// let mock = MockRuntime::builder()
///     .without_default_images()
///     .image(MockImage::new("nginx:1.25").entrypoint(["nginx", "-g", "daemon off;"]))
///     .pullable(MockImage::new("redis:7"), Duration::from_secs(3))
///     .request_timeout(Duration::from_secs(10))
///     .build();
/// let images = mock.list_images(Default::default()).await.unwrap().images;
/// assert_eq!(images.len(), 1); // nginx; redis only once pulled
/// # });
/// ```
#[derive(Debug)]
pub struct MockRuntimeBuilder {
    images: Vec<MockImage>,
    pullable: Vec<(MockImage, Duration)>,
    scripts: Vec<(Match, Script)>,
    faults: Vec<(&'static str, Fault)>,
    clock: Option<Clock>,
    request_timeout: Duration,
    sandbox_image: String,
    runtime_handlers: Vec<String>,
    network_ready: bool,
    image_fs_mountpoint: String,
}

impl Default for MockRuntimeBuilder {
    fn default() -> Self {
        Self {
            images: vec![MockImage::busybox(), MockImage::pause()],
            pullable: Vec::new(),
            scripts: Vec::new(),
            faults: Vec::new(),
            clock: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            sandbox_image: DEFAULT_SANDBOX_IMAGE.to_string(),
            runtime_handlers: vec!["runc".to_string()],
            network_ready: true,
            image_fs_mountpoint: SNAPSHOTTER_MOUNTPOINT.to_string(),
        }
    }
}

impl MockRuntimeBuilder {
    /// Starts with an empty image store (no busybox, no pause: the first
    /// `RunPodSandbox` then fails like containerd that cannot pull pause).
    ///
    /// ```
    /// # use actlet::cri::v1::{PodSandboxConfig, PodSandboxMetadata, RunPodSandboxRequest};
    /// # let sandbox = |handler: &str| RunPodSandboxRequest {
    /// #     config: Some(PodSandboxConfig {
    /// #         metadata: Some(PodSandboxMetadata { name: "web".into(), namespace: "default".into(), uid: "u1".into(), attempt: 0 }),
    /// #         ..Default::default()
    /// #     }),
    /// #     runtime_handler: handler.into(),
    /// # };
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().without_default_images().build();
    /// assert!(mock.list_images(Default::default()).await.unwrap().images.is_empty());
    /// // no pause image: sandboxes cannot start
    /// assert!(mock.run_pod_sandbox(sandbox("")).await.is_err());
    /// # });
    /// ```
    pub fn without_default_images(mut self) -> Self {
        self.images.clear();
        self
    }

    /// Preloads an image.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::{MockImage, MockRuntime}};
    /// use actlet::cri::v1::{ImageSpec, ImageStatusRequest};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().image(MockImage::new("nginx:1.25")).build();
    /// let image = Some(ImageSpec { image: "nginx:1.25".into(), ..Default::default() });
    /// let status = mock.image_status(ImageStatusRequest { image, verbose: false }).await.unwrap();
    /// assert_eq!(status.image.unwrap().repo_tags, ["docker.io/library/nginx:1.25"]);
    /// # });
    /// ```
    pub fn image(mut self, image: MockImage) -> Self {
        self.images.push(image);
        self
    }

    /// Makes an image pullable from the fake registry; pulls take `latency`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{MockImage, MockRuntime}};
    /// use actlet::cri::v1::{ImageSpec, PullImageRequest};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().pullable(MockImage::new("redis:7"), Duration::from_secs(3)).build();
    /// let start = tokio::time::Instant::now();
    /// let image = Some(ImageSpec { image: "redis:7".into(), ..Default::default() });
    /// let pulled = mock.pull_image(PullImageRequest { image, ..Default::default() }).await.unwrap();
    /// assert!(pulled.image_ref.starts_with("sha256:"));
    /// assert!(start.elapsed() >= Duration::from_secs(3));
    /// # });
    /// ```
    pub fn pullable(mut self, image: MockImage, latency: Duration) -> Self {
        self.pullable.push((image, latency));
        self
    }

    /// Scripts the containers `matching` selects (see [`MockRuntime::script`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// use actlet::cri::mock::{Behaviour, Match, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder()
    ///     .script(Match::container("c").pod("job"), Behaviour::exit_after(Duration::from_secs(5), 3))
    ///     .build();
    /// let node = TestNode::with_mock(mock);
    /// node.set_pods(vec![PodBuilder::new("job").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "job", "Failed", Duration::from_secs(60)).await.unwrap(); // exit code 3
    /// # });
    /// ```
    pub fn script(mut self, matching: impl Into<Match>, script: impl Into<Script>) -> Self {
        self.scripts.push((matching.into(), script.into()));
        self
    }

    /// Injects a fault from the start (see [`MockRuntime::inject`]).
    ///
    /// # Panics
    /// If `method` is not a CRI method name.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().fault("Version", Fault::error(tonic::Code::Internal, "boom").times(1)).build();
    /// assert_eq!(mock.version(Default::default()).await.unwrap_err().to_status().message(), "boom");
    /// assert!(mock.version(Default::default()).await.is_ok()); // only once
    /// # });
    /// ```
    pub fn fault(mut self, method: &str, fault: Fault) -> Self {
        let m = cri_method(method).unwrap_or_else(|| panic!("unknown CRI method {method:?}"));
        self.faults.push((m, fault));
        self
    }

    /// Uses `clock` for CRI timestamps (default: [`Clock::tokio`]).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use actlet::cri::mock::{Clock, MockRuntime};
    /// let fixed = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    /// let mock = MockRuntime::builder().clock(Clock::from_fn(move || fixed)).build();
    /// assert_eq!(mock.clock().now(), fixed); // every CRI timestamp is this instant
    /// ```
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// How long a [`Fault::hang`] lasts before `DEADLINE_EXCEEDED` (default 2 min).
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder()
    ///     .request_timeout(Duration::from_secs(4))
    ///     .fault("Status", Fault::hang())
    ///     .build();
    /// let start = tokio::time::Instant::now();
    /// assert!(mock.status(Default::default()).await.unwrap_err().is_deadline_exceeded());
    /// assert_eq!(start.elapsed(), Duration::from_secs(4));
    /// # });
    /// ```
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The sandbox (pause) image `RunPodSandbox` needs (default pause:3.9).
    ///
    /// ```
    /// # use actlet::cri::v1::{PodSandboxConfig, PodSandboxMetadata, RunPodSandboxRequest};
    /// # let sandbox = |handler: &str| RunPodSandboxRequest {
    /// #     config: Some(PodSandboxConfig {
    /// #         metadata: Some(PodSandboxMetadata { name: "web".into(), namespace: "default".into(), uid: "u1".into(), attempt: 0 }),
    /// #         ..Default::default()
    /// #     }),
    /// #     runtime_handler: handler.into(),
    /// # };
    /// use actlet::cri::{Runtime, mock::{MockImage, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder()
    ///     .sandbox_image("registry.k8s.io/pause:3.10")
    ///     .image(MockImage::new("registry.k8s.io/pause:3.10"))
    ///     .build();
    /// assert!(mock.run_pod_sandbox(sandbox("")).await.is_ok());
    /// # });
    /// ```
    pub fn sandbox_image(mut self, image: &str) -> Self {
        self.sandbox_image = image.to_string();
        self
    }

    /// Adds a runtime handler `RunPodSandbox` accepts (besides `""` and `runc`).
    ///
    /// ```
    /// # use actlet::cri::v1::{PodSandboxConfig, PodSandboxMetadata, RunPodSandboxRequest};
    /// # let sandbox = |handler: &str| RunPodSandboxRequest {
    /// #     config: Some(PodSandboxConfig {
    /// #         metadata: Some(PodSandboxMetadata { name: "web".into(), namespace: "default".into(), uid: "u1".into(), attempt: 0 }),
    /// #         ..Default::default()
    /// #     }),
    /// #     runtime_handler: handler.into(),
    /// # };
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// assert!(MockRuntime::new().run_pod_sandbox(sandbox("kata")).await.is_err()); // unknown handler
    /// let mock = MockRuntime::builder().runtime_handler("kata").build();
    /// assert!(mock.run_pod_sandbox(sandbox("kata")).await.is_ok());
    /// # });
    /// ```
    pub fn runtime_handler(mut self, handler: &str) -> Self {
        self.runtime_handlers.push(handler.to_string());
        self
    }

    /// Whether `NetworkReady` starts true (default) or false.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().network_ready(false).build();
    /// let status = mock.status(Default::default()).await.unwrap().status.unwrap();
    /// let network = status.conditions.iter().find(|c| c.r#type == "NetworkReady").unwrap();
    /// assert!(!network.status);
    /// assert_eq!(network.reason, "NetworkPluginNotReady");
    /// # });
    /// ```
    pub fn network_ready(mut self, ready: bool) -> Self {
        self.network_ready = ready;
        self
    }

    /// The image filesystem mountpoint `ImageFsInfo` and container stats
    /// name (default [`SNAPSHOTTER_MOUNTPOINT`], which need not exist; a
    /// kubelet reading the host's filesystems wants one that does).
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().image_fs_mountpoint("/tmp").build();
    /// let fs = mock.image_fs_info(Default::default()).await.unwrap().image_filesystems;
    /// assert_eq!(fs[0].fs_id.as_ref().unwrap().mountpoint, "/tmp");
    /// # });
    /// ```
    pub fn image_fs_mountpoint(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.image_fs_mountpoint = path.into().to_string_lossy().into_owned();
        self
    }

    /// Builds the mock. Its default clock starts now.
    ///
    /// ```
    /// use actlet::cri::mock::MockRuntime;
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::builder().build(); // the same as MockRuntime::new()
    /// assert!(mock.calls().is_empty());
    /// # });
    /// ```
    pub fn build(self) -> MockRuntime {
        let mut state = State::default();
        for image in self.images {
            state.images.add(image);
        }
        for (image, latency) in self.pullable {
            state.registry.publish(image, latency);
        }
        state.scripts = self.scripts;
        for (method, fault) in self.faults {
            state.faults.push(method, fault);
        }
        state.features.supplemental_groups_policy = true;
        state.conditions = ["RuntimeReady", "NetworkReady"]
            .into_iter()
            .map(|t| v1::RuntimeCondition {
                r#type: t.to_string(),
                status: true,
                ..Default::default()
            })
            .collect();
        let mut shared = Shared::new(
            state,
            self.clock.unwrap_or_default(),
            self.request_timeout,
            self.sandbox_image,
        );
        shared.runtime_handlers = self.runtime_handlers;
        shared.image_fs_mountpoint = self.image_fs_mountpoint;
        let mock = MockRuntime {
            shared: Arc::new(shared),
        };
        if !self.network_ready {
            mock.set_network_ready(false);
        }
        mock
    }
}
