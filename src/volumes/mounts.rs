//! A container's `volumeMounts` → CRI mounts (upstream `makeMounts`):
//! host path of the mounted volume (plus `subPath` / expanded
//! `subPathExpr`), container path, `readOnly` (forced for configMap, secret,
//! downwardAPI and projected volumes), propagation.
//!
//! Refused, as `CreateContainerConfigError`: a mount naming no volume of
//! the pod, two mounts on one path, an absolute `subPath` or one with `..`,
//! a `subPathExpr` naming an unset variable, a `subPath` resolving outside
//! its volume (through a symlink).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, VolumeMount};

use super::paths::{clean_relative, validate_sub_path};
use super::plugin::Plugin;
use crate::cri::v1::{Mount, MountPropagation};
use crate::kuberuntime::expansion::expand;

/// A volume set up on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountedVolume {
    /// Its plugin.
    pub plugin: Plugin,
    /// Where it is on the host.
    pub host_path: PathBuf,
    /// Mounted read-only whatever the mount says.
    pub read_only: bool,
}

/// The pod's mounted volumes by name.
pub type VolumeMap = BTreeMap<String, MountedVolume>;

/// `subPathExpr` with `$(VAR)` expanded (upstream `ExpandContainerVolumeMounts`).
///
/// ```
/// use actlet::volumes::mounts::expand_sub_path;
/// let envs = vec![("POD".to_string(), "web-0".to_string())];
/// assert_eq!(expand_sub_path("logs/$(POD)", &envs).unwrap(), "logs/web-0");
/// assert_eq!(expand_sub_path("$(NOPE)", &envs).unwrap_err(), "missing value for NOPE");
/// ```
pub fn expand_sub_path(expr: &str, envs: &[(String, String)]) -> Result<String, String> {
    let map: BTreeMap<&str, &str> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let missing = RefCell::new(BTreeSet::new());
    let out = expand(expr, |name| match map.get(name) {
        Some(v) if !v.is_empty() => Some(v.to_string()),
        _ => {
            missing.borrow_mut().insert(name.to_string());
            Some(String::new())
        }
    });
    let missing = missing.into_inner();
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "missing value for {}",
            missing.into_iter().collect::<Vec<_>>().join(", ")
        ))
    }
}

fn propagation(m: &VolumeMount) -> Result<i32, String> {
    Ok(match m.mount_propagation.as_deref() {
        None | Some("None") | Some("") => MountPropagation::PropagationPrivate,
        Some("HostToContainer") => MountPropagation::PropagationHostToContainer,
        Some("Bidirectional") => MountPropagation::PropagationBidirectional,
        Some(other) => return Err(format!("invalid MountPropagation mode: {other:?}")),
    } as i32)
}

/// The host path of `sub` inside `volume`, created (as a directory) when
/// missing; refused when it resolves outside the volume.
fn sub_path_host(volume: &Path, sub: &str, mount: &str, container: &str) -> Result<PathBuf, String> {
    validate_sub_path(sub)?;
    let base = volume
        .canonicalize()
        .map_err(|e| format!("cannot resolve volume path {}: {e}", volume.display()))?;
    let inside = |p: &Path| -> Result<PathBuf, String> {
        let real = p
            .canonicalize()
            .map_err(|e| format!("cannot resolve subPath {sub:?}: {e}"))?;
        if real.starts_with(&base) {
            Ok(real)
        } else {
            Err(format!(
                "subpath {:?} not within volume path {:?}",
                real.display().to_string(),
                base.display().to_string()
            ))
        }
    };
    let host = volume.join(clean_relative(sub));
    if std::fs::symlink_metadata(&host).is_err() {
        // Nothing is created before the deepest existing ancestor is known
        // to lie inside the volume (a symlink must not lead the mkdir out).
        let existing = host
            .ancestors()
            .find(|a| std::fs::symlink_metadata(a).is_ok())
            .unwrap_or(volume);
        inside(existing)?;
        std::fs::create_dir_all(&host).map_err(|e| {
            format!("failed to create subPath directory for volumeMount {mount:?} of container {container:?}: {e}")
        })?;
    }
    inside(&host)
}

/// The CRI mounts of `container` (whose environment is `envs`) over the
/// pod's mounted `volumes`.
pub fn container_mounts(
    container: &Container,
    volumes: &VolumeMap,
    envs: &[(String, String)],
) -> Result<Vec<Mount>, String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, m) in container.volume_mounts.iter().flatten().enumerate() {
        let path = m.mount_path.trim_end_matches('/').to_string();
        if !seen.insert(path) {
            return Err(format!(
                "volumeMounts[{i}].mountPath: Invalid value: {:?}: must be unique",
                m.mount_path
            ));
        }
        let Some(vol) = volumes.get(&m.name) else {
            return Err(format!(
                "cannot find volume {:?} to mount into container {:?}",
                m.name, container.name
            ));
        };
        let sub = match (m.sub_path.as_deref(), m.sub_path_expr.as_deref()) {
            (_, Some(expr)) if !expr.is_empty() => expand_sub_path(expr, envs)?,
            (Some(s), _) => s.to_string(),
            _ => String::new(),
        };
        let host = if sub.is_empty() {
            vol.host_path.clone()
        } else {
            sub_path_host(&vol.host_path, &sub, &m.name, &container.name)?
        };
        out.push(Mount {
            container_path: m.mount_path.clone(),
            host_path: host.to_string_lossy().into_owned(),
            readonly: m.read_only.unwrap_or(false) || vol.read_only,
            selinux_relabel: false,
            propagation: propagation(m)?,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "mounts_tests.rs"]
mod tests;
