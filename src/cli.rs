//! The `actlet` command line: upstream kubelet flag names, parsed with clap.
//!
//! Flags keep the kubelet's spelling (`--pod-manifest-path`,
//! `--container-runtime-endpoint`, …) so existing unit files and scripts work.
//! A bad flag is reported by clap with the flag's name and exit code 2.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// actlet: a Kubernetes node agent (kubelet) built as a supervised actor system.
#[derive(Debug, Parser)]
#[command(name = "actlet", about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// A subcommand; without one, actlet runs the node agent.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Node agent flags.
    #[command(flatten)]
    pub flags: KubeletFlags,
    /// Print version information and quit: `Kubernetes <version>` as upstream; `--version=raw` for details.
    #[arg(long, value_name = "true|raw", num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub version: Option<String>,
}

/// Subcommands besides running the node agent.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the actlet version and exit.
    Version,
    /// Serve the scriptable mock CRI runtime over gRPC (for tests and crictl).
    MockCri(MockCriArgs),
}

/// `actlet mock-cri` arguments.
#[derive(Debug, Args)]
pub struct MockCriArgs {
    /// The socket to serve on, e.g. unix:///tmp/mock-cri.sock.
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: String,
    /// The directory ImageFsInfo and container stats name as the image filesystem
    /// mountpoint; created if missing. Default: actlet-mock-cri/image-fs in the temporary
    /// directory ($TMPDIR or /tmp), so that a kubelet reading the host's filesystems finds it.
    #[arg(long, value_name = "DIR")]
    pub image_fs_dir: Option<PathBuf>,
}

impl MockCriArgs {
    /// The image filesystem directory: `--image-fs-dir`, or the default.
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = actlet::cli::Cli::parse_from(["actlet", "mock-cri", "--listen", "unix:///m.sock", "--image-fs-dir", "/srv/fs"]);
    /// let Some(actlet::cli::Command::MockCri(args)) = cli.command else { panic!() };
    /// assert_eq!(args.image_fs_dir(), std::path::Path::new("/srv/fs"));
    /// ```
    pub fn image_fs_dir(&self) -> PathBuf {
        self.image_fs_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("actlet-mock-cri").join("image-fs"))
    }
}

/// The node agent's flags (upstream names; see `kubelet --help`).
#[derive(Debug, Clone, Args)]
pub struct KubeletFlags {
    /// Path to a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, YAML or JSON). Flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Path to a kubeconfig for the API server. Without it actlet runs standalone (static pods only).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Requests per second to the API server (kubeAPIQPS).
    #[arg(long, value_name = "QPS", default_value_t = 50)]
    pub kube_api_qps: u32,

    /// Requests allowed in a burst above --kube-api-qps (kubeAPIBurst).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub kube_api_burst: u32,

    /// Directory of static pod manifests (staticPodPath).
    #[arg(long, value_name = "DIR")]
    pub pod_manifest_path: Option<PathBuf>,

    /// URL to fetch static pod manifests from (staticPodURL).
    #[arg(long, value_name = "URL")]
    pub manifest_url: Option<String>,

    /// HTTP header for --manifest-url requests, 'Key:Value'; repeatable (staticPodURLHeader).
    #[arg(long, value_name = "KEY:VALUE")]
    pub manifest_url_header: Vec<String>,

    /// The CRI endpoint (containerRuntimeEndpoint).
    #[arg(
        long,
        value_name = "ENDPOINT",
        default_value = "unix:///run/containerd/containerd.sock"
    )]
    pub container_runtime_endpoint: String,

    /// Timeout of every runtime request except long-running ones (runtimeRequestTimeout).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2m")]
    pub runtime_request_timeout: Duration,

    /// Directory for actlet's files (volume mounts, pod dirs).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/kubelet")]
    pub root_dir: PathBuf,

    /// The node's IP address (reported as hostIP); detected when unset.
    #[arg(long, value_name = "IP")]
    pub node_ip: Option<String>,

    /// Use this name as the node name instead of the hostname.
    #[arg(long, value_name = "NAME")]
    pub hostname_override: Option<String>,

    /// Max period between synchronizing running containers (syncFrequency).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1m")]
    pub sync_frequency: Duration,

    /// How often the static pod directory is re-read (fileCheckFrequency).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "20s")]
    pub file_check_frequency: Duration,

    /// How often --manifest-url is polled (httpCheckFrequency).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "20s")]
    pub http_check_frequency: Duration,

    /// Number of pods that can run on this node (maxPods).
    #[arg(long, value_name = "N", default_value_t = 110)]
    pub max_pods: i64,

    /// Read-only HTTP port (/pods, /healthz); 0 disables (readOnlyPort).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub read_only_port: u16,

    /// Healthz port on --healthz-bind-address; 0 disables (healthzPort).
    #[arg(long, value_name = "PORT", default_value_t = 10248)]
    pub healthz_port: u16,

    /// Address of the healthz server (healthzBindAddress).
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub healthz_bind_address: std::net::IpAddr,

    /// Address the read-only server binds to.
    #[arg(long, value_name = "IP", default_value = "0.0.0.0")]
    pub address: std::net::IpAddr,

    /// Labels to add when registering the node, 'key=value,key2=value2'; repeatable (nodeLabels).
    /// Only labels a node may set itself (NodeRestriction) are accepted.
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub node_labels: Vec<String>,

    /// Taints the node registers with, 'key=value:Effect,key2:Effect'; repeatable (registerWithTaints).
    #[arg(long, value_name = "KEY=VALUE:EFFECT,...")]
    pub register_with_taints: Vec<String>,

    /// Resources reserved for Kubernetes system daemons, 'cpu=100m,memory=100Mi,ephemeral-storage=1Gi' (kubeReserved).
    #[arg(long, value_name = "RESOURCE=QUANTITY,...")]
    pub kube_reserved: Vec<String>,

    /// Resources reserved for non-Kubernetes system daemons, 'cpu=100m,memory=100Mi' (systemReserved).
    #[arg(long, value_name = "RESOURCE=QUANTITY,...")]
    pub system_reserved: Vec<String>,

    /// Create the kubepods QoS cgroup hierarchy and a cgroup per pod (cgroupsPerQOS).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub cgroups_per_qos: bool,

    /// Root cgroup of the pods' hierarchy, '/' by default (cgroupRoot).
    #[arg(long, value_name = "PATH", default_value = "/")]
    pub cgroup_root: String,

    /// How the kubelet names and manages cgroups: cgroupfs or systemd (cgroupDriver).
    #[arg(long, value_name = "DRIVER", default_value = "cgroupfs")]
    pub cgroup_driver: String,

    /// Hard eviction thresholds, 'memory.available<100Mi,nodefs.available<10%' (evictionHard).
    #[arg(long, value_name = "SIGNAL<QUANTITY,...", value_parser = parse_threshold_map,
          default_value = "imagefs.available<15%,imagefs.inodesFree<5%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%")]
    pub eviction_hard: String,

    /// Soft eviction thresholds, 'memory.available<1.5Gi' (evictionSoft); each needs a grace period.
    #[arg(long, value_name = "SIGNAL<QUANTITY,...", value_parser = parse_threshold_map, default_value = "")]
    pub eviction_soft: String,

    /// Grace periods of the soft thresholds, 'memory.available=1m30s' (evictionSoftGracePeriod).
    #[arg(long, value_name = "SIGNAL=DURATION,...", value_parser = parse_signal_map, default_value = "")]
    pub eviction_soft_grace_period: String,

    /// How much past a threshold to reclaim, 'memory.available=0Mi,nodefs.available=500Mi' (evictionMinimumReclaim).
    #[arg(long, value_name = "SIGNAL=QUANTITY,...", value_parser = parse_signal_map, default_value = "")]
    pub eviction_minimum_reclaim: String,

    /// How long a pressure condition stays after the pressure is gone (evictionPressureTransitionPeriod).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub eviction_pressure_transition_period: Duration,

    /// Maximum grace period (seconds) of pods evicted for a soft threshold (evictionMaxPodGracePeriod).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub eviction_max_pod_grace_period: i64,

    /// Maximum number of processes per pod; -1 unlimited (podPidsLimit).
    #[arg(long, value_name = "N", default_value_t = -1, allow_negative_numbers = true)]
    pub pod_max_pids: i64,

    /// Node allocatable levels to enforce, comma-separated: pods, or none (enforceNodeAllocatable).
    #[arg(long, value_name = "LEVEL,...", value_delimiter = ',', default_value = "pods")]
    pub enforce_node_allocatable: Vec<String>,

    /// Rotate a container's log when it reaches this size, e.g. 10Mi (containerLogMaxSize).
    #[arg(long, value_name = "QUANTITY", default_value = "10Mi")]
    pub container_log_max_size: String,

    /// Log files kept per container, current one included; at least 2 (containerLogMaxFiles).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub container_log_max_files: i64,

    /// Unsafe sysctls or sysctl patterns (ending in *) pods may set, comma-separated (allowedUnsafeSysctls).
    #[arg(long, value_name = "SYSCTL,...", value_delimiter = ',')]
    pub allowed_unsafe_sysctls: Vec<String>,

    /// How often the node status is computed and posted when changed (nodeStatusUpdateFrequency).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub node_status_update_frequency: Duration,

    /// Pull one image at a time (serializeImagePulls); with false,
    /// maxParallelImagePulls bounds the parallel pulls (none: unbounded).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub serialize_image_pulls: bool,

    /// Most image pulls in parallel when serializeImagePulls is false (maxParallelImagePulls).
    #[arg(long, value_name = "N")]
    pub max_parallel_image_pulls: Option<i32>,

    /// Register the node with the API server (registerNode).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub register_node: bool,

    /// DNS server IPs of pods with dnsPolicy ClusterFirst (clusterDNS), comma-separated.
    #[arg(long, value_name = "IP,...", value_delimiter = ',')]
    pub cluster_dns: Vec<String>,

    /// Cluster domain appended to pods' DNS search paths (clusterDomain).
    #[arg(long, value_name = "DOMAIN", default_value = "")]
    pub cluster_domain: String,

    /// Threads the pod workers run on besides the main one (actlet only):
    /// for nodes with thousands of pods; 0 keeps every actor on one thread.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub pod_worker_threads: usize,

    /// Pod sync steps in their runtime work (sandbox, images, containers) at
    /// once (actlet only); the rest wait their turn in arrival order, kills
    /// never wait; 0: unbounded.
    #[arg(long, value_name = "N", default_value_t = crate::pod_workers::DEFAULT_MAX_CONCURRENT_POD_SYNCS)]
    pub max_concurrent_pod_syncs: usize,

    /// Port of the authenticated HTTPS kubelet API (port); 0 disables it (actlet only).
    #[arg(long, value_name = "PORT", default_value_t = 10250)]
    pub port: u16,

    /// Serving certificate of the kubelet API (tlsCertFile); without it a self-signed one in `<root-dir>/pki`.
    #[arg(long, value_name = "FILE")]
    pub tls_cert_file: Option<PathBuf>,

    /// Key of --tls-cert-file (tlsPrivateKeyFile).
    #[arg(long, value_name = "FILE")]
    pub tls_private_key_file: Option<PathBuf>,

    /// Minimum TLS version, VersionTLS12 or VersionTLS13 (tlsMinVersion).
    #[arg(long, value_name = "VERSION")]
    pub tls_min_version: Option<String>,

    /// Allowed TLS 1.2 cipher suites, comma-separated IANA names (tlsCipherSuites).
    #[arg(long, value_name = "SUITE,...", value_delimiter = ',')]
    pub tls_cipher_suites: Vec<String>,

    /// Renew the client certificate (in --cert-dir, where --bootstrap-kubeconfig put it)
    /// with a CSR before it expires, and reconnect with the new one (rotateCertificates).
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub rotate_certificates: bool,

    /// Request the kubelet API's serving certificate from the cluster (CSR signer
    /// kubernetes.io/kubelet-serving) and rotate it before it expires (serverTLSBootstrap);
    /// replaces --tls-cert-file and the self-signed certificate. Needs a kubeconfig.
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub rotate_server_certificates: bool,

    /// CA bundle client certificates are verified against (authentication.x509.clientCAFile).
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// Allow anonymous requests to the kubelet API (authentication.anonymous.enabled).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub anonymous_auth: bool,

    /// Check bearer tokens with TokenReviews (authentication.webhook.enabled).
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub authentication_token_webhook: bool,

    /// How long TokenReview answers are cached (authentication.webhook.cacheTTL).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2m")]
    pub authentication_token_webhook_cache_ttl: Duration,

    /// AlwaysAllow or Webhook (authorization.mode).
    #[arg(long, value_name = "MODE", default_value = "AlwaysAllow")]
    pub authorization_mode: String,

    /// How long allowed SubjectAccessReview answers are cached (authorization.webhook.cacheAuthorizedTTL).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub authorization_webhook_cache_authorized_ttl: Duration,

    /// How long denied SubjectAccessReview answers are cached (authorization.webhook.cacheUnauthorizedTTL).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,

    /// Log verbosity (klog style 0-10); RUST_LOG overrides it.
    #[arg(long = "v", short = 'v', value_name = "LEVEL", default_value_t = 0)]
    pub verbosity: u8,

    /// Directory of KubeletConfiguration drop-ins: every `*.conf` below it, merged in lexical order over --config.
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,

    /// Feature gates, 'Name=true,Other=false'; repeatable (featureGates). Unknown gates are an error.
    #[arg(long, value_name = "NAME=BOOL,...")]
    pub feature_gates: Vec<String>,

    /// A file actlet holds an exclusive lock (flock) on while it runs.
    #[arg(long, value_name = "FILE")]
    pub lock_file: Option<PathBuf>,

    /// Exit when another process asks for the --lock-file (it must be set).
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub exit_on_lock_contention: bool,

    /// Run the static pods once, report their status and exit with their outcome (runOnce).
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    pub runonce: bool,

    /// Open-files limit (RLIMIT_NOFILE) actlet raises itself to (maxOpenFiles).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub max_open_files: i64,

    /// oom_score_adj of the actlet process, in [-1000, 1000] (oomScoreAdj).
    #[arg(long, value_name = "N", default_value_t = -999, allow_negative_numbers = true)]
    pub oom_score_adj: i32,

    /// Deprecated, accepted for compatibility: the sandbox image is the runtime's choice.
    #[arg(long, value_name = "IMAGE")]
    pub pod_infra_container_image: Option<String>,

    /// Kubeconfig for TLS bootstrap: when --kubeconfig is missing or its client certificate is
    /// expired, a client certificate is requested with these credentials (CSR signer
    /// kubernetes.io/kube-apiserver-client-kubelet), stored in --cert-dir and --kubeconfig written.
    #[arg(long, value_name = "FILE")]
    pub bootstrap_kubeconfig: Option<PathBuf>,

    /// Directory of the TLS certificates obtained by bootstrap (kubelet-client-current.pem);
    /// default `<root-dir>/pki`.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,
}

/// Checks a `signal<value,...` flag's shape (its content is validated with
/// the configuration).
pub fn parse_threshold_map(s: &str) -> Result<String, String> {
    crate::eviction::thresholds::flag_map(s, '<')
        .map(|_| s.to_string())
        .map_err(|e| format!("{e:?} is not of the form signal<value"))
}

/// Checks a `signal=value,...` flag's shape.
pub fn parse_signal_map(s: &str) -> Result<String, String> {
    crate::eviction::thresholds::flag_map(s, '=')
        .map(|_| s.to_string())
        .map_err(|e| format!("{e:?} is not of the form signal=value"))
}

/// Parses a Go-style duration such as `2m`, `20s`, `1m30s`, `100ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("invalid duration {s:?}: {e}"))
}

/// The tracing filter for a klog verbosity level: 0-1 info, 2-3 debug, 4+ trace
/// (for actlet's own modules; dependencies stay at warn).
pub fn log_filter(verbosity: u8) -> String {
    let level = match verbosity {
        0 | 1 => "info",
        2 | 3 => "debug",
        _ => "trace",
    };
    format!("warn,actlet={level}")
}

impl KubeletFlags {
    /// Makes `--root-dir` and `--cert-dir` absolute (against the working
    /// directory): paths under the root dir are handed to the runtime as
    /// mount sources (the termination-log file, volumes), and runc resolves
    /// a relative source against the container's bundle, not against ours.
    ///
    /// ```
    /// # use clap::Parser;
    /// let mut f = actlet::cli::Cli::parse_from(["actlet", "--root-dir", "state"]).flags;
    /// f.absolutize_paths();
    /// assert!(f.root_dir.is_absolute() && f.root_dir.ends_with("state"));
    /// ```
    pub fn absolutize_paths(&mut self) {
        let absolute = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        self.root_dir = absolute(&self.root_dir);
        if let Some(dir) = &self.cert_dir {
            self.cert_dir = Some(absolute(dir));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("actlet").chain(args.iter().copied()))
    }

    #[test]
    fn upstream_flag_names_parse() {
        let cli = parse(&[
            "--pod-manifest-path=/etc/kubernetes/manifests",
            "--container-runtime-endpoint",
            "unix:///run/x.sock",
            "--root-dir=/tmp/r",
            "--hostname-override=node-a",
            "--runtime-request-timeout=30s",
            "--v=4",
        ])
        .unwrap();
        let f = cli.flags;
        assert_eq!(f.pod_manifest_path.unwrap(), PathBuf::from("/etc/kubernetes/manifests"));
        assert_eq!(f.container_runtime_endpoint, "unix:///run/x.sock");
        assert_eq!(f.runtime_request_timeout, Duration::from_secs(30));
        assert_eq!(f.hostname_override.as_deref(), Some("node-a"));
        assert_eq!(f.verbosity, 4);
        assert!(cli.command.is_none());
    }

    #[test]
    fn defaults_are_upstreams() {
        let f = parse(&[]).unwrap().flags;
        assert_eq!(f.runtime_request_timeout, Duration::from_secs(120));
        assert_eq!(f.sync_frequency, Duration::from_secs(60));
        assert_eq!(f.file_check_frequency, Duration::from_secs(20));
        assert_eq!(f.root_dir, PathBuf::from("/var/lib/kubelet"));
        assert_eq!(f.healthz_port, 10248);
        assert_eq!(f.node_status_update_frequency, Duration::from_secs(10));
        assert!(f.register_node);
    }

    #[test]
    fn node_flags_parse_like_go_flags() {
        let f = parse(&[
            "--node-labels=a=b,c=d",
            "--node-labels",
            "e=f",
            "--register-with-taints=k=v:NoSchedule",
            "--kube-reserved=cpu=100m",
            "--system-reserved=memory=1Gi",
            "--register-node=false",
        ])
        .unwrap()
        .flags;
        assert_eq!(f.node_labels, vec!["a=b,c=d", "e=f"]);
        assert_eq!(f.register_with_taints, vec!["k=v:NoSchedule"]);
        assert_eq!(f.kube_reserved, vec!["cpu=100m"]);
        assert_eq!(f.system_reserved, vec!["memory=1Gi"]);
        assert!(!f.register_node);
        assert!(parse(&["--register-node"]).unwrap().flags.register_node);
    }

    #[test]
    fn bad_flag_is_a_usage_error_naming_it() {
        let err = parse(&["--no-such-flag"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--no-such-flag"));
        let err = parse(&["--sync-frequency=soon"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("soon"), "{err}");
    }

    #[test]
    fn subcommands_parse() {
        assert!(matches!(parse(&["version"]).unwrap().command, Some(Command::Version)));
        match parse(&["mock-cri", "--listen", "unix:///tmp/m.sock"]).unwrap().command {
            Some(Command::MockCri(a)) => assert_eq!(a.listen, "unix:///tmp/m.sock"),
            other => panic!("unexpected {other:?}"),
        }
    }
}
