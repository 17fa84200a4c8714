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
//! Not yet: `configMapKeyRef`, `secretKeyRef`, `envFrom` and service links
//! (they need the configMap/secret managers). A non-optional reference fails
//! with [`EnvError::SourceUnavailable`] (the container waits with
//! `CreateContainerConfigError`, as upstream does when the object is missing);
//! an optional one is skipped.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ObjectFieldSelector, Pod, ResourceFieldSelector};

use super::expansion::expand;
use super::qos;
use super::quantity::ParsedQuantity;

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
    /// configMap/secret sources (not supported yet).
    #[error("{kind} {name:?} not found: configMap and secret sources are not supported yet")]
    SourceUnavailable {
        /// `configmap` or `secret`.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
}

/// The container's environment, in declaration order (a redeclared name keeps
/// its first position and takes its last value).
pub fn make_environment_variables(
    pod: &Pod,
    container: &Container,
    ctx: &EnvContext,
) -> Result<Vec<(String, String)>, EnvError> {
    for source in container.env_from.iter().flatten() {
        if let Some(cm) = source.config_map_ref.as_ref().filter(|r| r.optional != Some(true)) {
            return Err(EnvError::SourceUnavailable {
                kind: "configmap",
                name: cm.name.clone(),
            });
        }
        if let Some(secret) = source.secret_ref.as_ref().filter(|r| r.optional != Some(true)) {
            return Err(EnvError::SourceUnavailable {
                kind: "secret",
                name: secret.name.clone(),
            });
        }
    }
    let mut order: Vec<String> = Vec::new();
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for var in container.env.iter().flatten() {
        let value = match (var.value.as_deref(), var.value_from.as_ref()) {
            (Some(v), _) if !v.is_empty() => expand(v, |name| values.get(name).cloned()),
            (_, Some(from)) => {
                if let Some(field) = &from.field_ref {
                    pod_field_value(pod, field, ctx)?
                } else if let Some(res) = &from.resource_field_ref {
                    container_resource_value(container, res, ctx)?
                } else if let Some(r) = &from.config_map_key_ref {
                    if r.optional == Some(true) {
                        continue;
                    }
                    return Err(EnvError::SourceUnavailable {
                        kind: "configmap",
                        name: r.name.clone(),
                    });
                } else if let Some(r) = &from.secret_key_ref {
                    if r.optional == Some(true) {
                        continue;
                    }
                    return Err(EnvError::SourceUnavailable {
                        kind: "secret",
                        name: r.name.clone(),
                    });
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
    Ok(order
        .into_iter()
        .map(|name| {
            let value = values.remove(&name).unwrap_or_default();
            (name, value)
        })
        .collect())
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
