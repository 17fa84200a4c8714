//! Pure: upstream's v1beta1 defaulting (pkg/kubelet/apis/config/v1beta1/
//! defaults.go, `SetDefaults_KubeletConfiguration`). Non-pointer Go fields
//! treat their zero value as unset, pointer fields only `nil`; both rules
//! are kept per field.

use std::collections::BTreeMap;

use super::duration::GoDuration;
use super::gates;
use super::types::*;

/// Sets `*field` to `value` when it is `None` (a Go pointer field).
fn unset<T>(field: &mut Option<T>, value: T) {
    if field.is_none() {
        *field = Some(value);
    }
}

/// Sets `*field` to `value` when it is `None` or Go's zero value (a
/// non-pointer Go field with `omitempty`).
fn zero<T: Default + PartialEq>(field: &mut Option<T>, value: T) {
    if field.as_ref().is_none_or(|v| *v == T::default()) {
        *field = Some(value);
    }
}

/// Whether a gate is on given the config's `featureGates` (unknown names: off).
pub fn gate_enabled(kc: &KubeletConfiguration, name: &str) -> bool {
    kc.feature_gates
        .as_ref()
        .and_then(|g| g.get(name).copied())
        .unwrap_or_else(|| gates::lookup(name).is_some_and(|g| g.default))
}

/// upstream `eviction.DefaultEvictionHard` (Linux).
pub fn default_eviction_hard() -> BTreeMap<String, String> {
    [
        ("memory.available", "100Mi"),
        ("nodefs.available", "10%"),
        ("nodefs.inodesFree", "5%"),
        ("imagefs.available", "15%"),
        ("imagefs.inodesFree", "5%"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Fills every unset field with upstream's default.
///
/// ```
/// use actlet::kubelet_config_file::{KubeletConfiguration, defaults::apply};
/// let mut kc = KubeletConfiguration { max_pods: Some(0), ..Default::default() };
/// apply(&mut kc);
/// assert_eq!(kc.max_pods, Some(110)); // 0 is Go's "unset" for maxPods
/// assert_eq!(kc.read_only_port, None); // readOnlyPort has no default: 0, off
/// ```
pub fn apply(kc: &mut KubeletConfiguration) {
    let crash_loop_max = gate_enabled(kc, "KubeletCrashLoopBackOffMax");
    let ensure_pulled = gate_enabled(kc, "KubeletEnsureSecretPulledImages");
    unset(&mut kc.enable_server, true);
    zero(&mut kc.sync_frequency, GoDuration::secs(60));
    zero(&mut kc.file_check_frequency, GoDuration::secs(20));
    zero(&mut kc.http_check_frequency, GoDuration::secs(20));
    zero(&mut kc.address, "0.0.0.0".to_string());
    zero(&mut kc.port, 10250);
    let authn = kc.authentication.get_or_insert_with(Default::default);
    unset(&mut authn.anonymous.get_or_insert_with(Default::default).enabled, false);
    let webhook = authn.webhook.get_or_insert_with(Default::default);
    unset(&mut webhook.enabled, true);
    zero(&mut webhook.cache_ttl, GoDuration::secs(120));
    authn.x509.get_or_insert_with(Default::default);
    let authz = kc.authorization.get_or_insert_with(Default::default);
    zero(&mut authz.mode, "Webhook".to_string());
    let webhook = authz.webhook.get_or_insert_with(Default::default);
    zero(&mut webhook.cache_authorized_ttl, GoDuration::secs(300));
    zero(&mut webhook.cache_unauthorized_ttl, GoDuration::secs(30));
    unset(&mut kc.registry_pull_qps, 5);
    zero(&mut kc.registry_burst, 10);
    unset(&mut kc.event_record_qps, 50);
    zero(&mut kc.event_burst, 100);
    unset(&mut kc.enable_debugging_handlers, true);
    unset(&mut kc.healthz_port, 10248);
    zero(&mut kc.healthz_bind_address, "127.0.0.1".to_string());
    unset(&mut kc.oom_score_adj, -999);
    zero(&mut kc.streaming_connection_idle_timeout, GoDuration::secs(4 * 3600));
    if kc.node_status_report_frequency.unwrap_or_default().is_zero() {
        // backward compatibility: an explicit update frequency is also the report frequency
        let update = kc.node_status_update_frequency.unwrap_or_default();
        kc.node_status_report_frequency = Some(if update.is_zero() {
            GoDuration::secs(300)
        } else {
            update
        });
    }
    zero(&mut kc.node_status_update_frequency, GoDuration::secs(10));
    zero(&mut kc.node_lease_duration_seconds, 40);
    zero(&mut kc.image_minimum_gc_age, GoDuration::secs(120));
    unset(&mut kc.image_gc_high_threshold_percent, 85);
    unset(&mut kc.image_gc_low_threshold_percent, 80);
    zero(&mut kc.volume_stats_agg_period, GoDuration::secs(60));
    unset(&mut kc.cgroups_per_qos, true);
    zero(&mut kc.cgroup_driver, "cgroupfs".to_string());
    zero(&mut kc.cpu_manager_policy, "none".to_string());
    zero(&mut kc.cpu_manager_reconcile_period, GoDuration::secs(10));
    zero(&mut kc.memory_manager_policy, "None".to_string());
    zero(&mut kc.topology_manager_policy, "none".to_string());
    zero(&mut kc.topology_manager_scope, "container".to_string());
    zero(&mut kc.runtime_request_timeout, GoDuration::secs(120));
    zero(&mut kc.hairpin_mode, "promiscuous-bridge".to_string());
    zero(&mut kc.max_pods, 110);
    if kc.pod_pids_limit.is_none_or(|l| l < 0) {
        kc.pod_pids_limit = Some(-1);
    }
    unset(&mut kc.resolv_conf, "/etc/resolv.conf".to_string());
    unset(&mut kc.cpu_cfs_quota, true);
    unset(&mut kc.cpu_cfs_quota_period, GoDuration::millis(100));
    unset(&mut kc.node_status_max_images, 50);
    zero(&mut kc.max_open_files, 1_000_000);
    zero(&mut kc.content_type, "application/vnd.kubernetes.protobuf".to_string());
    unset(&mut kc.kube_api_qps, 50);
    zero(&mut kc.kube_api_burst, 100);
    if kc.serialize_image_pulls.is_none() {
        kc.serialize_image_pulls = Some(kc.max_parallel_image_pulls.is_none_or(|n| n < 2));
    }
    unset(&mut kc.eviction_hard, default_eviction_hard());
    zero(&mut kc.eviction_pressure_transition_period, GoDuration::secs(300));
    unset(&mut kc.merge_default_eviction_settings, false);
    if kc.merge_default_eviction_settings == Some(true) {
        // Upstream: keys not given keep their defaults instead of turning off.
        let hard = kc.eviction_hard.get_or_insert_with(BTreeMap::new);
        for (k, v) in default_eviction_hard() {
            hard.entry(k).or_insert(v);
        }
    }
    unset(&mut kc.enable_controller_attach_detach, true);
    unset(&mut kc.make_ip_tables_util_chains, true);
    unset(&mut kc.iptables_masquerade_bit, 14);
    unset(&mut kc.iptables_drop_bit, 15);
    unset(&mut kc.fail_swap_on, true);
    zero(&mut kc.container_log_max_size, "10Mi".to_string());
    unset(&mut kc.container_log_max_files, 5);
    unset(&mut kc.container_log_max_workers, 1);
    unset(&mut kc.container_log_monitor_interval, GoDuration::secs(10));
    zero(
        &mut kc.config_map_and_secret_change_detection_strategy,
        "Watch".to_string(),
    );
    unset(&mut kc.enforce_node_allocatable, vec!["pods".to_string()]);
    zero(
        &mut kc.volume_plugin_dir,
        "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/".to_string(),
    );
    let logging = kc.logging.get_or_insert_with(Default::default);
    zero(&mut logging.format, "text".to_string());
    // upstream `SetRecommendedLoggingConfiguration`: a zero flush frequency is 5s
    let zero_flush = match &logging.flush_frequency {
        None => true,
        Some(serde_json::Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(serde_json::Value::String(s)) => s.parse::<GoDuration>().is_ok_and(|d| d.is_zero()),
        Some(_) => false,
    };
    if zero_flush {
        logging.flush_frequency = Some(serde_json::Value::String("5s".into()));
    }
    let options = logging.options.get_or_insert_with(Default::default);
    for stream in [&mut options.text, &mut options.json] {
        let stream = stream.get_or_insert_with(Default::default);
        unset(&mut stream.info_buffer_size, serde_json::Value::String("0".into()));
    }
    unset(&mut logging.verbosity, 0);
    unset(&mut kc.enable_system_log_handler, true);
    unset(&mut kc.enable_profiling_handler, true);
    unset(&mut kc.enable_debug_flags_handler, true);
    unset(&mut kc.seccomp_default, false);
    unset(&mut kc.fail_cgroup_v1, false);
    unset(&mut kc.memory_throttling_factor, 0.9);
    unset(&mut kc.register_node, true);
    unset(&mut kc.local_storage_capacity_isolation, true);
    zero(
        &mut kc.container_runtime_endpoint,
        "unix:///run/containerd/containerd.sock".to_string(),
    );
    zero(&mut kc.pod_logs_dir, "/var/log/pods".to_string());
    zero(&mut kc.memory_reservation_policy, "None".to_string());
    if crash_loop_max {
        let c = kc.crash_loop_back_off.get_or_insert_with(Default::default);
        unset(&mut c.max_container_restart_period, GoDuration::secs(300));
    }
    if ensure_pulled {
        zero(
            &mut kc.image_pull_credentials_verification_policy,
            "NeverVerifyPreloadedImages".to_string(),
        );
    }
    unset(&mut kc.pod_housekeeping_period, GoDuration::secs(2));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_gets_upstream_defaults() {
        let mut kc = KubeletConfiguration::default();
        apply(&mut kc);
        assert_eq!(kc.sync_frequency, Some(GoDuration::secs(60)));
        assert_eq!(kc.port, Some(10250));
        assert_eq!(kc.read_only_port, None);
        assert_eq!(kc.healthz_port, Some(10248));
        assert_eq!(kc.oom_score_adj, Some(-999));
        assert_eq!(kc.max_open_files, Some(1_000_000));
        assert_eq!(kc.node_status_report_frequency, Some(GoDuration::secs(300)));
        assert_eq!(kc.authorization.as_ref().unwrap().mode.as_deref(), Some("Webhook"));
        let authn = kc.authentication.as_ref().unwrap();
        assert_eq!(authn.anonymous.as_ref().unwrap().enabled, Some(false));
        assert_eq!(authn.webhook.as_ref().unwrap().enabled, Some(true));
        assert_eq!(kc.eviction_hard.as_ref().unwrap()["memory.available"], "100Mi");
        assert_eq!(
            kc.crash_loop_back_off.unwrap().max_container_restart_period,
            Some(GoDuration::secs(300))
        );
        assert_eq!(kc.serialize_image_pulls, Some(true));
    }

    #[test]
    fn pointer_fields_keep_an_explicit_zero_value_fields_do_not() {
        let mut kc = KubeletConfiguration {
            healthz_port: Some(0),
            kube_api_qps: Some(0),
            kube_api_burst: Some(0),
            node_status_update_frequency: Some(GoDuration::secs(4)),
            max_parallel_image_pulls: Some(5),
            ..Default::default()
        };
        apply(&mut kc);
        assert_eq!(kc.healthz_port, Some(0), "pointer: 0 disables");
        assert_eq!(kc.kube_api_qps, Some(0));
        assert_eq!(kc.kube_api_burst, Some(100), "value field: 0 is unset");
        assert_eq!(kc.node_status_report_frequency, Some(GoDuration::secs(4)));
        assert_eq!(kc.serialize_image_pulls, Some(false));
    }

    #[test]
    fn gate_dependent_defaults_follow_feature_gates() {
        let mut kc = KubeletConfiguration {
            feature_gates: Some(BTreeMap::from([("KubeletCrashLoopBackOffMax".to_string(), false)])),
            ..Default::default()
        };
        apply(&mut kc);
        assert!(kc.crash_loop_back_off.is_none());
    }
}
