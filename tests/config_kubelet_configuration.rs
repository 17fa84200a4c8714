//! KubeletConfiguration files through the library entry point
//! (`kubelet_config_file::resolve`): upstream's precedence — defaults ← file
//! ← drop-ins ← flags given on the command line — as golden tables, the
//! reference files (kubeadm's and a Go kubelet's) accepted with exactly the
//! expected warnings, and bad values refused naming the field and the file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use actlet::KubeletConfig;
use actlet::cli::Cli;
use actlet::kubelet_config_file::{LoadError, Origin, Resolved, flags::explicit_flags, resolve};
use clap::{CommandFactory, FromArgMatches};

const HEAD: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubelet-config")
        .join(name)
}

fn run(args: &[&str]) -> Result<Resolved, LoadError> {
    let m = Cli::command()
        .try_get_matches_from(std::iter::once("actlet").chain(args.iter().copied()))
        .unwrap();
    let cli = Cli::from_arg_matches(&m).unwrap();
    let explicit: BTreeSet<String> = explicit_flags(&m);
    resolve(&cli.flags, &explicit)
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("{HEAD}{body}")).unwrap();
    p
}

#[test]
fn precedence_defaults_file_drop_ins_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(
        tmp.path(),
        "kubelet.yaml",
        "maxPods: 50\nsyncFrequency: 30s\nnodeStatusUpdateFrequency: 4s\nkubeAPIQPS: 10\nhttpCheckFrequency: 7s\n",
    );
    let dropins = tmp.path().join("kubelet.conf.d");
    std::fs::create_dir(&dropins).unwrap();
    let d10 = write(&dropins, "10-pods.conf", "maxPods: 60\nkubeAPIQPS: 11\n");
    let d20 = write(&dropins, "20-sync.conf", "syncFrequency: 45s\nkubeAPIQPS: 12\n");
    let r = run(&[
        "--config",
        file.to_str().unwrap(),
        "--config-dir",
        dropins.to_str().unwrap(),
        "--max-pods=70",
        // given on the command line with the default value: still wins over the file
        "--http-check-frequency=20s",
    ])
    .unwrap();
    let f = &r.flags;
    // (value, origin) per field: the golden table of precedence
    assert_eq!(
        (f.max_pods, r.origins.get("maxPods")),
        (70, Some(&Origin::Flag("--max-pods")))
    );
    assert_eq!(
        (f.sync_frequency, r.origins.get("syncFrequency")),
        (Duration::from_secs(45), Some(&Origin::DropIn(d20.clone())))
    );
    assert_eq!(
        (f.kube_api_qps, r.origins.get("kubeAPIQPS")),
        (12, Some(&Origin::DropIn(d20)))
    );
    assert_eq!(
        (
            f.node_status_update_frequency,
            r.origins.get("nodeStatusUpdateFrequency")
        ),
        (Duration::from_secs(4), Some(&Origin::File(file.clone())))
    );
    assert_eq!(
        (f.http_check_frequency, r.origins.get("httpCheckFrequency")),
        (Duration::from_secs(20), Some(&Origin::Flag("--http-check-frequency")))
    );
    assert_eq!(
        (f.file_check_frequency, r.origins.get("fileCheckFrequency")),
        (Duration::from_secs(20), None)
    );
    assert!(
        !r.origins.values().any(|o| *o == Origin::DropIn(d10.clone())),
        "10-pods.conf was overridden entirely"
    );
    // upstream: an explicit nodeStatusUpdateFrequency is also the report frequency
    let mut config = KubeletConfig::from_flags(&r.flags, "node-a").unwrap();
    r.apply_to(&mut config);
    assert_eq!(config.node_status_report_frequency, Duration::from_secs(4));
    assert_eq!(config.max_pods, 70);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn logging_verbosity_from_the_file_unless_v_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "k.yaml", "logging:\n  verbosity: 4\n");
    assert_eq!(run(&["--config", file.to_str().unwrap()]).unwrap().flags.verbosity, 4);
    assert_eq!(
        run(&["--config", file.to_str().unwrap(), "--v=1"])
            .unwrap()
            .flags
            .verbosity,
        1
    );
}

#[test]
fn no_config_file_means_flags_over_defaults() {
    let r = run(&["--max-pods=5", "--read-only-port=10255"]).unwrap();
    assert_eq!(r.flags.max_pods, 5);
    assert_eq!(r.flags.read_only_port, 10255);
    assert_eq!(r.flags.sync_frequency, Duration::from_secs(60));
    assert_eq!(r.effective.read_only_port, Some(10255));
    assert_eq!(r.configz()["kubeletconfig"]["maxPods"], 5);
}

#[test]
fn feature_gates_merge_flag_over_file_and_unknown_gates_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(
        tmp.path(),
        "k.yaml",
        "featureGates:\n  EventedPLEG: true\n  NodeLogQuery: true\n",
    );
    let r = run(&["--config", file.to_str().unwrap(), "--feature-gates=EventedPLEG=false"]).unwrap();
    let gates = r.effective.feature_gates.as_ref().unwrap();
    assert!(!gates["EventedPLEG"], "the flag wins");
    assert!(gates["NodeLogQuery"], "file gates not named by the flag stay");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("feature gate NodeLogQuery=true")),
        "{:?}",
        r.warnings
    );
    let e = run(&["--config", file.to_str().unwrap(), "--feature-gates=Bogus=true"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed to set feature gates (command-line flag --feature-gates): unrecognized feature gate: Bogus"
    );
    let bad = write(tmp.path(), "g.yaml", "featureGates:\n  SidecarContainers: false\n");
    let e = run(&["--config", bad.to_str().unwrap()]).unwrap_err().to_string();
    assert!(e.contains("locked to true") && e.contains("g.yaml"), "{e}");
}

#[test]
fn rejected_values_name_the_field_and_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    for (body, needle) in [
        (
            "maxPods: -1\n",
            "invalid configuration: maxPods (--max-pods) -1 must not be a negative number (maxPods set in",
        ),
        (
            "oomScoreAdj: -1001\n",
            "oomScoreAdj (--oom-score-adj) -1001 must be between -1000 and 1000, inclusive",
        ),
        (
            "healthzPort: 99999\n",
            "healthzPort (--healthz-port) 99999 must be between 1 and 65535, inclusive",
        ),
        (
            "registerWithTaints:\n- key: a\n  effect: Sometimes\n",
            "invalid configuration: registerWithTaints:",
        ),
        ("kubeReserved:\n  cpu: lots\n", "invalid configuration: kubeReserved:"),
        (
            "staticPodURL: https://example.com/pods\n",
            "only http:// URLs are supported by actlet",
        ),
        ("syncFrequency: -5s\n", "syncFrequency -5s must be greater than zero"),
        (
            "imageGCHighThresholdPercent: 50\nimageGCLowThresholdPercent: 60\n",
            "must be less than imageGCHighThresholdPercent",
        ),
    ] {
        let file = write(tmp.path(), "bad.yaml", body);
        let e = run(&["--config", file.to_str().unwrap()]).unwrap_err().to_string();
        assert!(e.contains(needle), "{body:?}: {e}");
        assert!(e.contains(file.to_str().unwrap()), "names the file: {e}");
    }
    // a type error names the field and the file
    let file = write(tmp.path(), "type.yaml", "maxPods: many\n");
    let e = run(&["--config", file.to_str().unwrap()]).unwrap_err().to_string();
    assert!(e.contains("maxPods") && e.contains("type.yaml"), "{e}");
    // a flag's bad value names the flag
    let e = run(&["--oom-score-adj=5000"]).unwrap_err().to_string();
    assert!(
        e.contains("oomScoreAdj set in command-line flag --oom-score-adj"),
        "{e}"
    );
}

#[test]
fn kubeadm_config_is_accepted_with_one_warning_per_unhonoured_setting() {
    let file = fixture("kubeadm-v1.36.yaml");
    let r = run(&["--config", file.to_str().unwrap()]).unwrap();
    assert_eq!(
        r.flags.pod_manifest_path.as_deref(),
        Some(Path::new("/etc/kubernetes/manifests"))
    );
    assert_eq!(r.flags.healthz_port, 10248);
    assert_eq!(
        r.flags.sync_frequency,
        Duration::from_secs(60),
        "0s is upstream's unset"
    );
    assert_eq!(
        r.flags.container_runtime_endpoint,
        "unix:///run/containerd/containerd.sock"
    );
    let named: BTreeSet<&str> = r.warnings.iter().map(|w| w.split(':').next().unwrap()).collect();
    let expected: BTreeSet<&str> = ["resolvConf"].into();
    assert_eq!(r.flags.cgroup_driver, "systemd", "cgroupDriver is honoured");
    assert!(r.flags.rotate_certificates, "rotateCertificates is honoured");
    // honoured: the API server's auth and the cluster DNS
    assert!(!r.flags.anonymous_auth && r.flags.authentication_token_webhook);
    assert_eq!(r.flags.authorization_mode, "Webhook");
    assert_eq!(
        r.flags.client_ca_file.as_deref(),
        Some(Path::new("/etc/kubernetes/pki/ca.crt"))
    );
    assert_eq!(r.flags.cluster_dns, ["10.96.0.10"]);
    assert_eq!(r.flags.cluster_domain, "cluster.local");
    assert_eq!(named, expected, "{:#?}", r.warnings);
    assert_eq!(r.warnings.len(), expected.len(), "one warning each");
}

#[test]
fn go_kubelet_reference_config_is_accepted_and_honoured() {
    let file = fixture("go-kubelet-reference.yaml");
    let r = run(&["--config", file.to_str().unwrap()]).unwrap();
    assert_eq!(r.flags.read_only_port, 10255);
    assert_eq!((r.flags.kube_api_qps, r.flags.kube_api_burst), (25, 50));
    assert_eq!(r.flags.runtime_request_timeout, Duration::from_secs(900));
    assert_eq!(r.flags.kube_reserved, vec!["cpu=100m", "memory=256Mi"]);
    let config = KubeletConfig::from_flags(&r.flags, "node-a").unwrap();
    assert_eq!(config.read_only_addr.unwrap().port(), 10255);
    assert_eq!(config.kube_reserved.memory_bytes, 256 << 20);
    let named: BTreeSet<&str> = r.warnings.iter().map(|w| w.split(':').next().unwrap()).collect();
    assert_eq!(r.flags.authorization_mode, "Webhook");
    assert!(!r.flags.anonymous_auth);
    assert_eq!(config.cgroups.naming.driver, actlet::cm::CgroupDriver::Systemd);
    assert_eq!(
        (
            config.container_log_policy.max_size,
            config.container_log_policy.max_files
        ),
        (50 << 20, 5)
    );
    assert!(
        named.contains("volumePluginDir"),
        "volumePluginDir warned: {:#?}",
        r.warnings
    );
    assert!(!named.contains("rotateCertificates"), "rotateCertificates is honoured");
    assert!(r.flags.rotate_certificates);
    assert!(!config.eviction.thresholds.is_empty(), "evictionHard honoured");
    for honoured_or_default in [
        "authentication",
        "clusterDNS",
        "readOnlyPort",
        "kubeAPIQPS",
        "maxPods",
        "authorization",
        "cgroupsPerQOS",
        "featureGates",
        "containerLogMaxSize",
        "containerLogMaxFiles",
        "serializeImagePulls",
    ] {
        assert!(
            !named.contains(honoured_or_default),
            "{honoured_or_default}: {:#?}",
            r.warnings
        );
    }
    // the effective configuration is logged and served masked
    assert_eq!(r.configz()["kubeletconfig"]["cgroupDriver"], "systemd");
}

/// The eviction settings reach the kubelet from the file and from flags
/// (`evictionHard` replaces the defaults unless `mergeDefaultEvictionSettings`),
/// and bad thresholds are refused naming the field and the file.
#[test]
fn eviction_settings_from_file_and_flags() {
    use actlet::eviction::{Signal, Value};
    let tmp = tempfile::tempdir().unwrap();
    let config = |r: &Resolved| {
        let mut c = KubeletConfig::from_flags(&r.flags, "node-a").unwrap();
        r.apply_to(&mut c);
        c.eviction
    };
    // Defaults: upstream's five hard thresholds, 5m transition.
    let e = config(&run(&[]).unwrap());
    let mut signals: Vec<Signal> = e.thresholds.iter().map(|t| t.signal).collect();
    signals.sort();
    assert!(signals.contains(&Signal::MemoryAvailable) && signals.contains(&Signal::ImageFsAvailable));
    assert!(
        signals.contains(&Signal::AllocatableMemoryAvailable),
        "enforceNodeAllocatable=pods adds the twin"
    );
    assert_eq!(e.pressure_transition_period, Duration::from_secs(300));

    let file = write(
        tmp.path(),
        "evict.yaml",
        "evictionHard:\n  memory.available: 1Gi\nevictionSoft:\n  nodefs.available: 20%\n\
         evictionSoftGracePeriod:\n  nodefs.available: 1m30s\nevictionMinimumReclaim:\n  memory.available: 500Mi\n\
         evictionPressureTransitionPeriod: 1m\nevictionMaxPodGracePeriod: 60\nenforceNodeAllocatable: []\n",
    );
    let e = config(&run(&["--config", file.to_str().unwrap()]).unwrap());
    assert_eq!(
        e.thresholds.len(),
        2,
        "evictionHard replaces the defaults: {:?}",
        e.thresholds
    );
    let mem = e
        .thresholds
        .iter()
        .find(|t| t.signal == Signal::MemoryAvailable)
        .unwrap();
    assert_eq!(
        (mem.value, mem.min_reclaim),
        (Value::Quantity(1 << 30), Some(Value::Quantity(500 << 20)))
    );
    let soft = e
        .thresholds
        .iter()
        .find(|t| t.signal == Signal::NodeFsAvailable)
        .unwrap();
    assert_eq!(
        (soft.value, soft.grace_period),
        (Value::Percentage(0.2), Duration::from_secs(90))
    );
    assert_eq!(
        (e.pressure_transition_period, e.max_pod_grace_period),
        (Duration::from_secs(60), 60)
    );

    // mergeDefaultEvictionSettings keeps the defaults for keys not given.
    let file = write(
        tmp.path(),
        "merge.yaml",
        "evictionHard:\n  memory.available: 1Gi\nmergeDefaultEvictionSettings: true\nenforceNodeAllocatable: []\n",
    );
    let e = config(&run(&["--config", file.to_str().unwrap()]).unwrap());
    assert_eq!(e.thresholds.len(), 5, "{:?}", e.thresholds);

    // The flag replaces the default thresholds.
    let e = config(&run(&["--eviction-hard=pid.available<1000"]).unwrap());
    assert_eq!(e.thresholds.len(), 1);
    assert_eq!(e.thresholds[0].signal, Signal::PidAvailable);

    for (body, needle) in [
        (
            "evictionHard:\n  memory.free: 1Gi\n",
            "evictionHard: unsupported eviction signal memory.free",
        ),
        (
            "evictionSoft:\n  memory.available: 1Gi\n",
            "grace period must be specified for the soft eviction threshold memory.available",
        ),
        (
            "evictionHard:\n  nodefs.available: 120%\n",
            "eviction percentage threshold nodefs.available must be <= 100%: 120%",
        ),
    ] {
        let file = write(tmp.path(), "bad-evict.yaml", body);
        let e = run(&["--config", file.to_str().unwrap()]).unwrap_err().to_string();
        assert!(e.contains(needle), "{body:?}: {e}");
        assert!(e.contains(file.to_str().unwrap()), "names the file: {e}");
    }
    let m = Cli::command().try_get_matches_from(["actlet", "--eviction-hard=memory.available=1Gi"]);
    assert!(m.unwrap_err().to_string().contains("is not of the form signal<value"));
}

/// The graceful shutdown settings reach the kubelet from the file.
#[test]
fn shutdown_settings_from_the_file() {
    use actlet::nodeshutdown::PriorityPeriod;
    let tmp = tempfile::tempdir().unwrap();
    let config = |body: &str| {
        let file = write(tmp.path(), "shutdown.yaml", body);
        let r = run(&["--config", file.to_str().unwrap()]).unwrap();
        assert!(
            !r.warnings.iter().any(|w| w.starts_with("shutdownGracePeriod")),
            "{:?}",
            r.warnings
        );
        let mut c = KubeletConfig::from_flags(&r.flags, "node-a").unwrap();
        r.apply_to(&mut c);
        c.shutdown
    };
    assert!(!config("maxPods: 10\n").enabled(), "off by default");
    let s = config("shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n");
    assert_eq!(
        s.periods,
        vec![
            PriorityPeriod {
                priority: 0,
                grace_period: Duration::from_secs(20)
            },
            PriorityPeriod {
                priority: 2_000_000_000,
                grace_period: Duration::from_secs(10)
            },
        ]
    );
    let s = config(
        "shutdownGracePeriodByPodPriority:\n- {priority: 100000, shutdownGracePeriodSeconds: 5}\n\
         - {priority: 0, shutdownGracePeriodSeconds: 60}\n",
    );
    assert_eq!(
        s.periods[0],
        PriorityPeriod {
            priority: 0,
            grace_period: Duration::from_secs(60)
        }
    );
    assert_eq!(s.periods[1].priority, 100000, "sorted lowest first");
}
