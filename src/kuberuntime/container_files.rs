//! The host files a container start needs, made in one trip to the blocking
//! pool: the restart count recovered from the container's log directory
//! (when the runtime has no earlier instance), that log directory, the
//! termination message file and the pod's hosts file. At 10k pod starts these were three or more
//! trips per container, each one a wake-up of the pod worker's step on the
//! kubelet's busiest thread.

use std::path::{Path, PathBuf};

use crate::cri::v1;
use crate::kuberuntime::container_config::restart_count_from_log_names;
use crate::kuberuntime::etc_hosts::{self, EtcHosts};
use crate::kuberuntime::termination_message;

/// What to prepare for one container start.
#[derive(Clone, Debug)]
pub struct ContainerFiles {
    /// The container's name (for errors).
    pub container: String,
    /// `<podLogsDir>/<ns>_<name>_<uid>/<container>`: created.
    pub log_dir: PathBuf,
    /// Recover the restart count from the log files in `log_dir` (no
    /// earlier instance in the runtime, e.g. after its GC or a node reboot).
    pub count_from_logs: bool,
    /// The termination message file's directory and the container path it
    /// is mounted at (none when the container has no message path).
    pub message: Option<(PathBuf, String)>,
    /// The pod's directory and its hosts file (none when the container
    /// does not get a managed `/etc/hosts`).
    pub etc_hosts: Option<(PathBuf, EtcHosts)>,
}

/// What [`prepare`] made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The restart count the log directory implies (when asked; 0 for no
    /// or an unreadable directory).
    pub restart_count: Option<u32>,
    /// The termination message mount.
    pub message_mount: Option<v1::Mount>,
    /// The `/etc/hosts` mount.
    pub etc_hosts_mount: Option<v1::Mount>,
}

/// A file [`prepare`] could not make.
#[derive(Debug, thiserror::Error)]
pub enum ContainerFilesError {
    /// The container's log directory.
    #[error("create container log directory for container {container} failed: {source}")]
    LogDir {
        /// Container name.
        container: String,
        /// Why.
        source: std::io::Error,
    },
    /// The termination message file.
    #[error("failed to create termination message file: {0}")]
    Message(std::io::Error),
    /// The pod's hosts file.
    #[error("failed to create hosts file for pod: {0}")]
    EtcHosts(std::io::Error),
    /// The blocking task did not finish (panicked or cancelled).
    #[error("preparing the files of container {container} failed: {reason}")]
    Task {
        /// Container name.
        container: String,
        /// The join error.
        reason: String,
    },
}

/// Makes `files` on the blocking pool.
///
/// # Errors
/// A directory or file cannot be created.
pub async fn prepare(files: ContainerFiles) -> Result<Prepared, ContainerFilesError> {
    let container = files.container.clone();
    tokio::task::spawn_blocking(move || prepare_blocking(&files))
        .await
        .map_err(|e| ContainerFilesError::Task {
            container,
            reason: e.to_string(),
        })?
}

/// [`prepare`] on the calling thread.
///
/// # Errors
/// As [`prepare`].
pub fn prepare_blocking(files: &ContainerFiles) -> Result<Prepared, ContainerFilesError> {
    let restart_count = files.count_from_logs.then(|| count_from_logs(&files.log_dir));
    std::fs::create_dir_all(&files.log_dir).map_err(|source| ContainerFilesError::LogDir {
        container: files.container.clone(),
        source,
    })?;
    let message_mount = files
        .message
        .as_ref()
        .map(|(dir, path)| termination_message::create_mount_blocking(dir, path))
        .transpose()
        .map_err(ContainerFilesError::Message)?;
    let etc_hosts_mount = files
        .etc_hosts
        .as_ref()
        .map(|(pod_dir, hosts)| etc_hosts::write_blocking(pod_dir, hosts))
        .transpose()
        .map_err(ContainerFilesError::EtcHosts)?;
    Ok(Prepared {
        restart_count,
        message_mount,
        etc_hosts_mount,
    })
}

/// The restart count the files in `log_dir` imply (0 when there are none).
fn count_from_logs(log_dir: &Path) -> u32 {
    let Ok(entries) = std::fs::read_dir(log_dir) else {
        return 0;
    };
    let names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    restart_count_from_log_names(names.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(root: &Path, count_from_logs: bool, message: bool) -> ContainerFiles {
        ContainerFiles {
            container: "app".into(),
            log_dir: root.join("logs/ns_web_u/app"),
            count_from_logs,
            message: message.then(|| (root.join("pods/u/containers/app"), "/dev/termination-log".into())),
            etc_hosts: message.then(|| (root.join("pods/u"), EtcHosts::Managed("127.0.0.1\tlocalhost\n".into()))),
        }
    }

    #[test]
    fn makes_the_log_dir_and_message_file_and_reads_the_restart_count() {
        let tmp = tempfile::tempdir().unwrap();
        let fresh = prepare_blocking(&files(tmp.path(), true, true)).unwrap();
        assert_eq!(fresh.restart_count, Some(0), "no logs yet");
        assert!(tmp.path().join("logs/ns_web_u/app").is_dir());
        let mount = fresh.message_mount.unwrap();
        assert_eq!(mount.container_path, "/dev/termination-log");
        assert!(Path::new(&mount.host_path).is_file());
        let hosts = fresh.etc_hosts_mount.unwrap();
        assert_eq!(hosts.container_path, "/etc/hosts");
        assert_eq!(
            std::fs::read_to_string(&hosts.host_path).unwrap(),
            "127.0.0.1\tlocalhost\n"
        );

        for log in ["0.log", "1.log", "2.log.20260101-000000.gz"] {
            std::fs::write(tmp.path().join("logs/ns_web_u/app").join(log), "").unwrap();
        }
        let again = prepare_blocking(&files(tmp.path(), true, false)).unwrap();
        assert_eq!(again.restart_count, Some(3), "one past the newest log");
        assert_eq!((again.message_mount, again.etc_hosts_mount), (None, None));
        let known = prepare_blocking(&files(tmp.path(), false, false)).unwrap();
        assert_eq!(known.restart_count, None, "not asked");
    }

    #[test]
    fn failures_name_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("logs"), "a file where a directory goes").unwrap();
        let e = prepare_blocking(&files(tmp.path(), true, true)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("create container log directory for container app failed: "),
            "{e}"
        );
        std::fs::remove_file(tmp.path().join("logs")).unwrap();
        std::fs::write(tmp.path().join("pods"), "").unwrap();
        let e = prepare_blocking(&files(tmp.path(), true, true)).unwrap_err();
        assert!(
            e.to_string().starts_with("failed to create termination message file: "),
            "{e}"
        );
    }
}
