//! The real `actlet` binary started the way an operator's unit file starts
//! it: `--config` with kubeadm's file or a Go kubelet's file, unchanged, plus
//! the flags kubeadm puts in kubeadm-flags.env (the runtime endpoint; here the
//! mock CRI) and free ports (the reference files' ports may be taken on a
//! shared machine, which also shows flags beating the file). Each must come
//! up healthy; a bad file must stop it with exit code 2 naming field and file.

#[path = "support/actlet_bin.rs"]
mod bin;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use bin::{Actlet, free_port, get, mock_cri};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubelet-config")
        .join(name)
}

/// Starts actlet on `config` and waits for `ok` on /healthz; returns its log
/// and what `check` saw while it ran.
fn starts_healthy<T>(config: &Path, extra: &[String], check: impl FnOnce() -> T) -> (String, T) {
    let tmp = tempfile::tempdir().unwrap();
    let (_cri, endpoint) = mock_cri(tmp.path());
    // Both files name the cluster CA at /etc/kubernetes/pki/ca.crt, which a
    // real node has; here a CA of the test's own stands in (a flag, as the
    // node's kubeadm-flags.env would). Both turn on webhook authn/authz,
    // which need an API server client (upstream refuses to start without one
    // too); with no API server here, flags turn them off, and the API port
    // is a free one.
    let ca = tmp.path().join("ca.crt");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let mut args = vec![
        format!("--config={}", config.display()),
        format!("--client-ca-file={}", ca.display()),
        format!("--port={}", free_port()),
        "--authentication-token-webhook=false".to_string(),
        "--authorization-mode=AlwaysAllow".to_string(),
    ];
    args.extend_from_slice(extra);
    let mut actlet = Actlet::start(tmp.path(), "config-ref", &endpoint, &args);
    actlet.wait_healthy(Duration::from_secs(30));
    let seen = check();
    (actlet.log(), seen)
}

#[test]
fn kubeadm_generated_config_starts_actlet() {
    let (log, ()) = starts_healthy(&fixture("kubeadm-v1.36.yaml"), &[], || ());
    assert!(
        log.contains("KubeletConfiguration"),
        "the effective config is logged once: {log}"
    );
    assert_eq!(log.matches("\"cgroupDriver\":\"systemd\"").count(), 1, "{log}");
    assert!(
        !log.contains("cgroupDriver: not implemented"),
        "cgroupDriver is honoured: {log}"
    );
}

#[test]
fn go_kubelet_reference_config_starts_actlet_with_its_read_only_port() {
    let ro = free_port();
    let (log, pods) = starts_healthy(
        &fixture("go-kubelet-reference.yaml"),
        &[format!("--read-only-port={ro}")],
        || get(ro, "/pods").unwrap_or_default(),
    );
    assert!(
        pods.contains("\"kind\":\"PodList\""),
        "readOnlyPort serves /pods: {pods}"
    );
    assert!(log.contains("volumePluginDir: not implemented by actlet"), "{log}");
}

fn run_to_exit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_actlet"))
        .args(args)
        .output()
        .expect("run actlet")
}

#[test]
fn a_bad_value_exits_2_naming_field_and_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: -3\n",
    )
    .unwrap();
    let out = run_to_exit(&["--config", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("maxPods (--max-pods) -3 must not be a negative number"),
        "{stderr}"
    );
    assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
}
