//! Pure: `kubelet.config.k8s.io/v1beta1` `KubeletConfiguration`, every
//! upstream field (staging/src/k8s.io/kubelet/config/v1beta1/types.go, v1.36),
//! camelCase as upstream spells it. Every field is optional: `None` is "not
//! written", which [`defaults`](super::defaults) fills like upstream.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use serde::{Deserialize, Serialize};

use super::duration::GoDuration;

/// The API group/version of the file.
pub const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
/// The kind of the file.
pub const KIND: &str = "KubeletConfiguration";

/// `KubeletConfiguration` (v1beta1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct KubeletConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_server: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_pod_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_logs_dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_frequency: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_check_frequency: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_check_frequency: Option<GoDuration>,
    #[serde(rename = "staticPodURL", skip_serializing_if = "Option::is_none")]
    pub static_pod_url: Option<String>,
    #[serde(rename = "staticPodURLHeader", skip_serializing_if = "Option::is_none")]
    pub static_pod_url_header: Option<BTreeMap<String, Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_private_key_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cipher_suites: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_curve_preferences: Option<Vec<i32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_min_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotate_certificates: Option<bool>,
    #[serde(rename = "serverTLSBootstrap", skip_serializing_if = "Option::is_none")]
    pub server_tls_bootstrap: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authentication: Option<KubeletAuthentication>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization: Option<KubeletAuthorization>,
    #[serde(rename = "registryPullQPS", skip_serializing_if = "Option::is_none")]
    pub registry_pull_qps: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_burst: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_credentials_verification_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preloaded_images_verification_allowlist: Option<Vec<String>>,
    #[serde(rename = "eventRecordQPS", skip_serializing_if = "Option::is_none")]
    pub event_record_qps: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_burst: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_debugging_handlers: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_contention_profiling: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthz_port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthz_bind_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_score_adj: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_domain: Option<String>,
    #[serde(rename = "clusterDNS", skip_serializing_if = "Option::is_none")]
    pub cluster_dns: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming_connection_idle_timeout: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_status_update_frequency: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_status_report_frequency: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_lease_duration_seconds: Option<i32>,
    #[serde(rename = "imageMinimumGCAge", skip_serializing_if = "Option::is_none")]
    pub image_minimum_gc_age: Option<GoDuration>,
    #[serde(rename = "imageMaximumGCAge", skip_serializing_if = "Option::is_none")]
    pub image_maximum_gc_age: Option<GoDuration>,
    #[serde(rename = "imageGCHighThresholdPercent", skip_serializing_if = "Option::is_none")]
    pub image_gc_high_threshold_percent: Option<i32>,
    #[serde(rename = "imageGCLowThresholdPercent", skip_serializing_if = "Option::is_none")]
    pub image_gc_low_threshold_percent: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_stats_agg_period: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_cgroups: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_cgroups: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_root: Option<String>,
    #[serde(rename = "cgroupsPerQOS", skip_serializing_if = "Option::is_none")]
    pub cgroups_per_qos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_driver: Option<String>,
    #[serde(rename = "cpuManagerPolicy", skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy: Option<String>,
    #[serde(rename = "singleProcessOOMKill", skip_serializing_if = "Option::is_none")]
    pub single_process_oom_kill: Option<bool>,
    #[serde(rename = "cpuManagerPolicyOptions", skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy_options: Option<BTreeMap<String, String>>,
    #[serde(rename = "cpuManagerReconcilePeriod", skip_serializing_if = "Option::is_none")]
    pub cpu_manager_reconcile_period: Option<GoDuration>,
    #[serde(rename = "draManagerReconcilePeriod", skip_serializing_if = "Option::is_none")]
    pub dra_manager_reconcile_period: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_manager_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_manager_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_manager_scope: Option<String>,
    #[serde(rename = "topologyManagerPolicyOptions", skip_serializing_if = "Option::is_none")]
    pub topology_manager_policy_options: Option<BTreeMap<String, String>>,
    #[serde(rename = "qosReserved", skip_serializing_if = "Option::is_none")]
    pub qos_reserved: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_request_timeout: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hairpin_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pods: Option<i32>,
    #[serde(rename = "podCIDR", skip_serializing_if = "Option::is_none")]
    pub pod_cidr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_pids_limit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolv_conf: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_once: Option<bool>,
    #[serde(rename = "cpuCFSQuota", skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota: Option<bool>,
    #[serde(rename = "cpuCFSQuotaPeriod", skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota_period: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_status_max_images: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_files: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(rename = "kubeAPIQPS", skip_serializing_if = "Option::is_none")]
    pub kube_api_qps: Option<i32>,
    #[serde(rename = "kubeAPIBurst", skip_serializing_if = "Option::is_none")]
    pub kube_api_burst: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serialize_image_pulls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_parallel_image_pulls: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_hard: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_soft: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_soft_grace_period: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_pressure_transition_period: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_max_pod_grace_period: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_minimum_reclaim: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_default_eviction_settings: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods_per_core: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_controller_attach_detach: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protect_kernel_defaults: Option<bool>,
    #[serde(rename = "makeIPTablesUtilChains", skip_serializing_if = "Option::is_none")]
    pub make_ip_tables_util_chains: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iptables_masquerade_bit: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iptables_drop_bit: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<BTreeMap<String, bool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_swap_on: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_swap: Option<MemorySwapConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_files: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_workers: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_monitor_interval: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map_and_secret_change_detection_strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_reserved: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_reserved: Option<BTreeMap<String, String>>,
    #[serde(rename = "reservedSystemCPUs", skip_serializing_if = "Option::is_none")]
    pub reserved_system_cpus: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_hidden_metrics_for_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_reserved_cgroup: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_reserved_cgroup: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforce_node_allocatable: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_unsafe_sysctls: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_plugin_dir: Option<String>,
    #[serde(rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_memcg_notification: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_system_log_handler: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_system_log_query: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_period: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_period_critical_pods: Option<GoDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_grace_period_by_pod_priority: Option<Vec<ShutdownGracePeriodByPodPriority>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crash_loop_back_off: Option<CrashLoopBackOffConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_memory: Option<Vec<MemoryReservation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_profiling_handler: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_debug_flags_handler: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_default: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_throttling_factor: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_reservation_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register_with_taints: Option<Vec<Taint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register_node: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracing: Option<TracingConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_storage_capacity_isolation: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_runtime_endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_service_endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_cgroup_v1: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_namespaces: Option<UserNamespaces>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_housekeeping_period: Option<GoDuration>,
}

/// `authentication`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct KubeletAuthentication {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x509: Option<KubeletX509Authentication>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<KubeletWebhookAuthentication>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<KubeletAnonymousAuthentication>,
}

/// `authentication.x509`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct KubeletX509Authentication {
    #[serde(rename = "clientCAFile", skip_serializing_if = "Option::is_none")]
    pub client_ca_file: Option<String>,
}

/// `authentication.webhook`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct KubeletWebhookAuthentication {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(rename = "cacheTTL", skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<GoDuration>,
}

/// `authentication.anonymous`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct KubeletAnonymousAuthentication {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// `authorization`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct KubeletAuthorization {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<KubeletWebhookAuthorization>,
}

/// `authorization.webhook`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct KubeletWebhookAuthorization {
    #[serde(rename = "cacheAuthorizedTTL", skip_serializing_if = "Option::is_none")]
    pub cache_authorized_ttl: Option<GoDuration>,
    #[serde(rename = "cacheUnauthorizedTTL", skip_serializing_if = "Option::is_none")]
    pub cache_unauthorized_ttl: Option<GoDuration>,
}

/// `memorySwap`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct MemorySwapConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap_behavior: Option<String>,
}

/// `crashLoopBackOff`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct CrashLoopBackOffConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_container_restart_period: Option<GoDuration>,
}

/// `shutdownGracePeriodByPodPriority[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct ShutdownGracePeriodByPodPriority {
    pub priority: i32,
    pub shutdown_grace_period_seconds: i64,
}

/// `reservedMemory[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct MemoryReservation {
    pub numa_node: i32,
    pub limits: BTreeMap<String, serde_json::Value>,
}

/// `userNamespaces`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct UserNamespaces {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ids_per_pod: Option<i64>,
}

/// `tracing` (component-base tracing/api/v1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct TracingConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_rate_per_million: Option<i32>,
}

/// `logging` (component-base logs/api/v1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct LoggingConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A duration string or nanoseconds (upstream `TimeOrMetaDuration`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_frequency: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmodule: Option<Vec<VModuleItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<FormatOptions>,
}

/// `logging.vmodule[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct VModuleItem {
    pub file_pattern: String,
    pub verbosity: u32,
}

/// `logging.options`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct FormatOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<StreamOptions>,
}

/// `logging.options.text` / `logging.options.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct StreamOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_stream: Option<bool>,
    /// A quantity (`0`, `64Ki`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info_buffer_size: Option<serde_json::Value>,
}
