//! Pure: the flags ↔ `KubeletConfiguration` mapping. Flags explicitly given
//! on the command line override the config sources (upstream
//! `kubeletConfigFlagPrecedence`); afterwards the effective configuration is
//! written back into the flag struct the rest of actlet reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Taint;

use super::Origin;
use super::duration::GoDuration;
use super::types::{KubeletConfiguration, LoggingConfiguration};
use crate::cli::KubeletFlags;

/// The clap ids of the flags given on the command line.
///
/// ```
/// use clap::{CommandFactory, FromArgMatches};
/// let m = actlet::cli::Cli::command().try_get_matches_from(["actlet", "--max-pods=5"]).unwrap();
/// let set = actlet::kubelet_config_file::flags::explicit_flags(&m);
/// assert!(set.contains("max_pods") && !set.contains("sync_frequency"));
/// ```
pub fn explicit_flags(matches: &clap::ArgMatches) -> BTreeSet<String> {
    matches
        .ids()
        .filter(|id| matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.as_str().to_string())
        .collect()
}

fn pairs(map: &BTreeMap<String, String>) -> Vec<String> {
    map.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

fn map_of(values: &[String]) -> BTreeMap<String, String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn taint_flag(t: &Taint) -> String {
    match t.value.as_deref() {
        Some(v) if !v.is_empty() => format!("{}={v}:{}", t.key, t.effect),
        _ => format!("{}:{}", t.key, t.effect),
    }
}

fn taint_of(s: &str) -> Taint {
    let (kv, effect) = s.rsplit_once(':').unwrap_or((s, ""));
    let (key, value) = match kv.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (kv, None),
    };
    Taint {
        key: key.to_string(),
        value,
        effect: effect.to_string(),
        ..Default::default()
    }
}

/// Writes the explicitly given flags over `kc`, recording their origin.
pub fn overlay(
    kc: &mut KubeletConfiguration,
    flags: &KubeletFlags,
    explicit: &BTreeSet<String>,
    origins: &mut BTreeMap<String, Origin>,
) {
    let mut set = |id: &str, field: &str, flag: &'static str| {
        let given = explicit.contains(id);
        if given {
            origins.insert(field.to_string(), Origin::Flag(flag));
        }
        given
    };
    let secs = GoDuration::from_std;
    if set("kube_api_qps", "kubeAPIQPS", "--kube-api-qps") {
        kc.kube_api_qps = Some(i32::try_from(flags.kube_api_qps).unwrap_or(i32::MAX));
    }
    if set("kube_api_burst", "kubeAPIBurst", "--kube-api-burst") {
        kc.kube_api_burst = Some(i32::try_from(flags.kube_api_burst).unwrap_or(i32::MAX));
    }
    if set("pod_manifest_path", "staticPodPath", "--pod-manifest-path") {
        kc.static_pod_path = flags
            .pod_manifest_path
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned());
    }
    if set("manifest_url", "staticPodURL", "--manifest-url") {
        kc.static_pod_url = flags.manifest_url.clone();
    }
    if set("manifest_url_header", "staticPodURLHeader", "--manifest-url-header") {
        let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for h in &flags.manifest_url_header {
            let (k, v) = h.split_once(':').unwrap_or((h, ""));
            headers.entry(k.to_string()).or_default().push(v.to_string());
        }
        kc.static_pod_url_header = Some(headers);
    }
    if set(
        "container_runtime_endpoint",
        "containerRuntimeEndpoint",
        "--container-runtime-endpoint",
    ) {
        kc.container_runtime_endpoint = Some(flags.container_runtime_endpoint.clone());
    }
    if set(
        "runtime_request_timeout",
        "runtimeRequestTimeout",
        "--runtime-request-timeout",
    ) {
        kc.runtime_request_timeout = Some(secs(flags.runtime_request_timeout));
    }
    if set("sync_frequency", "syncFrequency", "--sync-frequency") {
        kc.sync_frequency = Some(secs(flags.sync_frequency));
    }
    if set("file_check_frequency", "fileCheckFrequency", "--file-check-frequency") {
        kc.file_check_frequency = Some(secs(flags.file_check_frequency));
    }
    if set("http_check_frequency", "httpCheckFrequency", "--http-check-frequency") {
        kc.http_check_frequency = Some(secs(flags.http_check_frequency));
    }
    if set("max_pods", "maxPods", "--max-pods") {
        kc.max_pods = Some(i32::try_from(flags.max_pods).unwrap_or(i32::MAX));
    }
    if set("read_only_port", "readOnlyPort", "--read-only-port") {
        kc.read_only_port = Some(i32::from(flags.read_only_port));
    }
    if set("healthz_port", "healthzPort", "--healthz-port") {
        kc.healthz_port = Some(i32::from(flags.healthz_port));
    }
    if set("healthz_bind_address", "healthzBindAddress", "--healthz-bind-address") {
        kc.healthz_bind_address = Some(flags.healthz_bind_address.to_string());
    }
    if set("address", "address", "--address") {
        kc.address = Some(flags.address.to_string());
    }
    if set("register_with_taints", "registerWithTaints", "--register-with-taints") {
        let list: Vec<&str> = flags.register_with_taints.iter().flat_map(|v| v.split(',')).collect();
        kc.register_with_taints = Some(list.into_iter().filter(|s| !s.is_empty()).map(taint_of).collect());
    }
    if set("kube_reserved", "kubeReserved", "--kube-reserved") {
        kc.kube_reserved = Some(map_of(&flags.kube_reserved));
    }
    if set("system_reserved", "systemReserved", "--system-reserved") {
        kc.system_reserved = Some(map_of(&flags.system_reserved));
    }
    if set("cgroups_per_qos", "cgroupsPerQOS", "--cgroups-per-qos") {
        kc.cgroups_per_qos = Some(flags.cgroups_per_qos);
    }
    if set("cgroup_root", "cgroupRoot", "--cgroup-root") {
        kc.cgroup_root = Some(flags.cgroup_root.clone());
    }
    if set("cgroup_driver", "cgroupDriver", "--cgroup-driver") {
        kc.cgroup_driver = Some(flags.cgroup_driver.clone());
    }
    let thresholds = |v: &str, sep| crate::eviction::thresholds::flag_map(v, sep).unwrap_or_default();
    if set("eviction_hard", "evictionHard", "--eviction-hard") {
        kc.eviction_hard = Some(thresholds(&flags.eviction_hard, '<'));
    }
    if set("eviction_soft", "evictionSoft", "--eviction-soft") {
        kc.eviction_soft = Some(thresholds(&flags.eviction_soft, '<'));
    }
    if set(
        "eviction_soft_grace_period",
        "evictionSoftGracePeriod",
        "--eviction-soft-grace-period",
    ) {
        kc.eviction_soft_grace_period = Some(thresholds(&flags.eviction_soft_grace_period, '='));
    }
    if set(
        "eviction_minimum_reclaim",
        "evictionMinimumReclaim",
        "--eviction-minimum-reclaim",
    ) {
        kc.eviction_minimum_reclaim = Some(thresholds(&flags.eviction_minimum_reclaim, '='));
    }
    if set(
        "eviction_pressure_transition_period",
        "evictionPressureTransitionPeriod",
        "--eviction-pressure-transition-period",
    ) {
        kc.eviction_pressure_transition_period = Some(secs(flags.eviction_pressure_transition_period));
    }
    if set(
        "eviction_max_pod_grace_period",
        "evictionMaxPodGracePeriod",
        "--eviction-max-pod-grace-period",
    ) {
        kc.eviction_max_pod_grace_period = Some(i32::try_from(flags.eviction_max_pod_grace_period).unwrap_or(i32::MAX));
    }
    if set("pod_max_pids", "podPidsLimit", "--pod-max-pids") {
        kc.pod_pids_limit = Some(flags.pod_max_pids);
    }
    if set(
        "enforce_node_allocatable",
        "enforceNodeAllocatable",
        "--enforce-node-allocatable",
    ) {
        kc.enforce_node_allocatable = Some(flags.enforce_node_allocatable.clone());
    }
    if set(
        "container_log_max_size",
        "containerLogMaxSize",
        "--container-log-max-size",
    ) {
        kc.container_log_max_size = Some(flags.container_log_max_size.clone());
    }
    if set(
        "container_log_max_files",
        "containerLogMaxFiles",
        "--container-log-max-files",
    ) {
        kc.container_log_max_files = Some(i32::try_from(flags.container_log_max_files).unwrap_or(i32::MAX));
    }
    if set(
        "allowed_unsafe_sysctls",
        "allowedUnsafeSysctls",
        "--allowed-unsafe-sysctls",
    ) {
        kc.allowed_unsafe_sysctls = Some(flags.allowed_unsafe_sysctls.clone());
    }
    if set(
        "node_status_update_frequency",
        "nodeStatusUpdateFrequency",
        "--node-status-update-frequency",
    ) {
        kc.node_status_update_frequency = Some(secs(flags.node_status_update_frequency));
    }
    if set(
        "serialize_image_pulls",
        "serializeImagePulls",
        "--serialize-image-pulls",
    ) {
        kc.serialize_image_pulls = Some(flags.serialize_image_pulls);
    }
    if set(
        "max_parallel_image_pulls",
        "maxParallelImagePulls",
        "--max-parallel-image-pulls",
    ) {
        kc.max_parallel_image_pulls = flags.max_parallel_image_pulls;
    }
    if set("register_node", "registerNode", "--register-node") {
        kc.register_node = Some(flags.register_node);
    }
    if set("verbosity", "logging.verbosity", "--v") {
        kc.logging.get_or_insert_with(LoggingConfiguration::default).verbosity = Some(u32::from(flags.verbosity));
    }
    if set("runonce", "runOnce", "--runonce") {
        kc.run_once = Some(flags.runonce);
    }
    if set("max_open_files", "maxOpenFiles", "--max-open-files") {
        kc.max_open_files = Some(flags.max_open_files);
    }
    if set("oom_score_adj", "oomScoreAdj", "--oom-score-adj") {
        kc.oom_score_adj = Some(flags.oom_score_adj);
    }
    if set("cluster_dns", "clusterDNS", "--cluster-dns") {
        kc.cluster_dns = Some(flags.cluster_dns.clone());
    }
    if set("cluster_domain", "clusterDomain", "--cluster-domain") {
        kc.cluster_domain = Some(flags.cluster_domain.clone());
    }
    if set("port", "port", "--port") {
        kc.port = Some(i32::from(flags.port));
    }
    let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
    if set("tls_cert_file", "tlsCertFile", "--tls-cert-file") {
        kc.tls_cert_file = path(&flags.tls_cert_file);
    }
    if set("tls_private_key_file", "tlsPrivateKeyFile", "--tls-private-key-file") {
        kc.tls_private_key_file = path(&flags.tls_private_key_file);
    }
    if set("rotate_certificates", "rotateCertificates", "--rotate-certificates") {
        kc.rotate_certificates = Some(flags.rotate_certificates);
    }
    if set(
        "rotate_server_certificates",
        "serverTLSBootstrap",
        "--rotate-server-certificates",
    ) {
        kc.server_tls_bootstrap = Some(flags.rotate_server_certificates);
    }
    if set("tls_min_version", "tlsMinVersion", "--tls-min-version") {
        kc.tls_min_version = flags.tls_min_version.clone();
    }
    if set("tls_cipher_suites", "tlsCipherSuites", "--tls-cipher-suites") {
        kc.tls_cipher_suites = Some(flags.tls_cipher_suites.clone());
    }
    if set("client_ca_file", "authentication.x509.clientCAFile", "--client-ca-file") {
        let authn = kc.authentication.get_or_insert_with(Default::default);
        authn.x509.get_or_insert_with(Default::default).client_ca_file = path(&flags.client_ca_file);
    }
    if set("anonymous_auth", "authentication.anonymous.enabled", "--anonymous-auth") {
        let authn = kc.authentication.get_or_insert_with(Default::default);
        authn.anonymous.get_or_insert_with(Default::default).enabled = Some(flags.anonymous_auth);
    }
    if set(
        "authentication_token_webhook",
        "authentication.webhook.enabled",
        "--authentication-token-webhook",
    ) {
        let authn = kc.authentication.get_or_insert_with(Default::default);
        authn.webhook.get_or_insert_with(Default::default).enabled = Some(flags.authentication_token_webhook);
    }
    if set(
        "authentication_token_webhook_cache_ttl",
        "authentication.webhook.cacheTTL",
        "--authentication-token-webhook-cache-ttl",
    ) {
        let authn = kc.authentication.get_or_insert_with(Default::default);
        authn.webhook.get_or_insert_with(Default::default).cache_ttl =
            Some(secs(flags.authentication_token_webhook_cache_ttl));
    }
    if set("authorization_mode", "authorization.mode", "--authorization-mode") {
        kc.authorization.get_or_insert_with(Default::default).mode = Some(flags.authorization_mode.clone());
    }
    if set(
        "authorization_webhook_cache_authorized_ttl",
        "authorization.webhook.cacheAuthorizedTTL",
        "--authorization-webhook-cache-authorized-ttl",
    ) {
        let authz = kc.authorization.get_or_insert_with(Default::default);
        authz.webhook.get_or_insert_with(Default::default).cache_authorized_ttl =
            Some(secs(flags.authorization_webhook_cache_authorized_ttl));
    }
    if set(
        "authorization_webhook_cache_unauthorized_ttl",
        "authorization.webhook.cacheUnauthorizedTTL",
        "--authorization-webhook-cache-unauthorized-ttl",
    ) {
        let authz = kc.authorization.get_or_insert_with(Default::default);
        authz
            .webhook
            .get_or_insert_with(Default::default)
            .cache_unauthorized_ttl = Some(secs(flags.authorization_webhook_cache_unauthorized_ttl));
    }
}

/// The flag struct for the effective configuration (`kc` merged, defaulted
/// and validated): the config's values replace the flags' defaults.
pub fn write_back(kc: &KubeletConfiguration, flags: &KubeletFlags) -> KubeletFlags {
    let mut f = flags.clone();
    let dur = |v: Option<GoDuration>, old: std::time::Duration| v.and_then(GoDuration::to_std).unwrap_or(old);
    let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    f.kube_api_qps = kc.kube_api_qps.map_or(f.kube_api_qps, |v| v.max(0) as u32);
    f.kube_api_burst = kc.kube_api_burst.map_or(f.kube_api_burst, |v| v.max(0) as u32);
    f.pod_manifest_path = non_empty(&kc.static_pod_path).map(PathBuf::from);
    f.manifest_url = non_empty(&kc.static_pod_url);
    f.manifest_url_header = kc
        .static_pod_url_header
        .iter()
        .flatten()
        .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{k}:{v}")))
        .collect();
    if let Some(e) = non_empty(&kc.container_runtime_endpoint) {
        f.container_runtime_endpoint = e;
    }
    f.runtime_request_timeout = dur(kc.runtime_request_timeout, f.runtime_request_timeout);
    f.sync_frequency = dur(kc.sync_frequency, f.sync_frequency);
    f.file_check_frequency = dur(kc.file_check_frequency, f.file_check_frequency);
    f.http_check_frequency = dur(kc.http_check_frequency, f.http_check_frequency);
    f.node_status_update_frequency = dur(kc.node_status_update_frequency, f.node_status_update_frequency);
    f.max_pods = kc.max_pods.map_or(f.max_pods, i64::from);
    f.read_only_port = kc
        .read_only_port
        .map_or(f.read_only_port, |p| u16::try_from(p).unwrap_or(0));
    f.healthz_port = kc
        .healthz_port
        .map_or(f.healthz_port, |p| u16::try_from(p).unwrap_or(0));
    if let Some(ip) = kc.healthz_bind_address.as_deref().and_then(|a| a.parse().ok()) {
        f.healthz_bind_address = ip;
    }
    if let Some(ip) = kc.address.as_deref().and_then(|a| a.parse().ok()) {
        f.address = ip;
    }
    f.register_with_taints = kc.register_with_taints.iter().flatten().map(taint_flag).collect();
    f.kube_reserved = kc.kube_reserved.as_ref().map(pairs).unwrap_or_default();
    f.system_reserved = kc.system_reserved.as_ref().map(pairs).unwrap_or_default();
    f.register_node = kc.register_node.unwrap_or(f.register_node);
    f.serialize_image_pulls = kc.serialize_image_pulls.unwrap_or(f.serialize_image_pulls);
    f.max_parallel_image_pulls = kc.max_parallel_image_pulls.or(f.max_parallel_image_pulls);
    f.cgroups_per_qos = kc.cgroups_per_qos.unwrap_or(f.cgroups_per_qos);
    if let Some(root) = non_empty(&kc.cgroup_root) {
        f.cgroup_root = root;
    }
    if let Some(driver) = non_empty(&kc.cgroup_driver) {
        f.cgroup_driver = driver;
    }
    f.pod_max_pids = kc.pod_pids_limit.unwrap_or(f.pod_max_pids);
    let joined = |m: &Option<BTreeMap<String, String>>, sep: char| {
        m.iter()
            .flatten()
            .map(|(k, v)| format!("{k}{sep}{v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    f.eviction_hard = joined(&kc.eviction_hard, '<');
    f.eviction_soft = joined(&kc.eviction_soft, '<');
    f.eviction_soft_grace_period = joined(&kc.eviction_soft_grace_period, '=');
    f.eviction_minimum_reclaim = joined(&kc.eviction_minimum_reclaim, '=');
    f.eviction_pressure_transition_period = dur(
        kc.eviction_pressure_transition_period,
        f.eviction_pressure_transition_period,
    );
    f.eviction_max_pod_grace_period = kc
        .eviction_max_pod_grace_period
        .map_or(f.eviction_max_pod_grace_period, i64::from);
    if let Some(levels) = &kc.enforce_node_allocatable {
        f.enforce_node_allocatable = levels.clone();
    }
    if let Some(size) = kc.container_log_max_size.as_ref().filter(|s| !s.is_empty()) {
        f.container_log_max_size = size.clone();
    }
    f.container_log_max_files = kc.container_log_max_files.map_or(f.container_log_max_files, i64::from);
    if let Some(sysctls) = &kc.allowed_unsafe_sysctls {
        f.allowed_unsafe_sysctls = sysctls.clone();
    }

    if let Some(v) = kc.logging.as_ref().and_then(|l| l.verbosity) {
        f.verbosity = u8::try_from(v).unwrap_or(u8::MAX);
    }
    f.runonce = kc.run_once.unwrap_or(f.runonce);
    f.max_open_files = kc.max_open_files.unwrap_or(f.max_open_files);
    f.oom_score_adj = kc.oom_score_adj.unwrap_or(f.oom_score_adj);
    f.cluster_dns = kc.cluster_dns.clone().unwrap_or(f.cluster_dns);
    f.cluster_domain = kc.cluster_domain.clone().unwrap_or(f.cluster_domain);
    f.port = kc.port.map_or(f.port, |p| u16::try_from(p).unwrap_or(0));
    if let Some(p) = non_empty(&kc.tls_cert_file) {
        f.tls_cert_file = Some(p.into());
    }
    if let Some(p) = non_empty(&kc.tls_private_key_file) {
        f.tls_private_key_file = Some(p.into());
    }
    f.rotate_server_certificates = kc.server_tls_bootstrap.unwrap_or(f.rotate_server_certificates);
    f.rotate_certificates = kc.rotate_certificates.unwrap_or(f.rotate_certificates);
    f.tls_min_version = non_empty(&kc.tls_min_version).or(f.tls_min_version);
    f.tls_cipher_suites = kc.tls_cipher_suites.clone().unwrap_or(f.tls_cipher_suites);
    // The v1beta1 defaults of authentication/authorization (anonymous off,
    // webhooks on) apply to configuration files only; without one the
    // flags keep their legacy defaults, as upstream.
    if flags.config.is_some() || flags.config_dir.is_some() {
        if let Some(authn) = &kc.authentication {
            if let Some(ca) = authn.x509.as_ref().and_then(|x| non_empty(&x.client_ca_file)) {
                f.client_ca_file = Some(ca.into());
            }
            if let Some(on) = authn.anonymous.as_ref().and_then(|a| a.enabled) {
                f.anonymous_auth = on;
            }
            if let Some(w) = &authn.webhook {
                f.authentication_token_webhook = w.enabled.unwrap_or(f.authentication_token_webhook);
                f.authentication_token_webhook_cache_ttl = dur(w.cache_ttl, f.authentication_token_webhook_cache_ttl);
            }
        }
        if let Some(authz) = &kc.authorization {
            if let Some(mode) = non_empty(&authz.mode) {
                f.authorization_mode = mode;
            }
            if let Some(w) = &authz.webhook {
                f.authorization_webhook_cache_authorized_ttl =
                    dur(w.cache_authorized_ttl, f.authorization_webhook_cache_authorized_ttl);
                f.authorization_webhook_cache_unauthorized_ttl =
                    dur(w.cache_unauthorized_ttl, f.authorization_webhook_cache_unauthorized_ttl);
            }
        }
    }
    f.feature_gates = kc
        .feature_gates
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    f
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::cli::Cli;
    use crate::kubelet_config_file::defaults;

    fn parse(args: &[&str]) -> (KubeletFlags, BTreeSet<String>) {
        let m = Cli::command()
            .try_get_matches_from(std::iter::once("actlet").chain(args.iter().copied()))
            .unwrap();
        (Cli::from_arg_matches(&m).unwrap().flags, explicit_flags(&m))
    }

    /// Without a config file the defaults plus the (non-)given flags must
    /// give back exactly what the flags alone say: every mapped flag's
    /// default is upstream's v1beta1 default.
    #[test]
    fn flag_defaults_equal_v1beta1_defaults() {
        let (flags, explicit) = parse(&[]);
        assert!(explicit.is_empty());
        let mut kc = KubeletConfiguration::default();
        overlay(&mut kc, &flags, &explicit, &mut BTreeMap::new());
        defaults::apply(&mut kc);
        let back = write_back(&kc, &flags);
        assert_eq!(format!("{back:?}"), format!("{flags:?}"));
    }

    #[test]
    fn flags_round_trip_through_the_configuration() {
        let (flags, explicit) = parse(&[
            "--max-pods=7",
            "--register-with-taints=a=b:NoSchedule,c:NoExecute",
            "--kube-reserved=cpu=100m,memory=1Gi",
            "--manifest-url=http://x/pods",
            "--manifest-url-header=Authorization:Bearer t",
            "--v=3",
            "--oom-score-adj",
            "-500",
        ]);
        let mut origins = BTreeMap::new();
        let mut kc = KubeletConfiguration::default();
        overlay(&mut kc, &flags, &explicit, &mut origins);
        assert_eq!(origins["maxPods"], Origin::Flag("--max-pods"));
        assert_eq!(kc.register_with_taints.as_ref().unwrap()[1].key, "c");
        defaults::apply(&mut kc);
        let back = write_back(&kc, &flags);
        assert_eq!(back.max_pods, 7);
        assert_eq!(back.register_with_taints, vec!["a=b:NoSchedule", "c:NoExecute"]);
        assert_eq!(back.kube_reserved, vec!["cpu=100m", "memory=1Gi"]);
        assert_eq!(back.manifest_url_header, vec!["Authorization:Bearer t"]);
        assert_eq!(back.verbosity, 3);
        assert_eq!(back.oom_score_adj, -500);
    }
}
