//! Setting one volume up (upstream `MountVolume.SetUp`), finding volumes on
//! disk after a restart (reconstruction), and tearing a pod's volumes down.
//! File-system work runs in `spawn_blocking`; API reads go through the
//! [`ObjectSource`] (each with its own deadline).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Volume};

use super::atomic_writer;
use super::mounts::MountedVolume;
use super::objects::ObjectSource;
use super::paths::{PLUGIN_DIRS, pod_dir, pod_volumes_dir, volume_dir};
use super::payload::{Fetched, volume_payload};
use super::plugin::{self, Plugin};
use super::token::TokenManager;
use crate::kuberuntime::env::EnvContext;
use crate::quantity::ParsedQuantity;

/// What setting up a volume needs.
#[derive(Clone)]
pub struct SetupDeps {
    /// `--root-dir`.
    pub root_dir: PathBuf,
    /// ConfigMaps, Secrets, tokens.
    pub objects: Arc<dyn ObjectSource>,
    /// The token cache.
    pub tokens: TokenManager,
    /// Node facts the downward API reads (allocatable).
    pub env: EnvContext,
}

impl std::fmt::Debug for SetupDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetupDeps")
            .field("root_dir", &self.root_dir)
            .finish_non_exhaustive()
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("volume task failed: {e}"))?
}

/// Fetches what `volume` reads from the API: every ConfigMap, Secret and
/// token it names, all at once (a `kube-api-access` volume's TokenRequest
/// and its `kube-root-ca.crt` read were two round trips in a row on every
/// API pod's start; each read has its own deadline).
async fn fetch(deps: &SetupDeps, pod: &Pod, volume: &Volume) -> Fetched {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let objects = deps.objects.as_ref();
    let (mut config_maps, mut secrets, mut tokens) = (Vec::<&str>::new(), Vec::<&str>::new(), Vec::new());
    if let Some(cm) = &volume.config_map {
        config_maps.push(&cm.name);
    }
    if let Some(s) = volume.secret.as_ref().and_then(|s| s.secret_name.as_deref()) {
        secrets.push(s);
    }
    for (i, s) in volume
        .projected
        .iter()
        .flat_map(|p| p.sources.iter().flatten())
        .enumerate()
    {
        if let Some(cm) = &s.config_map
            && !config_maps.contains(&cm.name.as_str())
        {
            config_maps.push(&cm.name);
        }
        if let Some(sec) = &s.secret
            && !secrets.contains(&sec.name.as_str())
        {
            secrets.push(&sec.name);
        }
        if let Some(tp) = &s.service_account_token {
            tokens.push((i, tp));
        }
    }
    let (cms, secs, toks) = futures::join!(
        futures::future::join_all(config_maps.iter().map(|n| objects.config_map(ns, n))),
        futures::future::join_all(secrets.iter().map(|n| objects.secret(ns, n))),
        futures::future::join_all(tokens.iter().map(|(_, tp)| deps.tokens.get(objects, pod, tp))),
    );
    Fetched {
        config_maps: config_maps.into_iter().map(String::from).zip(cms).collect(),
        secrets: secrets.into_iter().map(String::from).zip(secs).collect(),
        tokens: tokens.into_iter().map(|(i, _)| i).zip(toks).collect(),
    }
}

/// emptyDir `medium: Memory` size: `sizeLimit` if set, else the node's allocatable memory.
fn tmpfs_size(volume: &Volume, deps: &SetupDeps) -> u64 {
    let limit = volume
        .empty_dir
        .as_ref()
        .and_then(|e| e.size_limit.as_ref())
        .and_then(|q| ParsedQuantity::from_quantity(q).ok())
        .map(|q| q.value())
        .filter(|v| *v > 0);
    limit.unwrap_or_else(|| deps.env.allocatable_memory.value()).max(0) as u64
}

/// The pod's `fsGroup` and whether `fsGroupChangePolicy` is `OnRootMismatch`.
fn fs_group(pod: &Pod) -> Option<(u32, bool)> {
    let sc = pod.spec.as_ref()?.security_context.as_ref()?;
    let gid = u32::try_from(sc.fs_group?).ok()?;
    Some((gid, sc.fs_group_change_policy.as_deref() == Some("OnRootMismatch")))
}

/// Sets up `volume` of `pod`; on success it is ready to be mounted into containers.
pub async fn set_up(deps: &SetupDeps, pod: &Pod, volume: &Volume) -> Result<MountedVolume, String> {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let group = fs_group(pod);
    let kind = Plugin::of(volume);
    let dir = |p: Plugin| p.dir_name().map(|d| volume_dir(&deps.root_dir, &uid, d, &volume.name));
    match kind {
        Plugin::Unsupported(what) => Err(format!("volume type {what} is not supported by actlet")),
        Plugin::HostPath => {
            let src = volume.host_path.clone().unwrap_or_default();
            let path = blocking(move || plugin::check_host_path(&src)).await?;
            Ok(MountedVolume {
                plugin: kind,
                host_path: path,
                read_only: false,
            })
        }
        Plugin::EmptyDir => {
            let path = dir(kind).unwrap_or_default();
            let memory = volume.empty_dir.as_ref().and_then(|e| e.medium.as_deref()) == Some("Memory");
            let size = tmpfs_size(volume, deps);
            let p = path.clone();
            blocking(move || {
                if memory && plugin::can_mount() {
                    plugin::mount_tmpfs(&p, size)
                } else {
                    if memory {
                        tracing::warn!(path = %p.display(), "not root: memory-backed emptyDir is a plain directory");
                    }
                    plugin::make_empty_dir(&p).map_err(|e| format!("failed to create {}: {e}", p.display()))
                }?;
                match group {
                    Some((gid, on_mismatch)) => plugin::set_volume_ownership(&p, gid, false, on_mismatch),
                    None => Ok(()),
                }
            })
            .await?;
            Ok(MountedVolume {
                plugin: kind,
                host_path: path,
                read_only: false,
            })
        }
        Plugin::ConfigMap | Plugin::Secret | Plugin::Projected | Plugin::DownwardApi => {
            let path = dir(kind).unwrap_or_default();
            let fetched = fetch(deps, pod, volume).await;
            let mut payload = volume_payload(volume, pod, &fetched, &deps.env)
                .unwrap_or_else(|| Err("not an API data volume".into()))?;
            if group.is_some() {
                // What SetVolumeOwnership gives read-only volumes (g+r), in the
                // payload already, so an unchanged volume compares equal.
                payload.values_mut().for_each(|f| f.mode |= 0o040);
            }
            let p = path.clone();
            let changed = blocking(move || {
                let changed = atomic_writer::write(&p, &payload).map_err(|e| e.to_string())?;
                if let Some((gid, _)) = group {
                    plugin::set_volume_ownership(&p, gid, true, false)?;
                }
                Ok(changed)
            })
            .await?;
            if changed {
                tracing::debug!(volume = %volume.name, path = %path.display(), "volume content written");
            }
            Ok(MountedVolume {
                plugin: kind,
                host_path: path,
                read_only: true,
            })
        }
    }
}

/// A found pod directory and maybe one volume in it.
pub type Found = (String, Option<(String, MountedVolume)>);

/// Every pod directory under `<root>/pods` and the volume directories in it.
pub async fn reconstruct(root: &Path) -> Vec<Found> {
    let root = root.to_path_buf();
    blocking(move || {
        let mut out = Vec::new();
        let Ok(pods) = std::fs::read_dir(root.join("pods")) else {
            return Ok(out);
        };
        for entry in pods.flatten() {
            let uid = entry.file_name().to_string_lossy().into_owned();
            out.push((uid.clone(), None));
            for plugin_dir in PLUGIN_DIRS {
                let dir = pod_volumes_dir(&root, &uid).join(plugin_dir);
                let Ok(vols) = std::fs::read_dir(&dir) else { continue };
                let Some(kind) = Plugin::from_dir_name(plugin_dir) else {
                    continue;
                };
                for v in vols.flatten() {
                    let name = v.file_name().to_string_lossy().into_owned();
                    let vol = MountedVolume {
                        plugin: kind,
                        host_path: v.path(),
                        read_only: kind.is_api_data(),
                    };
                    out.push((uid.clone(), Some((name, vol))));
                }
            }
        }
        Ok(out)
    })
    .await
    .unwrap_or_default()
}

/// Unmounts and removes every volume of pod `uid`, then its pod directory.
pub async fn tear_down_pod(root: &Path, uid: &str) -> Result<(), String> {
    let (volumes, pod) = (pod_volumes_dir(root, uid), pod_dir(root, uid));
    blocking(move || {
        for plugin_dir in PLUGIN_DIRS {
            let Ok(vols) = std::fs::read_dir(volumes.join(plugin_dir)) else {
                continue;
            };
            for v in vols.flatten() {
                plugin::tear_down_dir(&v.path())?;
            }
        }
        plugin::tear_down_dir(&pod)
    })
    .await
}

#[cfg(test)]
#[path = "setup_tests.rs"]
mod tests;
