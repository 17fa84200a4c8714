//! The process-level flags on the real binary (mock CRI): `--lock-file`
//! with and without `--exit-on-lock-contention` between two actlets,
//! `--runonce` exit codes, and the process's own `oom_score_adj`.

#[path = "support/actlet_bin.rs"]
mod bin;

use std::time::Duration;

use bin::{Actlet, healthy, mock_cri};

#[test]
fn lock_contention_hands_the_node_to_the_newcomer() {
    let tmp = tempfile::tempdir().unwrap();
    let (_cri, ep) = mock_cri(tmp.path());
    let lock = format!("--lock-file={}", tmp.path().join("kubelet.lock").display());
    let mut a = Actlet::start(
        tmp.path(),
        "lock-a",
        &ep,
        &[lock.clone(), "--exit-on-lock-contention".into()],
    );
    a.wait_healthy(Duration::from_secs(30));
    // the process's own OOM score (upstream -999); lowering it needs root
    // (in a container without CAP_SYS_RESOURCE even root cannot: then a warning, as upstream)
    let adj = std::fs::read_to_string(format!("/proc/{}/oom_score_adj", a.proc.0.id())).unwrap();
    assert!(
        adj.trim() == "-999" || a.log().contains("failed to set oom_score_adj to -999"),
        "oom_score_adj {adj}: {}",
        a.log()
    );
    let mut b = Actlet::start(tmp.path(), "lock-b", &ep, &[lock]);
    // b opening the lock file makes a stop (SIGTERM path: exit 0), then b takes over
    assert_eq!(a.wait_exit(Duration::from_secs(30)), Some(0), "{}", a.log());
    assert!(a.log().contains("lock file contention"), "{}", a.log());
    b.wait_healthy(Duration::from_secs(30));
}

#[test]
fn without_exit_on_contention_the_second_actlet_waits_for_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let (_cri, ep) = mock_cri(tmp.path());
    let lock = format!("--lock-file={}", tmp.path().join("kubelet.lock").display());
    let mut a = Actlet::start(tmp.path(), "wait-a", &ep, std::slice::from_ref(&lock));
    a.wait_healthy(Duration::from_secs(30));
    let mut b = Actlet::start(tmp.path(), "wait-b", &ep, &[lock]);
    std::thread::sleep(Duration::from_secs(2));
    assert!(!healthy(b.healthz), "b must wait while a holds the lock");
    assert!(b.log().contains("acquiring file lock"), "{}", b.log());
    assert!(healthy(a.healthz), "a keeps running");
    let pid = nix::unistd::Pid::from_raw(a.proc.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(a.wait_exit(Duration::from_secs(30)), Some(0));
    b.wait_healthy(Duration::from_secs(30));
}

fn runonce(manifest: &str) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let (_cri, ep) = mock_cri(tmp.path());
    let pods = tmp.path().join("manifests");
    std::fs::create_dir(&pods).unwrap();
    std::fs::write(pods.join("pod.yaml"), manifest).unwrap();
    let mut a = Actlet::start(
        tmp.path(),
        "runonce",
        &ep,
        &[format!("--pod-manifest-path={}", pods.display()), "--runonce".into()],
    );
    let code = a.wait_exit(Duration::from_secs(60));
    (code, a.log())
}

#[test]
fn runonce_exits_0_once_the_static_pods_run() {
    let (code, log) = runonce(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers:\n  - name: c\n    image: 'busybox:1.36'\n    command: [sh, -c, 'sleep 3600']\n",
    );
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("started pod") && log.contains("web-runonce"), "{log}");
}

#[test]
fn runonce_exits_1_when_a_static_pod_fails() {
    let (code, log) = runonce(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, namespace: default}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: 'busybox:1.36'\n    command: [sh, -c, 'exit 3']\n",
    );
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("runonce failed: 1 out of 1 pods failed to run"), "{log}");
}

#[test]
fn version_is_in_upstreams_format_for_kubeadm() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_actlet"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    // kubeadm's preflight: ^\s*Kubernetes v(\d+\.\d+\.\d+[-0-9a-zA-Z_.+]*)\s*$
    let v = line
        .trim()
        .strip_prefix("Kubernetes v")
        .unwrap_or_else(|| panic!("{line:?}"));
    let (core, suffix) = v.split_at(v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len()));
    assert_eq!(
        core.split('.')
            .filter(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            .count(),
        3,
        "{v}"
    );
    assert!(
        suffix.chars().all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c)),
        "{v}"
    );
}

/// SIGUSR1 tells the daemon the node is shutting down (graceful node
/// shutdown configured in the file): the static pod is terminated with
/// upstream's reason and the process keeps running.
#[test]
fn sigusr1_shuts_the_node_down_gracefully() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let tmp = tempfile::tempdir().unwrap();
    let (_cri, ep) = mock_cri(tmp.path());
    let pods = tmp.path().join("manifests");
    std::fs::create_dir(&pods).unwrap();
    std::fs::write(
        pods.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n  containers:\n  - name: c\n    image: 'busybox:1.36'\n    command: [sh, -c, 'sleep 3600']\n",
    )
    .unwrap();
    let config = tmp.path().join("kubelet.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 5s\n\
         authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n",
    )
    .unwrap();
    let port = bin::free_port();
    let mut a = Actlet::start(
        tmp.path(),
        "shutdown",
        &ep,
        &[
            format!("--config={}", config.display()),
            format!("--pod-manifest-path={}", pods.display()),
            format!("--read-only-port={port}"),
            format!("--port={}", bin::free_port()),
            "--address=127.0.0.1".into(),
        ],
    );
    a.wait_healthy(Duration::from_secs(30));
    let phase =
        |want: &str| {
            bin::get(port, "/pods").is_some_and(|response| {
                let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
                v["items"].as_array().into_iter().flatten().any(|p| {
                    p["status"]["phase"] == want && (want != "Failed" || p["status"]["reason"] == "Terminated")
                })
            })
        };
    let wait = |want: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !phase(want) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {want} pod in {:?}: {}",
                bin::get(port, "/pods"),
                a.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait("Running");
    kill(Pid::from_raw(a.proc.0.id() as i32), Signal::SIGUSR1).unwrap();
    wait("Failed");
    assert!(a.log().contains("received shutdown signal from USR1"), "{}", a.log());
    assert!(
        a.proc.0.try_wait().unwrap().is_none(),
        "actlet keeps running: {}",
        a.log()
    );
}
