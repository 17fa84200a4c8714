//! Validation of probes and lifecycle hooks (upstream `validateProbe`,
//! `validateHandler`, `validateLifecycle` and the per-container rules of
//! `validateContainers` / `validateInitContainers`).

use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::validate::FieldError;

const NEGATIVE: &str = "must be greater than or equal to 0";

fn nonnegative(path: String, value: Option<i32>) -> Result<(), FieldError> {
    match value {
        Some(v) if v < 0 => Err(FieldError::new(path, format!("Invalid value: {v}: {NEGATIVE}"))),
        _ => Ok(()),
    }
}

fn port(path: String, port: &IntOrString) -> Result<(), FieldError> {
    match port {
        IntOrString::Int(p) if !(1..=65535).contains(p) => Err(FieldError::new(
            path,
            format!("Invalid value: {p}: must be between 1 and 65535, inclusive"),
        )),
        IntOrString::String(name) if name.is_empty() => Err(FieldError::new(path, "Required value")),
        _ => Ok(()),
    }
}

/// Upstream `validateHandler`: exactly one handler type.
fn handlers(path: &str, named: &[(&str, bool)]) -> Result<(), FieldError> {
    let mut set = named.iter().filter(|(_, present)| *present);
    if set.next().is_none() {
        return Err(FieldError::new(path, "Required value: must specify a handler type"));
    }
    if let Some((second, _)) = set.next() {
        return Err(FieldError::new(
            format!("{path}.{second}"),
            "Forbidden: may not specify more than 1 handler type",
        ));
    }
    Ok(())
}

fn probe(path: &str, p: &Probe) -> Result<(), FieldError> {
    let named = [
        ("exec", p.exec.is_some()),
        ("httpGet", p.http_get.is_some()),
        ("tcpSocket", p.tcp_socket.is_some()),
        ("grpc", p.grpc.is_some()),
    ];
    handlers(path, &named)?;
    if let Some(h) = &p.http_get {
        port(format!("{path}.httpGet.port"), &h.port)?;
    }
    if let Some(t) = &p.tcp_socket {
        port(format!("{path}.tcpSocket.port"), &t.port)?;
    }
    if let Some(g) = &p.grpc {
        port(format!("{path}.grpc.port"), &IntOrString::Int(g.port))?;
    }
    let fields = [
        ("initialDelaySeconds", p.initial_delay_seconds),
        ("timeoutSeconds", p.timeout_seconds),
        ("periodSeconds", p.period_seconds),
        ("successThreshold", p.success_threshold),
        ("failureThreshold", p.failure_threshold),
    ];
    for (name, value) in fields {
        nonnegative(format!("{path}.{name}"), value)?;
    }
    match p.termination_grace_period_seconds {
        Some(g) if g <= 0 => Err(FieldError::new(
            format!("{path}.terminationGracePeriodSeconds"),
            format!("Invalid value: {g}: must be greater than 0"),
        )),
        _ => Ok(()),
    }
}

fn hook(path: &str, h: &LifecycleHandler) -> Result<(), FieldError> {
    let named = [
        ("exec", h.exec.is_some()),
        ("httpGet", h.http_get.is_some()),
        ("tcpSocket", h.tcp_socket.is_some()),
        ("sleep", h.sleep.is_some()),
    ];
    handlers(path, &named)?;
    if let Some(get) = &h.http_get {
        port(format!("{path}.httpGet.port"), &get.port)?;
    }
    match &h.sleep {
        Some(s) if s.seconds < 0 => Err(FieldError::new(
            format!("{path}.sleep.seconds"),
            format!("Invalid value: {}: {NEGATIVE}", s.seconds),
        )),
        _ => Ok(()),
    }
}

/// Validates the probes and hooks of the container at `path`; `init` for
/// an init container (only sidecars may have probes).
pub fn validate_probes_and_hooks(path: &str, c: &Container, init: bool) -> Result<(), FieldError> {
    let sidecar = c.restart_policy.as_deref() == Some("Always");
    let probes = [
        ("livenessProbe", &c.liveness_probe),
        ("readinessProbe", &c.readiness_probe),
        ("startupProbe", &c.startup_probe),
    ];
    for (name, p) in probes {
        let Some(p) = p else { continue };
        let at = format!("{path}.{name}");
        if init && !sidecar {
            return Err(FieldError::new(
                at,
                "Forbidden: may not be set for init containers without restartPolicy=Always",
            ));
        }
        probe(&at, p)?;
        if name != "readinessProbe" && p.success_threshold.is_some_and(|t| t != 1) {
            let t = p.success_threshold.unwrap_or_default();
            return Err(FieldError::new(
                format!("{at}.successThreshold"),
                format!("Invalid value: {t}: must be 1"),
            ));
        }
    }
    let lifecycle = c.lifecycle.iter();
    for (name, h) in lifecycle.flat_map(|l| [("postStart", &l.post_start), ("preStop", &l.pre_stop)]) {
        if let Some(h) = h {
            hook(&format!("{path}.lifecycle.{name}"), h)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(yaml: &str, init: bool) -> Result<(), String> {
        let c: Container = serde_yaml_ng::from_str(yaml).unwrap();
        validate_probes_and_hooks("spec.containers[0]", &c, init).map_err(|e| e.to_string())
    }

    #[test]
    fn accepts_valid_probes_and_hooks() {
        let ok = "{name: a, livenessProbe: {httpGet: {port: http}}, readinessProbe: {tcpSocket: {port: 80}, successThreshold: 3}, lifecycle: {preStop: {sleep: {seconds: 5}}}}";
        assert_eq!(check(ok, false), Ok(()));
        let sidecar = "{name: s, restartPolicy: Always, startupProbe: {exec: {command: [x]}}}";
        assert_eq!(check(sidecar, true), Ok(()));
    }

    #[test]
    fn rejects_bad_probes_with_upstream_messages() {
        let cases = [
            (
                "{name: a, livenessProbe: {periodSeconds: 5}}",
                "spec.containers[0].livenessProbe: Required value: must specify a handler type",
            ),
            (
                "{name: a, readinessProbe: {exec: {command: [x]}, tcpSocket: {port: 80}}}",
                "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
            ),
            (
                "{name: a, readinessProbe: {exec: {command: [x]}, periodSeconds: -1}}",
                "spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                "{name: a, livenessProbe: {exec: {command: [x]}, successThreshold: 2}}",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
            ),
            (
                "{name: a, livenessProbe: {tcpSocket: {port: 0}}}",
                "spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                "{name: a, startupProbe: {exec: {command: [x]}, terminationGracePeriodSeconds: 0}}",
                "spec.containers[0].startupProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
            ),
            (
                "{name: a, lifecycle: {postStart: {}}}",
                "spec.containers[0].lifecycle.postStart: Required value: must specify a handler type",
            ),
            (
                "{name: a, lifecycle: {preStop: {sleep: {seconds: -1}}}}",
                "spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: -1: must be greater than or equal to 0",
            ),
        ];
        for (yaml, want) in cases {
            assert_eq!(check(yaml, false), Err(want.to_string()), "{yaml}");
        }
        assert_eq!(
            check("{name: i, readinessProbe: {exec: {command: [x]}}}", true),
            Err("spec.containers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always".into())
        );
    }
}
