//! Service environment variables (upstream `getServiceEnvVarMap` and
//! `envvars.FromServices`): for every service with a cluster IP in the
//! pod's namespace (when `enableServiceLinks`, the default) and always for
//! `default/kubernetes`: `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT`,
//! `<NAME>_SERVICE_PORT_<PORTNAME>` and the Docker link variables
//! (`<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

fn env_name(s: &str) -> String {
    s.replace('-', "_").to_uppercase()
}

fn host_port(ip: &str, port: i32) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// The variables of one service (upstream `FromServices` for one entry).
fn from_service(svc: &Service, out: &mut BTreeMap<String, String>) {
    let Some(spec) = svc.spec.as_ref() else { return };
    let ip = spec.cluster_ip.as_deref().unwrap_or_default();
    let ports = spec.ports.as_deref().unwrap_or_default();
    if ip.is_empty() || ip == "None" || ports.is_empty() {
        return;
    }
    let prefix = env_name(svc.metadata.name.as_deref().unwrap_or_default());
    out.insert(format!("{prefix}_SERVICE_HOST"), ip.to_string());
    out.insert(format!("{prefix}_SERVICE_PORT"), ports[0].port.to_string());
    for p in ports {
        if let Some(name) = p.name.as_deref().filter(|n| !n.is_empty()) {
            out.insert(format!("{prefix}_SERVICE_PORT_{}", env_name(name)), p.port.to_string());
        }
    }
    for (i, p) in ports.iter().enumerate() {
        let proto = p.protocol.clone().unwrap_or_else(|| "TCP".into());
        let url = format!("{}://{}", proto.to_lowercase(), host_port(ip, p.port));
        if i == 0 {
            out.insert(format!("{prefix}_PORT"), url.clone());
        }
        let pp = format!("{prefix}_PORT_{}_{}", p.port, proto.to_uppercase());
        out.insert(format!("{pp}_PROTO"), proto.to_lowercase());
        out.insert(format!("{pp}_PORT"), p.port.to_string());
        out.insert(format!("{pp}_ADDR"), ip.to_string());
        out.insert(pp, url);
    }
}

/// The service variables of a pod in `namespace`.
///
/// ```
/// let svc: k8s_openapi::api::core::v1::Service = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "kubernetes", "namespace": "default"},
///     "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]}})).unwrap();
/// let env = actlet::volumes::service_env::service_env(&[svc], "prod", false);
/// assert_eq!(env["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
/// assert_eq!(env["KUBERNETES_SERVICE_PORT_HTTPS"], "443");
/// assert_eq!(env["KUBERNETES_PORT_443_TCP"], "tcp://10.96.0.1:443");
/// ```
pub fn service_env(services: &[Service], namespace: &str, enable_service_links: bool) -> BTreeMap<String, String> {
    let mut chosen: BTreeMap<String, &Service> = BTreeMap::new();
    for svc in services {
        let name = svc.metadata.name.clone().unwrap_or_default();
        let ns = svc.metadata.namespace.as_deref().unwrap_or_default();
        if ns == "default" && name == "kubernetes" {
            chosen.entry(name).or_insert(svc);
        } else if ns == namespace && enable_service_links {
            chosen.insert(name, svc);
        }
    }
    let mut out = BTreeMap::new();
    for svc in chosen.values() {
        from_service(svc, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(ns: &str, name: &str, ip: &str, ports: serde_json::Value) -> Service {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": ns},
            "spec": {"clusterIP": ip, "ports": ports}}))
        .unwrap()
    }

    #[test]
    fn services_of_the_namespace_and_the_master_service() {
        let all = [
            svc(
                "default",
                "kubernetes",
                "10.96.0.1",
                serde_json::json!([{"name": "https", "port": 443}]),
            ),
            svc(
                "prod",
                "redis-main",
                "10.96.0.7",
                serde_json::json!([{"port": 6379}, {"name": "metrics", "port": 9121, "protocol": "TCP"}]),
            ),
            svc("prod", "headless", "None", serde_json::json!([{"port": 80}])),
            svc("other", "web", "10.96.0.9", serde_json::json!([{"port": 80}])),
        ];
        let env = service_env(&all, "prod", true);
        assert_eq!(env["REDIS_MAIN_SERVICE_HOST"], "10.96.0.7");
        assert_eq!(env["REDIS_MAIN_SERVICE_PORT"], "6379");
        assert_eq!(env["REDIS_MAIN_SERVICE_PORT_METRICS"], "9121");
        assert_eq!(env["REDIS_MAIN_PORT"], "tcp://10.96.0.7:6379");
        assert_eq!(env["REDIS_MAIN_PORT_9121_TCP_ADDR"], "10.96.0.7");
        assert_eq!(env["REDIS_MAIN_PORT_6379_TCP_PROTO"], "tcp");
        assert!(env.contains_key("KUBERNETES_SERVICE_HOST"));
        assert!(!env.keys().any(|k| k.starts_with("HEADLESS") || k.starts_with("WEB_")));
        let off = service_env(&all, "prod", false);
        assert!(off.keys().all(|k| k.starts_with("KUBERNETES_")), "{off:?}");
    }
}
