//! A container's environment (upstream `makeEnvironmentVariables`) and the
//! `$(VAR)` expansion of its command and args.
//!
//! Supported: `value` (with `$(VAR)` references to variables declared before
//! it), `fieldRef` (`metadata.name|namespace|uid|labels|annotations`, with
//! `['key']` subscripts, `spec.nodeName`, `spec.serviceAccountName`,
//! `status.hostIP(s)`, `status.podIP(s)`), `resourceFieldRef`
//! (`limits|requests.cpu|memory|ephemeral-storage` with a divisor; unset
//! limits read as node allocatable, like upstream).
//!
//! `configMapKeyRef`, `secretKeyRef` and `envFrom` (with `prefix`) read the
//! objects fetched before the sync ([`EnvObjects`], from the volume side's
//! ConfigMap/Secret managers). As upstream: `envFrom` comes first and `env`
//! overrides it; a missing object or key fails the container
//! (`CreateContainerConfigError`: `configmap "x" not found`, `couldn't find
//! key k in ConfigMap ns/x`) unless `optional`; without an API server every
//! reference fails (`couldn't get configMap ns/x, no kubeClient defined`).
//!
//! Service variables (`KUBERNETES_SERVICE_HOST`…, and those of the pod's
//! namespace with `enableServiceLinks`) come last, unless `env`/`envFrom`
//! defined the name, and `$(VAR)` may reference them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ObjectFieldSelector, Pod, ResourceFieldSelector};

use super::expansion::expand;
use super::qos;
use crate::quantity::ParsedQuantity;
pub use crate::volumes::env_objects::EnvObjects;
use crate::volumes::objects::ObjectError;

/// Node facts the downward API reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvContext {
    /// The node's IPs (`status.hostIP` is the first).
    pub host_ips: Vec<String>,
    /// The pod's IPs (`status.podIP` is the first).
    pub pod_ips: Vec<String>,
    /// Node allocatable cpu (default for an unset `limits.cpu`).
    pub allocatable_cpu: ParsedQuantity,
    /// Node allocatable memory (default for an unset `limits.memory`).
    pub allocatable_memory: ParsedQuantity,
    /// The ConfigMaps and Secrets the env references.
    pub objects: EnvObjects,
}

/// A variable that cannot be resolved. The container is not created
/// (`CreateContainerConfigError`); the sync is retried later.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `fieldRef.apiVersion` other than `v1`.
    #[error("unsupported pod version: {0}")]
    UnsupportedApiVersion(String),
    /// A `fieldRef.fieldPath` the kubelet does not resolve.
    #[error("unsupported fieldPath: {0}")]
    UnsupportedFieldPath(String),
    /// `status.hostIP(s)` while the node's IPs are unknown.
    #[error("host IP unknown; known addresses: []")]
    HostIpUnknown,
    /// A `resourceFieldRef.resource` the kubelet does not resolve.
    #[error("unsupported container resource : {0}")]
    UnsupportedResource(String),
    /// A divisor that is invalid or zero.
    #[error("invalid resource divisor {0:?}")]
    InvalidDivisor(String),
    /// No API server to read configMap/secret sources from.
    #[error("couldn't get {kind} {namespace}/{name}, no kubeClient defined")]
    NoClient {
        /// `configMap` or `secret`.
        kind: &'static str,
        /// The pod's namespace.
        namespace: String,
        /// The object's name.
        name: String,
    },
    /// The object could not be read (`configmap "x" not found`, a 403…).
    #[error("{0}")]
    Object(String),
    /// A `configMapKeyRef`/`secretKeyRef` key the object lacks.
    #[error("couldn't find key {key} in {kind} {namespace}/{name}")]
    MissingKey {
        /// `ConfigMap` or `Secret`.
        kind: &'static str,
        /// The key.
        key: String,
        /// The pod's namespace.
        namespace: String,
        /// The object's name.
        name: String,
    },
}

/// A referenced object's data; `Ok(None)` when it is missing and `optional`.
fn object_data<'a>(
    pod: &Pod,
    ctx: &'a EnvContext,
    secret: bool,
    name: &str,
    optional: bool,
) -> Result<Option<&'a BTreeMap<String, String>>, EnvError> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    if !ctx.objects.has_client {
        return Err(EnvError::NoClient {
            kind: if secret { "secret" } else { "configMap" },
            namespace,
            name: name.to_string(),
        });
    }
    let map = if secret {
        &ctx.objects.secrets
    } else {
        &ctx.objects.config_maps
    };
    match map.get(name) {
        Some(Ok(data)) => Ok(Some(data)),
        Some(Err(ObjectError::NotFound { .. })) | None if optional => Ok(None),
        Some(Err(e)) => Err(EnvError::Object(e.to_string())),
        None => Err(EnvError::Object(
            ObjectError::NotFound {
                kind: if secret { "secret" } else { "configmap" },
                name: name.to_string(),
            }
            .to_string(),
        )),
    }
}

/// The value of a `configMapKeyRef`/`secretKeyRef`; `Ok(None)` to skip it.
fn key_ref_value(
    pod: &Pod,
    ctx: &EnvContext,
    secret: bool,
    name: &str,
    key: &str,
    optional: bool,
) -> Result<Option<String>, EnvError> {
    let Some(data) = object_data(pod, ctx, secret, name, optional)? else {
        return Ok(None);
    };
    match data.get(key) {
        Some(v) => Ok(Some(v.clone())),
        None if optional => Ok(None),
        None => Err(EnvError::MissingKey {
            kind: if secret { "Secret" } else { "ConfigMap" },
            key: key.to_string(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: name.to_string(),
        }),
    }
}

/// The container's environment, in declaration order (a redeclared name keeps
/// its first position and takes its last value).
pub fn make_environment_variables(
    pod: &Pod,
    container: &Container,
    ctx: &EnvContext,
) -> Result<Vec<(String, String)>, EnvError> {
    let mut order: Vec<String> = Vec::new();
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    if let Some(e) = &ctx.objects.services_error {
        return Err(EnvError::Object(e.clone()));
    }
    let services = &ctx.objects.services;
    for source in container.env_from.iter().flatten() {
        let prefix = source.prefix.as_deref().unwrap_or_default();
        let data = if let Some(r) = &source.config_map_ref {
            object_data(pod, ctx, false, &r.name, r.optional == Some(true))?
        } else if let Some(r) = &source.secret_ref {
            object_data(pod, ctx, true, &r.name, r.optional == Some(true))?
        } else {
            None
        };
        for (k, v) in data.into_iter().flatten() {
            let name = format!("{prefix}{k}");
            if values.insert(name.clone(), v.clone()).is_none() {
                order.push(name);
            }
        }
    }
    for var in container.env.iter().flatten() {
        let value = match (var.value.as_deref(), var.value_from.as_ref()) {
            (Some(v), _) if !v.is_empty() => expand(v, |name| values.get(name).or_else(|| services.get(name)).cloned()),
            (_, Some(from)) => {
                if let Some(field) = &from.field_ref {
                    pod_field_value(pod, field, ctx)?
                } else if let Some(res) = &from.resource_field_ref {
                    container_resource_value(container, res, ctx)?
                } else if let Some(r) = &from.config_map_key_ref {
                    match key_ref_value(pod, ctx, false, &r.name, &r.key, r.optional == Some(true))? {
                        Some(v) => v,
                        None => continue,
                    }
                } else if let Some(r) = &from.secret_key_ref {
                    match key_ref_value(pod, ctx, true, &r.name, &r.key, r.optional == Some(true))? {
                        Some(v) => v,
                        None => continue,
                    }
                } else {
                    String::new()
                }
            }
            _ => String::new(),
        };
        if values.insert(var.name.clone(), value).is_none() {
            order.push(var.name.clone());
        }
    }
    let mut out: Vec<(String, String)> = order
        .into_iter()
        .map(|name| {
            let value = values.remove(&name).unwrap_or_default();
            (name, value)
        })
        .collect();
    let defined: std::collections::BTreeSet<String> = out.iter().map(|(k, _)| k.clone()).collect();
    out.extend(
        services
            .iter()
            .filter(|(k, _)| !defined.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    Ok(out)
}

/// The container's command and args with `$(VAR)` references to `envs`
/// expanded (upstream `ExpandContainerCommandAndArgs`).
pub fn expand_command_and_args(container: &Container, envs: &[(String, String)]) -> (Vec<String>, Vec<String>) {
    let map: BTreeMap<&str, &str> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let expand_all = |items: &Option<Vec<String>>| -> Vec<String> {
        items
            .iter()
            .flatten()
            .map(|s| expand(s, |name| map.get(name).map(|v| v.to_string())))
            .collect()
    };
    (expand_all(&container.command), expand_all(&container.args))
}

/// Splits `metadata.labels['key']` into (`metadata.labels`, `key`).
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (path, key) = inner.split_once("['")?;
    Some((path, key))
}

/// The value of a `fieldRef` (upstream `podFieldSelectorRuntimeValue`).
pub fn pod_field_value(pod: &Pod, field: &ObjectFieldSelector, ctx: &EnvContext) -> Result<String, EnvError> {
    let version = field.api_version.as_deref().unwrap_or("v1");
    if version != "v1" {
        return Err(EnvError::UnsupportedApiVersion(version.into()));
    }
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let path = field.field_path.as_str();
    if let Some((base, key)) = split_subscript(path) {
        let map = match base {
            "metadata.labels" => meta.labels.as_ref(),
            "metadata.annotations" => meta.annotations.as_ref(),
            _ => return Err(EnvError::UnsupportedFieldPath(path.into())),
        };
        return Ok(map.and_then(|m| m.get(key)).cloned().unwrap_or_default());
    }
    let text = |v: Option<&String>| v.cloned().unwrap_or_default();
    Ok(match path {
        "metadata.name" => text(meta.name.as_ref()),
        "metadata.namespace" => text(meta.namespace.as_ref()),
        "metadata.uid" => text(meta.uid.as_ref()),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "spec.nodeName" | "spec.host" => text(spec.and_then(|s| s.node_name.as_ref())),
        "spec.serviceAccountName" => text(spec.and_then(|s| s.service_account_name.as_ref())),
        "status.hostIP" => ctx.host_ips.first().cloned().ok_or(EnvError::HostIpUnknown)?,
        "status.hostIPs" if ctx.host_ips.is_empty() => return Err(EnvError::HostIpUnknown),
        "status.hostIPs" => ctx.host_ips.join(","),
        "status.podIP" => ctx.pod_ips.first().cloned().unwrap_or_default(),
        "status.podIPs" => ctx.pod_ips.join(","),
        other => return Err(EnvError::UnsupportedFieldPath(other.into())),
    })
}

/// Upstream `FormatMap`: `key="value"` lines, sorted by key, Go-quoted.
fn format_map(map: Option<&BTreeMap<String, String>>) -> String {
    map.into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Go's `strconv.Quote` for the characters that occur in labels and annotations.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The value of a `resourceFieldRef` for this container (upstream
/// `ExtractContainerResourceValue` over the pod defaulted for the downward
/// API): the quantity divided by the divisor (default 1), rounded up.
pub fn container_resource_value(
    container: &Container,
    field: &ResourceFieldSelector,
    ctx: &EnvContext,
) -> Result<String, EnvError> {
    let divisor = match &field.divisor {
        Some(d) => ParsedQuantity::from_quantity(d).map_err(|_| EnvError::InvalidDivisor(d.0.clone()))?,
        None => ParsedQuantity::ZERO,
    };
    let divisor = if divisor.is_zero() {
        ParsedQuantity::from_units(1)
    } else {
        divisor
    };
    let zero = ParsedQuantity::ZERO;
    let (value, cpu) = match field.resource.as_str() {
        "limits.cpu" => (qos::limit(container, "cpu").unwrap_or(ctx.allocatable_cpu), true),
        "limits.memory" => (qos::limit(container, "memory").unwrap_or(ctx.allocatable_memory), false),
        "limits.ephemeral-storage" => (qos::limit(container, "ephemeral-storage").unwrap_or(zero), false),
        "requests.cpu" => (qos::request(container, "cpu").unwrap_or(zero), true),
        "requests.memory" => (qos::request(container, "memory").unwrap_or(zero), false),
        "requests.ephemeral-storage" => (qos::request(container, "ephemeral-storage").unwrap_or(zero), false),
        other => return Err(EnvError::UnsupportedResource(other.into())),
    };
    let (num, den) = if cpu {
        (value.milli_value(), divisor.milli_value())
    } else {
        (value.value(), divisor.value())
    };
    if den <= 0 {
        return Err(EnvError::InvalidDivisor(
            field.divisor.as_ref().map(|d| d.0.clone()).unwrap_or_default(),
        ));
    }
    let quotient = num / den + i64::from(num % den > 0);
    Ok(quotient.to_string())
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "env_sources_tests.rs"]
mod sources_tests;
