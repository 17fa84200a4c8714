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
    pub fn run_forever() -> Self {
        Self::from_steps(vec![Step::Block])
    }

    /// Exits with `code` after `after`.
    pub fn exit_after(after: Duration, code: i32) -> Self {
        Self::from_steps(vec![Step::Sleep(after), Step::Exit(code)])
    }

    /// Exits with `code` as soon as it starts (before `StartContainer` returns).
    pub fn crash_on_start(code: i32) -> Self {
        Self::from_steps(vec![Step::Exit(code)])
    }

    /// Killed by the OOM killer `after` starting (exit 137, reason `OOMKilled`).
    pub fn oom_killed_after(after: Duration) -> Self {
        Self::from_steps(vec![Step::Sleep(after), Step::OomKill])
    }

    /// `CreateContainer` fails with `code` and `message`; nothing is created.
    pub fn fail_create(code: Code, message: impl Into<String>) -> Self {
        Self {
            create_error: Some((code, message.into())),
            ..Self::run_forever()
        }
    }

    /// `StartContainer` fails (code `Unknown`) with `message`; the container
    /// is left `EXITED` with exit code 128, reason `StartError` and the
    /// message, as containerd does when runc cannot start the process.
    pub fn fail_start(message: impl Into<String>) -> Self {
        Self {
            start_error: Some(message.into()),
            ..Self::run_forever()
        }
    }

    /// Writes `line` (plus a newline) to stdout when it starts, before its steps.
    pub fn stdout(self, line: &str) -> Self {
        self.output_first(LogStream::Stdout, line)
    }

    /// Writes `line` (plus a newline) to stderr when it starts, before its steps.
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
    pub fn ignore_sigterm(self) -> Self {
        self.on_sigterm(OnTerm::Ignore)
    }

    /// Sets the reaction to SIGTERM.
    pub fn on_sigterm(mut self, on_term: OnTerm) -> Self {
        self.on_term = on_term;
        self
    }

    /// Every call of CRI `method` (gRPC name, e.g. `"StopContainer"`) on this
    /// container takes `delay` longer.
    ///
    /// # Panics
    /// If `method` is not a CRI method name.
    pub fn slow(mut self, method: &str, delay: Duration) -> Self {
        let m = cri_method(method).unwrap_or_else(|| panic!("unknown CRI method {method:?}"));
        self.latency.insert(m, delay);
        self
    }

    /// `ExecSync` of exactly `cmd` returns `result`.
    pub fn exec_reply<S: AsRef<str>>(self, cmd: &[S], result: ExecResult) -> Self {
        let cmd: Vec<String> = cmd.iter().map(|s| s.as_ref().to_string()).collect();
        self.exec(move |argv| (argv == cmd.as_slice()).then(|| result.clone()))
    }

    /// `ExecSync` asks `handler` first (earlier handlers win); `None` falls
    /// through to the busybox subset. A closure can keep state, e.g. a probe
    /// that fails until a file was "touched" by an earlier exec.
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
    pub fn from_fn(f: impl Fn(&ContainerInfo) -> Behaviour + Send + Sync + 'static) -> Self {
        Self::Custom(Arc::new(f))
    }

    /// The busybox interpretation of `info`'s command.
    pub fn busybox(info: &ContainerInfo) -> Behaviour {
        busybox::process_behaviour(&info.argv, info.pid1, info.busybox_image, info.stdin)
    }

    /// The behaviour for `info`.
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
    pub fn any() -> Self {
        Self::default()
    }

    /// Containers named `name`.
    pub fn container(name: &str) -> Self {
        Self {
            container: Some(name.to_string()),
            ..Self::default()
        }
    }

    /// Also requires the pod name.
    pub fn pod(mut self, name: &str) -> Self {
        self.pod = Some(name.to_string());
        self
    }

    /// Also requires the pod namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Whether `info` matches.
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
