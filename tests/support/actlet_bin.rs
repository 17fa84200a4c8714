//! Running the real `actlet` binary in tests: the mock CRI as its own
//! process, actlet on a free healthz port with its log in a file, and
//! waiting for `/healthz`. Every process is stopped by its PID when dropped.
//!
//! Included by the test files with `#[path]`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process, killed (by PID) and reaped when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free TCP port on 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on 127.0.0.1:port (HTTP/1.0): the whole response.
pub fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

/// Whether `/healthz` answers 200 `ok`.
pub fn healthy(port: u16) -> bool {
    get(port, "/healthz").is_some_and(|b| b.contains(" 200 ") && b.ends_with("ok"))
}

/// `actlet mock-cri` on `dir/mock.sock`; returns it and its endpoint.
pub fn mock_cri(dir: &Path) -> (Proc, String) {
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

/// An actlet process with its healthz port and log file.
pub struct Actlet {
    /// The process.
    pub proc: Proc,
    /// Its healthz port.
    pub healthz: u16,
    /// Its stderr.
    pub log: PathBuf,
}

impl Actlet {
    /// Starts actlet against `endpoint` with `args`, root dir and log under `dir/name`.
    pub fn start(dir: &Path, name: &str, endpoint: &str, args: &[String]) -> Self {
        let healthz = free_port();
        let base = dir.join(name);
        std::fs::create_dir_all(&base).unwrap();
        let log = base.join("actlet.log");
        let mut all = vec![
            format!("--container-runtime-endpoint={endpoint}"),
            format!("--root-dir={}", base.join("root").display()),
            format!("--hostname-override={name}"),
            format!("--healthz-port={healthz}"),
        ];
        all.extend_from_slice(args);
        let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
            .args(&all)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn actlet");
        Self {
            proc: Proc(child),
            healthz,
            log,
        }
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits up to `timeout` for `/healthz` to say ok; panics with the log otherwise.
    pub fn wait_healthy(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !healthy(self.healthz) {
            if let Ok(Some(status)) = self.proc.0.try_wait() {
                panic!("actlet exited with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "no healthy /healthz in {timeout:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to `timeout` for the process to exit; its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.proc.0.try_wait() {
                return status.code();
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
