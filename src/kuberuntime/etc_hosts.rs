//! The kubelet-managed `/etc/hosts` (upstream `makeHostsMount`,
//! `managedHostsFileContent` and `nodeHostsFileContent` in
//! `kubelet_pods.go`): written to `<root>/pods/<uid>/etc-hosts` when a
//! container starts (the pod IPs are known then) and mounted at
//! `/etc/hosts` in every container that does not mount that path itself.
//! Pods on the host network get the node's `/etc/hosts`; every pod gets
//! its `spec.hostAliases` appended.

use std::path::Path;

use k8s_openapi::api::core::v1::{Container, HostAlias, Pod};

use crate::cri::v1;

/// Where a container's hosts file is.
pub const ETC_HOSTS_PATH: &str = "/etc/hosts";
/// First line of a pod-network pod's file.
pub const MANAGED_HOSTS_HEADER: &str = "# Kubernetes-managed hosts file.\n";
/// First line of a host-network pod's file.
pub const MANAGED_HOSTS_HEADER_HOST_NETWORK: &str = "# Kubernetes-managed hosts file (host network).\n";
/// File name under the pod directory.
pub const FILE_NAME: &str = "etc-hosts";

/// Whether the kubelet mounts its hosts file into `container` (upstream:
/// the pod has IPs, or is on the host network, and the container mounts
/// nothing at `/etc/hosts` itself).
pub fn should_mount(container: &Container, pod_ips: &[String], host_network: bool) -> bool {
    (!pod_ips.is_empty() || host_network)
        && !container
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.mount_path == ETC_HOSTS_PATH)
}

/// The `hostAliases` block: a blank line, a header, one line per alias.
pub fn alias_entries(aliases: &[HostAlias]) -> String {
    if aliases.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n# Entries added by HostAliases.\n");
    for a in aliases {
        out.push_str(&format!(
            "{}\t{}\n",
            a.ip,
            a.hostnames.clone().unwrap_or_default().join("\t")
        ));
    }
    out
}

/// A pod-network pod's file: localhost lines, each pod IP → hostname (with
/// its FQDN first when the pod has a host domain), then the aliases.
///
/// ```
/// use actlet::kuberuntime::etc_hosts::managed_content;
/// let hosts = managed_content(&["10.0.0.5".into()], "web", "", &[]);
/// assert!(hosts.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"));
/// assert!(hosts.ends_with("10.0.0.5\tweb\n"));
/// ```
pub fn managed_content(pod_ips: &[String], hostname: &str, domain: &str, aliases: &[HostAlias]) -> String {
    let mut out = String::from(MANAGED_HOSTS_HEADER);
    out.push_str("127.0.0.1\tlocalhost\n");
    out.push_str("::1\tlocalhost ip6-localhost ip6-loopback\n");
    out.push_str("fe00::0\tip6-localnet\n");
    out.push_str("fe00::0\tip6-mcastprefix\n");
    out.push_str("fe00::1\tip6-allnodes\n");
    out.push_str("fe00::2\tip6-allrouters\n");
    for ip in pod_ips {
        if domain.is_empty() {
            out.push_str(&format!("{ip}\t{hostname}\n"));
        } else {
            out.push_str(&format!("{ip}\t{hostname}.{domain}\t{hostname}\n"));
        }
    }
    out.push_str(&alias_entries(aliases));
    out
}

/// A host-network pod's file: the node's hosts file, then the aliases.
pub fn host_network_content(node_hosts: &str, aliases: &[HostAlias]) -> String {
    format!(
        "{MANAGED_HOSTS_HEADER_HOST_NETWORK}{node_hosts}{}",
        alias_entries(aliases)
    )
}

/// What a pod's hosts file holds, decided without IO: the managed file,
/// or (host network) the node's file, read when it is written, then the
/// aliases.
#[derive(Clone, Debug, PartialEq)]
pub enum EtcHosts {
    /// The whole content ([`managed_content`]).
    Managed(String),
    /// The node's `/etc/hosts` followed by these aliases
    /// ([`host_network_content`]).
    HostNetwork(Vec<HostAlias>),
}

impl EtcHosts {
    /// The file for `pod` (`hostname`/`domain` as
    /// [`pod_hostname_and_domain`](super::sandbox_config::pod_hostname_and_domain)).
    pub fn for_pod(pod: &Pod, pod_ips: &[String], hostname: &str, domain: &str) -> Self {
        let spec = pod.spec.as_ref();
        let aliases = spec.and_then(|s| s.host_aliases.as_deref()).unwrap_or_default();
        if spec.and_then(|s| s.host_network).unwrap_or(false) {
            Self::HostNetwork(aliases.to_vec())
        } else {
            Self::Managed(managed_content(pod_ips, hostname, domain, aliases))
        }
    }
}

/// Writes the pod's hosts file into `pod_dir` (mode 0644) and returns its
/// mount at `/etc/hosts`. It blocks: call it from the blocking pool (the
/// kubelet does, with the container's other files:
/// [`super::container_files`]).
///
/// # Errors
/// The node's `/etc/hosts` cannot be read (host network) or the file cannot be written.
pub fn write_blocking(pod_dir: &Path, hosts: &EtcHosts) -> std::io::Result<v1::Mount> {
    use std::os::unix::fs::PermissionsExt;
    let content = match hosts {
        EtcHosts::Managed(content) => content.clone(),
        EtcHosts::HostNetwork(aliases) => host_network_content(&std::fs::read_to_string(ETC_HOSTS_PATH)?, aliases),
    };
    let path = pod_dir.join(FILE_NAME);
    std::fs::create_dir_all(pod_dir)?;
    std::fs::write(&path, content)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    Ok(v1::Mount {
        container_path: ETC_HOSTS_PATH.to_string(),
        host_path: path.to_string_lossy().into_owned(),
        readonly: false,
        selinux_relabel: true,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::VolumeMount;

    fn alias(ip: &str, names: &[&str]) -> HostAlias {
        HostAlias {
            ip: ip.into(),
            hostnames: Some(names.iter().map(|s| s.to_string()).collect()),
        }
    }

    const LOCALHOST: &str = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";

    #[test]
    fn pod_network_content_as_upstream() {
        let ips = ["10.0.0.5".to_string(), "fd00::5".to_string()];
        assert_eq!(
            managed_content(&ips, "web", "", &[]),
            format!("{LOCALHOST}10.0.0.5\tweb\nfd00::5\tweb\n")
        );
        let aliases = [alias("1.2.3.4", &["foo", "bar"]), alias("5.6.7.8", &["baz"])];
        assert_eq!(
            managed_content(&ips[..1], "web", "sub.ns.svc.cluster.local", &aliases),
            format!(
                "{LOCALHOST}10.0.0.5\tweb.sub.ns.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n1.2.3.4\tfoo\tbar\n5.6.7.8\tbaz\n"
            )
        );
    }

    #[test]
    fn host_network_content_is_the_nodes_file_plus_aliases() {
        assert_eq!(
            host_network_content("127.0.0.1 localhost\n", &[alias("1.1.1.1", &["one"])]),
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n1.1.1.1\tone\n"
        );
    }

    #[test]
    fn not_mounted_without_ips_or_over_a_containers_own_mount() {
        let mut c = Container::default();
        let ips = ["10.0.0.5".to_string()];
        assert!(should_mount(&c, &ips, false));
        assert!(!should_mount(&c, &[], false));
        assert!(should_mount(&c, &[], true));
        c.volume_mounts = Some(vec![VolumeMount {
            mount_path: "/etc/hosts".into(),
            name: "h".into(),
            ..Default::default()
        }]);
        assert!(!should_mount(&c, &ips, false));
    }
}
