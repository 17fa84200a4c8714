//! Pure: what actlet does with each `KubeletConfiguration` field — the table
//! the operator's warnings (and the docs) come from. A field set in a config
//! source that actlet does not honour gets exactly one warning naming it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::Origin;

/// What actlet does with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Mapped onto [`KubeletConfig`](crate::KubeletConfig) (or the process setup) and used.
    Honoured,
    /// Accepted and ignored with a warning: actlet does not implement it (yet).
    NotImplemented,
    /// Accepted and ignored with a warning: upstream itself no longer uses it.
    NoEffectUpstream,
}

use Support::{Honoured as H, NoEffectUpstream as X, NotImplemented as N};

/// Every v1beta1 field (dotted for the parts of `logging` handled apart), in
/// upstream's order, with what actlet does with it.
pub const FIELDS: &[(&str, Support)] = &[
    ("enableServer", N),
    ("staticPodPath", H),
    ("podLogsDir", H),
    ("syncFrequency", H),
    ("fileCheckFrequency", H),
    ("httpCheckFrequency", H),
    ("staticPodURL", H),
    ("staticPodURLHeader", H),
    ("address", H),
    ("port", H),
    ("readOnlyPort", H),
    ("tlsCertFile", H),
    ("tlsPrivateKeyFile", H),
    ("tlsCipherSuites", H),
    ("tlsCurvePreferences", N),
    ("tlsMinVersion", H),
    ("rotateCertificates", H),
    ("serverTLSBootstrap", H),
    ("authentication", H),
    ("authorization", H),
    ("registryPullQPS", N),
    ("registryBurst", N),
    ("imagePullCredentialsVerificationPolicy", N),
    ("preloadedImagesVerificationAllowlist", N),
    ("eventRecordQPS", N),
    ("eventBurst", N),
    ("enableDebuggingHandlers", N),
    ("enableContentionProfiling", N),
    ("healthzPort", H),
    ("healthzBindAddress", H),
    ("oomScoreAdj", H),
    ("clusterDomain", H),
    ("clusterDNS", H),
    ("streamingConnectionIdleTimeout", X),
    ("nodeStatusUpdateFrequency", H),
    ("nodeStatusReportFrequency", H),
    ("nodeLeaseDurationSeconds", N),
    ("imageMinimumGCAge", H),
    ("imageMaximumGCAge", H),
    ("imageGCHighThresholdPercent", H),
    ("imageGCLowThresholdPercent", H),
    ("volumeStatsAggPeriod", N),
    ("kubeletCgroups", N),
    ("systemCgroups", N),
    ("cgroupRoot", H),
    ("cgroupsPerQOS", H),
    ("cgroupDriver", H),
    ("cpuManagerPolicy", N),
    ("singleProcessOOMKill", N),
    ("cpuManagerPolicyOptions", N),
    ("cpuManagerReconcilePeriod", N),
    ("draManagerReconcilePeriod", N),
    ("memoryManagerPolicy", N),
    ("topologyManagerPolicy", N),
    ("topologyManagerScope", N),
    ("topologyManagerPolicyOptions", N),
    ("qosReserved", N),
    ("runtimeRequestTimeout", H),
    ("hairpinMode", N),
    ("maxPods", H),
    ("podCIDR", N),
    ("podPidsLimit", H),
    ("resolvConf", N),
    ("runOnce", H),
    ("cpuCFSQuota", N),
    ("cpuCFSQuotaPeriod", N),
    ("nodeStatusMaxImages", N),
    ("maxOpenFiles", H),
    ("contentType", N),
    ("kubeAPIQPS", H),
    ("kubeAPIBurst", H),
    ("serializeImagePulls", H),
    ("maxParallelImagePulls", H),
    ("evictionHard", H),
    ("evictionSoft", H),
    ("evictionSoftGracePeriod", H),
    ("evictionPressureTransitionPeriod", H),
    ("evictionMaxPodGracePeriod", H),
    ("evictionMinimumReclaim", H),
    ("mergeDefaultEvictionSettings", H),
    ("podsPerCore", N),
    ("enableControllerAttachDetach", N),
    ("protectKernelDefaults", N),
    ("makeIPTablesUtilChains", N),
    ("iptablesMasqueradeBit", X),
    ("iptablesDropBit", X),
    ("featureGates", H),
    ("failSwapOn", N),
    ("memorySwap", N),
    ("containerLogMaxSize", H),
    ("containerLogMaxFiles", H),
    ("containerLogMaxWorkers", H),
    ("containerLogMonitorInterval", H),
    ("configMapAndSecretChangeDetectionStrategy", N),
    ("systemReserved", H),
    ("kubeReserved", H),
    ("reservedSystemCPUs", N),
    ("showHiddenMetricsForVersion", N),
    ("systemReservedCgroup", N),
    ("kubeReservedCgroup", N),
    ("enforceNodeAllocatable", H),
    ("allowedUnsafeSysctls", H),
    ("volumePluginDir", N),
    ("providerID", N),
    ("kernelMemcgNotification", H),
    ("logging", N),
    ("logging.verbosity", H),
    ("enableSystemLogHandler", N),
    ("enableSystemLogQuery", N),
    ("shutdownGracePeriod", H),
    ("shutdownGracePeriodCriticalPods", H),
    ("shutdownGracePeriodByPodPriority", H),
    ("crashLoopBackOff", N),
    ("reservedMemory", N),
    ("enableProfilingHandler", N),
    ("enableDebugFlagsHandler", N),
    ("seccompDefault", N),
    ("memoryThrottlingFactor", N),
    ("memoryReservationPolicy", N),
    ("registerWithTaints", H),
    ("registerNode", H),
    ("tracing", N),
    ("localStorageCapacityIsolation", H),
    ("containerRuntimeEndpoint", H),
    ("imageServiceEndpoint", N),
    ("failCgroupV1", N),
    ("userNamespaces", N),
    ("podHousekeepingPeriod", N),
];

/// The table entry that governs a (dotted) field path: the longest entry
/// equal to it or a dotted prefix of it.
///
/// ```
/// use actlet::kubelet_config_file::fields::{support, Support};
/// assert_eq!(support("evictionHard.memory.available"), Some(("evictionHard", Support::Honoured)));
/// assert_eq!(support("kubeReservedCgroup"), Some(("kubeReservedCgroup", Support::NotImplemented)));
/// assert_eq!(support("logging.verbosity"), Some(("logging.verbosity", Support::Honoured)));
/// assert_eq!(support("logging.format"), Some(("logging", Support::NotImplemented)));
/// ```
pub fn support(path: &str) -> Option<(&'static str, Support)> {
    FIELDS
        .iter()
        .filter(|(name, _)| path == *name || path.strip_prefix(name).is_some_and(|r| r.starts_with('.')))
        .max_by_key(|(name, _)| name.len())
        .copied()
}

fn reason(support: Support) -> &'static str {
    match support {
        Support::NotImplemented => "not implemented by actlet; the value is accepted and ignored",
        Support::NoEffectUpstream => "deprecated upstream and without effect; the value is accepted and ignored",
        Support::Honoured => "",
    }
}

/// One warning per table entry that a config source (not a default) set to
/// something other than upstream's default, and actlet does not honour,
/// naming the field and where it was set. `effective` and `defaults` are the
/// configuration (as JSON) with and without the sources.
pub fn warnings(origins: &BTreeMap<String, Origin>, effective: &Value, defaults: &Value) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    for (path, origin) in origins {
        let Some((name, s)) = support(path) else { continue };
        if s == Support::Honoured || !seen.insert(name) {
            continue;
        }
        let pointer = format!("/{}", name.replace('.', "/"));
        let (eff, def) = (effective.pointer(&pointer), defaults.pointer(&pointer));
        if eff == def || (def.is_none() && eff.is_none_or(is_go_zero)) {
            continue;
        }
        out.push(format!("{name}: {} (set in {origin})", reason(s)));
    }
    out
}

/// Go's zero value (what `omitempty` leaves out): `0s`, 0, "", false, null,
/// and empty or all-zero lists and objects.
fn is_go_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty() || s == "0s",
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_go_zero),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::kubelet_config_file::types::KubeletConfiguration;

    /// Captures the field names serde knows for a struct.
    struct Fields(std::cell::RefCell<Vec<&'static str>>);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<T: std::fmt::Display>(_: T) -> Self {
            Stop
        }
    }

    impl<'de> serde::Deserializer<'de> for &Fields {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.borrow_mut().extend_from_slice(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    #[test]
    fn the_table_names_every_upstream_field_exactly_once() {
        let f = Fields(Default::default());
        let _ = <KubeletConfiguration as serde::Deserialize>::deserialize(&f);
        let mut from_struct: Vec<&str> =
            f.0.into_inner()
                .into_iter()
                .filter(|n| *n != "apiVersion" && *n != "kind")
                .collect();
        let mut from_table: Vec<&str> = FIELDS.iter().map(|(n, _)| *n).filter(|n| !n.contains('.')).collect();
        assert_eq!(
            from_table.len(),
            127,
            "v1beta1 has 127 fields (with podHousekeepingPeriod)"
        );
        from_struct.sort();
        from_table.sort();
        assert_eq!(from_struct, from_table);
    }

    #[test]
    fn one_warning_per_unhonoured_field_naming_its_source() {
        let file = Origin::File(PathBuf::from("/etc/kubernetes/kubelet.conf"));
        let origins = BTreeMap::from([
            ("maxPods".to_string(), file.clone()),
            ("evictionHard.memory.available".to_string(), file.clone()),
            ("evictionHard.nodefs.available".to_string(), file.clone()),
            ("podsPerCore".to_string(), file.clone()),
            ("iptablesDropBit".to_string(), file.clone()),
            ("logging.verbosity".to_string(), file.clone()),
            ("logging.format".to_string(), file.clone()),
        ]);
        let defaults = serde_json::json!({"maxPods": 110, "logging": {"verbosity": 0, "format": "text"}, "iptablesDropBit": 15,
            "evictionHard": {"memory.available": "100Mi"}, "podsPerCore": 0});
        let effective = serde_json::json!({"maxPods": 10, "logging": {"verbosity": 2, "format": "json"}, "iptablesDropBit": 16,
            "evictionHard": {"memory.available": "1Gi"}, "podsPerCore": 4});
        let w = warnings(&origins, &effective, &defaults);
        assert_eq!(w.len(), 3, "{w:?}");
        let w2 = warnings(&origins, &defaults, &defaults);
        assert!(w2.is_empty(), "a field set to its default changes nothing: {w2:?}");
        assert!(w[0].starts_with("iptablesDropBit: deprecated upstream"));
        assert!(w[1].starts_with("logging: not implemented"));
        assert_eq!(
            w[2],
            "podsPerCore: not implemented by actlet; the value is accepted and ignored (set in /etc/kubernetes/kubelet.conf)"
        );
    }
}
