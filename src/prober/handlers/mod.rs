//! The probe handlers (upstream `pkg/probe/{exec,http,tcp,grpc}` and
//! `prober.runProbe`): each returns the raw result and its output, or an
//! error when the probe could not be run at all. Every handler is bounded by
//! the probe's timeout and awaits only async I/O, so it never blocks an actor.

pub mod exec;
pub mod grpc;
pub mod http;
pub mod tcp;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::cri::SharedRuntime;

/// How many bytes of a probe's output are kept (upstream `maxReadLength`,
/// `maxRespBodyLength`: 10 KiB).
pub const MAX_OUTPUT: usize = 10 * 1024;

/// `kube-probe/<major>.<minor>`: the User-Agent of HTTP and gRPC probes.
pub const PROBE_USER_AGENT: &str = "kube-probe/1.36";

/// A raw probe result (upstream `probe.Result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raw {
    /// Passed.
    Success,
    /// Passed with a warning (an HTTP redirect not followed).
    Warning,
    /// Failed.
    Failure,
    /// Could not tell.
    Unknown,
}

/// What a handler returns when it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The result.
    pub result: Raw,
    /// Its output (command output, response body or error text).
    pub output: String,
}

impl Answer {
    /// An answer.
    pub fn new(result: Raw, output: impl Into<String>) -> Self {
        Self {
            result,
            output: output.into(),
        }
    }
}

/// What a probe needs to reach its container.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// The pod IP (default host of httpGet / tcpSocket / grpc).
    pub pod_ip: Option<&'a str>,
    /// The container spec (named ports, env for `$(VAR)` in commands).
    pub container: &'a Container,
    /// The container's runtime id (exec).
    pub container_id: &'a str,
    /// The runtime (exec).
    pub runtime: &'a SharedRuntime,
    /// `namespace/name` of the pod, for error texts (upstream `format.Pod`).
    pub pod_name: &'a str,
}

/// Keeps at most [`MAX_OUTPUT`] bytes, cut at a character boundary.
pub fn cap_output(mut bytes: Vec<u8>) -> String {
    bytes.truncate(MAX_OUTPUT);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Upstream `probe.ResolveContainerPort`: a number, or a named container
/// port, or a number written as a string; 1–65535.
///
/// ```
/// use actlet::prober::handlers::resolve_port;
/// use k8s_openapi::api::core::v1::{Container, ContainerPort};
/// use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
/// let c = Container { ports: Some(vec![ContainerPort { name: Some("http".into()), container_port: 8080, ..Default::default() }]), ..Default::default() };
/// assert_eq!(resolve_port(&IntOrString::String("http".into()), &c), Ok(8080));
/// assert_eq!(resolve_port(&IntOrString::String("81".into()), &c), Ok(81));
/// assert_eq!(resolve_port(&IntOrString::Int(0), &c), Err("invalid port number: 0".into()));
/// assert_eq!(resolve_port(&IntOrString::String("web".into()), &c), Err("strconv.Atoi: parsing \"web\": invalid syntax".into()));
/// ```
pub fn resolve_port(port: &IntOrString, container: &Container) -> Result<u16, String> {
    let n: i64 = match port {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(name) => {
            let named = container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()));
            match named {
                Some(p) => i64::from(p.container_port),
                None => name
                    .parse::<i64>()
                    .map_err(|_| format!("strconv.Atoi: parsing {name:?}: invalid syntax"))?,
            }
        }
    };
    u16::try_from(n)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("invalid port number: {n}"))
}

/// `host:port`, with brackets around an IPv6 host (Go `net.JoinHostPort`).
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// How many handlers `probe` names (exactly one is valid).
pub fn handler_count(probe: &Probe) -> usize {
    [
        probe.exec.is_some(),
        probe.http_get.is_some(),
        probe.tcp_socket.is_some(),
        probe.grpc.is_some(),
    ]
    .into_iter()
    .filter(|x| *x)
    .count()
}

/// Upstream `runProbe`: runs the probe's handler once.
///
/// # Errors
/// The probe could not run (no handler, a bad port, a CRI failure): the
/// text says why; upstream throws such a result away.
pub async fn run_once(probe: &Probe, target: Target<'_>, timeout: Duration) -> Result<Answer, String> {
    let pod_ip = target.pod_ip.unwrap_or_default();
    if let Some(e) = &probe.exec {
        let env = |name: &str| {
            let envs = target.container.env.iter().flatten();
            envs.filter(|e| e.value_from.is_none())
                .find(|e| e.name == name)
                .map(|e| e.value.clone().unwrap_or_default())
        };
        let cmd = e
            .command
            .iter()
            .flatten()
            .map(|arg| crate::kuberuntime::expansion::expand(arg, env))
            .collect();
        return exec::probe(target.runtime, target.container_id, cmd, timeout).await;
    }
    if let Some(h) = &probe.http_get {
        let request = http::HttpRequest::new(h, target.container, pod_ip, PROBE_USER_AGENT)?;
        return Ok(http::probe(http::probe_client(), &request, timeout).await);
    }
    if let Some(t) = &probe.tcp_socket {
        let port = resolve_port(&t.port, target.container)?;
        let host = t.host.as_deref().filter(|h| !h.is_empty()).unwrap_or(pod_ip);
        return Ok(tcp::probe(host, port, timeout).await);
    }
    if let Some(g) = &probe.grpc {
        let port = u16::try_from(g.port)
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("invalid port number: {}", g.port))?;
        let service = g.service.clone().unwrap_or_default();
        return Ok(grpc::probe(pod_ip, port, &service, timeout).await);
    }
    Err(format!(
        "missing probe handler for {}:{}",
        target.pod_name, target.container.name
    ))
}

/// Upstream `runProbeWithRetries`: up to three tries while the probe cannot
/// run; the last error otherwise.
///
/// # Errors
/// As [`run_once`], when every try failed to run.
pub async fn run_with_retries(probe: &Probe, target: Target<'_>, timeout: Duration) -> Result<Answer, String> {
    let mut last = Err(String::new());
    for _ in 0..3 {
        last = run_once(probe, target, timeout).await;
        if last.is_ok() {
            break;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_capped_at_ten_kib() {
        assert_eq!(cap_output(vec![b'a'; 20_000]).len(), MAX_OUTPUT);
        assert_eq!(cap_output(b"ok".to_vec()), "ok");
    }

    #[test]
    fn ipv6_hosts_get_brackets() {
        assert_eq!(join_host_port("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }

    #[test]
    fn handlers_are_counted() {
        let mut p = Probe::default();
        assert_eq!(handler_count(&p), 0);
        p.exec = Some(Default::default());
        p.tcp_socket = Some(Default::default());
        assert_eq!(handler_count(&p), 2);
    }
}
