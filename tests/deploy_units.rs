//! The packaged systemd units (deploy/systemd): the command line systemd
//! builds from kubeadm's drop-in — its environment, a kubeadm-flags.env as
//! `kubeadm join` writes it and /etc/default/kubelet — is one actlet accepts,
//! and it reads the kubeadm-generated config it points at.

use std::collections::BTreeMap;
use std::path::Path;

use actlet::cli::Cli;
use clap::Parser;

fn deploy(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/systemd").join(rel)).unwrap()
}

/// `KEY=value` or `KEY="value"` lines (systemd Environment= / EnvironmentFile= syntax, the subset used).
fn env_assignments(text: &str, out: &mut BTreeMap<String, String>) {
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let line = line.strip_prefix("Environment=").unwrap_or(line).trim_matches('"');
        if let Some((k, v)) = line.split_once('=')
            && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            out.insert(k.to_string(), v.trim_matches('"').to_string());
        }
    }
}

#[test]
fn kubeadm_drop_in_builds_a_command_line_actlet_accepts() {
    let dropin = deploy("kubelet.service.d/10-kubeadm.conf");
    let mut env = BTreeMap::new();
    env_assignments(&dropin, &mut env);
    // /var/lib/kubelet/kubeadm-flags.env as kubeadm writes it, and a user's /etc/default/kubelet
    env_assignments(
        "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n",
        &mut env,
    );
    env_assignments("KUBELET_EXTRA_ARGS=--node-ip=10.0.0.5\n", &mut env);
    let exec = dropin
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .next_back()
        .expect("an ExecStart= line");
    // systemd: an unquoted $VAR is split at whitespace into several arguments
    let argv: Vec<String> = exec
        .split_whitespace()
        .flat_map(|w| match w.strip_prefix('$') {
            Some(var) => env
                .get(var)
                .map(|v| v.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            None => vec![w.to_string()],
        })
        .collect();
    assert_eq!(argv[0], "/usr/bin/actlet");
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let f = cli.flags;
    assert_eq!(f.config.as_deref(), Some(Path::new("/var/lib/kubelet/config.yaml")));
    assert_eq!(f.kubeconfig.as_deref(), Some(Path::new("/etc/kubernetes/kubelet.conf")));
    assert_eq!(
        f.bootstrap_kubeconfig.as_deref(),
        Some(Path::new("/etc/kubernetes/bootstrap-kubelet.conf"))
    );
    assert_eq!(
        f.container_runtime_endpoint,
        "unix:///var/run/containerd/containerd.sock"
    );
    assert_eq!(f.node_ip.as_deref(), Some("10.0.0.5"));
    assert!(f.pod_infra_container_image.is_some());
}

#[test]
fn the_unit_runs_actlet_as_kubelet_service() {
    let unit = deploy("kubelet.service");
    assert!(unit.contains("ExecStart=/usr/bin/actlet\n"));
    assert!(unit.contains("Restart=always"));
    assert!(unit.contains("WantedBy=multi-user.target"));
}
