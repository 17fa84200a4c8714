//! The ConfigMaps and Secrets a pod references (upstream
//! `podutil.VisitPodConfigmapNames` / `VisitPodSecretNames`): what the
//! managers watch, and what the Node authorizer lets this node read.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, Pod};

use super::objects::ObjectKey;

/// Referenced objects as (namespace, name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodReferences {
    /// ConfigMaps.
    pub config_maps: BTreeSet<ObjectKey>,
    /// Secrets.
    pub secrets: BTreeSet<ObjectKey>,
}

/// Names referenced by a container's env and envFrom: (configMaps, secrets).
pub fn env_references(container: &Container) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut cms, mut secrets) = (BTreeSet::new(), BTreeSet::new());
    for from in container.env_from.iter().flatten() {
        if let Some(r) = &from.config_map_ref {
            cms.insert(r.name.clone());
        }
        if let Some(r) = &from.secret_ref {
            secrets.insert(r.name.clone());
        }
    }
    for var in container.env.iter().flatten() {
        if let Some(from) = &var.value_from {
            if let Some(r) = &from.config_map_key_ref {
                cms.insert(r.name.clone());
            }
            if let Some(r) = &from.secret_key_ref {
                secrets.insert(r.name.clone());
            }
        }
    }
    (cms, secrets)
}

/// Everything `pod` references through volumes, env and imagePullSecrets.
///
/// ```
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web", "namespace": "prod"},
///     "spec": {"containers": [{"name": "app", "envFrom": [{"secretRef": {"name": "db"}}]}],
///              "volumes": [{"name": "cfg", "configMap": {"name": "app-config"}}]}})).unwrap();
/// let refs = actlet::volumes::refs::pod_references(&pod);
/// assert!(refs.config_maps.contains(&("prod".into(), "app-config".into())));
/// assert!(refs.secrets.contains(&("prod".into(), "db".into())));
/// ```
pub fn pod_references(pod: &Pod) -> PodReferences {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let mut out = PodReferences::default();
    let Some(spec) = pod.spec.as_ref() else {
        return out;
    };
    let key = |n: &str| (ns.clone(), n.to_string());
    for v in spec.volumes.iter().flatten() {
        if let Some(cm) = &v.config_map {
            out.config_maps.insert(key(&cm.name));
        }
        if let Some(name) = v.secret.as_ref().and_then(|s| s.secret_name.as_deref()) {
            out.secrets.insert(key(name));
        }
        for s in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(cm) = &s.config_map {
                out.config_maps.insert(key(&cm.name));
            }
            if let Some(sec) = &s.secret {
                out.secrets.insert(key(&sec.name));
            }
        }
    }
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        let (cms, secrets) = env_references(c);
        out.config_maps.extend(cms.iter().map(|n| key(n)));
        out.secrets.extend(secrets.iter().map(|n| key(n)));
    }
    for s in spec.image_pull_secrets.iter().flatten() {
        out.secrets.insert(key(&s.name));
    }
    out
}
