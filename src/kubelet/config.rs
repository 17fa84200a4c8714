//! [`KubeletConfig`]: the settings the assembled system runs with, built from
//! flags (and later the config file), validated before anything starts.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Taint;

use crate::cluster::node::flags::Reserved;
use crate::sync_loop::SyncLoopConfig;

/// A setting that cannot be used; names the flag and the reason.
///
/// ```
/// use clap::Parser;
/// use actlet::KubeletConfig;
/// let cli = actlet::cli::Cli::try_parse_from(["actlet", "--hostname-override", "node-a", "--max-pods", "0"]).unwrap();
/// let err = KubeletConfig::from_flags(&cli.flags, "host").unwrap_err();
/// assert_eq!(err.field, "--max-pods");
/// assert_eq!(err.to_string(), "invalid --max-pods: 0 must be at least 1");
/// ```
pub use crate::clock::WallClock;

#[derive(Debug, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct ConfigError {
    /// The flag or config field, e.g. `--manifest-url`.
    pub field: &'static str,
    /// Why.
    pub reason: String,
}

/// Settings of an assembled kubelet.
///
/// ```
/// use std::time::Duration;
/// let mut config = actlet::KubeletConfig::new("node-a");
/// config.static_pod_path = Some("/etc/kubernetes/manifests".into());
/// config.max_pods = 20;
/// config.sync.sync_frequency = Duration::from_secs(30);
/// assert_eq!(config.relist_period, Duration::from_secs(1));
/// // start it with actlet::kubelet::start(config, runtime), or through actlet::ActletBuilder::from_config
/// ```
#[derive(Clone, Debug)]
pub struct KubeletConfig {
    /// The node name (`--hostname-override` or the host name, lowercased).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.node_name, "node-a");
    /// ```
    pub node_name: String,
    /// The node's IP (`hostIP` of pods).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.node_ip = Some("10.0.0.7".into()); // otherwise detected (detect_node_ip)
    /// ```
    pub node_ip: Option<String>,
    /// `staticPodPath`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.static_pod_path = Some("/etc/kubernetes/manifests".into());
    /// ```
    pub static_pod_path: Option<PathBuf>,
    /// `staticPodURL`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.static_pod_url = Some("http://10.0.0.1:8080/pods.yaml".into());
    /// ```
    pub static_pod_url: Option<String>,
    /// `staticPodURLHeader` entries (`Key:Value`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.static_pod_url_headers = vec!["Authorization:Bearer abc".into()];
    /// ```
    pub static_pod_url_headers: Vec<String>,
    /// Names of the caller's own pod sources (embedding, tests): each feeds
    /// [`SourceSnapshot`](crate::messages::pod_update::SourceSnapshot)s with
    /// `PodSource::Custom(name)` through [`Kubelet::pod_config`](super::Kubelet::pod_config);
    /// housekeeping waits until each has sent one.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.custom_sources.push("edge-sync".into()); // sends SourceSnapshots as PodSource::Custom("edge-sync")
    /// ```
    pub custom_sources: Vec<String>,
    /// `fileCheckFrequency`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.file_check_frequency, std::time::Duration::from_secs(20));
    /// ```
    pub file_check_frequency: Duration,
    /// `httpCheckFrequency`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.http_check_frequency, std::time::Duration::from_secs(20));
    /// ```
    pub http_check_frequency: Duration,
    /// Sync loop timing (`syncFrequency` …).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.sync.sync_frequency, std::time::Duration::from_secs(60));
    /// ```
    pub sync: SyncLoopConfig,
    /// PLEG relist period (1 s).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.relist_period, std::time::Duration::from_secs(1));
    /// ```
    pub relist_period: Duration,
    /// Watch the runtime's container events (feature gate `EventedPLEG`,
    /// off by default as upstream): each event triggers a targeted relist of
    /// its pod and, while the stream is up, the global relist runs every
    /// 300 s instead of every `relist_period`. Runtimes without the stream
    /// (containerd 1.6) keep relisting every `relist_period`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(!c.evented_pleg);
    /// ```
    pub evented_pleg: bool,
    /// Threads (actix arbiters) the pod workers run on besides the main
    /// one; 0 (the default): every actor on the main arbiter. Each pod's
    /// worker stays on one arbiter; the threads end with the actix System.
    /// See the execution model in [`crate::actors`].
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.pod_worker_threads, 0);
    /// ```
    pub pod_worker_threads: usize,
    /// Pod sync steps in their runtime work at once (actlet only, no
    /// upstream field: `--max-concurrent-pod-syncs`); 0: unbounded. The rest
    /// wait in FIFO order; kills never wait. See
    /// [`SyncSlots`](crate::pod_workers::SyncSlots).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.max_concurrent_pod_syncs, actlet::pod_workers::DEFAULT_MAX_CONCURRENT_POD_SYNCS);
    /// ```
    pub max_concurrent_pod_syncs: usize,
    /// `maxPods` (110).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.max_pods, 110);
    /// ```
    pub max_pods: i64,
    /// Runtime `Status` check period (5 s).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.runtime_health_period, std::time::Duration::from_secs(5));
    /// ```
    pub runtime_health_period: Duration,
    /// `--root-dir`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.root_dir, std::path::Path::new("/var/lib/kubelet"));
    /// ```
    pub root_dir: PathBuf,
    /// Where pod log directories go (`/var/log/pods`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.pod_logs_dir, std::path::Path::new("/var/log/pods"));
    /// ```
    pub pod_logs_dir: PathBuf,
    /// Where container log symlinks go (`/var/log/containers`; `None`: none).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.container_logs_dir.as_deref(), Some(std::path::Path::new("/var/log/containers")));
    /// ```
    pub container_logs_dir: Option<PathBuf>,
    /// Read-only server (`/pods`, `/healthz`); `None`: off.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.read_only_addr = Some("127.0.0.1:10255".parse().unwrap());
    /// ```
    pub read_only_addr: Option<SocketAddr>,
    /// Healthz server; `None`: off.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.healthz_addr = Some("127.0.0.1:10248".parse().unwrap());
    /// ```
    pub healthz_addr: Option<SocketAddr>,
    /// Prefix of container IDs in pod status (`containerd`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.runtime_name, "containerd"); // container IDs read "containerd://<id>"
    /// ```
    pub runtime_name: String,
    /// Graceful shutdown deadline of the actor tree.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.shutdown_deadline, std::time::Duration::from_secs(30));
    /// ```
    pub shutdown_deadline: Duration,
    /// The wall clock (system clock by default).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.wall_clock.now() > k8s_openapi::jiff::Timestamp::UNIX_EPOCH); // the system clock
    /// ```
    pub wall_clock: WallClock,
    /// Cluster mode: register the Node with the API server (`registerNode`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.register_node);
    /// ```
    pub register_node: bool,
    /// Labels added to the Node at registration (`--node-labels`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.node_labels.insert("node-role.kubernetes.io/edge".into(), "".into());
    /// ```
    pub node_labels: BTreeMap<String, String>,
    /// Taints the Node registers with (`--register-with-taints`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.register_with_taints.push(k8s_openapi::api::core::v1::Taint { key: "dedicated".into(), effect: "NoSchedule".into(), ..Default::default() });
    /// ```
    pub register_with_taints: Vec<Taint>,
    /// `kubeReserved`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.kube_reserved, Default::default()); // nothing reserved
    /// ```
    pub kube_reserved: Reserved,
    /// `systemReserved`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.system_reserved, Default::default());
    /// ```
    pub system_reserved: Reserved,
    /// The container manager: `cgroupsPerQOS`, `cgroupRoot`, `cgroupDriver`,
    /// `podPidsLimit`, `enforceNodeAllocatable`, and whether cgroups are
    /// managed at all (`CmMode::Auto`: not with the mock
    /// runtime, not without a writable cgroupfs).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.cgroups.naming.cgroups_per_qos);
    /// assert_eq!(c.cgroups.pod_pids_limit, -1);
    /// c.cgroups.mode = actlet::cm::CmMode::Off; // leave cgroups to the runtime
    /// ```
    pub cgroups: crate::cm::CmConfig,
    /// How often the node status is computed and written when changed
    /// (`nodeStatusUpdateFrequency`, 10 s).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.node_status_update_frequency, std::time::Duration::from_secs(10));
    /// ```
    pub node_status_update_frequency: Duration,
    /// How often the node status is written even when unchanged
    /// (`nodeStatusReportFrequency`, 5 min).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.node_status_report_frequency, std::time::Duration::from_secs(300));
    /// ```
    pub node_status_report_frequency: Duration,
    /// How the API watches retry while the API server is away (client-go's
    /// 0.8 s … 30 s); a watch expiry re-lists at once and a failing pod watch
    /// restarts as soon as the node Lease gets through again.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.api_watch_backoff.max, std::time::Duration::from_secs(30));
    /// ```
    pub api_watch_backoff: crate::cluster::WatchBackoffPolicy,
    /// Container log rotation (`containerLogMaxSize` 10Mi,
    /// `containerLogMaxFiles` 5, `containerLogMaxWorkers` 1,
    /// `containerLogMonitorInterval` 10 s).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!((c.container_log_policy.max_size, c.container_log_policy.max_files), (10 << 20, 5));
    /// ```
    pub container_log_policy: crate::logrotate::LogRotatePolicy,
    /// `serializeImagePulls` (true): one image pull at a time.
    ///
    /// ```
    /// # let c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.serialize_image_pulls && c.max_parallel_image_pulls.is_none());
    /// ```
    pub serialize_image_pulls: bool,
    /// `maxParallelImagePulls`: most pulls at once when not serialized
    /// (`None`: unbounded).
    pub max_parallel_image_pulls: Option<usize>,
    /// The sysctls pods may set: the safe set plus `allowedUnsafeSysctls`
    /// (`--allowed-unsafe-sysctls`); others are rejected `SysctlForbidden`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.sysctls = actlet::sysctl::Allowlist::new(["kernel.msg*"], None).unwrap();
    /// assert!(c.sysctls.validate("kernel.msgmax", false, false).is_ok());
    /// ```
    pub sysctls: crate::sysctl::Allowlist,
    /// Dead container GC policy (upstream `GCPolicy`: min age 0, 1 per
    /// container, no node limit; its flags are deprecated upstream).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.container_gc_policy.max_per_pod_container, 1);
    /// c.container_gc_policy.max_containers = 100; // at most 100 dead containers on the node
    /// ```
    pub container_gc_policy: crate::gc::ContainerGcPolicy,
    /// `imageGCHighThresholdPercent` (85; 100 with no maximum age disables image GC).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.image_gc_high_threshold_percent, 85);
    /// ```
    pub image_gc_high_threshold_percent: i32,
    /// `imageGCLowThresholdPercent` (80).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.image_gc_low_threshold_percent, 80);
    /// ```
    pub image_gc_low_threshold_percent: i32,
    /// `imageMinimumGCAge` (2 min).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert_eq!(c.image_minimum_gc_age, std::time::Duration::from_secs(120));
    /// ```
    pub image_minimum_gc_age: Duration,
    /// `imageMaximumGCAge` (0: off).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.image_maximum_gc_age = std::time::Duration::from_secs(7 * 24 * 3600); // unused for a week: removed
    /// ```
    pub image_maximum_gc_age: Duration,
    /// Where image GC reads the image filesystem's usage (default: the
    /// runtime's `ImageFsInfo` mountpoint, then `statvfs`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// use std::sync::Arc;
    /// // tests: a 1 GiB disk holding only the runtime's images
    /// c.image_fs = actlet::gc::ImageFsSource(Arc::new(actlet::gc::FixedCapacity(1 << 30)));
    /// ```
    pub image_fs: crate::gc::ImageFsSource,
    /// Node-pressure eviction: thresholds (`evictionHard`, `evictionSoft`,
    /// …) and where the node summary comes from. Empty by default here (an
    /// embedded kubelet evicts only when asked); the node daemon gets
    /// upstream's `evictionHard` defaults from its configuration.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// use actlet::eviction::{ThresholdSettings, parse_thresholds};
    /// let hard = [("memory.available".to_string(), "500Mi".to_string())].into();
    /// c.eviction.thresholds = parse_thresholds(&ThresholdSettings { hard, ..Default::default() }, false).unwrap();
    /// ```
    pub eviction: crate::eviction::EvictionConfig,
    /// Graceful node shutdown: the priority groups and their budgets
    /// (`shutdownGracePeriod`, `shutdownGracePeriodCriticalPods`,
    /// `shutdownGracePeriodByPodPriority`); empty by default (off).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// use std::time::Duration;
    /// c.shutdown = actlet::nodeshutdown::ShutdownConfig::new(Duration::from_secs(30), Duration::from_secs(10), vec![]);
    /// assert!(c.shutdown.enabled());
    /// ```
    pub shutdown: crate::nodeshutdown::ShutdownConfig,
    /// `clusterDNS`: nameservers of `ClusterFirst` pods (empty: such pods
    /// fall back to the host's DNS with a `MissingClusterDNS` event).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.cluster_dns.is_empty());
    /// c.cluster_dns = vec!["10.96.0.10".into()];
    /// ```
    pub cluster_dns: Vec<String>,
    /// `clusterDomain` (e.g. `cluster.local`), appended to search paths.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.cluster_domain = "cluster.local".into();
    /// ```
    pub cluster_domain: String,
    /// The authenticated HTTPS API (`address`:`port`); `None`: off.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.server_addr.is_none()); // off unless asked for (the flags default to 0.0.0.0:10250)
    /// c.server_addr = Some("127.0.0.1:10250".parse().unwrap());
    /// ```
    pub server_addr: Option<SocketAddr>,
    /// `tlsCertFile`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.tls_cert_file = Some("/etc/kubernetes/pki/kubelet.crt".into()); // else self-signed in <root-dir>/pki
    /// ```
    pub tls_cert_file: Option<PathBuf>,
    /// `tlsPrivateKeyFile`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.tls_private_key_file = Some("/etc/kubernetes/pki/kubelet.key".into());
    /// ```
    pub tls_private_key_file: Option<PathBuf>,
    /// `serverTLSBootstrap` (`--rotate-server-certificates`): the 10250
    /// server's certificate is requested from the cluster and rotated while
    /// serving (cluster mode; kept in [`cert_dir`](Self::cert_dir)).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.server_tls_bootstrap = true;
    /// ```
    pub server_tls_bootstrap: bool,
    /// `--cert-dir`: where issued certificates are kept (default `<root-dir>/pki`).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.cert_dir = "/var/lib/kubelet/pki".into();
    /// ```
    pub cert_dir: PathBuf,
    /// `tlsMinVersion`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.tls_min_version = Some("VersionTLS13".into());
    /// ```
    pub tls_min_version: Option<String>,
    /// `tlsCipherSuites`.
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.tls_cipher_suites = vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()];
    /// ```
    pub tls_cipher_suites: Vec<String>,
    /// `authentication` (x509 client CA, token webhook, anonymous).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.authentication.anonymous.enabled); // the flags' legacy default
    /// c.authentication.anonymous.enabled = false;
    /// ```
    pub authentication: crate::server::auth::KubeletAuthentication,
    /// `authorization` (AlwaysAllow or Webhook).
    ///
    /// ```
    /// # let mut c = actlet::KubeletConfig::new("node-a");
    /// c.authorization.mode = actlet::server::auth::KubeletAuthorizationMode::Webhook;
    /// ```
    pub authorization: crate::server::auth::KubeletAuthorization,
}

impl KubeletConfig {
    /// Defaults for a node called `node_name`: no sources, no servers,
    /// upstream timing, directories under `/var/lib/kubelet` and `/var/log`.
    ///
    /// ```
    /// use std::path::Path;
    /// let config = actlet::KubeletConfig::new("node-a");
    /// assert_eq!((config.node_name.as_str(), config.max_pods), ("node-a", 110));
    /// assert_eq!(config.root_dir, Path::new("/var/lib/kubelet"));
    /// assert!(config.static_pod_path.is_none() && config.read_only_addr.is_none());
    /// ```
    pub fn new(node_name: impl Into<String>) -> Self {
        Self {
            node_name: node_name.into(),
            node_ip: None,
            static_pod_path: None,
            static_pod_url: None,
            static_pod_url_headers: vec![],
            custom_sources: vec![],
            file_check_frequency: Duration::from_secs(20),
            http_check_frequency: Duration::from_secs(20),
            sync: SyncLoopConfig::default(),
            relist_period: crate::pleg::actor::RELIST_PERIOD,
            evented_pleg: false,
            pod_worker_threads: 0,
            max_concurrent_pod_syncs: crate::pod_workers::DEFAULT_MAX_CONCURRENT_POD_SYNCS,
            max_pods: 110,
            runtime_health_period: crate::runtime_health::actor::DEFAULT_PERIOD,
            root_dir: PathBuf::from("/var/lib/kubelet"),
            pod_logs_dir: PathBuf::from(crate::kuberuntime::config::DEFAULT_POD_LOGS_DIR),
            container_logs_dir: Some(PathBuf::from(crate::kuberuntime::config::DEFAULT_CONTAINER_LOGS_DIR)),
            read_only_addr: None,
            healthz_addr: None,
            runtime_name: "containerd".into(),
            shutdown_deadline: Duration::from_secs(30),
            wall_clock: WallClock::system(),
            register_node: true,
            node_labels: BTreeMap::new(),
            register_with_taints: vec![],
            kube_reserved: Reserved::default(),
            system_reserved: Reserved::default(),
            cgroups: crate::cm::CmConfig::default(),
            node_status_update_frequency: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            api_watch_backoff: crate::cluster::WatchBackoffPolicy::default(),
            container_log_policy: crate::logrotate::LogRotatePolicy::default(),
            serialize_image_pulls: true,
            max_parallel_image_pulls: None,
            sysctls: crate::sysctl::Allowlist::new(Vec::<String>::new(), crate::sysctl::host_kernel())
                .unwrap_or_default(),
            container_gc_policy: crate::gc::ContainerGcPolicy::default(),
            image_gc_high_threshold_percent: 85,
            image_gc_low_threshold_percent: 80,
            image_minimum_gc_age: Duration::from_secs(120),
            image_maximum_gc_age: Duration::ZERO,
            image_fs: crate::gc::ImageFsSource::default(),
            eviction: crate::eviction::EvictionConfig::default(),
            shutdown: crate::nodeshutdown::ShutdownConfig::default(),
            cluster_dns: Vec::new(),
            cluster_domain: String::new(),
            server_addr: None,
            tls_cert_file: None,
            tls_private_key_file: None,
            server_tls_bootstrap: false,
            cert_dir: PathBuf::from("/var/lib/kubelet/pki"),
            tls_min_version: None,
            tls_cipher_suites: vec![],
            authentication: Default::default(),
            authorization: Default::default(),
        }
    }

    /// The image GC policy these settings make.
    ///
    /// ```
    /// let mut c = actlet::KubeletConfig::new("node-a");
    /// c.image_gc_low_threshold_percent = 90; // above the high threshold
    /// assert_eq!(c.validate_gc().unwrap_err().field, "imageGCLowThresholdPercent");
    /// assert_eq!(c.image_gc_policy().low_threshold_percent, 90);
    /// ```
    pub fn image_gc_policy(&self) -> crate::gc::ImageGcPolicy {
        crate::gc::ImageGcPolicy {
            high_threshold_percent: self.image_gc_high_threshold_percent,
            low_threshold_percent: self.image_gc_low_threshold_percent,
            min_age: self.image_minimum_gc_age,
            max_age: self.image_maximum_gc_age,
        }
    }

    /// Checks the GC settings (upstream's validation of the image GC fields).
    ///
    /// ```
    /// let c = actlet::KubeletConfig::new("node-a");
    /// assert!(c.validate_gc().is_ok());
    /// ```
    pub fn validate_gc(&self) -> Result<(), ConfigError> {
        self.image_gc_policy()
            .validate()
            .map_err(|(field, reason)| ConfigError { field, reason })
    }
}
