//! Exec probes through CRI `ExecSync` (upstream `pkg/probe/exec` and the
//! remote runtime's `ExecSync`).
//!
//! The runtime enforces the command's timeout and answers
//! `DEADLINE_EXCEEDED`; the probe then fails with upstream's
//! `command "<cmd>" timed out`. Should the runtime not answer within the
//! timeout plus [`EXEC_SLACK`], the probe fails the same way.

use std::time::Duration;

use super::{Answer, Raw, cap_output};
use crate::cri::SharedRuntime;
use crate::cri::v1::ExecSyncRequest;

/// How long past the probe's timeout the runtime may take to answer.
pub const EXEC_SLACK: Duration = Duration::from_secs(1);

/// Upstream's output for a command that timed out.
///
/// ```
/// let cmd = vec!["sh".to_string(), "-c".into(), "sleep 10".into()];
/// assert_eq!(actlet::prober::handlers::exec::timed_out(&cmd), r#"command "sh -c sleep 10" timed out"#);
/// ```
pub fn timed_out(cmd: &[String]) -> String {
    format!("command {:?} timed out", cmd.join(" "))
}

/// Runs `cmd` in container `id`: exit 0 is a success, any other exit a
/// failure; the output is stdout then stderr, capped at 10 KiB.
///
/// # Errors
/// The runtime could not run the command (container gone, not running …).
pub async fn probe(runtime: &SharedRuntime, id: &str, cmd: Vec<String>, timeout: Duration) -> Result<Answer, String> {
    let req = ExecSyncRequest {
        container_id: id.to_string(),
        cmd: cmd.clone(),
        timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
    };
    match tokio::time::timeout(timeout + EXEC_SLACK, runtime.exec_sync(req)).await {
        Ok(Ok(resp)) => {
            let mut data = resp.stdout;
            data.extend_from_slice(&resp.stderr);
            let result = if resp.exit_code == 0 {
                Raw::Success
            } else {
                Raw::Failure
            };
            Ok(Answer::new(result, cap_output(data)))
        }
        Ok(Err(e)) if e.is_deadline_exceeded() => Ok(Answer::new(Raw::Failure, timed_out(&cmd))),
        Err(_) => Ok(Answer::new(Raw::Failure, timed_out(&cmd))),
        Ok(Err(e)) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cri::mock::{Behaviour, ExecResult, MockRuntime};
    use crate::testing::{PodBuilder, TestNode, run_paused};

    #[test]
    fn exit_codes_output_and_timeouts() {
        run_paused(async {
            let behaviour = Behaviour::run_forever()
                .exec_reply(&["ok"], ExecResult::ok("fine\n").with_stderr("warn"))
                .exec_reply(&["bad"], ExecResult::exit(2).with_stdout("x".repeat(20_000)))
                .exec_reply(&["hang"], ExecResult::hanging());
            let node = TestNode::with_mock(MockRuntime::builder().script("c", behaviour).build());
            node.set_pods(vec![
                PodBuilder::new("web")
                    .container("c", "busybox:1.36", ["sleep", "3600"])
                    .build(),
            ]);
            node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
                .await
                .unwrap();
            let id = node.mock().find_container("web", "c").unwrap().status.id;
            let rt: SharedRuntime = Arc::new(node.mock().clone());
            let run = |cmd: &str| probe(&rt, &id, vec![cmd.to_string()], Duration::from_secs(1));
            assert_eq!(run("ok").await, Ok(Answer::new(Raw::Success, "fine\nwarn")));
            let bad = run("bad").await.unwrap();
            assert_eq!((bad.result, bad.output.len()), (Raw::Failure, 10 * 1024));
            let start = tokio::time::Instant::now();
            assert_eq!(
                run("hang").await,
                Ok(Answer::new(Raw::Failure, r#"command "hang" timed out"#))
            );
            let took = start.elapsed();
            assert!(
                took >= Duration::from_secs(1) && took <= Duration::from_secs(2),
                "{took:?}"
            );
            let gone = probe(&rt, "nope", vec!["ok".into()], Duration::from_secs(1)).await;
            assert!(gone.is_err(), "{gone:?}");
        });
    }
}
