//! Pod → `PodSandboxConfig` (upstream `generatePodSandboxConfig` and
//! `generatePodSandboxLinuxConfig`).
//!
//! - metadata: name, namespace, uid, attempt;
//! - hostname: empty for hostNetwork pods (containerd refuses to set it
//!   without a private UTS namespace), else `spec.hostname` or the pod name
//!   (63 chars max), or the FQDN with `setHostnameAsFQDN`;
//! - log directory `<podLogsDir>/<ns>_<name>_<uid>`;
//! - DNS per dnsPolicy ([`dns`](super::dns));
//! - port mappings from every container port (containerd maps those with a
//!   `hostPort`);
//! - labels and annotations ([`labels`](super::labels));
//! - linux: cgroup parent by QoS class (as [`CgroupNaming`](crate::cm::CgroupNaming)
//!   names it), security context, sysctls.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;

use super::config::RuntimeManagerConfig;
use super::dns::pod_dns_config;
use super::labels::{sandbox_annotations, sandbox_labels};
use super::qos::pod_qos;
use super::security_context::sandbox_security_context;
use crate::cri::v1::{LinuxPodSandboxConfig, PodSandboxConfig, PodSandboxMetadata, PortMapping, Protocol};

/// Maximum hostname length.
const HOSTNAME_MAX_LEN: usize = 63;
/// Maximum FQDN length for `setHostnameAsFQDN`.
const FQDN_MAX_LEN: usize = 64;

/// A pod whose sandbox config cannot be built (`ConfigPodSandboxError` /
/// `CreatePodSandboxError`); not retryable until the spec changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SandboxConfigError {
    /// `spec.hostname` is not a DNS-1123 label.
    #[error("pod Hostname {0:?} is not a valid DNS label")]
    InvalidHostname(String),
    /// `spec.subdomain` is not a DNS-1123 label.
    #[error("pod Subdomain {0:?} is not a valid DNS label")]
    InvalidSubdomain(String),
    /// `spec.hostnameOverride` is not a DNS-1123 subdomain.
    #[error("pod HostnameOverride {0:?} is not a valid DNS subdomain")]
    InvalidHostnameOverride(String),
    /// The hostname is empty after truncation.
    #[error("hostname for pod {pod:?} was invalid: {hostname:?}")]
    EmptyHostname {
        /// Pod name.
        pod: String,
        /// The hostname.
        hostname: String,
    },
    /// `setHostnameAsFQDN` with an FQDN longer than 64 characters.
    #[error(
        "failed to construct FQDN from pod hostname and cluster domain, FQDN {0} is too long (64 characters is the max, {len} characters requested)",
        len = .0.len()
    )]
    FqdnTooLong(String),
}

/// `<pod_logs_dir>/<namespace>_<name>_<uid>` (upstream `BuildPodLogsDirectory`).
pub fn pod_log_directory(pod_logs_dir: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    pod_logs_dir.join(format!("{namespace}_{name}_{uid}"))
}

/// DNS-1123 label: lower-case alphanumerics and `-`, alphanumeric at both
/// ends, at most 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= HOSTNAME_MAX_LEN
        && b.iter().all(|c| alnum(c) || *c == b'-')
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
}

/// The pod's hostname and host domain (upstream `GeneratePodHostNameAndDomain`).
/// `spec.hostnameOverride` (KEP-4762, `HostnameOverride` beta) is the
/// hostname as it stands, with no domain.
pub fn pod_hostname_and_domain(pod: &Pod, cluster_domain: &str) -> Result<(String, String), SandboxConfigError> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let spec = pod.spec.as_ref();
    if let Some(h) = spec.and_then(|s| s.hostname_override.as_deref()) {
        if !crate::config::validate::is_dns1123_subdomain(h) {
            return Err(SandboxConfigError::InvalidHostnameOverride(h.into()));
        }
        return Ok((truncate_hostname(&name, h.to_string())?, String::new()));
    }
    let mut hostname = name.clone();
    if let Some(h) = spec.and_then(|s| s.hostname.as_deref()).filter(|h| !h.is_empty()) {
        if !is_dns1123_label(h) {
            return Err(SandboxConfigError::InvalidHostname(h.into()));
        }
        hostname = h.to_string();
    }
    let hostname = truncate_hostname(&name, hostname)?;
    let mut domain = String::new();
    if let Some(sub) = spec.and_then(|s| s.subdomain.as_deref()).filter(|s| !s.is_empty()) {
        if !is_dns1123_label(sub) {
            return Err(SandboxConfigError::InvalidSubdomain(sub.into()));
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        domain = format!("{sub}.{ns}.svc.{cluster_domain}");
    }
    Ok((hostname, domain))
}

/// Upstream `truncatePodHostnameIfNeeded`: at most 63 characters, no
/// trailing `-` or `.`.
fn truncate_hostname(name: &str, mut hostname: String) -> Result<String, SandboxConfigError> {
    if hostname.len() > HOSTNAME_MAX_LEN {
        let cut = (0..=HOSTNAME_MAX_LEN)
            .rev()
            .find(|i| hostname.is_char_boundary(*i))
            .unwrap_or(0);
        let truncated = hostname[..cut].trim_end_matches(['-', '.']).to_string();
        tracing::error!(pod = %name, truncated = %truncated, "hostname for pod was too long, truncated it");
        if truncated.is_empty() {
            return Err(SandboxConfigError::EmptyHostname {
                pod: name.to_string(),
                hostname,
            });
        }
        hostname = truncated;
    }
    Ok(hostname)
}

/// The hostname sent to the runtime: empty for hostNetwork pods.
pub fn sandbox_hostname(pod: &Pod, cluster_domain: &str) -> Result<String, SandboxConfigError> {
    let spec = pod.spec.as_ref();
    if spec.and_then(|s| s.host_network).unwrap_or(false) {
        return Ok(String::new());
    }
    let (hostname, domain) = pod_hostname_and_domain(pod, cluster_domain)?;
    if !domain.is_empty() && spec.and_then(|s| s.set_hostname_as_fqdn).unwrap_or(false) {
        let fqdn = format!("{hostname}.{domain}");
        if fqdn.len() > FQDN_MAX_LEN {
            return Err(SandboxConfigError::FqdnTooLong(fqdn));
        }
        return Ok(fqdn);
    }
    Ok(hostname)
}

fn protocol(p: Option<&str>) -> Protocol {
    match p {
        Some("UDP") => Protocol::Udp,
        Some("SCTP") => Protocol::Sctp,
        _ => Protocol::Tcp,
    }
}

/// Port mappings of every container port, skipping repeated port names within
/// a container (upstream `MakePortMappings`).
pub fn port_mappings(pod: &Pod) -> Vec<PortMapping> {
    let mut out = Vec::new();
    for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
        let mut names = HashSet::new();
        for p in c.ports.iter().flatten() {
            let host_ip = p.host_ip.clone().unwrap_or_default();
            let proto = p.protocol.as_deref().unwrap_or("TCP");
            let host_port = p.host_port.unwrap_or(0);
            let family = if host_ip.is_empty() {
                "any"
            } else if host_ip.contains(':') {
                "v6"
            } else {
                "v4"
            };
            let name = p
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| format!("{family}-{proto}-{host_ip}:{}:{host_port}", p.container_port));
            if !names.insert(name) {
                tracing::info!(container = %c.name, "port name conflicted, it is defined more than once");
                continue;
            }
            out.push(PortMapping {
                protocol: protocol(p.protocol.as_deref()) as i32,
                container_port: p.container_port,
                host_port,
                host_ip,
            });
        }
    }
    out
}

/// Sysctls of the pod, `/`-separated names converted to dots (upstream
/// `ConvertPodSysctlsVariableToDotsSeparator`).
pub fn sandbox_sysctls(pod: &Pod) -> HashMap<String, String> {
    let sysctls = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.sysctls.as_ref());
    sysctls
        .into_iter()
        .flatten()
        .map(|s| (crate::sysctl::normalize_name(&s.name), s.value.clone()))
        .collect()
}

/// The full sandbox config for `pod`'s sandbox number `attempt`.
pub fn generate_pod_sandbox_config(
    pod: &Pod,
    attempt: u32,
    cfg: &RuntimeManagerConfig,
) -> Result<PodSandboxConfig, SandboxConfigError> {
    let m = &pod.metadata;
    let (name, namespace, uid) = (
        m.name.clone().unwrap_or_default(),
        m.namespace.clone().unwrap_or_default(),
        m.uid.clone().unwrap_or_default(),
    );
    let log_directory = pod_log_directory(&cfg.pod_logs_dir, &namespace, &name, &uid);
    Ok(PodSandboxConfig {
        hostname: sandbox_hostname(pod, &cfg.cluster_domain)?,
        log_directory: log_directory.to_string_lossy().into_owned(),
        dns_config: Some(pod_dns_config(pod, cfg)),
        port_mappings: port_mappings(pod),
        labels: sandbox_labels(pod),
        annotations: sandbox_annotations(pod),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: cfg.cgroup_naming.pod_cgroup_parent(pod_qos(pod), &uid),
            security_context: Some(sandbox_security_context(pod)),
            sysctls: sandbox_sysctls(pod),
            overhead: None,
            resources: None,
        }),
        metadata: Some(PodSandboxMetadata {
            name,
            uid,
            namespace,
            attempt,
        }),
    })
}

#[cfg(test)]
#[path = "sandbox_config_tests.rs"]
mod tests;
