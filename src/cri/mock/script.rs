//! Per-container behaviour scripts: what a container's "process" does.
//!
//! A [`Behaviour`] is a timeline of [`Step`]s (write output, sleep, exit,
//! block forever, get OOM-killed) plus its reaction to SIGTERM ([`OnTerm`]),
//! optional failures of `CreateContainer` / `StartContainer`, extra latency
//! of CRI methods on that container, and `ExecSync` replies. A [`Script`]
//! picks the behaviour for each container when it is created — the same for
//! every attempt, one per attempt, or computed by a closure — and a
//! [`Match`] says which containers a script is for.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tonic::Code;

use super::busybox;
use super::exec::{ExecHandler, ExecResult};
use super::faults::cri_method;
use super::logs::LogStream;

/// One step of a container process's timeline.
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::cri::mock::{Behaviour, MockRuntime, LogStream, Step};
/// use actlet::testing::{PodBuilder, TestNode};
/// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::from_steps(vec![
///     Step::Output(LogStream::Stdout, "working\n".into()),
///     Step::Sleep(Duration::from_secs(10)),
///     Step::Exit(0),
/// ])).build());
/// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// let status = node.wait_for_phase("default", "web", "Succeeded", Duration::from_secs(60)).await.unwrap();
/// let done = status.container_statuses.unwrap()[0].state.clone().unwrap().terminated.unwrap();
/// assert_eq!(done.reason.as_deref(), Some("Completed"));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Write raw output (lines end with `\n`; a trailing fragment becomes a
    /// `P` line when the process exits).
    Output(LogStream, String),
    /// Wait (tokio time).
    Sleep(Duration),
    /// Run forever (until signalled).
    Block,
    /// Exit with this code (reason `Completed` for 0, else `Error`).
    Exit(i32),
    /// Get killed by the OOM killer: exit 137, reason `OOMKilled`.
    OomKill,
}

/// What the process does when `StopContainer` sends SIGTERM.
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::cri::mock::{Behaviour, MockRuntime, OnTerm};
/// use actlet::testing::{PodBuilder, TestNode};
/// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().on_sigterm(OnTerm::ExitAfter(Duration::from_secs(10), 0))).build());
/// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
/// let id = node.mock().find_container("web", "c").unwrap().status.id;
/// use actlet::cri::{Runtime, v1::StopContainerRequest};
/// let start = tokio::time::Instant::now();
/// node.mock().stop_container(StopContainerRequest { container_id: id.clone(), timeout: 30 }).await.unwrap();
/// let exited = node.mock().container(&id).unwrap();
/// assert_eq!(start.elapsed(), Duration::from_secs(10)); // a graceful shutdown
/// assert_eq!((exited.exit_code, exited.reason.as_str()), (0, "Completed"));
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTerm {
    /// Exit at once with this code (143 = killed by SIGTERM).
    Exit(i32),
    /// Shut down gracefully: exit with the code after the delay.
    ExitAfter(Duration, i32),
    /// Ignore it; `StopContainer` kills it after its timeout (exit 137).
    Ignore,
    /// A shell `trap "exit N" TERM`: exit with N when the current `Sleep`
    /// step ends (never while blocked).
    ExitAfterCurrentStep(i32),
}

/// What one container does, from `CreateContainer` to its exit.
///
/// ```
/// use std::time::Duration;
/// use actlet::cri::mock::{Behaviour, MockRuntime, Script};
/// use actlet::testing::{PodBuilder, TestNode};
/// # actlet::testing::run_paused(async {
/// // a server that logs, takes 5 s to start, and ignores SIGTERM
/// let server = Behaviour::run_forever()
///     .stdout("listening on :8080")
///     .ignore_sigterm()
///     .slow("StartContainer", Duration::from_secs(5));
/// let node = TestNode::with_mock(MockRuntime::builder().script("server", Script::Always(server)).build());
/// node.set_pods(vec![PodBuilder::new("web").container("server", "busybox:1.36", ["httpd", "-f"]).build()]);
/// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
/// let log = std::fs::read_to_string(node.mock().find_container("web", "server").unwrap().status.log_path).unwrap();
/// assert!(log.ends_with(" stdout F listening on :8080\n"));
/// # });
/// ```
#[derive(Clone)]
pub struct Behaviour {
    pub(crate) steps: Vec<Step>,
    pub(crate) on_term: OnTerm,
    pub(crate) create_error: Option<(Code, String)>,
    pub(crate) start_error: Option<String>,
    pub(crate) latency: HashMap<&'static str, Duration>,
    pub(crate) exec: Vec<ExecHandler>,
}

impl Behaviour {
    /// Runs the steps in order; exits 0 after the last one unless it exits or blocks.
    /// SIGTERM makes it exit 143 at once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime, LogStream, Step};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::from_steps(vec![
    ///     Step::Sleep(Duration::from_secs(1)),
    ///     Step::Output(LogStream::Stderr, "disk full\n".into()),
    ///     Step::Exit(2),
    /// ])).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// let status = node.wait_for_phase("default", "web", "Failed", Duration::from_secs(60)).await.unwrap();
    /// let done = status.container_statuses.unwrap()[0].state.clone().unwrap().terminated.unwrap();
    /// assert_eq!((done.exit_code, done.reason.as_deref()), (2, Some("Error")));
    /// # });
    /// ```
    pub fn from_steps(steps: Vec<Step>) -> Self {
        Self {
            steps,
            on_term: OnTerm::Exit(143),
            create_error: None,
            start_error: None,
            latency: HashMap::new(),
            exec: Vec::new(),
        }
    }

    /// Runs until stopped; SIGTERM ends it with exit code 143.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever()).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// use actlet::cri::{Runtime, v1::StopContainerRequest};
    /// let start = tokio::time::Instant::now();
    /// node.mock().stop_container(StopContainerRequest { container_id: id.clone(), timeout: 30 }).await.unwrap();
    /// let exited = node.mock().container(&id).unwrap();
    /// assert_eq!(exited.exit_code, 143); // SIGTERM
    /// # });
    /// ```
    pub fn run_forever() -> Self {
        Self::from_steps(vec![Step::Block])
    }

    /// Exits with `code` after `after`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::exit_after(Duration::from_secs(30), 0)).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// let status = node.wait_for_phase("default", "web", "Succeeded", Duration::from_secs(60)).await.unwrap();
    /// let done = status.container_statuses.unwrap()[0].state.clone().unwrap().terminated.unwrap();
    /// let ran = done.finished_at.unwrap().0.duration_since(done.started_at.unwrap().0);
    /// assert_eq!(ran.as_secs(), 30); // virtual time: the test took microseconds
    /// # });
    /// ```
    pub fn exit_after(after: Duration, code: i32) -> Self {
        Self::from_steps(vec![Step::Sleep(after), Step::Exit(code)])
    }

    /// Exits with `code` as soon as it starts (before `StartContainer` returns).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::crash_on_start(1)).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Always").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// // the kubelet restarts it with back-off (CrashLoopBackOff)
    /// let status = node.wait_for_restart_count("default", "web", "c", 2, Duration::from_secs(120)).await.unwrap();
    /// assert_eq!(status.last_state.unwrap().terminated.unwrap().exit_code, 1);
    /// # });
    /// ```
    pub fn crash_on_start(code: i32) -> Self {
        Self::from_steps(vec![Step::Exit(code)])
    }

    /// Killed by the OOM killer `after` starting (exit 137, reason `OOMKilled`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::oom_killed_after(Duration::from_secs(5))).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// let status = node.wait_for_phase("default", "web", "Failed", Duration::from_secs(60)).await.unwrap();
    /// let done = status.container_statuses.unwrap()[0].state.clone().unwrap().terminated.unwrap();
    /// assert_eq!((done.exit_code, done.reason.as_deref()), (137, Some("OOMKilled")));
    /// # });
    /// ```
    pub fn oom_killed_after(after: Duration) -> Self {
        Self::from_steps(vec![Step::Sleep(after), Step::OomKill])
    }

    /// `CreateContainer` fails with `code` and `message`; nothing is created.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::fail_create(tonic::Code::Unknown, "no space left on device")).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// actlet::testing::wait_until(|| node.mock().call_count("CreateContainer") > 0, Duration::from_secs(60)).await.unwrap();
    /// assert!(node.mock().find_container("web", "c").is_none()); // nothing was created
    /// # });
    /// ```
    pub fn fail_create(code: Code, message: impl Into<String>) -> Self {
        Self {
            create_error: Some((code, message.into())),
            ..Self::run_forever()
        }
    }

    /// `StartContainer` fails (code `Unknown`) with `message`; the container
    /// is left `EXITED` with exit code 128, reason `StartError` and the
    /// message, as containerd does when runc cannot start the process.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::fail_start("exec format error")).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// actlet::testing::wait_until(|| node.mock().find_container("web", "c").is_some_and(|c| c.status.exit_code == 128), Duration::from_secs(60)).await.unwrap();
    /// let c = node.mock().find_container("web", "c").unwrap();
    /// assert_eq!((c.status.reason.as_str(), c.status.message.as_str()), ("StartError", "exec format error"));
    /// # });
    /// ```
    pub fn fail_start(message: impl Into<String>) -> Self {
        Self {
            start_error: Some(message.into()),
            ..Self::run_forever()
        }
    }

    /// Writes `line` (plus a newline) to stdout when it starts, before its steps.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime, parse_cri_log_line};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().stdout("ready")).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// let log = std::fs::read_to_string(node.mock().container(&id).unwrap().log_path).unwrap();
    /// let line = parse_cri_log_line(log.lines().next().unwrap()).unwrap();
    /// assert_eq!((line.stream.as_str(), line.content.as_str()), ("stdout", "ready"));
    /// # });
    /// ```
    pub fn stdout(self, line: &str) -> Self {
        self.output_first(LogStream::Stdout, line)
    }

    /// Writes `line` (plus a newline) to stderr when it starts, before its steps.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime, parse_cri_log_line};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::exit_after(Duration::from_secs(1), 1).stderr("config missing")).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Failed", Duration::from_secs(60)).await.unwrap();
    /// let log = std::fs::read_to_string(node.mock().find_container("web", "c").unwrap().status.log_path).unwrap();
    /// let line = parse_cri_log_line(log.lines().next().unwrap()).unwrap();
    /// assert_eq!((line.stream.as_str(), line.content.as_str()), ("stderr", "config missing"));
    /// # });
    /// ```
    pub fn stderr(self, line: &str) -> Self {
        self.output_first(LogStream::Stderr, line)
    }

    fn output_first(mut self, stream: LogStream, line: &str) -> Self {
        let at = self
            .steps
            .iter()
            .position(|s| !matches!(s, Step::Output(..)))
            .unwrap_or(self.steps.len());
        self.steps.insert(at, Step::Output(stream, format!("{line}\n")));
        self
    }

    /// Ignores SIGTERM, so `StopContainer` takes its whole timeout (exit 137).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().ignore_sigterm()).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// use actlet::cri::{Runtime, v1::StopContainerRequest};
    /// let start = tokio::time::Instant::now();
    /// node.mock().stop_container(StopContainerRequest { container_id: id.clone(), timeout: 30 }).await.unwrap();
    /// let exited = node.mock().container(&id).unwrap();
    /// assert_eq!(start.elapsed(), Duration::from_secs(30)); // the whole timeout
    /// assert_eq!(exited.exit_code, 137); // then SIGKILL
    /// # });
    /// ```
    pub fn ignore_sigterm(self) -> Self {
        self.on_sigterm(OnTerm::Ignore)
    }

    /// Sets the reaction to SIGTERM.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime, OnTerm};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().on_sigterm(OnTerm::Exit(0))).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// use actlet::cri::{Runtime, v1::StopContainerRequest};
    /// let start = tokio::time::Instant::now();
    /// node.mock().stop_container(StopContainerRequest { container_id: id.clone(), timeout: 30 }).await.unwrap();
    /// let exited = node.mock().container(&id).unwrap();
    /// assert_eq!((exited.exit_code, exited.reason.as_str()), (0, "Completed"));
    /// # });
    /// ```
    pub fn on_sigterm(mut self, on_term: OnTerm) -> Self {
        self.on_term = on_term;
        self
    }

    /// Every call of CRI `method` (gRPC name, e.g. `"StopContainer"`) on this
    /// container takes `delay` longer.
    ///
    /// # Panics
    /// If `method` is not a CRI method name.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().slow("StopContainer", Duration::from_secs(3))).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// use actlet::cri::{Runtime, v1::StopContainerRequest};
    /// let start = tokio::time::Instant::now();
    /// node.mock().stop_container(StopContainerRequest { container_id: id.clone(), timeout: 30 }).await.unwrap();
    /// let exited = node.mock().container(&id).unwrap();
    /// assert!(start.elapsed() >= Duration::from_secs(3));
    /// # });
    /// ```
    pub fn slow(mut self, method: &str, delay: Duration) -> Self {
        let m = cri_method(method).unwrap_or_else(|| panic!("unknown CRI method {method:?}"));
        self.latency.insert(m, delay);
        self
    }

    /// `ExecSync` of exactly `cmd` returns `result`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime, ExecResult};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().exec_reply(&["cat", "/ready"], ExecResult::ok("yes"))).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// use actlet::cri::{Runtime, v1::ExecSyncRequest};
    /// let exec = |cmd: &[&str]| ExecSyncRequest { container_id: id.clone(), cmd: cmd.iter().map(|s| s.to_string()).collect(), timeout: 1 };
    /// assert_eq!(node.mock().exec_sync(exec(&["cat", "/ready"])).await.unwrap().stdout, b"yes");
    /// assert_eq!(node.mock().exec_sync(exec(&["echo", "hi"])).await.unwrap().stdout, b"hi\n"); // busybox
    /// # });
    /// ```
    pub fn exec_reply<S: AsRef<str>>(self, cmd: &[S], result: ExecResult) -> Self {
        let cmd: Vec<String> = cmd.iter().map(|s| s.as_ref().to_string()).collect();
        self.exec(move |argv| (argv == cmd.as_slice()).then(|| result.clone()))
    }

    /// `ExecSync` asks `handler` first (earlier handlers win); `None` falls
    /// through to the busybox subset. A closure can keep state, e.g. a probe
    /// that fails until a file was "touched" by an earlier exec.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
    /// # use std::time::Duration;
    /// # use actlet::cri::{Runtime, v1::ExecSyncRequest};
    /// # use actlet::testing::{PodBuilder, TestNode};
    /// // a readiness probe that fails until `touch /ready` was run
    /// let ready = Arc::new(AtomicBool::new(false));
    /// let behaviour = Behaviour::run_forever().exec(move |argv| match argv {
    ///     [cmd, path] if cmd == "touch" && path == "/ready" => { ready.store(true, Ordering::SeqCst); Some(ExecResult::exit(0)) }
    ///     [cmd, path] if cmd == "cat" && path == "/ready" => Some(ExecResult::exit(if ready.load(Ordering::SeqCst) { 0 } else { 1 })),
    ///     _ => None, // anything else: the busybox subset
    /// });
    /// # actlet::testing::run_paused(async {
    /// # let node = TestNode::with_mock(MockRuntime::builder().script("c", behaviour).build());
    /// # node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// # node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// # let id = node.mock().find_container("web", "c").unwrap().status.id;
    /// let exec = |cmd: &str, path: &str| ExecSyncRequest { container_id: id.clone(), cmd: vec![cmd.into(), path.into()], timeout: 1 };
    /// assert_eq!(node.mock().exec_sync(exec("cat", "/ready")).await.unwrap().exit_code, 1);
    /// node.mock().exec_sync(exec("touch", "/ready")).await.unwrap();
    /// assert_eq!(node.mock().exec_sync(exec("cat", "/ready")).await.unwrap().exit_code, 0);
    /// # });
    /// ```
    pub fn exec(mut self, handler: impl Fn(&[String]) -> Option<ExecResult> + Send + Sync + 'static) -> Self {
        self.exec.push(Arc::new(handler));
        self
    }

    /// The extra latency of `method` on this container.
    pub(crate) fn latency_of(&self, method: &str) -> Duration {
        self.latency.get(method).copied().unwrap_or_default()
    }
}

impl fmt::Debug for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Behaviour")
            .field("steps", &self.steps)
            .field("on_term", &self.on_term)
            .field("create_error", &self.create_error)
            .field("start_error", &self.start_error)
            .field("latency", &self.latency)
            .field("exec_handlers", &self.exec.len())
            .finish()
    }
}

/// What the mock knows about a container when it picks its behaviour.
///
/// ```
/// # use actlet::cri::mock::ContainerInfo;
/// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
/// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
/// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
/// #     pid1: true, stdin: false, busybox_image: true,
/// # };
/// use actlet::cri::mock::{Behaviour, Script};
/// let script = Script::from_fn(|info: &ContainerInfo| {
///     if info.attempt < 2 { Behaviour::crash_on_start(1) } else { Script::busybox(info) }
/// });
/// assert!(format!("{:?}", script.behaviour(&info("web", "c", 0))).contains("Exit(1)"));
/// assert!(format!("{:?}", script.behaviour(&info("web", "c", 2))).contains("Sleep(3600s)")); // `sleep 3600`
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerInfo {
    /// Pod (sandbox metadata) name.
    pub pod_name: String,
    /// Pod namespace.
    pub pod_namespace: String,
    /// Pod UID.
    pub pod_uid: String,
    /// Container name.
    pub name: String,
    /// Container attempt (the kubelet's restart count).
    pub attempt: u32,
    /// The command line: `command` + `args`, or the image's default.
    pub argv: Vec<String>,
    /// The normalized image name.
    pub image: String,
    /// Whether the process is PID 1 of its PID namespace (pid mode `CONTAINER`).
    pub pid1: bool,
    /// Whether stdin is kept open.
    pub stdin: bool,
    /// Whether the image is busybox-like (unknown programs fail to start).
    pub busybox_image: bool,
}

/// Chooses a container's [`Behaviour`] when it is created.
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::cri::mock::{Behaviour, MockRuntime, Script};
/// use actlet::testing::{PodBuilder, TestNode};
/// let node = TestNode::with_mock(MockRuntime::builder().script("c", Script::PerAttempt(vec![
///     Behaviour::crash_on_start(1),
///     Behaviour::run_forever(),
/// ])).build());
/// node.set_pods(vec![PodBuilder::new("web").restart_policy("Always").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// use actlet::cri::v1::ContainerState;
/// let runs = || node.mock().find_container("web", "c").is_some_and(|c| c.attempt() == 1 && c.state() == ContainerState::ContainerRunning);
/// actlet::testing::wait_until(runs, Duration::from_secs(120)).await.unwrap(); // attempt 0 crashed, attempt 1 runs
/// # });
/// ```
#[derive(Clone)]
pub enum Script {
    /// Run the command with the tiny busybox `sh` subset (the default).
    Busybox,
    /// The same behaviour for every attempt.
    Always(Behaviour),
    /// Attempt `n` gets entry `n`; the last entry repeats (e.g. crash on
    /// attempts 0..2, then run forever).
    PerAttempt(Vec<Behaviour>),
    /// Computed from the container; may call [`Script::busybox`] to fall back.
    Custom(Arc<dyn Fn(&ContainerInfo) -> Behaviour + Send + Sync>),
}

impl Script {
    /// A script computed by `f`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime, Script};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Script::from_fn(|info| match info.pod_namespace.as_str() {
    ///     "default" => Behaviour::exit_after(Duration::from_secs(1), 0),
    ///     _ => Script::busybox(info),
    /// })).build());
    /// node.set_pods(vec![PodBuilder::new("web").restart_policy("Never").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Succeeded", Duration::from_secs(60)).await.unwrap();
    /// # });
    /// ```
    pub fn from_fn(f: impl Fn(&ContainerInfo) -> Behaviour + Send + Sync + 'static) -> Self {
        Self::Custom(Arc::new(f))
    }

    /// The busybox interpretation of `info`'s command.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// use actlet::cri::mock::Script;
    /// let mut echo = info("web", "c", 0);
    /// echo.argv = vec!["sh".into(), "-c".into(), "echo hi; exit 3".into()];
    /// let behaviour = format!("{:?}", Script::busybox(&echo));
    /// assert!(behaviour.contains("\"hi\\n\"") && behaviour.contains("Exit(3)"), "{behaviour}");
    /// ```
    pub fn busybox(info: &ContainerInfo) -> Behaviour {
        busybox::process_behaviour(&info.argv, info.pid1, info.busybox_image, info.stdin)
    }

    /// The behaviour for `info`.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// use actlet::cri::mock::{Behaviour, Script};
    /// let script = Script::PerAttempt(vec![Behaviour::crash_on_start(7), Behaviour::run_forever()]);
    /// assert!(format!("{:?}", script.behaviour(&info("web", "c", 0))).contains("Exit(7)"));
    /// assert!(format!("{:?}", script.behaviour(&info("web", "c", 5))).contains("Block")); // the last one repeats
    /// ```
    pub fn behaviour(&self, info: &ContainerInfo) -> Behaviour {
        match self {
            Self::Busybox => Self::busybox(info),
            Self::Always(b) => b.clone(),
            Self::PerAttempt(list) => {
                let i = usize::try_from(info.attempt)
                    .unwrap_or(usize::MAX)
                    .min(list.len().saturating_sub(1));
                list.get(i).cloned().unwrap_or_else(|| Self::busybox(info))
            }
            Self::Custom(f) => f(info),
        }
    }
}

impl From<Behaviour> for Script {
    fn from(b: Behaviour) -> Self {
        Self::Always(b)
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Busybox => f.write_str("Busybox"),
            Self::Always(b) => f.debug_tuple("Always").field(b).finish(),
            Self::PerAttempt(l) => f.debug_tuple("PerAttempt").field(l).finish(),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// Which containers a script applies to; unset fields match anything.
///
/// ```
/// # use actlet::cri::mock::ContainerInfo;
/// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
/// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
/// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
/// #     pid1: true, stdin: false, busybox_image: true,
/// # };
/// use actlet::cri::mock::Match;
/// let m = Match::container("c").pod("web").namespace("default");
/// assert!(m.matches(&info("web", "c", 0)));
/// assert!(!m.matches(&info("db", "c", 0)));
/// assert_eq!(Match::from("c"), Match::container("c")); // a &str is a container name
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Match {
    /// Container name.
    pub container: Option<String>,
    /// Pod name.
    pub pod: Option<String>,
    /// Pod namespace.
    pub namespace: Option<String>,
}

impl Match {
    /// Every container.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// assert!(actlet::cri::mock::Match::any().matches(&info("web", "c", 0)));
    /// ```
    pub fn any() -> Self {
        Self::default()
    }

    /// Containers named `name`.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// use actlet::cri::mock::Match;
    /// assert!(Match::container("c").matches(&info("web", "c", 0)));
    /// assert!(!Match::container("sidecar").matches(&info("web", "c", 0)));
    /// ```
    pub fn container(name: &str) -> Self {
        Self {
            container: Some(name.to_string()),
            ..Self::default()
        }
    }

    /// Also requires the pod name.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// use actlet::cri::mock::Match;
    /// assert!(Match::container("c").pod("web").matches(&info("web", "c", 0)));
    /// assert!(!Match::container("c").pod("db").matches(&info("web", "c", 0)));
    /// assert!(Match::any().pod("web").matches(&info("web", "sidecar", 0))); // every container of the pod
    /// ```
    pub fn pod(mut self, name: &str) -> Self {
        self.pod = Some(name.to_string());
        self
    }

    /// Also requires the pod namespace.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// use actlet::cri::mock::Match;
    /// assert!(Match::any().namespace("default").matches(&info("web", "c", 0)));
    /// assert!(!Match::any().namespace("kube-system").matches(&info("web", "c", 0)));
    /// ```
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Whether `info` matches.
    ///
    /// ```
    /// # use actlet::cri::mock::ContainerInfo;
    /// # let info = |pod: &str, name: &str, attempt: u32| ContainerInfo {
    /// #     pod_name: pod.into(), pod_namespace: "default".into(), pod_uid: "u1".into(), name: name.into(), attempt,
    /// #     argv: vec!["sleep".into(), "3600".into()], image: "docker.io/library/busybox:1.36".into(),
    /// #     pid1: true, stdin: false, busybox_image: true,
    /// # };
    /// use actlet::cri::mock::Match;
    /// let m = Match { container: Some("c".into()), pod: None, namespace: Some("default".into()) };
    /// assert!(m.matches(&info("any-pod", "c", 0)));
    /// ```
    pub fn matches(&self, info: &ContainerInfo) -> bool {
        let ok = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        ok(&self.container, &info.name) && ok(&self.pod, &info.pod_name) && ok(&self.namespace, &info.pod_namespace)
    }
}

impl From<&str> for Match {
    fn from(container: &str) -> Self {
        Self::container(container)
    }
}
