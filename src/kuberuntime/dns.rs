//! A pod's DNS settings (upstream `network/dns` `GetPodDNS`), passed to the
//! runtime in `PodSandboxConfig.dns_config`.
//!
//! | dnsPolicy (default ClusterFirst) | base |
//! |---|---|
//! | `ClusterFirst`, not hostNetwork | cluster: `clusterDNS` servers, search `<ns>.svc.<domain> svc.<domain> <domain>` + host searches, `ndots:5` |
//! | `ClusterFirst`, hostNetwork | Default |
//! | `ClusterFirstWithHostNet` | cluster |
//! | `Default` | the host's resolv.conf (or `127.0.0.1`, search `.` when `resolvConf` is `""`) |
//! | `None` | empty |
//!
//! A cluster policy without `clusterDNS` falls back to Default (upstream logs a
//! `MissingClusterDNS` event). `spec.dnsConfig` is then merged in, duplicates
//! dropped, options by name; finally at most 3 nameservers and 32 search
//! paths (≤ 2048 chars, each ≤ 253) are kept.

use k8s_openapi::api::core::v1::{Pod, PodDNSConfig};

use super::config::RuntimeManagerConfig;
use crate::cri::v1::DnsConfig;

/// Upstream `validation.MaxDNSNameservers`.
pub const MAX_DNS_NAMESERVERS: usize = 3;
/// Upstream `MaxDNSSearchPathsExpanded`.
pub const MAX_DNS_SEARCH_PATHS: usize = 32;
/// Upstream `MaxDNSSearchListCharsExpanded`.
pub const MAX_DNS_SEARCH_LIST_CHARS: usize = 2048;
const MAX_SEARCH_PATH_LEN: usize = 253;

/// The host's resolver settings, as read from its resolv.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostDns {
    /// `nameserver` lines, in order.
    pub servers: Vec<String>,
    /// The last `search` line (trailing dots dropped, `.` ignored).
    pub searches: Vec<String>,
    /// `options`, later ones replacing earlier ones with the same name.
    pub options: Vec<String>,
}

impl HostDns {
    /// Parses resolv.conf contents (upstream `parseResolvConf`).
    pub fn parse(contents: &str) -> Self {
        let mut dns = HostDns::default();
        for line in contents.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["nameserver", server, ..] => dns.servers.push((*server).to_string()),
                ["search", domains @ ..] => {
                    dns.searches = domains
                        .iter()
                        .filter(|d| **d != ".")
                        .map(|d| d.trim_end_matches('.').to_string())
                        .collect();
                }
                ["options", options @ ..] => {
                    for opt in options {
                        set_option(&mut dns.options, opt);
                    }
                }
                _ => {}
            }
        }
        dns
    }
}

/// Sets `opt` (`name` or `name:value`), replacing an option of the same name.
fn set_option(options: &mut Vec<String>, opt: &str) {
    let name = opt.split(':').next().unwrap_or(opt);
    match options.iter_mut().find(|o| o.split(':').next() == Some(name)) {
        Some(existing) => *existing = opt.to_string(),
        None => options.push(opt.to_string()),
    }
}

/// Which base a pod's DNS starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodDnsType {
    /// Cluster DNS.
    Cluster,
    /// The host's resolver.
    Host,
    /// Nothing (`dnsPolicy: None`).
    None,
}

fn is_host_network(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false)
}

/// Upstream `getPodDNSType`; unknown policies are treated as ClusterFirst.
pub fn pod_dns_type(pod: &Pod) -> PodDnsType {
    match pod
        .spec
        .as_ref()
        .and_then(|s| s.dns_policy.as_deref())
        .unwrap_or("ClusterFirst")
    {
        "None" => PodDnsType::None,
        "ClusterFirstWithHostNet" => PodDnsType::Cluster,
        "ClusterFirst" if !is_host_network(pod) => PodDnsType::Cluster,
        "ClusterFirst" | "Default" => PodDnsType::Host,
        other => {
            tracing::error!(policy = other, "invalid dnsPolicy, falling back to ClusterFirst");
            PodDnsType::Cluster
        }
    }
}

fn push_unique(list: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// The pod's DNS config (upstream `GetPodDNS`).
pub fn pod_dns_config(pod: &Pod, cfg: &RuntimeManagerConfig) -> DnsConfig {
    let host = cfg.host_dns.clone().unwrap_or_default();
    let mut dns = DnsConfig {
        servers: host.servers.clone(),
        searches: host.searches.clone(),
        options: host.options,
    };
    let mut kind = pod_dns_type(pod);
    if kind == PodDnsType::Cluster && cfg.cluster_dns.is_empty() {
        tracing::debug!(
            "kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. \
             Falling back to \"Default\" policy."
        );
        kind = PodDnsType::Host;
    }
    match kind {
        PodDnsType::None => dns = DnsConfig::default(),
        PodDnsType::Cluster => {
            dns.servers = cfg.cluster_dns.clone();
            if !cfg.cluster_domain.is_empty() {
                let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                let d = &cfg.cluster_domain;
                let mut searches = Vec::new();
                push_unique(&mut searches, [format!("{ns}.svc.{d}"), format!("svc.{d}"), d.clone()]);
                push_unique(&mut searches, host.searches);
                dns.searches = searches;
            }
            dns.options = vec!["ndots:5".to_string()];
        }
        PodDnsType::Host if cfg.host_dns.is_none() => {
            dns.servers = cfg
                .node_ips
                .iter()
                .map(|ip| if ip.contains(':') { "::1" } else { "127.0.0.1" }.to_string())
                .collect();
            if dns.servers.is_empty() {
                dns.servers.push("127.0.0.1".into());
            }
            dns.searches = vec![".".into()];
        }
        PodDnsType::Host => {}
    }
    if let Some(extra) = pod.spec.as_ref().and_then(|s| s.dns_config.as_ref()) {
        append_dns_config(&mut dns, extra);
    }
    fit_limits(dns)
}

/// Upstream `appendDNSConfig`: merges `spec.dnsConfig` into `dns`.
fn append_dns_config(dns: &mut DnsConfig, extra: &PodDNSConfig) {
    let mut servers = Vec::new();
    push_unique(
        &mut servers,
        dns.servers.drain(..).chain(extra.nameservers.iter().flatten().cloned()),
    );
    dns.servers = servers;
    let mut searches = Vec::new();
    push_unique(
        &mut searches,
        dns.searches.drain(..).chain(extra.searches.iter().flatten().cloned()),
    );
    dns.searches = searches;
    for opt in extra.options.iter().flatten() {
        let name = opt.name.clone().unwrap_or_default();
        match opt.value.as_deref() {
            Some(v) if !v.is_empty() => set_option(&mut dns.options, &format!("{name}:{v}")),
            _ => set_option(&mut dns.options, &name),
        }
    }
}

/// Upstream `formDNSConfigFitsLimits`.
fn fit_limits(mut dns: DnsConfig) -> DnsConfig {
    if dns.servers.len() > MAX_DNS_NAMESERVERS {
        tracing::warn!(servers = ?dns.servers, "nameserver limits exceeded, some were omitted");
        dns.servers.truncate(MAX_DNS_NAMESERVERS);
    }
    dns.searches.truncate(MAX_DNS_SEARCH_PATHS);
    dns.searches.retain(|s| s.len() <= MAX_SEARCH_PATH_LEN);
    let mut line_len = dns.searches.join(" ").len();
    while line_len > MAX_DNS_SEARCH_LIST_CHARS {
        match dns.searches.pop() {
            Some(last) => line_len = line_len.saturating_sub(last.len() + 1),
            None => break,
        }
    }
    dns
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
