//! Pure: feature gates (`--feature-gates`, `featureGates:`) checked against
//! the gates a v1.36 kubelet knows (test/compatibility_lifecycle/reference/
//! feature_list.md at v1.36, plus component-base's logging gates and the
//! `AllAlpha`/`AllBeta` switches), with upstream's errors and warnings.

use std::collections::BTreeMap;

/// A gate's maturity in v1.36.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Off by default, may change.
    Alpha,
    /// Usually on by default.
    Beta,
    /// Graduated; setting it warns, and a locked one cannot be changed.
    Ga,
    /// On its way out; setting it warns.
    Deprecated,
}

/// One known gate: name, default in v1.36, locked to its default, stage.
#[derive(Clone, Copy, Debug)]
pub struct Gate {
    /// The gate's name.
    pub name: &'static str,
    /// Default in v1.36.
    pub default: bool,
    /// Locked to its default (setting the other value is an error).
    pub locked: bool,
    /// Maturity.
    pub stage: Stage,
}

use Stage::{Alpha as A, Beta as B, Deprecated as D, Ga as G};

const fn g(name: &'static str, default: bool, locked: bool, stage: Stage) -> Gate {
    Gate {
        name,
        default,
        locked,
        stage,
    }
}

/// Every gate a v1.36 kubelet accepts, sorted by name.
pub const GATES: &[Gate] = &[
    g("APIResponseCompression", true, false, B),
    g("APIServerIdentity", true, false, B),
    g("APIServerTracing", true, true, G),
    g("APIServingWithRoutine", false, false, A),
    g("AggregatedDiscoveryRemoveBetaType", true, true, D),
    g("AllAlpha", false, false, A),
    g("AllBeta", false, false, B),
    g("AllowDNSOnlyNodeCSR", true, false, D),
    g("AllowInsecureKubeletCertificateSigningRequests", true, false, D),
    g("AllowOverwriteTerminationGracePeriodSeconds", true, true, D),
    g("AllowParsingUserUIDFromCertAuth", true, false, B),
    g("AllowUnsafeMalformedObjectDeletion", false, false, A),
    g("AnonymousAuthConfigurableEndpoints", true, true, G),
    g("AnyVolumeDataSource", true, true, G),
    g("AtomicFIFO", true, false, B),
    g("AuthorizeNodeWithSelectors", true, true, G),
    g("AuthorizePodWebsocketUpgradeCreatePermission", true, false, B),
    g("AuthorizeWithSelectors", true, true, G),
    g("BtreeWatchCache", true, true, G),
    g("CBORServingAndStorage", false, false, A),
    g("CPUManagerPolicyAlphaOptions", false, false, A),
    g("CPUManagerPolicyBetaOptions", true, false, B),
    g("CPUManagerPolicyOptions", true, true, G),
    g("CRDObservedGenerationTracking", false, false, B),
    g("CRDValidationRatcheting", true, true, G),
    g("CSIServiceAccountTokenSecrets", true, true, G),
    g("CSIVolumeHealth", false, false, A),
    g("ChangeContainerStatusOnKubeletRestart", true, false, D),
    g("ClearingNominatedNodeNameAfterBinding", true, false, B),
    g("ClientsAllowCBOR", false, false, A),
    g("ClientsPreferCBOR", false, false, A),
    g("CloudControllerManagerWatchBasedRoutesReconciliation", false, false, A),
    g("CloudControllerManagerWebhook", false, false, A),
    g("ClusterTrustBundle", false, false, B),
    g("ClusterTrustBundleProjection", false, false, B),
    g("ComponentFlagz", false, false, A),
    g("ComponentStatusz", false, false, A),
    g("ConcurrentWatchObjectDecode", false, false, B),
    g("ConsistentListFromCache", true, true, G),
    g("ConstrainedImpersonation", false, false, A),
    g("ContainerCheckpoint", true, false, B),
    g("ContainerRestartRules", true, false, B),
    g("ContainerStopSignals", false, false, A),
    g("ContextualLogging", true, false, B),
    g("CoordinatedLeaderElection", false, false, B),
    g("CrossNamespaceVolumeDataSource", false, false, A),
    g("CustomCPUCFSQuotaPeriod", false, false, A),
    g("CustomResourceFieldSelectors", true, true, G),
    g("DRAAdminAccess", true, false, B),
    g("DRAConsumableCapacity", false, false, A),
    g("DRADeviceBindingConditions", false, false, A),
    g("DRADeviceTaintRules", false, false, A),
    g("DRADeviceTaints", false, false, A),
    g("DRAExtendedResource", false, false, A),
    g("DRAPartitionableDevices", false, false, A),
    g("DRAPrioritizedList", true, false, B),
    g("DRAResourceClaimDeviceStatus", true, false, B),
    g("DRASchedulerFilterTimeout", true, false, B),
    g("DeclarativeValidation", true, false, B),
    g("DeclarativeValidationTakeover", false, false, B),
    g("DeploymentReplicaSetTerminatingReplicas", true, false, B),
    g("DetectCacheInconsistency", true, false, B),
    g("DisableAllocatorDualWrite", true, true, G),
    g("DisableCPUQuotaWithExclusiveCPUs", true, false, B),
    g("DisableNodeKubeProxyVersion", true, false, D),
    g("DynamicResourceAllocation", true, true, G),
    g("EnvFiles", true, false, B),
    g("EventedPLEG", false, false, A),
    g("ExecProbeTimeout", true, true, G),
    g("ExternalServiceAccountTokenSigner", true, false, B),
    g("GangScheduling", false, false, A),
    g("GenericWorkload", false, false, A),
    g("GitRepoVolumeDriver", true, false, D),
    g("GracefulNodeShutdown", true, false, B),
    g("GracefulNodeShutdownBasedOnPodPriority", true, false, B),
    g("HPAConfigurableTolerance", true, false, B),
    g("HPAScaleToZero", false, false, A),
    g("HonorPVReclaimPolicy", true, true, G),
    g("HostnameOverride", true, false, B),
    g("ImageMaximumGCAge", true, true, G),
    g("ImageVolume", true, false, B),
    g("ImageVolumeWithDigest", false, false, A),
    g("InOrderInformers", true, false, B),
    g("InOrderInformersBatchProcess", true, false, B),
    g("InPlacePodLevelResourcesVerticalScaling", false, false, A),
    g("InPlacePodVerticalScaling", true, true, G),
    g("InPlacePodVerticalScalingAllocatedStatus", false, false, D),
    g("InPlacePodVerticalScalingExclusiveCPUs", false, false, A),
    g("InPlacePodVerticalScalingExclusiveMemory", false, false, A),
    g("InformerResourceVersion", true, false, G),
    g("JobBackoffLimitPerIndex", true, true, G),
    g("JobManagedBy", true, true, G),
    g("JobPodReplacementPolicy", true, true, G),
    g("JobSuccessPolicy", true, true, G),
    g("KMSv1", true, false, D),
    g("KubeletCgroupDriverFromCRI", true, true, G),
    g("KubeletCrashLoopBackOffMax", true, false, B),
    g("KubeletEnsureSecretPulledImages", true, false, B),
    g("KubeletFineGrainedAuthz", true, true, G),
    g("KubeletInUserNamespace", false, false, A),
    g("KubeletPSI", true, false, B),
    g("KubeletPodResourcesDynamicResources", true, false, B),
    g("KubeletPodResourcesGet", true, false, B),
    g("KubeletPodResourcesListUseActivePods", true, false, D),
    g("KubeletRegistrationGetOnExistsOnly", true, false, D),
    g("KubeletSeparateDiskGC", true, false, B),
    g("KubeletServiceAccountTokenForCredentialProviders", true, false, B),
    g("KubeletTracing", true, true, G),
    g("ListFromCacheSnapshot", true, false, B),
    g("LocalStorageCapacityIsolationFSQuotaMonitoring", false, false, B),
    g("LogarithmicScaleDown", true, true, G),
    g("LoggingAlphaOptions", false, false, A),
    g("LoggingBetaOptions", true, false, B),
    g("MatchLabelKeysInPodAffinity", true, true, G),
    g("MatchLabelKeysInPodTopologySpread", true, false, B),
    g("MatchLabelKeysInPodTopologySpreadSelectorMerge", true, false, B),
    g("MaxUnavailableStatefulSet", true, false, B),
    g("MemoryQoS", false, false, A),
    g("MultiCIDRServiceAllocator", true, true, G),
    g("MutableCSINodeAllocatableCount", true, false, B),
    g("MutablePVNodeAffinity", false, false, A),
    g("MutablePodResourcesForSuspendedJobs", false, false, A),
    g("MutableSchedulingDirectivesForSuspendedJobs", false, false, A),
    g("MutatingAdmissionPolicy", false, false, B),
    g("NFTablesProxyMode", true, true, G),
    g("NodeDeclaredFeatures", false, false, A),
    g("NodeInclusionPolicyInPodTopologySpread", true, true, G),
    g("NodeLogQuery", false, false, B),
    g("NodeSwap", true, true, G),
    g("NominatedNodeNameForExpectation", true, false, B),
    g("OpenAPIEnums", true, false, B),
    g("OpportunisticBatching", true, false, B),
    g("OrderedNamespaceDeletion", true, true, G),
    g("PodAndContainerStatsFromCRI", false, false, A),
    g("PodCertificateRequest", false, false, B),
    g("PodDeletionCost", true, false, B),
    g("PodLevelResources", true, false, B),
    g("PodLifecycleSleepAction", true, true, G),
    g("PodLifecycleSleepActionAllowZero", true, true, G),
    g("PodLogsQuerySplitStreams", false, false, A),
    g("PodObservedGenerationTracking", true, true, G),
    g("PodReadyToStartContainersCondition", true, false, B),
    g("PodSchedulingReadiness", true, true, G),
    g("PodTopologyLabelsAdmission", true, false, B),
    g("PortForwardWebsockets", true, false, B),
    g("PreferSameTrafficDistribution", true, true, G),
    g("PreventStaticPodAPIReferences", true, false, B),
    g("ProcMountType", true, false, B),
    g("QOSReserved", false, false, A),
    g("RecoverVolumeExpansionFailure", true, true, G),
    g("RecursiveReadOnlyMounts", true, true, G),
    g("ReduceDefaultCrashLoopBackOffDecay", false, false, A),
    g("RelaxedDNSSearchValidation", true, true, G),
    g("RelaxedEnvironmentVariableValidation", true, true, G),
    g("RelaxedServiceNameValidation", true, false, B),
    g("ReloadKubeletServerCertificateFile", true, false, B),
    g("RemoteRequestHeaderUID", true, false, B),
    g("ResilientWatchCacheInitialization", true, true, G),
    g("ResourceHealthStatus", true, false, B),
    g("ResourceHealthStatusMessage", true, false, B),
    g("RestartAllContainersOnContainerExits", false, false, A),
    g("RetryGenerateName", true, true, G),
    g("RotateKubeletServerCertificate", true, false, B),
    g("RuntimeClassInImageCriApi", false, false, A),
    g("SELinuxChangePolicy", true, false, B),
    g("SELinuxMount", false, false, B),
    g("SELinuxMountReadWriteOncePod", true, false, B),
    g("SchedulerAsyncAPICalls", false, false, B),
    g("SchedulerAsyncPreemption", true, false, B),
    g("SchedulerPopFromBackoffQ", true, false, B),
    g("SchedulerQueueingHints", true, true, G),
    g("SeparateCacheWatchRPC", true, false, D),
    g("SeparateTaintEvictionController", true, true, G),
    g("ServiceAccountNodeAudienceRestriction", true, false, B),
    g("ServiceAccountTokenJTI", true, true, G),
    g("ServiceAccountTokenNodeBinding", true, true, G),
    g("ServiceAccountTokenNodeBindingValidation", true, true, G),
    g("ServiceAccountTokenPodNodeInfo", true, true, G),
    g("SidecarContainers", true, true, G),
    g("SizeBasedListCostEstimate", true, false, B),
    g("StatefulSetSemanticRevisionComparison", true, false, B),
    g("StorageCapacityScoring", false, false, A),
    g("StorageNamespaceIndex", true, false, D),
    g("StorageVersionAPI", false, false, A),
    g("StorageVersionHash", true, false, B),
    g("StorageVersionMigrator", false, false, B),
    g("StreamingCollectionEncodingToJSON", true, true, G),
    g("StreamingCollectionEncodingToProtobuf", true, true, G),
    g("StrictIPCIDRValidation", false, false, A),
    g("StructuredAuthenticationConfiguration", true, true, G),
    g("StructuredAuthenticationConfigurationEgressSelector", true, false, B),
    g("StructuredAuthenticationConfigurationJWKSMetrics", true, false, B),
    g("SupplementalGroupsPolicy", true, true, G),
    g("SystemdWatchdog", true, true, G),
    g("TaintTolerationComparisonOperators", false, false, A),
    g("TokenRequestServiceAccountUIDValidation", true, false, B),
    g("TopologyManagerPolicyAlphaOptions", false, false, A),
    g("TopologyManagerPolicyBetaOptions", true, false, B),
    g("TopologyManagerPolicyOptions", true, true, G),
    g("TranslateStreamCloseWebsocketRequests", true, false, B),
    g("UnauthenticatedHTTP2DOSMitigation", true, false, B),
    g("UnknownVersionInteroperabilityProxy", false, false, A),
    g("UnlockWhileProcessingFIFO", true, false, B),
    g("UserNamespacesHostNetworkSupport", false, false, A),
    g("UserNamespacesSupport", true, false, B),
    g("VolumeAttributesClass", true, true, G),
    g("VolumeLimitScaling", false, false, A),
    g("WatchCacheInitializationPostStartHook", true, false, B),
    g("WatchList", true, false, B),
    g("WatchListClient", true, false, B),
    g("WinDSR", true, true, G),
    g("WinOverlay", true, true, G),
    g("WindowsCPUAndMemoryAffinity", false, false, A),
    g("WindowsGracefulNodeShutdown", true, false, B),
    g("WindowsHostNetwork", false, false, D),
];

/// The known gate of this name.
pub fn lookup(name: &str) -> Option<&'static Gate> {
    GATES.binary_search_by(|g| g.name.cmp(name)).ok().map(|i| &GATES[i])
}

/// Parses `--feature-gates` values (`A=true,B=false`, repeatable) like
/// upstream's `MapStringBool` flag: later entries win.
///
/// ```
/// use actlet::kubelet_config_file::gates::parse_flag;
/// let m = parse_flag(&["NodeSwap=true,EventedPLEG=false".into()]).unwrap();
/// assert_eq!(m.get("EventedPLEG"), Some(&false));
/// assert!(parse_flag(&["NodeSwap".into()]).unwrap_err().contains("missing bool value"));
/// ```
pub fn parse_flag(values: &[String]) -> Result<BTreeMap<String, bool>, String> {
    let mut out = BTreeMap::new();
    for item in values.iter().flat_map(|v| v.split(',')).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("missing bool value for {item}"))?;
        let b = parse_go_bool(v.trim()).ok_or_else(|| {
            format!("invalid value of {k}={v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax")
        })?;
        out.insert(k.trim().to_string(), b);
    }
    Ok(out)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Checks requested gates (upstream `SetFromMap`): an unknown gate or a
/// locked gate set against its default is an error; setting a GA or
/// deprecated gate is a warning. Returns the warnings.
///
/// ```
/// use std::collections::BTreeMap;
/// use actlet::kubelet_config_file::gates::check;
/// let m = BTreeMap::from([("NoSuchGate".to_string(), true)]);
/// assert_eq!(check(&m).unwrap_err(), "unrecognized feature gate: NoSuchGate");
/// let m = BTreeMap::from([("SidecarContainers".to_string(), false)]);
/// assert!(check(&m).unwrap_err().contains("locked to true"));
/// ```
pub fn check(requested: &BTreeMap<String, bool>) -> Result<Vec<String>, String> {
    let mut warnings = vec![];
    for (name, &value) in requested {
        let gate = lookup(name).ok_or_else(|| format!("unrecognized feature gate: {name}"))?;
        if gate.locked && value != gate.default {
            return Err(format!(
                "cannot set feature gate {name} to {value}, feature is locked to {}",
                gate.default
            ));
        }
        match gate.stage {
            Stage::Ga => warnings.push(format!(
                "Setting GA feature gate {name}={value}. It will be removed in a future release."
            )),
            Stage::Deprecated => warnings.push(format!(
                "Setting deprecated feature gate {name}={value}. It will be removed in a future release."
            )),
            _ => {}
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique_so_lookup_works() {
        for w in GATES.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for gate in GATES {
            assert_eq!(lookup(gate.name).unwrap().name, gate.name);
        }
        assert!(lookup("nodeswap").is_none(), "names are case-sensitive upstream");
    }

    #[test]
    fn locked_gates_accept_their_default_with_a_ga_warning() {
        let m = BTreeMap::from([("NodeSwap".to_string(), true)]);
        let w = check(&m).unwrap();
        assert_eq!(
            w,
            vec!["Setting GA feature gate NodeSwap=true. It will be removed in a future release."]
        );
        let m = BTreeMap::from([("NodeSwap".to_string(), false)]);
        assert_eq!(
            check(&m).unwrap_err(),
            "cannot set feature gate NodeSwap to false, feature is locked to true"
        );
    }

    #[test]
    fn alpha_and_beta_gates_set_silently() {
        let m = BTreeMap::from([
            ("EventedPLEG".to_string(), true),
            ("GracefulNodeShutdown".to_string(), false),
        ]);
        assert!(check(&m).unwrap().is_empty());
    }

    #[test]
    fn flag_syntax_errors_like_go() {
        assert!(
            parse_flag(&["A=maybe".into()])
                .unwrap_err()
                .contains("invalid value of A=maybe")
        );
        let m = parse_flag(&["A=1, B=F".into(), "A=false".into()]).unwrap();
        assert_eq!(m, BTreeMap::from([("A".to_string(), false), ("B".to_string(), false)]));
    }
}
