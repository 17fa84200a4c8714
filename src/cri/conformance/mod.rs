//! A CRI behaviour suite: the behaviours actlet relies on, checked against
//! any [`Runtime`] — real containerd through [`CriClient`](crate::cri::CriClient)
//! or the [mock](crate::cri::mock) — with no per-runtime branches.
//!
//! Each [`Check`] runs in its own sandbox(es) with unique names and uids,
//! and removes them afterwards whatever the outcome. Checks only use a
//! busybox image and commands of the tiny `sh` subset the mock interprets
//! (`echo`, `sleep`, `exit`, `trap "" TERM`), so both runtimes agree.
//!
//! Timing: durations are measured with `tokio::time::Instant` (real time
//! on a normal runtime, virtual time under a paused one) and returned in
//! the report; checks assert only lower bounds (e.g. a SIGTERM-ignoring
//! container takes at least the stop timeout), never tight upper bounds.
//!
//! ```no_run
//! # async fn demo(rt: &dyn actlet::cri::Runtime) {
//! use actlet::cri::conformance::{run_all, ConformanceEnv};
//! let env = ConformanceEnv::new("/tmp/actlet-conformance-logs");
//! let report = run_all(rt, &env).await;
//! println!("{report}");
//! assert!(report.all_passed());
//! # }
//! ```

#![warn(missing_docs)]

mod container_checks;
mod fixture;
mod lifecycle_checks;
mod runtime_checks;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

// The checks' toolbox: public because `CheckFn` names it, not meant for callers.
#[doc(hidden)]
pub use fixture::{CHECK_LABEL, Fixture};

use crate::cri::Runtime;

/// Where and with what the suite runs.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// assert_eq!(env.busybox_image, "docker.io/library/busybox:1.36");
/// assert!(run_check("version_and_status", &mock, &env).await.unwrap().result.is_ok());
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ConformanceEnv {
    /// A busybox image present on the runtime (`docker.io/library/busybox:1.36`).
    pub busybox_image: String,
    /// The runtime's sandbox image (`registry.k8s.io/pause:3.9`).
    pub pause_image: String,
    /// Directory under which sandboxes get their log directories; the
    /// runtime must be able to write there and the suite to read.
    pub log_root: PathBuf,
    /// Pod namespace of every sandbox.
    pub namespace: String,
    /// Random suffix of this run's names and uids.
    pub run_id: String,
    /// How long to wait for a container to reach a state.
    pub wait_timeout: Duration,
}

impl ConformanceEnv {
    /// The default images, namespace `actlet-conformance`, a random run id,
    /// 30 s waits, logs under `log_root`.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::conformance::*;
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// let logs = tempfile::tempdir().unwrap();
    /// let env = ConformanceEnv::new(logs.path());
    /// assert_eq!(env.namespace, "actlet-conformance");
    /// assert_ne!(ConformanceEnv::new(logs.path()).run_id, env.run_id, "each run has its own names");
    /// # });
    /// ```
    pub fn new(log_root: impl Into<PathBuf>) -> Self {
        Self {
            busybox_image: "docker.io/library/busybox:1.36".into(),
            pause_image: "registry.k8s.io/pause:3.9".into(),
            log_root: log_root.into(),
            namespace: "actlet-conformance".into(),
            run_id: format!("{:08x}", rand::random::<u32>()),
            wait_timeout: Duration::from_secs(30),
        }
    }
}

/// A failed check: which one and why.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// let mut strict = env.clone();
/// strict.busybox_image = "example.com/absent:1".into(); // not on the mock
/// let outcome = run_check("image_status", &mock, &strict).await.unwrap();
/// let failure = outcome.result.unwrap_err();
/// assert_eq!(failure.name, "image_status");
/// println!("{failure}");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("conformance check {name} failed: {detail}")]
pub struct CheckFailure {
    /// The check's name.
    pub name: &'static str,
    /// What went wrong.
    pub detail: String,
}

/// The body of a check.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// assert!(checks().iter().all(|c| !c.description.is_empty()));
/// # });
/// ```
pub type CheckFn = for<'a> fn(&'a Fixture<'a>) -> BoxFuture<'a, Result<(), String>>;

/// One named behaviour check.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// let check = checks().into_iter().find(|c| c.name == "exec_sync").unwrap();
/// assert!(check.run(&mock, &env).await.result.is_ok(), "{}", check.description);
/// # });
/// ```
#[derive(Clone, Copy)]
pub struct Check {
    /// Its name (also a valid Rust identifier, for per-check test cases).
    pub name: &'static str,
    /// What it checks.
    pub description: &'static str,
    run: CheckFn,
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check").field("name", &self.name).finish()
    }
}

/// The result of one check.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// let outcome = run_check("container_lifecycle", &mock, &env).await.unwrap();
/// assert!(outcome.result.is_ok());
/// println!("{} took {:?} {:?}", outcome.name, outcome.elapsed, outcome.timings);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    /// The check's name.
    pub name: &'static str,
    /// Passed, or why not.
    pub result: Result<(), CheckFailure>,
    /// Durations the check measured (label, duration).
    pub timings: Vec<(String, Duration)>,
    /// How long the check took, cleanup included.
    pub elapsed: Duration,
}

macro_rules! check_list {
    ($($module:ident :: $name:ident => $desc:literal,)*) => {
        /// Every check, in the order [`run_all`] runs them.
        ///
        /// ```
        /// let names: Vec<_> = actlet::cri::conformance::checks().iter().map(|c| c.name).collect();
        /// assert_eq!(names.first(), Some(&"version_and_status"));
        /// assert_eq!(names.len(), 21);
        /// ```
        pub fn checks() -> Vec<Check> {
            vec![$(Check { name: stringify!($name), description: $desc, run: |fx| Box::pin($module::$name(fx)) },)*]
        }
    };
}

check_list! {
    runtime_checks::version_and_status => "Version answers CRI v1; Status reports RuntimeReady and NetworkReady",
    runtime_checks::image_status => "ImageStatus finds the busybox and pause images; a missing image is OK with no image",
    lifecycle_checks::sandbox_ready_with_ip => "RunPodSandbox gives a READY sandbox with an IP, echoing metadata and labels",
    lifecycle_checks::host_network_sandbox => "A hostNetwork sandbox is READY with an empty IP",
    lifecycle_checks::duplicate_sandbox_name_rejected => "A second RunPodSandbox with the same metadata fails (UNKNOWN, name reserved)",
    container_checks::container_lifecycle => "Create (CREATED), start (RUNNING), status fields, second start fails",
    container_checks::container_log_file => "The log file at log_directory/log_path holds `stdout F hello-from-actlet`",
    container_checks::exec_sync => "ExecSync returns stdout, stderr and exit codes",
    container_checks::exec_sync_timeout => "ExecSync past its timeout fails with DEADLINE_EXCEEDED after at least the timeout",
    container_checks::exec_in_exited_container_fails => "ExecSync in an exited container fails (UNKNOWN, CONTAINER_EXITED)",
    container_checks::container_exit_codes => "A container exiting by itself is EXITED with its code and Completed/Error",
    container_checks::stop_container_sigterm => "StopContainer of a non-PID-1 process ends it with SIGTERM (143)",
    container_checks::stop_container_ignoring_sigterm => "StopContainer of a SIGTERM-ignoring PID 1 waits the timeout, then kills (137)",
    container_checks::stop_exited_and_unknown_container => "StopContainer of an exited container is OK; of an unknown id NOT_FOUND",
    container_checks::remove_container => "RemoveContainer removes exited and running containers; unknown ids are OK",
    container_checks::create_container_errors => "CreateContainer fails for a missing image, unknown sandbox, duplicate name",
    container_checks::list_filters => "ListContainers / ListPodSandbox filter by id, sandbox, state and labels",
    lifecycle_checks::stop_pod_sandbox => "StopPodSandbox kills containers, NOTREADY, idempotent; no create/start after",
    lifecycle_checks::remove_pod_sandbox => "RemovePodSandbox removes the sandbox and its containers, idempotent, frees the name",
    lifecycle_checks::remove_ready_pod_sandbox => "RemovePodSandbox of a READY sandbox with a running container succeeds",
    runtime_checks::unknown_ids => "Status/stop/start/exec of unknown ids are NOT_FOUND; removals are OK",
}

/// Runs the check called `name`; `None` if there is none.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// assert!(run_check("no_such_check", &mock, &env).await.is_none());
/// assert!(run_check("sandbox_ready_with_ip", &mock, &env).await.unwrap().result.is_ok());
/// # });
/// ```
pub async fn run_check(name: &str, rt: &dyn Runtime, env: &ConformanceEnv) -> Option<CheckOutcome> {
    let check = checks().into_iter().find(|c| c.name == name)?;
    Some(check.run(rt, env).await)
}

impl Check {
    /// Runs the check, then removes what it created.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::conformance::*;
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// let logs = tempfile::tempdir().unwrap();
    /// let env = ConformanceEnv::new(logs.path());
    /// let check = checks().into_iter().next().unwrap();
    /// assert!(check.run(&mock, &env).await.result.is_ok());
    /// assert!(actlet::cri::Runtime::list_pod_sandbox(&mock, Default::default()).await.unwrap().items.is_empty());
    /// # });
    /// ```
    pub async fn run(&self, rt: &dyn Runtime, env: &ConformanceEnv) -> CheckOutcome {
        let start = Instant::now();
        let fx = Fixture::new(rt, env, self.name);
        let result = (self.run)(&fx).await.map_err(|detail| CheckFailure {
            name: self.name,
            detail,
        });
        fx.cleanup().await;
        CheckOutcome {
            name: self.name,
            result,
            timings: fx.take_timings(),
            elapsed: start.elapsed(),
        }
    }
}

/// Runs every check, one after the other.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// let report = run_all(&mock, &env).await;
/// assert_eq!(report.outcomes.len(), checks().len());
/// assert!(report.all_passed(), "{report}");
/// # });
/// ```
pub async fn run_all(rt: &dyn Runtime, env: &ConformanceEnv) -> ConformanceReport {
    let mut outcomes = Vec::new();
    for check in checks() {
        outcomes.push(check.run(rt, env).await);
    }
    ConformanceReport { outcomes }
}

/// The outcomes of a suite run.
///
/// ```
/// # actlet::testing::run_paused(async {
/// use actlet::cri::conformance::*;
/// let mock = actlet::cri::mock::MockRuntime::new();
/// let logs = tempfile::tempdir().unwrap();
/// let env = ConformanceEnv::new(logs.path());
/// let report = run_all(&mock, &env).await;
/// print!("{report}"); // one line per check: ok/FAIL, name, duration
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ConformanceReport {
    /// One per check, in order.
    pub outcomes: Vec<CheckOutcome>,
}

impl ConformanceReport {
    /// Whether every check passed.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::conformance::*;
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// let logs = tempfile::tempdir().unwrap();
    /// let env = ConformanceEnv::new(logs.path());
    /// assert!(run_all(&mock, &env).await.all_passed());
    /// # });
    /// ```
    pub fn all_passed(&self) -> bool {
        self.outcomes.iter().all(|o| o.result.is_ok())
    }

    /// The failures.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::conformance::*;
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// let logs = tempfile::tempdir().unwrap();
    /// let env = ConformanceEnv::new(logs.path());
    /// assert!(run_all(&mock, &env).await.failures().is_empty());
    /// # });
    /// ```
    pub fn failures(&self) -> Vec<&CheckFailure> {
        self.outcomes.iter().filter_map(|o| o.result.as_ref().err()).collect()
    }
}

impl fmt::Display for ConformanceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for o in &self.outcomes {
            let status = if o.result.is_ok() { "ok  " } else { "FAIL" };
            write!(f, "{status} {:<36} {:>8.3}s", o.name, o.elapsed.as_secs_f64())?;
            for (label, d) in &o.timings {
                write!(f, "  {label}={:.3}s", d.as_secs_f64())?;
            }
            writeln!(f)?;
            if let Err(e) = &o.result {
                writeln!(f, "     {}", e.detail)?;
            }
        }
        let passed = self.outcomes.iter().filter(|o| o.result.is_ok()).count();
        write!(f, "{passed}/{} checks passed", self.outcomes.len())
    }
}
