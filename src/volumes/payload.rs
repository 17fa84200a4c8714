//! What a configMap, secret, downwardAPI or projected volume contains
//! (upstream `configmap.MakePayload`, `secret.MakePayload`,
//! `downwardapi.CollectData`, `projected.collectData`), from objects fetched
//! beforehand. Pure: the caller fetches, this decides.
//!
//! - no `items`: every key becomes a file of that name; with `items`, only
//!   the listed keys, at their `path`, with their `mode`;
//! - a listed key that does not exist fails the volume unless `optional`;
//! - a missing object fails the volume unless `optional` (then it is empty);
//! - modes: `mode`, else `defaultMode`, else 0644.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, DownwardAPIVolumeFile, KeyToPath, Pod, ProjectedVolumeSource, Secret, Volume,
};

use super::atomic_writer::{FileProjection, Payload};
use super::objects::ObjectError;
use super::paths::clean_relative;
use crate::kuberuntime::env::{EnvContext, container_resource_value, pod_field_value};

/// Upstream's default file mode (`0644`).
pub const DEFAULT_MODE: u32 = 0o644;

/// Objects fetched for one volume.
#[derive(Clone, Debug, Default)]
pub struct Fetched {
    /// ConfigMaps by name.
    pub config_maps: BTreeMap<String, Result<ConfigMap, ObjectError>>,
    /// Secrets by name.
    pub secrets: BTreeMap<String, Result<Secret, ObjectError>>,
    /// Service account tokens by the index of their projected source.
    pub tokens: BTreeMap<usize, Result<String, ObjectError>>,
}

fn mode_of(mode: Option<i32>, default: u32) -> u32 {
    mode.map(|m| m as u32 & 0o7777).unwrap_or(default)
}

/// A `KeyToPath` payload over `data` (upstream `MakePayload`).
fn key_payload(
    items: &[KeyToPath],
    data: &BTreeMap<String, Vec<u8>>,
    default_mode: u32,
    optional: bool,
    missing: impl Fn(&str) -> String,
) -> Result<Payload, String> {
    let mut payload = Payload::new();
    if items.is_empty() {
        for (key, value) in data {
            payload.insert(
                key.clone(),
                FileProjection {
                    data: value.clone(),
                    mode: default_mode,
                },
            );
        }
        return Ok(payload);
    }
    for item in items {
        let Some(value) = data.get(&item.key) else {
            if optional {
                continue;
            }
            return Err(missing(&item.key));
        };
        payload.insert(
            item.path.clone(),
            FileProjection {
                data: value.clone(),
                mode: mode_of(item.mode, default_mode),
            },
        );
    }
    Ok(payload)
}

/// A ConfigMap's `data` and `binaryData` as bytes.
pub fn config_map_data(cm: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
        .collect();
    for (k, v) in cm.binary_data.iter().flatten() {
        out.entry(k.clone()).or_insert_with(|| v.0.clone());
    }
    out
}

/// A Secret's `data` as bytes.
pub fn secret_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect()
}

/// The object, or an empty one when it is missing and optional.
fn object_or_empty<T: Clone + Default>(
    fetched: Option<&Result<T, ObjectError>>,
    name: &str,
    kind: &'static str,
    optional: bool,
) -> Result<T, String> {
    match fetched {
        Some(Ok(o)) => Ok(o.clone()),
        Some(Err(ObjectError::NotFound { .. })) | None if optional => Ok(T::default()),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(ObjectError::NotFound {
            kind,
            name: name.to_string(),
        }
        .to_string()),
    }
}

/// The files of a downwardAPI item list (upstream `CollectData`).
pub fn downward_payload(
    items: &[DownwardAPIVolumeFile],
    pod: &Pod,
    default_mode: u32,
    ctx: &EnvContext,
) -> Result<Payload, String> {
    let mut payload = Payload::new();
    let mut errors = Vec::new();
    for item in items {
        let value = if let Some(field) = &item.field_ref {
            pod_field_value(pod, field, ctx).map_err(|e| e.to_string())
        } else if let Some(res) = &item.resource_field_ref {
            let name = res.container_name.as_deref().unwrap_or_default();
            let spec = pod.spec.as_ref();
            let container = spec.and_then(|s| {
                s.containers
                    .iter()
                    .chain(s.init_containers.iter().flatten())
                    .find(|c| c.name == name)
            });
            match container {
                Some(c) => container_resource_value(c, res, ctx).map_err(|e| e.to_string()),
                None => Err(format!("container {name} not found")),
            }
        } else {
            Ok(String::new())
        };
        match value {
            Ok(v) => {
                payload.insert(
                    clean_relative(&item.path),
                    FileProjection {
                        data: v.into_bytes(),
                        mode: mode_of(item.mode, default_mode),
                    },
                );
            }
            Err(e) => errors.push(e),
        }
    }
    aggregate(errors).map(|()| payload)
}

/// Upstream `utilerrors.NewAggregate(...).Error()`.
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.into_iter().next().unwrap_or_default()),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The files of a projected volume (upstream `projected.collectData`).
pub fn projected_payload(
    source: &ProjectedVolumeSource,
    pod: &Pod,
    fetched: &Fetched,
    ctx: &EnvContext,
) -> Result<Payload, String> {
    let default_mode = mode_of(source.default_mode, DEFAULT_MODE);
    let mut payload = Payload::new();
    let mut errors = Vec::new();
    for (i, s) in source.sources.iter().flatten().enumerate() {
        let part = if let Some(src) = &s.secret {
            let optional = src.optional == Some(true);
            object_or_empty(fetched.secrets.get(&src.name), &src.name, "secret", optional).and_then(|secret| {
                key_payload(
                    src.items.as_deref().unwrap_or_default(),
                    &secret_data(&secret),
                    default_mode,
                    optional,
                    |k| format!("references non-existent secret key: {k}"),
                )
            })
        } else if let Some(src) = &s.config_map {
            let optional = src.optional == Some(true);
            object_or_empty(fetched.config_maps.get(&src.name), &src.name, "configmap", optional).and_then(|cm| {
                key_payload(
                    src.items.as_deref().unwrap_or_default(),
                    &config_map_data(&cm),
                    default_mode,
                    optional,
                    |k| format!("configmap references non-existent config key: {k}"),
                )
            })
        } else if let Some(src) = &s.downward_api {
            downward_payload(src.items.as_deref().unwrap_or_default(), pod, default_mode, ctx)
        } else if let Some(src) = &s.service_account_token {
            match fetched.tokens.get(&i) {
                Some(Ok(token)) => Ok(Payload::from([(
                    src.path.clone(),
                    FileProjection {
                        data: token.clone().into_bytes(),
                        mode: default_mode,
                    },
                )])),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("service account token was not requested".into()),
            }
        } else {
            Ok(Payload::new())
        };
        match part {
            Ok(p) => payload.extend(p),
            Err(e) => errors.push(e),
        }
    }
    aggregate(errors).map(|()| payload)
}

/// The files of a configMap, secret, downwardAPI or projected `volume`;
/// `None` for other kinds.
pub fn volume_payload(
    volume: &Volume,
    pod: &Pod,
    fetched: &Fetched,
    ctx: &EnvContext,
) -> Option<Result<Payload, String>> {
    if let Some(src) = &volume.config_map {
        let optional = src.optional == Some(true);
        let mode = mode_of(src.default_mode, DEFAULT_MODE);
        return Some(
            object_or_empty(fetched.config_maps.get(&src.name), &src.name, "configmap", optional).and_then(|cm| {
                key_payload(
                    src.items.as_deref().unwrap_or_default(),
                    &config_map_data(&cm),
                    mode,
                    optional,
                    |k| format!("configmap references non-existent config key: {k}"),
                )
            }),
        );
    }
    if let Some(src) = &volume.secret {
        let optional = src.optional == Some(true);
        let mode = mode_of(src.default_mode, DEFAULT_MODE);
        let name = src.secret_name.clone().unwrap_or_default();
        return Some(
            object_or_empty(fetched.secrets.get(&name), &name, "secret", optional).and_then(|secret| {
                key_payload(
                    src.items.as_deref().unwrap_or_default(),
                    &secret_data(&secret),
                    mode,
                    optional,
                    |k| format!("references non-existent secret key: {k}"),
                )
            }),
        );
    }
    if let Some(src) = &volume.downward_api {
        let mode = mode_of(src.default_mode, DEFAULT_MODE);
        return Some(downward_payload(
            src.items.as_deref().unwrap_or_default(),
            pod,
            mode,
            ctx,
        ));
    }
    volume
        .projected
        .as_ref()
        .map(|src| projected_payload(src, pod, fetched, ctx))
}

#[cfg(test)]
#[path = "payload_tests.rs"]
mod tests;
