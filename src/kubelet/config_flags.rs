//! [`KubeletConfig::from_flags`]: the settings the command line asks for,
//! validated as upstream validates them (errors name the flag).

use std::net::SocketAddr;

use super::config::{ConfigError, KubeletConfig};
use crate::cli::KubeletFlags;
use crate::cluster::node::flags::{parse_node_labels, parse_reserved, parse_taints};

impl KubeletConfig {
    /// The configuration the flags ask for. `hostname` is the machine's host
    /// name (used when `--hostname-override` is not given).
    ///
    /// ```
    /// use clap::Parser;
    /// use actlet::KubeletConfig;
    /// let cli = actlet::cli::Cli::try_parse_from(["actlet", "--pod-manifest-path", "/etc/kubernetes/manifests"]).unwrap();
    /// let config = KubeletConfig::from_flags(&cli.flags, "Worker-1").unwrap();
    /// assert_eq!(config.node_name, "worker-1"); // the host name, lowercased
    /// assert_eq!(config.static_pod_path.as_deref(), Some(std::path::Path::new("/etc/kubernetes/manifests")));
    /// ```
    pub fn from_flags(flags: &KubeletFlags, hostname: &str) -> Result<Self, ConfigError> {
        let node_name = flags
            .hostname_override
            .clone()
            .unwrap_or_else(|| hostname.to_string())
            .trim()
            .to_lowercase();
        if node_name.is_empty() || !crate::config::validate::is_dns1123_subdomain(&node_name) {
            return Err(ConfigError {
                field: "--hostname-override",
                reason: format!("node name {node_name:?} is not a valid DNS-1123 subdomain"),
            });
        }
        if let Some(url) = &flags.manifest_url
            && !url.starts_with("http://")
        {
            return Err(ConfigError {
                field: "--manifest-url",
                reason: format!("{url:?}: only http:// URLs are supported"),
            });
        }
        for h in &flags.manifest_url_header {
            if !h.contains(':') {
                return Err(ConfigError {
                    field: "--manifest-url-header",
                    reason: format!("{h:?} is not Key:Value"),
                });
            }
        }
        if flags.sync_frequency.is_zero() {
            return Err(ConfigError {
                field: "--sync-frequency",
                reason: "must be greater than zero".into(),
            });
        }
        let mut c = Self::new(node_name);
        c.node_ip = flags.node_ip.clone();
        c.static_pod_path = flags.pod_manifest_path.clone();
        c.static_pod_url = flags.manifest_url.clone();
        c.static_pod_url_headers = flags.manifest_url_header.clone();
        c.file_check_frequency = flags.file_check_frequency;
        c.http_check_frequency = flags.http_check_frequency;
        c.sync.sync_frequency = flags.sync_frequency;
        c.root_dir = flags.root_dir.clone();
        if flags.max_pods < 1 {
            return Err(ConfigError {
                field: "--max-pods",
                reason: format!("{} must be at least 1", flags.max_pods),
            });
        }
        c.max_pods = flags.max_pods;
        let invalid = |field: &'static str| move |reason: String| ConfigError { field, reason };
        c.node_labels = parse_node_labels(&flags.node_labels).map_err(invalid("--node-labels"))?;
        c.register_with_taints =
            parse_taints(&flags.register_with_taints).map_err(invalid("--register-with-taints"))?;
        c.kube_reserved = parse_reserved(&flags.kube_reserved).map_err(invalid("--kube-reserved"))?;
        c.system_reserved = parse_reserved(&flags.system_reserved).map_err(invalid("--system-reserved"))?;
        c.cgroups = cgroup_settings(flags)?;
        c.eviction = eviction_settings(flags, c.cgroups.enforce_node_allocatable.iter().any(|l| l == "pods"))?;
        c.container_log_policy.max_size = crate::logrotate::LogRotatePolicy::parse_size(&flags.container_log_max_size)
            .map_err(invalid("--container-log-max-size"))?;
        if flags.container_log_max_files < 2 {
            return Err(ConfigError {
                field: "--container-log-max-files",
                reason: format!("{} must be greater than 1", flags.container_log_max_files),
            });
        }
        c.container_log_policy.max_files = flags.container_log_max_files as usize;
        match flags.max_parallel_image_pulls {
            Some(n) if n < 1 => {
                return Err(ConfigError {
                    field: "--max-parallel-image-pulls",
                    reason: format!("{n} must be a positive number"),
                });
            }
            Some(n) if n > 1 && flags.serialize_image_pulls => {
                return Err(ConfigError {
                    field: "--max-parallel-image-pulls",
                    reason: "cannot be larger than 1 unless --serialize-image-pulls is false".into(),
                });
            }
            _ => {}
        }
        c.serialize_image_pulls = flags.serialize_image_pulls;
        c.max_parallel_image_pulls = flags.max_parallel_image_pulls.and_then(|n| usize::try_from(n).ok());
        c.sysctls = crate::sysctl::Allowlist::new(&flags.allowed_unsafe_sysctls, crate::sysctl::host_kernel())
            .map_err(|e| invalid("--allowed-unsafe-sysctls")(e.to_string()))?;
        if flags.node_status_update_frequency.is_zero() {
            return Err(ConfigError {
                field: "--node-status-update-frequency",
                reason: "must be greater than zero".into(),
            });
        }
        c.node_status_update_frequency = flags.node_status_update_frequency;
        c.register_node = flags.register_node;
        c.read_only_addr = (flags.read_only_port != 0).then(|| SocketAddr::new(flags.address, flags.read_only_port));
        c.healthz_addr =
            (flags.healthz_port != 0).then(|| SocketAddr::new(flags.healthz_bind_address, flags.healthz_port));
        c.server_addr = (flags.port != 0).then(|| SocketAddr::new(flags.address, flags.port));
        c.pod_worker_threads = flags.pod_worker_threads;
        c.max_concurrent_pod_syncs = flags.max_concurrent_pod_syncs;
        c.cluster_dns = flags.cluster_dns.iter().filter(|s| !s.is_empty()).cloned().collect();
        c.cluster_domain = flags.cluster_domain.trim_end_matches('.').to_string();
        if flags.tls_cert_file.is_some() != flags.tls_private_key_file.is_some() {
            return Err(ConfigError {
                field: "--tls-cert-file",
                reason: "--tls-cert-file and --tls-private-key-file go together".into(),
            });
        }
        c.tls_cert_file = flags.tls_cert_file.clone();
        c.tls_private_key_file = flags.tls_private_key_file.clone();
        c.server_tls_bootstrap = flags.rotate_server_certificates;
        c.cert_dir = flags.cert_dir.clone().unwrap_or_else(|| flags.root_dir.join("pki"));
        c.tls_min_version = flags.tls_min_version.clone();
        c.tls_cipher_suites = flags.tls_cipher_suites.clone();
        c.authentication.x509.client_ca_file = flags.client_ca_file.clone();
        c.authentication.anonymous.enabled = flags.anonymous_auth;
        c.authentication.webhook.enabled = flags.authentication_token_webhook;
        c.authentication.webhook.cache_ttl = flags.authentication_token_webhook_cache_ttl;
        c.authorization.mode = flags
            .authorization_mode
            .parse()
            .map_err(invalid("--authorization-mode"))?;
        c.authorization.webhook.cache_authorized_ttl = flags.authorization_webhook_cache_authorized_ttl;
        c.authorization.webhook.cache_unauthorized_ttl = flags.authorization_webhook_cache_unauthorized_ttl;
        Ok(c)
    }
}

/// Upstream's `enforceNodeAllocatable` levels.
const ENFORCE_LEVELS: &[&str] = &[
    "pods",
    "system-reserved",
    "kube-reserved",
    "system-reserved-compressible",
    "kube-reserved-compressible",
    "none",
];

/// The eviction settings of the flags (upstream `ParseThresholdConfig`).
fn eviction_settings(flags: &KubeletFlags, enforce_pods: bool) -> Result<crate::eviction::EvictionConfig, ConfigError> {
    use crate::eviction::thresholds::{ThresholdSettings, flag_map, parse_thresholds};
    let map = |field: &'static str, v: &str, sep: char| {
        flag_map(v, sep).map_err(|e| ConfigError {
            field,
            reason: format!("{e:?} is not of the form signal{sep}value"),
        })
    };
    let settings = ThresholdSettings {
        hard: map("--eviction-hard", &flags.eviction_hard, '<')?,
        soft: map("--eviction-soft", &flags.eviction_soft, '<')?,
        soft_grace_period: map("--eviction-soft-grace-period", &flags.eviction_soft_grace_period, '=')?,
        minimum_reclaim: map("--eviction-minimum-reclaim", &flags.eviction_minimum_reclaim, '=')?,
    };
    let field = if flags.eviction_soft.is_empty() {
        "--eviction-hard"
    } else {
        "--eviction-hard/--eviction-soft"
    };
    let thresholds = parse_thresholds(&settings, enforce_pods).map_err(|e| ConfigError {
        field,
        reason: e.to_string(),
    })?;
    if flags.eviction_max_pod_grace_period < 0 {
        return Err(ConfigError {
            field: "--eviction-max-pod-grace-period",
            reason: format!("{} must not be negative", flags.eviction_max_pod_grace_period),
        });
    }
    Ok(crate::eviction::EvictionConfig {
        thresholds,
        pressure_transition_period: flags.eviction_pressure_transition_period,
        max_pod_grace_period: flags.eviction_max_pod_grace_period,
        ..Default::default()
    })
}

/// The container manager settings of the flags, validated as upstream.
fn cgroup_settings(flags: &KubeletFlags) -> Result<crate::cm::CmConfig, ConfigError> {
    use crate::cm::{CgroupDriver, CgroupNaming, CmConfig, names::CgroupName};
    let invalid = |field: &'static str| move |reason: String| ConfigError { field, reason };
    let driver = CgroupDriver::parse(&flags.cgroup_driver).map_err(invalid("--cgroup-driver"))?;
    if !flags.cgroup_root.starts_with('/') {
        return Err(ConfigError {
            field: "--cgroup-root",
            reason: format!("{:?} must be an absolute path", flags.cgroup_root),
        });
    }
    let levels: Vec<String> = flags
        .enforce_node_allocatable
        .iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    for l in &levels {
        if !ENFORCE_LEVELS.contains(&l.as_str()) {
            return Err(ConfigError {
                field: "--enforce-node-allocatable",
                reason: format!("invalid option {l:?}, valid options are {ENFORCE_LEVELS:?}"),
            });
        }
    }
    if levels.iter().any(|l| l == "none") && levels.len() > 1 {
        return Err(ConfigError {
            field: "--enforce-node-allocatable",
            reason: "\"none\" cannot be combined with other options".into(),
        });
    }
    let levels: Vec<String> = levels.into_iter().filter(|l| l != "none").collect();
    if !flags.cgroups_per_qos && !levels.is_empty() {
        return Err(ConfigError {
            field: "--enforce-node-allocatable",
            reason: "is not supported unless --cgroups-per-qos is true".into(),
        });
    }
    if levels.iter().any(|l| l != "pods") {
        tracing::warn!(levels = ?levels, "enforceNodeAllocatable: only \"pods\" is enforced; systemReservedCgroup/kubeReservedCgroup are not implemented");
    }
    Ok(CmConfig {
        naming: CgroupNaming {
            root: CgroupName::parse(&flags.cgroup_root, driver),
            cgroups_per_qos: flags.cgroups_per_qos,
            driver,
        },
        pod_pids_limit: flags.pod_max_pids,
        enforce_node_allocatable: levels,
        ..CmConfig::default()
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use std::time::Duration;

    use super::*;
    use crate::cli::Cli;

    fn flags(args: &[&str]) -> KubeletFlags {
        Cli::try_parse_from(std::iter::once("actlet").chain(args.iter().copied()))
            .unwrap()
            .flags
    }

    #[test]
    fn node_name_is_the_lowercased_override_or_hostname() {
        assert_eq!(
            KubeletConfig::from_flags(&flags(&[]), "Host-A").unwrap().node_name,
            "host-a"
        );
        let c = KubeletConfig::from_flags(&flags(&["--hostname-override=n1"]), "h").unwrap();
        assert_eq!(c.node_name, "n1");
    }

    #[test]
    fn servers_follow_ports_zero_disables() {
        let c = KubeletConfig::from_flags(&flags(&["--read-only-port=10255", "--healthz-port=0"]), "h").unwrap();
        assert_eq!(c.read_only_addr.unwrap().port(), 10255);
        assert!(c.healthz_addr.is_none());
    }

    #[test]
    fn pod_worker_threads_default_to_the_main_arbiter() {
        assert_eq!(
            KubeletConfig::from_flags(&flags(&[]), "h").unwrap().pod_worker_threads,
            0
        );
        let c = KubeletConfig::from_flags(&flags(&["--pod-worker-threads=2"]), "h").unwrap();
        assert_eq!(c.pod_worker_threads, 2);
    }

    #[test]
    fn max_concurrent_pod_syncs_defaults_and_zero_is_unbounded() {
        let c = KubeletConfig::from_flags(&flags(&[]), "h").unwrap();
        assert_eq!(
            c.max_concurrent_pod_syncs,
            crate::pod_workers::DEFAULT_MAX_CONCURRENT_POD_SYNCS
        );
        let c = KubeletConfig::from_flags(&flags(&["--max-concurrent-pod-syncs=0"]), "h").unwrap();
        assert_eq!(c.max_concurrent_pod_syncs, 0);
        let c = KubeletConfig::from_flags(&flags(&["--max-concurrent-pod-syncs", "64"]), "h").unwrap();
        assert_eq!(c.max_concurrent_pod_syncs, 64);
    }

    #[test]
    fn bad_values_name_their_flag() {
        let e = KubeletConfig::from_flags(&flags(&["--manifest-url=https://x"]), "h").unwrap_err();
        assert_eq!(e.field, "--manifest-url");
        let e = KubeletConfig::from_flags(&flags(&["--manifest-url-header=novalue"]), "h").unwrap_err();
        assert_eq!(e.field, "--manifest-url-header");
        let e = KubeletConfig::from_flags(&flags(&["--hostname-override=bad_name!"]), "h").unwrap_err();
        assert!(e.to_string().contains("--hostname-override"), "{e}");
        for (arg, field) in [
            ("--node-labels=kubernetes.io/role=x", "--node-labels"),
            ("--register-with-taints=a=b:Never", "--register-with-taints"),
            ("--kube-reserved=cpu=many", "--kube-reserved"),
            ("--system-reserved=disk=1", "--system-reserved"),
            ("--node-status-update-frequency=0s", "--node-status-update-frequency"),
            ("--cgroup-driver=docker", "--cgroup-driver"),
            ("--cgroup-root=relative", "--cgroup-root"),
            ("--enforce-node-allocatable=pods,bogus", "--enforce-node-allocatable"),
            ("--enforce-node-allocatable=none,pods", "--enforce-node-allocatable"),
        ] {
            let e = KubeletConfig::from_flags(&flags(&[arg]), "h").unwrap_err();
            assert_eq!(e.field, field, "{arg}");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn node_flags_reach_the_config() {
        let c = KubeletConfig::from_flags(
            &flags(&[
                "--node-labels=pool=a",
                "--register-with-taints=dedicated=gpu:NoSchedule",
                "--kube-reserved=cpu=100m,memory=100Mi",
                "--system-reserved=cpu=200m",
                "--node-status-update-frequency=4s",
                "--register-node=false",
            ]),
            "h",
        )
        .unwrap();
        assert_eq!(c.node_labels.get("pool").map(String::as_str), Some("a"));
        assert_eq!(c.register_with_taints[0].key, "dedicated");
        assert_eq!(c.kube_reserved.plus(c.system_reserved).cpu_milli, 300);
        assert_eq!(c.kube_reserved.memory_bytes, 100 << 20);
        assert_eq!(c.node_status_update_frequency, Duration::from_secs(4));
        assert_eq!(c.node_status_report_frequency, Duration::from_secs(300));
        assert!(!c.register_node);
        let d = KubeletConfig::from_flags(&flags(&[]), "h").unwrap();
        assert!(d.register_node);
        assert_eq!(d.node_status_update_frequency, Duration::from_secs(10));
    }

    #[test]
    fn cgroup_flags_reach_the_container_manager() {
        let d = KubeletConfig::from_flags(&flags(&[]), "h").unwrap().cgroups;
        assert_eq!(d, crate::cm::CmConfig::default());
        let c = KubeletConfig::from_flags(
            &flags(&[
                "--cgroup-driver=systemd",
                "--cgroup-root=/actlet.slice",
                "--pod-max-pids=512",
                "--enforce-node-allocatable=none",
            ]),
            "h",
        )
        .unwrap()
        .cgroups;
        assert_eq!(c.naming.driver, crate::cm::CgroupDriver::Systemd);
        assert_eq!(c.naming.root.0, ["actlet"]);
        assert_eq!(c.pod_pids_limit, 512);
        assert!(c.enforce_node_allocatable.is_empty());
        let e = KubeletConfig::from_flags(&flags(&["--cgroups-per-qos=false"]), "h").unwrap_err();
        assert_eq!(e.field, "--enforce-node-allocatable", "pods needs cgroupsPerQOS");
        let c = KubeletConfig::from_flags(&flags(&["--cgroups-per-qos=false", "--enforce-node-allocatable="]), "h")
            .unwrap()
            .cgroups;
        assert!(!c.naming.cgroups_per_qos);
    }
}
