//! `ExecSync` in the mock: scripted replies and the busybox default.

use std::sync::Arc;
use std::time::Duration;

use tonic::Code;

use super::busybox;
use crate::cri::{CriError, CriResult, v1};

/// What an `ExecSync` command produces.
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
    pub fn exit(code: i32) -> Self {
        Self {
            exit_code: code,
            stdout: Vec::new(),
            stderr: Vec::new(),
            delay: Some(Duration::ZERO),
        }
    }

    /// Exit code 0 with `stdout`.
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        Self::exit(0).with_stdout(stdout)
    }

    /// Sets stdout.
    pub fn with_stdout(mut self, stdout: impl Into<Vec<u8>>) -> Self {
        self.stdout = stdout.into();
        self
    }

    /// Sets stderr.
    pub fn with_stderr(mut self, stderr: impl Into<Vec<u8>>) -> Self {
        self.stderr = stderr.into();
        self
    }

    /// The command takes `delay` to finish.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// The command never finishes (a hung probe).
    pub fn hanging() -> Self {
        Self {
            delay: None,
            ..Self::exit(0)
        }
    }
}

/// A scripted exec reply: gets the command line, returns its result, or
/// `None` to fall back to the next handler (and finally to busybox).
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
