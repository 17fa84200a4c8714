//! The `kubelet-api` child [`start_with`](super::start_with) adds when
//! `server_addr` is set: the authenticated HTTPS API on 10250.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use super::config::KubeletConfig;
use super::node_facts::{MachineInfo, NodeFacts};
use crate::actors::supervisor::{AnyChildSpec, ChildSpec, SupervisionTree};
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

/// The child spec; fails when the certificate or auth settings are unusable.
pub(super) fn child(
    addr: SocketAddr,
    config: &KubeletConfig,
    node_ip: Option<String>,
    facts: &NodeFacts,
    (state, runtime, cache, tree, metrics): (
        ServerState,
        SharedRuntime,
        PodCache,
        Arc<OnceLock<SupervisionTree>>,
        Arc<crate::server::metrics::KubeletMetrics>,
    ),
    client: Option<kube::Client>,
    bound: ServerAddrs,
) -> Result<AnyChildSpec, ApiServerError> {
    let api = ApiState {
        node_name: config.node_name.clone(),
        runtime,
        cache,
        spec: machine_spec(facts),
        tree,
        pod_logs_dir: config.pod_logs_dir.clone(),
        node_logs_dir: std::path::PathBuf::from("/var/log"),
        metrics: Some(metrics),
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
        node_ip,
    };
    let reviews = client.map(|c| Arc::new(c) as Arc<dyn ReviewApi>);
    let server = SecureServer::build(&settings, state, api, reviews)?;
    Ok(ChildSpec::new("kubelet-api", move || {
        ApiServer::new(addr, server.clone(), bound.clone())
    })
    .into())
}
