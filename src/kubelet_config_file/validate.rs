//! Pure: upstream's `ValidateKubeletConfiguration` checks (messages as
//! upstream: `invalid configuration: maxPods (--max-pods) -1 must not be a
//! negative number`), plus the limits of what actlet implements, on the
//! merged and defaulted configuration. Each error names its field so the
//! caller can say which file (or flag) set it.

use std::net::IpAddr;

use super::defaults::gate_enabled;
use super::duration::GoDuration;
use super::types::KubeletConfiguration;

/// One invalid field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// The top-level field (for the origin lookup), e.g. `maxPods`.
    pub field: &'static str,
    /// Upstream's message.
    pub message: String,
}

/// All problems of `kc` (empty: valid).
///
/// ```
/// use actlet::kubelet_config_file::{KubeletConfiguration, defaults, validate::validate};
/// let mut kc = KubeletConfiguration { max_pods: Some(-1), ..Default::default() };
/// defaults::apply(&mut kc);
/// let errs = validate(&kc);
/// assert_eq!(errs[0].field, "maxPods");
/// assert_eq!(errs[0].message, "invalid configuration: maxPods (--max-pods) -1 must not be a negative number");
/// ```
pub fn validate(kc: &KubeletConfiguration) -> Vec<Invalid> {
    let mut out = vec![];
    let mut bad = |field: &'static str, message: String| {
        out.push(Invalid {
            field,
            message: format!("invalid configuration: {message}"),
        })
    };
    for (field, message) in eviction_problems(kc) {
        bad(field, message);
    }
    let i = |v: Option<i32>| v.unwrap_or(0);
    let d = |v: Option<GoDuration>| v.unwrap_or_default();
    if i(kc.node_lease_duration_seconds) <= 0 {
        bad(
            "nodeLeaseDurationSeconds",
            "nodeLeaseDurationSeconds must be greater than 0".into(),
        );
    }
    if kc.system_cgroups.as_deref().is_some_and(|s| !s.is_empty()) && kc.cgroup_root.as_deref().unwrap_or("").is_empty()
    {
        bad(
            "systemCgroups",
            "systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified".into(),
        );
    }
    for (field, flag, v) in [
        ("eventBurst", "--event-burst", i(kc.event_burst)),
        ("eventRecordQPS", "--event-qps", i(kc.event_record_qps)),
        ("kubeAPIBurst", "--kube-api-burst", i(kc.kube_api_burst)),
        ("kubeAPIQPS", "--kube-api-qps", i(kc.kube_api_qps)),
        ("maxPods", "--max-pods", i(kc.max_pods)),
        ("podsPerCore", "--pods-per-core", i(kc.pods_per_core)),
        ("registryBurst", "--registry-burst", i(kc.registry_burst)),
        ("registryPullQPS", "--registry-qps", i(kc.registry_pull_qps)),
    ] {
        if v < 0 {
            bad(field, format!("{field} ({flag}) {v} must not be a negative number"));
        }
    }
    let max_open = kc.max_open_files.unwrap_or(0);
    if max_open < 0 {
        bad(
            "maxOpenFiles",
            format!("maxOpenFiles (--max-open-files) {max_open} must not be a negative number"),
        );
    }
    let healthz = i(kc.healthz_port);
    if healthz != 0 && !(1..=65535).contains(&healthz) {
        bad(
            "healthzPort",
            format!("healthzPort (--healthz-port) {healthz} must be between 1 and 65535, inclusive"),
        );
    }
    let port = i(kc.port);
    if !(1..=65535).contains(&port) {
        bad(
            "port",
            format!("port (--port) {port} must be between 1 and 65535, inclusive"),
        );
    }
    let ro = i(kc.read_only_port);
    if ro != 0 && !(1..=65535).contains(&ro) {
        bad(
            "readOnlyPort",
            format!("readOnlyPort (--read-only-port) {ro} must be between 0 and 65535, inclusive"),
        );
    }
    let period = d(kc.cpu_cfs_quota_period);
    if !gate_enabled(kc, "CustomCPUCFSQuotaPeriod") && period != GoDuration::millis(100) {
        bad(
            "cpuCFSQuotaPeriod",
            format!(
                "cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {period} requires feature gate CustomCPUCFSQuotaPeriod"
            ),
        );
    }
    let (high, low) = (
        i(kc.image_gc_high_threshold_percent),
        i(kc.image_gc_low_threshold_percent),
    );
    for (field, flag, v) in [
        ("imageGCHighThresholdPercent", "--image-gc-high-threshold", high),
        ("imageGCLowThresholdPercent", "--image-gc-low-threshold", low),
    ] {
        if !(0..=100).contains(&v) {
            bad(
                field,
                format!("{field} ({flag}) {v} must be between 0 and 100, inclusive"),
            );
        }
    }
    if low >= high {
        bad(
            "imageGCLowThresholdPercent",
            format!(
                "imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) {high}"
            ),
        );
    }
    let (min_age, max_age) = (d(kc.image_minimum_gc_age), d(kc.image_maximum_gc_age));
    if min_age.0 < 0 {
        bad(
            "imageMinimumGCAge",
            format!("imageMinimumGCAge {min_age} must not be negative"),
        );
    }
    if max_age.0 < 0 {
        bad(
            "imageMaximumGCAge",
            format!("imageMaximumGCAge {max_age} must not be negative"),
        );
    }
    if max_age.0 > 0 && max_age <= min_age {
        bad(
            "imageMaximumGCAge",
            format!("imageMaximumGCAge {max_age} must be greater than imageMinimumGCAge {min_age}"),
        );
    }
    for (field, flag, v) in [
        ("iptablesDropBit", "--iptables-drop-bit", i(kc.iptables_drop_bit)),
        (
            "iptablesMasqueradeBit",
            "--iptables-masquerade-bit",
            i(kc.iptables_masquerade_bit),
        ),
    ] {
        if !(0..=31).contains(&v) {
            bad(
                field,
                format!("{field} ({flag}) {v} must be between 0 and 31, inclusive"),
            );
        }
    }
    let max_images = i(kc.node_status_max_images);
    if max_images < -1 {
        bad(
            "nodeStatusMaxImages",
            format!("nodeStatusMaxImages (--node-status-max-images) {max_images} must be -1 or greater"),
        );
    }
    let oom = i(kc.oom_score_adj);
    if !(-1000..=1000).contains(&oom) {
        bad(
            "oomScoreAdj",
            format!("oomScoreAdj (--oom-score-adj) {oom} must be between -1000 and 1000, inclusive"),
        );
    }
    if let Some(n) = kc.max_parallel_image_pulls {
        if n < 1 {
            bad(
                "maxParallelImagePulls",
                format!("maxParallelImagePulls {n} must be a positive number"),
            );
        } else if n > 1 && kc.serialize_image_pulls == Some(true) {
            bad(
                "maxParallelImagePulls",
                "maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false".into(),
            );
        }
    }
    let one_of = |v: &Option<String>, allowed: &[&str]| allowed.contains(&v.as_deref().unwrap_or(""));
    if !one_of(
        &kc.topology_manager_policy,
        &["none", "best-effort", "restricted", "single-numa-node"],
    ) {
        bad(
            "topologyManagerPolicy",
            format!(
                "topologyManagerPolicy (--topology-manager-policy) {:?} must be one of: [\"none\" \"best-effort\" \"restricted\" \"single-numa-node\"]",
                kc.topology_manager_policy.as_deref().unwrap_or("")
            ),
        );
    }
    if !one_of(&kc.topology_manager_scope, &["container", "pod"]) {
        bad(
            "topologyManagerScope",
            format!(
                "topologyManagerScope (--topology-manager-scope) {:?} must be one of: \"container\", or \"pod\"",
                kc.topology_manager_scope.as_deref().unwrap_or("")
            ),
        );
    }
    if !one_of(&kc.hairpin_mode, &["none", "hairpin-veth", "promiscuous-bridge"]) {
        bad(
            "hairpinMode",
            format!(
                "option {:?} specified for hairpinMode (--hairpin-mode). Valid options are \"none\", \"hairpin-veth\" or \"promiscuous-bridge\"",
                kc.hairpin_mode.as_deref().unwrap_or("")
            ),
        );
    }
    if !one_of(&kc.memory_reservation_policy, &["None", "TieredReservation"]) {
        bad(
            "memoryReservationPolicy",
            format!(
                "option {:?} specified for memoryReservationPolicy. Valid options are \"None\" or \"TieredReservation\"",
                kc.memory_reservation_policy.as_deref().unwrap_or("")
            ),
        );
    }
    if let Some(mode) = kc.authorization.as_ref().and_then(|a| a.mode.as_deref())
        && !["AlwaysAllow", "Webhook"].contains(&mode)
    {
        bad(
            "authorization",
            format!("authorization.mode {mode:?} must be one of \"AlwaysAllow\" or \"Webhook\""),
        );
    }
    let (grace, critical) = (d(kc.shutdown_grace_period), d(kc.shutdown_grace_period_critical_pods));
    if critical > grace {
        bad(
            "shutdownGracePeriodCriticalPods",
            format!("shutdownGracePeriodCriticalPods {critical} must be <= shutdownGracePeriod {grace}"),
        );
    }
    for (field, v) in [
        ("shutdownGracePeriod", grace),
        ("shutdownGracePeriodCriticalPods", critical),
    ] {
        if v.0 < 0 || (v.0 > 0 && v < GoDuration::secs(1)) {
            bad(field, format!("{field} {v} must be either zero or otherwise >= 1 sec"));
        }
    }
    if kc
        .shutdown_grace_period_by_pod_priority
        .as_ref()
        .is_some_and(|v| !v.is_empty())
        && (grace.0 > 0 || critical.0 > 0)
    {
        bad(
            "shutdownGracePeriodByPodPriority",
            "Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time".into(),
        );
    }
    let swap = kc
        .memory_swap
        .as_ref()
        .and_then(|m| m.swap_behavior.as_deref())
        .unwrap_or("");
    if !["", "NoSwap", "LimitedSwap"].contains(&swap) {
        bad(
            "memorySwap",
            format!("memorySwap.swapBehavior {swap:?} must be one of: \"\", \"LimitedSwap\" or \"NoSwap\""),
        );
    }
    if let Some(p) = kc
        .crash_loop_back_off
        .as_ref()
        .and_then(|c| c.max_container_restart_period)
    {
        if !gate_enabled(kc, "KubeletCrashLoopBackOffMax") {
            bad("crashLoopBackOff", "FeatureGate KubeletCrashLoopBackOffMax not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set".into());
        } else if !(GoDuration::secs(1)..=GoDuration::secs(300)).contains(&p) {
            bad(
                "crashLoopBackOff",
                format!(
                    "CrashLoopBackOff.MaxContainerRestartPeriod (got: {} seconds) must be set between 1s and 300s",
                    p.0 as f64 / 1e9
                ),
            );
        }
    }
    if let Some(f) = kc.memory_throttling_factor
        && (f <= 0.0 || f > 1.0)
    {
        bad(
            "memoryThrottlingFactor",
            format!("memoryThrottlingFactor {f} must be greater than 0 and less than or equal to 1.0"),
        );
    }
    if kc.container_runtime_endpoint.as_deref().unwrap_or("").is_empty() {
        bad(
            "containerRuntimeEndpoint",
            "the containerRuntimeEndpoint was not specified or empty".into(),
        );
    }
    if kc.enable_system_log_query == Some(true) && !gate_enabled(kc, "NodeLogQuery") {
        bad(
            "enableSystemLogQuery",
            "NodeLogQuery feature gate is required for enableSystemLogQuery".into(),
        );
    }
    if i(kc.container_log_max_workers) < 1 {
        bad(
            "containerLogMaxWorkers",
            "containerLogMaxWorkers must be greater than or equal to 1".into(),
        );
    }
    if d(kc.container_log_monitor_interval) < GoDuration::secs(3) {
        bad(
            "containerLogMonitorInterval",
            "containerLogMonitorInterval must be a positive time duration greater than or equal to 3s".into(),
        );
    }
    if i(kc.container_log_max_files) <= 1 {
        bad(
            "containerLogMaxFiles",
            "containerLogMaxFiles must be greater than 1".into(),
        );
    }
    let logs = kc.pod_logs_dir.as_deref().unwrap_or("");
    if !logs.starts_with('/') {
        bad("podLogsDir", format!("pod logs path {logs:?} must be absolute path"));
    } else if logs.split('/').skip(1).any(|c| c.is_empty() || c == "." || c == "..") && logs != "/" {
        bad("podLogsDir", format!("pod logs path {logs:?} must be normalized"));
    }
    if let Err(e) = crate::sysctl::Allowlist::new(kc.allowed_unsafe_sysctls.iter().flatten(), None) {
        bad(
            "allowedUnsafeSysctls",
            format!("allowedUnsafeSysctls (--allowed-unsafe-sysctls) {e}"),
        );
    }
    actlet_limits(kc, &mut bad);
    out
}

/// What actlet itself needs beyond upstream's checks.
fn actlet_limits(kc: &KubeletConfiguration, bad: &mut impl FnMut(&'static str, String)) {
    for (field, v) in [
        ("syncFrequency", kc.sync_frequency),
        ("fileCheckFrequency", kc.file_check_frequency),
        ("httpCheckFrequency", kc.http_check_frequency),
        ("runtimeRequestTimeout", kc.runtime_request_timeout),
        ("nodeStatusUpdateFrequency", kc.node_status_update_frequency),
        ("nodeStatusReportFrequency", kc.node_status_report_frequency),
    ] {
        if let Some(v) = v
            && v.0 <= 0
        {
            bad(field, format!("{field} {v} must be greater than zero"));
        }
    }
    if let Some(url) = kc.static_pod_url.as_deref()
        && !url.is_empty()
        && !url.starts_with("http://")
    {
        bad(
            "staticPodURL",
            format!("staticPodURL {url:?}: only http:// URLs are supported by actlet"),
        );
    }
    for (field, v) in [
        ("address", &kc.address),
        ("healthzBindAddress", &kc.healthz_bind_address),
    ] {
        if let Some(v) = v
            && v.parse::<IpAddr>().is_err()
        {
            bad(field, format!("{field} {v:?} is not an IP address"));
        }
    }
}

/// The eviction maps, parsed as the kubelet will parse them at start.
fn eviction_problems(kc: &KubeletConfiguration) -> Vec<(&'static str, String)> {
    use crate::eviction::thresholds::{ThresholdSettings, parse_thresholds};
    let m = |v: &Option<std::collections::BTreeMap<String, String>>| v.clone().unwrap_or_default();
    let checks = [
        (
            "evictionHard",
            ThresholdSettings {
                hard: m(&kc.eviction_hard),
                ..Default::default()
            },
        ),
        (
            "evictionSoft",
            ThresholdSettings {
                soft: m(&kc.eviction_soft),
                soft_grace_period: m(&kc.eviction_soft_grace_period),
                ..Default::default()
            },
        ),
        (
            "evictionMinimumReclaim",
            ThresholdSettings {
                minimum_reclaim: m(&kc.eviction_minimum_reclaim),
                ..Default::default()
            },
        ),
    ];
    let mut out: Vec<(&'static str, String)> = checks
        .into_iter()
        .filter_map(|(field, s)| {
            parse_thresholds(&s, false)
                .err()
                .map(|e| (field, format!("{field}: {e}")))
        })
        .collect();
    if kc.eviction_max_pod_grace_period.is_some_and(|v| v < 0) {
        out.push((
            "evictionMaxPodGracePeriod",
            "evictionMaxPodGracePeriod must not be negative".into(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet_config_file::defaults;

    fn errors(mut kc: KubeletConfiguration) -> Vec<Invalid> {
        defaults::apply(&mut kc);
        validate(&kc)
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(errors(KubeletConfiguration::default()), vec![]);
    }

    #[test]
    fn each_rejected_field_with_its_message() {
        let cases: Vec<(KubeletConfiguration, &str, &str)> = vec![
            (
                KubeletConfiguration {
                    max_pods: Some(-5),
                    ..Default::default()
                },
                "maxPods",
                "maxPods (--max-pods) -5 must not be a negative number",
            ),
            (
                KubeletConfiguration {
                    kube_api_qps: Some(-1),
                    ..Default::default()
                },
                "kubeAPIQPS",
                "kubeAPIQPS (--kube-api-qps) -1 must not be a negative number",
            ),
            (
                KubeletConfiguration {
                    healthz_port: Some(70000),
                    ..Default::default()
                },
                "healthzPort",
                "must be between 1 and 65535",
            ),
            (
                KubeletConfiguration {
                    read_only_port: Some(-2),
                    ..Default::default()
                },
                "readOnlyPort",
                "readOnlyPort (--read-only-port) -2",
            ),
            (
                KubeletConfiguration {
                    oom_score_adj: Some(1001),
                    ..Default::default()
                },
                "oomScoreAdj",
                "oomScoreAdj (--oom-score-adj) 1001 must be between -1000 and 1000, inclusive",
            ),
            (
                KubeletConfiguration {
                    max_open_files: Some(-1),
                    ..Default::default()
                },
                "maxOpenFiles",
                "maxOpenFiles (--max-open-files) -1",
            ),
            (
                KubeletConfiguration {
                    image_gc_low_threshold_percent: Some(90),
                    ..Default::default()
                },
                "imageGCLowThresholdPercent",
                "must be less than imageGCHighThresholdPercent",
            ),
            (
                KubeletConfiguration {
                    hairpin_mode: Some("bogus".into()),
                    ..Default::default()
                },
                "hairpinMode",
                "option \"bogus\" specified for hairpinMode",
            ),
            (
                KubeletConfiguration {
                    topology_manager_policy: Some("x".into()),
                    ..Default::default()
                },
                "topologyManagerPolicy",
                "topologyManagerPolicy (--topology-manager-policy) \"x\"",
            ),
            (
                KubeletConfiguration {
                    shutdown_grace_period: Some(GoDuration::millis(500)),
                    ..Default::default()
                },
                "shutdownGracePeriod",
                "must be either zero or otherwise >= 1 sec",
            ),
            (
                KubeletConfiguration {
                    cpu_cfs_quota_period: Some(GoDuration::millis(50)),
                    ..Default::default()
                },
                "cpuCFSQuotaPeriod",
                "requires feature gate CustomCPUCFSQuotaPeriod",
            ),
            (
                KubeletConfiguration {
                    sync_frequency: Some(GoDuration::secs(-1)),
                    ..Default::default()
                },
                "syncFrequency",
                "syncFrequency -1s must be greater than zero",
            ),
            (
                KubeletConfiguration {
                    static_pod_url: Some("https://x/pods".into()),
                    ..Default::default()
                },
                "staticPodURL",
                "only http:// URLs",
            ),
            (
                KubeletConfiguration {
                    address: Some("nowhere".into()),
                    ..Default::default()
                },
                "address",
                "address \"nowhere\" is not an IP address",
            ),
            (
                KubeletConfiguration {
                    pod_logs_dir: Some("logs".into()),
                    ..Default::default()
                },
                "podLogsDir",
                "must be absolute path",
            ),
            (
                KubeletConfiguration {
                    container_log_max_files: Some(1),
                    ..Default::default()
                },
                "containerLogMaxFiles",
                "containerLogMaxFiles must be greater than 1",
            ),
            (
                KubeletConfiguration {
                    memory_throttling_factor: Some(1.5),
                    ..Default::default()
                },
                "memoryThrottlingFactor",
                "memoryThrottlingFactor 1.5",
            ),
        ];
        for (kc, field, needle) in cases {
            let errs = errors(kc);
            assert_eq!(errs.len(), 1, "{field}: {errs:?}");
            assert_eq!(errs[0].field, field);
            assert!(
                errs[0].message.starts_with("invalid configuration: "),
                "{}",
                errs[0].message
            );
            assert!(errs[0].message.contains(needle), "{field}: {}", errs[0].message);
        }
    }
}
