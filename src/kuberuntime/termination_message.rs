//! Termination messages (upstream `makeMounts` in `kubelet_pods.go` and
//! `getTerminationMessage` / `readLastStringFromContainerLogs` in
//! `kuberuntime_container.go`).
//!
//! Before a container is created, the kubelet creates an empty file
//! `<root>/pods/<uid>/containers/<name>/<random hex>` (mode 0666, so any
//! user in the container may write it) and mounts it read-write at the
//! container's `terminationMessagePath`. Once the container has exited, the
//! file's last [`MAX_MESSAGE_BYTES`] become the terminated state's message;
//! with `FallbackToLogsOnError`, an empty file and a non-zero exit code, the
//! tail of the container's log is used instead.

use std::io::SeekFrom;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::cri::v1;
use crate::server::logs::parse::parse_all;

/// Upstream `MaxContainerTerminationMessageLength`: bytes kept of the file.
pub const MAX_MESSAGE_BYTES: u64 = 4096;
/// Upstream `MaxContainerTerminationMessageLogLines`: log lines read on fallback.
pub const MAX_LOG_LINES: usize = 80;
/// Upstream `MaxContainerTerminationMessageLogLength`: bytes kept of those lines.
pub const MAX_LOG_BYTES: usize = 2048;
/// Bytes read from the end of a log file to find its last lines.
const LOG_READ_WINDOW: u64 = 64 * 1024;
/// Policy value that falls back to the log.
pub const FALLBACK_TO_LOGS_ON_ERROR: &str = "FallbackToLogsOnError";

/// `<pods_dir>/<uid>/containers/<name>`: the directory of the container's
/// termination message files.
pub fn container_dir(pods_dir: &Path, uid: &str, container: &str) -> PathBuf {
    pods_dir.join(uid).join("containers").join(container)
}

/// Creates a fresh, empty, world-writable message file for one container
/// start and returns the mount of it at `container_path`. It blocks: call
/// it from the blocking pool (the kubelet does, with the container's other
/// files: [`super::container_files`]).
///
/// # Errors
/// The directory or the file cannot be created.
pub fn create_mount_blocking(dir: &Path, container_path: &str) -> std::io::Result<v1::Mount> {
    use std::os::unix::fs::PermissionsExt;
    let host = dir.join(format!("{:08x}", rand::random::<u32>()));
    std::fs::create_dir_all(dir)?;
    std::fs::File::create(&host)?;
    // Explicitly, not through the umask: non-root users must be able to write.
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o666))?;
    Ok(v1::Mount {
        container_path: container_path.to_string(),
        host_path: host.to_string_lossy().into_owned(),
        readonly: false,
        selinux_relabel: true,
        ..Default::default()
    })
}

/// The last `max` bytes of the file at `path`.
async fn read_tail(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut f = tokio::fs::File::open(path).await?;
    let len = f.metadata().await?.len();
    if len > max {
        f.seek(SeekFrom::Start(len - max)).await?;
    }
    let mut out = Vec::with_capacity(len.min(max) as usize);
    f.take(max).read_to_end(&mut out).await?;
    Ok(out)
}

/// The message from a CRI log file's bytes: the content of its last
/// [`MAX_LOG_LINES`] lines, of which the last [`MAX_LOG_BYTES`].
///
/// ```
/// use actlet::kuberuntime::termination_message::message_from_log;
/// let log = b"2024-01-01T00:00:00Z stdout F hello\n2024-01-01T00:00:01Z stderr F boom\n";
/// assert_eq!(message_from_log(log), "hello\nboom\n");
/// ```
pub fn message_from_log(data: &[u8]) -> String {
    let lines = parse_all(data);
    let skip = lines.len().saturating_sub(MAX_LOG_LINES);
    let content: Vec<u8> = lines[skip..].iter().flat_map(|l| l.content.iter().copied()).collect();
    let start = content.len().saturating_sub(MAX_LOG_BYTES);
    String::from_utf8_lossy(&content[start..]).into_owned()
}

async fn log_tail(path: &str) -> String {
    match read_tail(Path::new(path), LOG_READ_WINDOW).await {
        Ok(mut data) => {
            // A window that starts inside a file line: drop that partial line.
            if std::fs::metadata(path).is_ok_and(|m| m.len() > LOG_READ_WINDOW)
                && let Some(nl) = data.iter().position(|b| *b == b'\n')
            {
                data.drain(..=nl);
            }
            message_from_log(&data)
        }
        Err(e) => format!("Error on reading termination message from logs: {e}"),
    }
}

/// The termination message of an exited container from its CRI status:
/// the message file mounted at `path` (the container's annotated
/// `terminationMessagePath`), or, with `policy` `FallbackToLogsOnError`, a
/// non-zero exit code and no file content, the log's tail. Empty when there
/// is nothing.
pub async fn read_message(status: &v1::ContainerStatus, path: &str, policy: &str) -> String {
    let fallback = policy == FALLBACK_TO_LOGS_ON_ERROR && status.exit_code != 0;
    let mut check_logs = fallback;
    let mut message = String::new();
    if let Some(mount) = (!path.is_empty())
        .then(|| status.mounts.iter().find(|m| m.container_path == path))
        .flatten()
    {
        match read_tail(Path::new(&mount.host_path), MAX_MESSAGE_BYTES).await {
            Ok(data) => {
                check_logs = fallback && data.is_empty();
                message = String::from_utf8_lossy(&data).into_owned();
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                check_logs = false;
                message = format!("Error on reading termination log {}: {e}", mount.host_path);
            }
        }
    }
    if check_logs && !status.log_path.is_empty() {
        message = log_tail(&status.log_path).await;
    }
    message
}

#[cfg(test)]
#[path = "termination_message_tests.rs"]
mod tests;
