//! Carrying out GC decisions through the CRI and the filesystem.
//!
//! Every batch of removals runs as its own task (`detached`): the actor
//! awaits it, but when the actor stops or panics the removals in flight
//! carry on to their end (a CRI mutation is never cancelled), still holding
//! the round lock so no successor round overlaps them.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::OwnedMutexGuard;
use tracing::Instrument;

use super::containers::{ContainerRemoval, container_id_from_legacy_symlink};
use super::images::Candidate;
use crate::cri::{SharedRuntime, v1};
use crate::kuberuntime::labels::{CONTAINER_NAME_LABEL, POD_NAME_LABEL, POD_NAMESPACE_LABEL};
use crate::kuberuntime::start::legacy_log_symlink;

/// The round lock, shared by a round and its removal tasks.
pub(crate) type RoundGuard = Arc<OwnedMutexGuard<()>>;

/// Runs `fut` as a task of its own and waits for it; `None` if the task
/// itself panicked. Dropping the returned future does not cancel the task.
pub(crate) async fn detached<T: 'static>(fut: impl Future<Output = T> + 'static) -> Option<T> {
    actix::spawn(fut).await.ok()
}

/// Where container logs live.
#[derive(Clone, Debug)]
pub(crate) struct LogDirs {
    /// `/var/log/pods`.
    pub pods: PathBuf,
    /// `/var/log/containers` (legacy symlinks), if any.
    pub containers: Option<PathBuf>,
}

/// Containers removed at once: a node that deleted thousands of pods
/// since the last round (the churn soak: 500 pods every few seconds at
/// 10,000) otherwise falls behind by minutes, each removal waiting for its
/// CRI calls and log file operations in turn.
const PARALLEL_REMOVALS: usize = 16;

/// Stops (if in unknown state) and removes each container with its logs,
/// [`PARALLEL_REMOVALS`] at a time, oldest first; one message per failure.
pub(crate) async fn remove_containers(
    runtime: SharedRuntime,
    removals: Vec<ContainerRemoval>,
    logs: LogDirs,
    _guard: RoundGuard,
) -> Vec<String> {
    use futures::StreamExt;
    let (runtime, logs) = (&runtime, &logs);
    futures::stream::iter(removals)
        .map(|r| async move {
            let span =
                tracing::info_span!("gc_container", pod_uid = %r.pod_uid, container = %r.name, container_id = %r.id);
            remove_one_container(runtime, &r, logs).instrument(span).await
        })
        .buffer_unordered(PARALLEL_REMOVALS)
        .filter_map(|r| async move { r.err() })
        .collect()
        .await
}

async fn remove_one_container(runtime: &SharedRuntime, r: &ContainerRemoval, logs: &LogDirs) -> Result<(), String> {
    if r.unknown {
        let req = v1::StopContainerRequest {
            container_id: r.id.clone(),
            timeout: i64::try_from(r.grace.as_secs()).unwrap_or(i64::MAX),
        };
        if let Err(e) = runtime.stop_container(req).await {
            tracing::warn!(error = %e, "failed to stop container in unknown state before removal");
            return Err(format!("failed to stop container {:?}: {e}", r.id));
        }
    }
    match remove_container(runtime, &r.id, logs).await {
        Ok(()) => {
            tracing::info!("removed dead container");
            Ok(())
        }
        Err(e) => {
            tracing::warn!(error = %e, "failed to remove container");
            Err(e)
        }
    }
}

/// Upstream `removeContainer`: the container's log files (and rotated
/// ones) and legacy symlink, then the container.
async fn remove_container(runtime: &SharedRuntime, id: &str, logs: &LogDirs) -> Result<(), String> {
    let status = runtime
        .container_status(v1::ContainerStatusRequest {
            container_id: id.to_string(),
            verbose: false,
        })
        .await;
    match status {
        Ok(resp) => {
            if let Some(st) = resp.status {
                let link = logs.containers.as_ref().map(|dir| {
                    let label = |k: &str| st.labels.get(k).map(String::as_str).unwrap_or_default();
                    legacy_log_symlink(
                        dir,
                        label(POD_NAME_LABEL),
                        label(POD_NAMESPACE_LABEL),
                        label(CONTAINER_NAME_LABEL),
                        id,
                    )
                });
                // One trip to the blocking pool for every file of the
                // container, in its span (failures name the container).
                let (log_path, span) = (st.log_path, tracing::Span::current());
                let _ = tokio::task::spawn_blocking(move || {
                    span.in_scope(|| {
                        remove_log_files(&log_path);
                        if let Some(link) = link {
                            remove_file_blocking(&link);
                        }
                    })
                })
                .await;
            }
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(format!("failed to get container status {id:?}: {e}")),
    }
    runtime
        .remove_container(v1::RemoveContainerRequest {
            container_id: id.to_string(),
        })
        .await
        .map(|_| ())
        .map_err(|e| format!("failed to remove container {id:?}: {e}"))
}

async fn remove_file(path: &Path) {
    if let Err(e) = tokio::fs::remove_file(path).await
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "failed to remove log file");
    }
}

fn remove_file_blocking(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), error = %e, "failed to remove log file");
    }
}

/// The log file and its rotated copies (`<log>.*`); blocking.
fn remove_log_files(log_path: &str) {
    if log_path.is_empty() {
        return;
    }
    let log = Path::new(log_path);
    if let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str()))
        && let Ok(rd) = std::fs::read_dir(dir)
    {
        let prefix = format!("{name}.");
        for e in rd.flatten() {
            if e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix)) {
                remove_file_blocking(&e.path());
            }
        }
    }
    remove_file_blocking(log);
}

/// Stops then removes each sandbox (upstream `removeSandbox`).
pub(crate) async fn remove_sandboxes(runtime: SharedRuntime, ids: Vec<String>, _guard: RoundGuard) -> Vec<String> {
    let mut errors = vec![];
    for id in ids {
        let span = tracing::info_span!("gc_sandbox", sandbox_id = %id);
        if let Err(e) = remove_sandbox(&runtime, &id).instrument(span).await {
            errors.push(e);
        }
    }
    errors
}

async fn remove_sandbox(runtime: &SharedRuntime, id: &str) -> Result<(), String> {
    let stop = v1::StopPodSandboxRequest {
        pod_sandbox_id: id.to_string(),
    };
    if let Err(e) = runtime.stop_pod_sandbox(stop).await {
        tracing::warn!(error = %e, "failed to stop sandbox before removing");
        return Err(format!("failed to stop sandbox {id:?}: {e}"));
    }
    let remove = v1::RemovePodSandboxRequest {
        pod_sandbox_id: id.to_string(),
    };
    match runtime.remove_pod_sandbox(remove).await {
        Ok(_) => {
            tracing::info!("removed dead sandbox");
            Ok(())
        }
        Err(e) => {
            tracing::warn!(error = %e, "failed to remove sandbox");
            Err(format!("failed to remove sandbox {id:?}: {e}"))
        }
    }
}

/// The names of the directories under `dir`.
pub(crate) async fn dir_names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut rd = tokio::fs::read_dir(dir).await?;
    let mut out = vec![];
    while let Some(e) = rd.next_entry().await? {
        if e.file_type().await.is_ok_and(|t| t.is_dir())
            && let Some(n) = e.file_name().to_str()
        {
            out.push(n.to_string());
        }
    }
    Ok(out)
}

/// Removes the named pod log directories under `dir`.
pub(crate) async fn remove_log_dirs(dir: PathBuf, names: Vec<String>) -> Vec<String> {
    let mut errors = vec![];
    for n in names {
        let path = dir.join(&n);
        match tokio::fs::remove_dir_all(&path).await {
            Ok(()) => tracing::info!(path = %path.display(), "removed pod logs"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => errors.push(format!("failed to remove pod logs directory {}: {e}", path.display())),
        }
    }
    errors
}

/// Upstream's dead legacy symlink sweep: a `*.log` symlink in `dir` whose
/// target is gone is removed, unless its container still exists and has
/// not exited (its log may be mid-rotation).
pub(crate) async fn remove_dead_symlinks(runtime: SharedRuntime, dir: PathBuf) {
    let Ok(mut rd) = tokio::fs::read_dir(&dir).await else {
        return;
    };
    while let Ok(Some(e)) = rd.next_entry().await {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !name.ends_with(".log") || tokio::fs::metadata(e.path()).await.is_ok() {
            continue;
        }
        if let Some(id) = container_id_from_legacy_symlink(&name) {
            let req = v1::ContainerStatusRequest {
                container_id: id.to_string(),
                verbose: false,
            };
            if let Ok(resp) = runtime.container_status(req).await
                && resp
                    .status
                    .is_some_and(|s| s.state != v1::ContainerState::ContainerExited as i32)
            {
                continue;
            }
        }
        remove_file(&e.path()).await;
    }
}

/// Removes images in order until `bytes_to_free` bytes are freed (all of
/// them with `u64::MAX`); forgets each removed one in `records`. Returns the
/// bytes freed and one message per failure.
pub(crate) async fn remove_images(
    runtime: SharedRuntime,
    images: Vec<Candidate>,
    bytes_to_free: u64,
    records: impl Fn(&str) + 'static,
    _guard: RoundGuard,
) -> (u64, Vec<String>) {
    let (mut freed, mut errors) = (0u64, vec![]);
    for c in images {
        if freed >= bytes_to_free {
            break;
        }
        let req = v1::RemoveImageRequest {
            image: Some(v1::ImageSpec {
                image: c.id.clone(),
                ..Default::default()
            }),
        };
        match runtime.remove_image(req).await {
            Ok(_) => {
                tracing::info!(image_id = %c.id, size = c.size, "removed image to free bytes");
                records(&c.id);
                freed = freed.saturating_add(c.size);
            }
            Err(e) => {
                tracing::warn!(image_id = %c.id, error = %e, "failed to remove image");
                errors.push(format!("failed to remove image {:?}: {e}", c.id));
            }
        }
    }
    (freed, errors)
}
