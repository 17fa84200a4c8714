//! The ConfigMaps and Secrets a pod's environment reads, fetched before a
//! sync through the same managers as volumes, handed to the (pure)
//! environment builder as plain data.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::objects::{ObjectError, ObjectSource};
use super::refs::env_references;

/// One object's data, or why it is missing.
pub type ObjectData = Result<BTreeMap<String, String>, ObjectError>;

/// What env references resolve against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvObjects {
    /// An API server is behind these (standalone: every reference fails
    /// with upstream's "no kubeClient defined").
    pub has_client: bool,
    /// ConfigMap `data` by name.
    pub config_maps: BTreeMap<String, ObjectData>,
    /// Secret `data` (as text) by name.
    pub secrets: BTreeMap<String, ObjectData>,
    /// Service env vars ([`service_env`](super::service_env)).
    pub services: BTreeMap<String, String>,
    /// Why the service env vars are unknown (the container waits).
    pub services_error: Option<String>,
}

/// Fetches everything the env of `pod`'s containers references.
pub async fn fetch_env_objects(objects: &dyn ObjectSource, pod: &Pod) -> EnvObjects {
    let mut out = EnvObjects {
        has_client: objects.has_client(),
        ..Default::default()
    };
    if !out.has_client {
        return out;
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let spec = pod.spec.as_ref();
    let links = spec.and_then(|s| s.enable_service_links).unwrap_or(true);
    match objects.services().await {
        Ok(list) => out.services = super::service_env::service_env(&list, ns, links),
        Err(e) => out.services_error = Some(e.to_string()),
    }
    let containers = spec
        .into_iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()));
    for c in containers {
        let (cms, secrets) = env_references(c);
        for name in cms {
            if out.config_maps.contains_key(&name) {
                continue;
            }
            let data = objects
                .config_map(ns, &name)
                .await
                .map(|cm| cm.data.unwrap_or_default());
            out.config_maps.insert(name, data);
        }
        for name in secrets {
            if out.secrets.contains_key(&name) {
                continue;
            }
            let data = objects.secret(ns, &name).await.map(|s| {
                s.data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                    .collect()
            });
            out.secrets.insert(name, data);
        }
    }
    out
}
