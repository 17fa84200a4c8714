//! The real `actlet` binary started the way an operator's unit file starts
//! it: `--config` with kubeadm's file or a Go kubelet's file, unchanged, plus
//! the flags kubeadm puts in kubeadm-flags.env (the runtime endpoint; here the
//! mock CRI) and free ports (the reference files' ports may be taken on a
//! shared machine, which also shows flags beating the file). Each must come
//! up healthy; a bad file must stop it with exit code 2 naming field and file.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        // Only the process this test started, by PID.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubelet-config")
        .join(name)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

fn mock_cri(dir: &Path) -> (Proc, String) {
    let socket = dir.join("mock.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
        .args(["mock-cri", "--listen", &format!("unix://{}", socket.display())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn actlet mock-cri");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    (Proc(child), format!("unix://{}", socket.display()))
}

/// Starts actlet on `config` and waits for `ok` on /healthz; returns its log.
fn starts_healthy(config: &Path, extra: &[String]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let (_cri, endpoint) = mock_cri(tmp.path());
    let healthz = free_port();
    let log = tmp.path().join("actlet.log");
    let mut args = vec![
        format!("--config={}", config.display()),
        format!("--container-runtime-endpoint={endpoint}"),
        format!("--root-dir={}", tmp.path().join("root").display()),
        "--hostname-override=config-ref".into(),
        format!("--healthz-port={healthz}"),
    ];
    args.extend_from_slice(extra);
    let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn actlet");
    let mut actlet = Proc(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(body) = get(healthz, "/healthz")
            && body.starts_with("HTTP/1.")
            && body.contains(" 200 ")
            && body.ends_with("ok")
        {
            break;
        }
        if let Ok(Some(status)) = actlet.0.try_wait() {
            panic!(
                "actlet exited with {status}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no healthy /healthz in 30s: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(actlet);
    std::fs::read_to_string(&log).unwrap_or_default()
}

#[test]
fn kubeadm_generated_config_starts_actlet() {
    let log = starts_healthy(&fixture("kubeadm-v1.36.yaml"), &[]);
    assert!(
        log.contains("KubeletConfiguration"),
        "the effective config is logged once: {log}"
    );
    assert_eq!(log.matches("\"cgroupDriver\":\"systemd\"").count(), 1, "{log}");
    assert!(log.contains("cgroupDriver: not implemented by actlet"), "{log}");
}

#[test]
fn go_kubelet_reference_config_starts_actlet_with_its_read_only_port() {
    let ro = free_port();
    let log = starts_healthy(
        &fixture("go-kubelet-reference.yaml"),
        &[format!("--read-only-port={ro}")],
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
