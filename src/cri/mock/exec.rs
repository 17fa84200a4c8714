//! `ExecSync` in the mock: scripted replies and the busybox default.

use std::sync::Arc;
use std::time::Duration;

use tonic::Code;

use super::busybox;
use crate::cri::{CriError, CriResult, v1};

/// What an `ExecSync` command produces.
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::cri::{Runtime, v1::ExecSyncRequest};
/// use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
/// use actlet::testing::{PodBuilder, TestNode};
/// let probe = ExecResult::exit(1).with_stderr("not ready");
/// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().exec_reply(&["probe"], probe)).build());
/// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
/// let container_id = node.mock().find_container("web", "c").unwrap().status.id;
/// let start = tokio::time::Instant::now();
/// let reply = node.mock().exec_sync(ExecSyncRequest { container_id, cmd: vec!["probe".into()], timeout: 5 }).await;
/// let reply = reply.unwrap();
/// assert_eq!((reply.exit_code, reply.stderr.as_slice()), (1, b"not ready".as_slice()));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecResult {
    /// The command's exit code.
    pub exit_code: i32,
    /// Bytes written to stdout.
    pub stdout: Vec<u8>,
    /// Bytes written to stderr.
    pub stderr: Vec<u8>,
    /// How long the command runs (tokio time); `None` means it never ends,
    /// so only the request's `timeout` can end the call.
    pub delay: Option<Duration>,
}

impl ExecResult {
    /// Exit code `code`, no output, instant.
    ///
    /// ```
    /// use actlet::cri::mock::ExecResult;
    /// let r = ExecResult::exit(3);
    /// assert_eq!((r.exit_code, r.stdout.len(), r.delay), (3, 0, Some(std::time::Duration::ZERO)));
    /// ```
    pub fn exit(code: i32) -> Self {
        Self {
            exit_code: code,
            stdout: Vec::new(),
            stderr: Vec::new(),
            delay: Some(Duration::ZERO),
        }
    }

    /// Exit code 0 with `stdout`.
    ///
    /// ```
    /// let r = actlet::cri::mock::ExecResult::ok("healthy\n");
    /// assert_eq!((r.exit_code, r.stdout.as_slice()), (0, b"healthy\n".as_slice()));
    /// ```
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        Self::exit(0).with_stdout(stdout)
    }

    /// Sets stdout.
    ///
    /// ```
    /// let r = actlet::cri::mock::ExecResult::exit(2).with_stdout("partial");
    /// assert_eq!(r.stdout, b"partial");
    /// ```
    pub fn with_stdout(mut self, stdout: impl Into<Vec<u8>>) -> Self {
        self.stdout = stdout.into();
        self
    }

    /// Sets stderr.
    ///
    /// ```
    /// let r = actlet::cri::mock::ExecResult::exit(1).with_stderr("cat: /ready: No such file or directory");
    /// assert!(r.stderr.starts_with(b"cat:"));
    /// ```
    pub fn with_stderr(mut self, stderr: impl Into<Vec<u8>>) -> Self {
        self.stderr = stderr.into();
        self
    }

    /// The command takes `delay` to finish.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::{Runtime, v1::ExecSyncRequest};
    /// use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let probe = ExecResult::ok("slow").with_delay(Duration::from_secs(2));
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().exec_reply(&["probe"], probe)).build());
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let container_id = node.mock().find_container("web", "c").unwrap().status.id;
    /// let start = tokio::time::Instant::now();
    /// let reply = node.mock().exec_sync(ExecSyncRequest { container_id, cmd: vec!["probe".into()], timeout: 5 }).await;
    /// assert_eq!(reply.unwrap().stdout, b"slow");
    /// assert_eq!(start.elapsed(), Duration::from_secs(2)); // within the 5 s timeout
    /// # });
    /// ```
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// The command never finishes (a hung probe).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::{Runtime, v1::ExecSyncRequest};
    /// use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let probe = ExecResult::hanging();
    /// let node = TestNode::with_mock(MockRuntime::builder().script("c", Behaviour::run_forever().exec_reply(&["probe"], probe)).build());
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let container_id = node.mock().find_container("web", "c").unwrap().status.id;
    /// let start = tokio::time::Instant::now();
    /// let reply = node.mock().exec_sync(ExecSyncRequest { container_id, cmd: vec!["probe".into()], timeout: 5 }).await;
    /// assert!(reply.unwrap_err().is_deadline_exceeded()); // ended by the request's timeout
    /// assert_eq!(start.elapsed(), Duration::from_secs(5));
    /// # });
    /// ```
    pub fn hanging() -> Self {
        Self {
            delay: None,
            ..Self::exit(0)
        }
    }
}

/// A scripted exec reply: gets the command line, returns its result, or
/// `None` to fall back to the next handler (and finally to busybox).
///
/// ```
/// use std::sync::Arc;
/// use actlet::cri::mock::{ExecHandler, ExecResult};
/// let handler: ExecHandler = Arc::new(|argv| (argv.first().map(String::as_str) == Some("probe")).then(|| ExecResult::exit(0)));
/// assert_eq!(handler(&["probe".to_string()]), Some(ExecResult::exit(0)));
/// assert_eq!(handler(&["echo".to_string()]), None); // falls through
/// ```
pub type ExecHandler = Arc<dyn Fn(&[String]) -> Option<ExecResult> + Send + Sync>;

/// Runs `cmd` with `handlers` (first answer wins) or the busybox subset,
/// honouring the request `timeout` (seconds, 0 = none) like containerd.
pub(crate) async fn run(handlers: &[ExecHandler], cmd: &[String], timeout: i64) -> CriResult<v1::ExecSyncResponse> {
    const M: &str = "ExecSync";
    let result = match handlers.iter().find_map(|h| h(cmd)) {
        Some(r) => r,
        None => busybox::exec(cmd).map_err(|cause| {
            let exec_id = super::state::random_id();
            CriError::new(
                M,
                Code::Unknown,
                format!("failed to exec in container: failed to start exec \"{exec_id}\": {cause}"),
            )
        })?,
    };
    let limit = u64::try_from(timeout).ok().filter(|t| *t > 0).map(Duration::from_secs);
    match (result.delay, limit) {
        (Some(d), Some(l)) if d > l => timeout_error(l).await,
        (None, Some(l)) => timeout_error(l).await,
        (Some(d), _) => {
            tokio::time::sleep(d).await;
            Ok(v1::ExecSyncResponse {
                stdout: result.stdout,
                stderr: result.stderr,
                exit_code: result.exit_code,
            })
        }
        (None, None) => std::future::pending().await,
    }
}

async fn timeout_error(limit: Duration) -> CriResult<v1::ExecSyncResponse> {
    tokio::time::sleep(limit).await;
    Err(CriError::new(
        "ExecSync",
        Code::DeadlineExceeded,
        format!(
            "failed to exec in container: timeout {}s exceeded: context deadline exceeded",
            limit.as_secs()
        ),
    ))
}
