//! The `kubelet-api` child [`start_with`](super::start_with) adds when
//! `server_addr` is set: the authenticated HTTPS API on 10250.

use std::net::SocketAddr;
use std::sync::Arc;

use super::config::KubeletConfig;
use super::node_facts::{MachineInfo, NodeFacts};
use crate::actors::supervisor::{AnyChildSpec, ChildSpec, Criticality, SupervisionTree};
use crate::certificate::serving::ServingCert;
use crate::certificate::serving_manager::{ServingCertManager, ServingCertSettings};
use crate::cri::SharedRuntime;
use crate::pleg::PodCache;
use crate::server::auth::ReviewApi;
use crate::server::secure::{ApiServer, ApiServerError, ApiServerSettings, SecureServer};
use crate::server::tls::TlsSettings;
use crate::server::{ApiState, ServerAddrs, ServerState};

/// `/spec/`: cAdvisor MachineInfo's field names for what the node knows.
fn machine_spec(facts: &NodeFacts) -> serde_json::Value {
    let info = MachineInfo::detect();
    serde_json::json!({
        "num_cores": facts.cpus,
        "memory_capacity": facts.memory_bytes,
        "machine_id": info.machine_id,
        "system_uuid": info.system_uuid,
        "boot_id": info.boot_id,
        "kernel_version": info.kernel_version,
        "os_image": info.os_image,
    })
}

/// A Go `time.Duration` string (`1m0s`, `20s`, `100ms`).
pub(crate) fn go_duration(d: std::time::Duration) -> String {
    let (secs, ms) = (d.as_secs(), d.subsec_millis());
    if secs == 0 {
        return format!("{ms}ms");
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let s = if ms > 0 {
        format!("{s}.{ms:03}s")
    } else {
        format!("{s}s")
    };
    match (h, m) {
        (0, 0) => s,
        (0, m) => format!("{m}m{s}"),
        (h, m) => format!("{h}h{m}m{s}"),
    }
}

/// `/configz`: the effective settings under upstream's KubeletConfiguration names.
pub(crate) fn configz(config: &KubeletConfig) -> serde_json::Value {
    use crate::server::auth::KubeletAuthorizationMode;
    let port = |a: Option<SocketAddr>| a.map_or(0, |a| a.port());
    serde_json::json!({"kubeletconfig": {
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "staticPodPath": config.static_pod_path,
        "staticPodURL": config.static_pod_url,
        "syncFrequency": go_duration(config.sync.sync_frequency),
        "fileCheckFrequency": go_duration(config.file_check_frequency),
        "httpCheckFrequency": go_duration(config.http_check_frequency),
        "address": config.server_addr.map(|a| a.ip().to_string()),
        "port": port(config.server_addr),
        "readOnlyPort": port(config.read_only_addr),
        "healthzPort": port(config.healthz_addr),
        "healthzBindAddress": config.healthz_addr.map(|a| a.ip().to_string()),
        "tlsCertFile": config.tls_cert_file,
        "tlsPrivateKeyFile": config.tls_private_key_file,
        "serverTLSBootstrap": config.server_tls_bootstrap,
        "tlsMinVersion": config.tls_min_version,
        "tlsCipherSuites": config.tls_cipher_suites,
        "authentication": {
            "x509": {"clientCAFile": config.authentication.x509.client_ca_file},
            "webhook": {"enabled": config.authentication.webhook.enabled,
                        "cacheTTL": go_duration(config.authentication.webhook.cache_ttl)},
            "anonymous": {"enabled": config.authentication.anonymous.enabled},
        },
        "authorization": {
            "mode": match config.authorization.mode {
                KubeletAuthorizationMode::AlwaysAllow => "AlwaysAllow",
                KubeletAuthorizationMode::Webhook => "Webhook",
            },
            "webhook": {
                "cacheAuthorizedTTL": go_duration(config.authorization.webhook.cache_authorized_ttl),
                "cacheUnauthorizedTTL": go_duration(config.authorization.webhook.cache_unauthorized_ttl),
            },
        },
        "maxPods": config.max_pods,
        "registerNode": config.register_node,
        "nodeStatusUpdateFrequency": go_duration(config.node_status_update_frequency),
        "nodeStatusReportFrequency": go_duration(config.node_status_report_frequency),
        "podLogsDir": config.pod_logs_dir,
    }})
}

/// The child specs: the server, and with `serverTLSBootstrap` the manager
/// of its certificate; fails when the certificate or auth settings are
/// unusable.
pub(super) fn children(
    addr: SocketAddr,
    config: &KubeletConfig,
    node_ip: Option<String>,
    facts: &NodeFacts,
    (state, runtime, cache, tree, metrics, stats): (
        ServerState,
        SharedRuntime,
        PodCache,
        SupervisionTree,
        Arc<crate::server::metrics::KubeletMetrics>,
        crate::stats::StatsProvider,
    ),
    client: Option<kube::Client>,
    bound: ServerAddrs,
) -> Result<(AnyChildSpec, Option<AnyChildSpec>), ApiServerError> {
    let api = ApiState {
        node_name: config.node_name.clone(),
        runtime,
        cache,
        spec: machine_spec(facts),
        tree,
        pod_logs_dir: config.pod_logs_dir.clone(),
        node_logs_dir: std::path::PathBuf::from("/var/log"),
        configz: configz(config),
        metrics: Some(metrics),
        stats: Some(stats),
    };
    let settings = ApiServerSettings {
        tls: TlsSettings {
            tls_cert_file: config.tls_cert_file.clone(),
            tls_private_key_file: config.tls_private_key_file.clone(),
            tls_min_version: config.tls_min_version.clone(),
            tls_cipher_suites: config.tls_cipher_suites.clone(),
            client_ca_file: None,
        },
        authentication: config.authentication.clone(),
        authorization: config.authorization.clone(),
        root_dir: config.root_dir.clone(),
        node_ip: node_ip.clone(),
        serving_cert: config.server_tls_bootstrap.then(ServingCert::default),
    };
    let manager = match (&settings.serving_cert, &client) {
        (None, _) => None,
        (Some(_), None) => return Err(ApiServerError::NoApiServer),
        (Some(cert), Some(client)) => {
            let mut sans = vec![config.node_name.clone()];
            sans.extend(node_ip);
            let manager = ServingCertSettings {
                node_name: config.node_name.clone(),
                sans,
                cert_dir: config.cert_dir.clone(),
            };
            let (cert, client) = (cert.clone(), client.clone());
            let spec = ChildSpec::new("serving-cert-manager", move || {
                ServingCertManager::new(manager.clone(), client.clone(), cert.clone())
            })
            .criticality(Criticality::NonCritical)
            .backoff(super::start::SERVER_RETRY);
            Some(spec.into())
        }
    };
    let reviews = client.map(|c| Arc::new(c) as Arc<dyn ReviewApi>);
    let server = SecureServer::build(&settings, state, api, reviews)?;
    // Like the other servers: a port that is taken is retried every 5 s
    // and never stops pod management.
    // Owned: the stop of the last instance's server (a restart binds after it).
    let previous = crate::server::actor::PreviousStop::default();
    let server = ChildSpec::new("kubelet-api", move || {
        ApiServer::new(addr, server.clone(), bound.clone()).with_previous_stop(previous.clone())
    })
    .criticality(Criticality::NonCritical)
    .backoff(super::start::SERVER_RETRY);
    Ok((server.into(), manager))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn durations_print_as_go_does() {
        assert_eq!(go_duration(Duration::from_secs(60)), "1m0s");
        assert_eq!(go_duration(Duration::from_secs(20)), "20s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(3725)), "1h2m5s");
        assert_eq!(go_duration(Duration::from_millis(100)), "100ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.500s");
    }

    #[test]
    fn configz_uses_kubelet_configuration_names() {
        let mut c = KubeletConfig::new("n");
        c.server_addr = Some("0.0.0.0:10250".parse().unwrap());
        c.authorization.mode = crate::server::auth::KubeletAuthorizationMode::Webhook;
        let z = configz(&c);
        let k = &z["kubeletconfig"];
        assert_eq!((k["port"].as_u64(), k["readOnlyPort"].as_u64()), (Some(10250), Some(0)));
        assert_eq!(k["syncFrequency"], "1m0s");
        assert_eq!(k["authorization"]["mode"], "Webhook");
        assert_eq!(k["authentication"]["webhook"]["cacheTTL"], "2m0s");
        assert_eq!(k["authentication"]["anonymous"]["enabled"], true);
    }
}
