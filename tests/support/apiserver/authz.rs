//! Who is calling and what they may do: bearer-token authentication, the Node authorizer with
//! the v1.24 static node rules (RBAC denies everything else a node asks for) and the
//! NodeRestriction admission plugin. Admin (`system:masters`) may do anything; anonymous may
//! only read `/healthz`, `/livez`, `/readyz` and `/version`.

use std::collections::HashSet;

use serde_json::Value;

use super::Identity;
use super::admission::{MIRROR_ANNOTATION, is_mirror};
use super::http::HttpRequest;
use super::resources::{CSINODES, LEASES, NODES, PODS, PVCS, RESOURCES, Rid};
use super::status::{ApiError, ApiResult};
use super::store::{ObjKey, State};

/// `Authorization: Bearer admin` → admin; `Bearer node:<name>` → `system:node:<name>`;
/// other tokens from `Config::tokens`, or 401; no header → anonymous.
pub fn authenticate(st: &State, req: &HttpRequest) -> ApiResult<Identity> {
    let Some(header) = req.header("authorization") else {
        return Ok(Identity::Anonymous);
    };
    let token = header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .map(str::trim)
        .ok_or_else(ApiError::unauthorized)?;
    if let Some((_, id)) = st.config.tokens.iter().find(|(t, _)| t == token) {
        return Ok(id.clone());
    }
    match token {
        "admin" => Ok(Identity::Admin),
        t => match t.strip_prefix("node:") {
            Some(name) if !name.is_empty() => Ok(Identity::Node(name.to_string())),
            _ => Err(ApiError::unauthorized()),
        },
    }
}

/// Request attributes, as Go's `authorizer.Attributes` of a resource request.
#[derive(Clone, Debug)]
pub struct Attrs<'a> {
    pub verb: &'a str,
    pub rid: Rid,
    pub subresource: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// The authorizer's 403: `<res> "<name>" is forbidden: User "<u>" cannot <verb> resource …`.
pub fn forbidden(user: &Identity, a: &Attrs, reason: &str) -> ApiError {
    let def = &RESOURCES[a.rid];
    let resource = match a.subresource {
        Some(s) => format!("{}/{s}", def.plural),
        None => def.plural.to_string(),
    };
    let mut msg = match a.namespace.filter(|n| !n.is_empty()) {
        Some(ns) => format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" in the namespace \"{ns}\"",
            user.user_name(),
            a.verb,
            def.group
        ),
        None => format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" at the cluster scope",
            user.user_name(),
            a.verb,
            def.group
        ),
    };
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    ApiError::forbidden(def.group, def.plural, a.name.unwrap_or(""), &msg).by_authorizer()
}

/// The authorizer's 403 for a non-resource path.
pub fn forbidden_path(user: &Identity, verb: &str, path: &str) -> ApiError {
    ApiError::forbidden(
        "",
        "",
        "",
        &format!("User \"{}\" cannot {verb} path \"{path}\"", user.user_name()),
    )
    .by_authorizer()
}

/// Non-resource paths: `system:public-info-viewer` for everyone, `system:discovery` for
/// authenticated users.
pub fn authorize_path(user: &Identity, verb: &str, path: &str) -> ApiResult<()> {
    let public = matches!(path, "/healthz" | "/livez" | "/readyz" | "/version") && verb == "get";
    if public || *user != Identity::Anonymous {
        Ok(())
    } else {
        Err(forbidden_path(user, verb, path))
    }
}

pub fn authorize(st: &State, user: &Identity, a: &Attrs) -> ApiResult<()> {
    match user {
        Identity::Admin => Ok(()),
        Identity::Anonymous => Err(forbidden(user, a, "")),
        Identity::Node(node) => node_authorizer(st, node, a).map_err(|reason| forbidden(user, a, &reason)),
    }
}

const READ: &[&str] = &["get", "list", "watch"];

/// `NodeRules()` of v1.24's bootstrap policy, as (group, resource[/subresource], verbs).
const NODE_RULES: &[(&str, &str, &[&str])] = &[
    ("authentication.k8s.io", "tokenreviews", &["create"]),
    ("authorization.k8s.io", "subjectaccessreviews", &["create"]),
    ("authorization.k8s.io", "localsubjectaccessreviews", &["create"]),
    ("", "services", READ),
    ("", "nodes", &["create", "get", "list", "watch"]),
    ("", "nodes/status", &["update", "patch"]),
    ("", "nodes", &["update", "patch"]),
    ("", "events", &["create", "update", "patch"]),
    ("", "pods", READ),
    ("", "pods", &["create", "delete"]),
    ("", "pods/status", &["update", "patch"]),
    ("", "pods/eviction", &["create"]),
    ("", "secrets", &["get", "list", "watch"]),
    ("", "configmaps", &["get", "list", "watch"]),
    ("", "persistentvolumeclaims", &["get"]),
    ("", "persistentvolumes", &["get"]),
    ("", "endpoints", &["get"]),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &["create", "get", "list", "watch"],
    ),
    (
        "coordination.k8s.io",
        "leases",
        &["get", "create", "update", "patch", "delete"],
    ),
    ("storage.k8s.io", "volumeattachments", &["get"]),
    ("", "serviceaccounts/token", &["create"]),
    ("", "persistentvolumeclaims/status", &["get", "update", "patch"]),
    ("storage.k8s.io", "csidrivers", &["get", "watch", "list"]),
    (
        "storage.k8s.io",
        "csinodes",
        &["get", "create", "update", "patch", "delete"],
    ),
    ("node.k8s.io", "runtimeclasses", &["get", "list", "watch"]),
];

fn static_rules_allow(a: &Attrs) -> bool {
    let def = &RESOURCES[a.rid];
    let resource = match a.subresource {
        Some(s) => format!("{}/{s}", def.plural),
        None => def.plural.to_string(),
    };
    NODE_RULES
        .iter()
        .any(|(g, r, verbs)| *g == def.group && *r == resource && verbs.contains(&a.verb))
}

/// The Node authorizer: graph-based for secrets, configmaps, PVCs, PVs and service account
/// tokens; leases and CSINodes by name; the static rules for the rest. `Err` carries the
/// authorizer's reason (appended to the 403 message).
fn node_authorizer(st: &State, node: &str, a: &Attrs) -> Result<(), String> {
    let def = &RESOURCES[a.rid];
    let no_relationship = || format!("no relationship found between node '{node}' and this object");
    match (def.group, def.plural) {
        ("", "secrets" | "configmaps") => {
            if !READ.contains(&a.verb) {
                return Err("can only read resources of this type".into());
            }
            if a.subresource.is_some() {
                return Err("cannot read subresource".into());
            }
            let ns = a
                .namespace
                .filter(|n| !n.is_empty())
                .ok_or("can only read namespaced object of this type")?;
            let name = a.name.filter(|n| !n.is_empty()).ok_or("No Object name found")?;
            let refs = node_refs(st, node);
            let set = if def.plural == "secrets" {
                &refs.secrets
            } else {
                &refs.configmaps
            };
            if set.contains(&(ns.to_string(), name.to_string())) {
                Ok(())
            } else {
                Err(no_relationship())
            }
        }
        ("", "persistentvolumeclaims") => {
            if a.subresource == Some("status") {
                if !["update", "patch"].contains(&a.verb) {
                    return Err("can only get/update/patch persistentvolumeclaim status".into());
                }
            } else if a.verb != "get" {
                return Err("can only get individual resources of this type".into());
            }
            let name = a.name.filter(|n| !n.is_empty()).ok_or("No Object name found")?;
            let refs = node_refs(st, node);
            if refs
                .pvcs
                .contains(&(a.namespace.unwrap_or("").to_string(), name.to_string()))
            {
                Ok(())
            } else {
                Err(no_relationship())
            }
        }
        ("", "persistentvolumes") => {
            if a.verb != "get" {
                return Err("can only get individual resources of this type".into());
            }
            Err(no_relationship())
        }
        ("", "serviceaccounts") => {
            if a.verb != "create" || a.name.is_none_or(str::is_empty) {
                return Err("can only create tokens for individual service accounts".into());
            }
            if a.subresource != Some("token") {
                return Err("can only create token subresource of serviceaccount".into());
            }
            let refs = node_refs(st, node);
            let key = (a.namespace.unwrap_or("").to_string(), a.name.unwrap_or("").to_string());
            if refs.serviceaccounts.contains(&key) {
                Ok(())
            } else {
                Err(no_relationship())
            }
        }
        ("coordination.k8s.io", "leases") => {
            if !["get", "create", "update", "patch", "delete"].contains(&a.verb) {
                return Err("can only get, create, update, patch, or delete a node lease".into());
            }
            if a.namespace != Some("kube-node-lease") {
                return Err("can only access leases in the \"kube-node-lease\" system namespace".into());
            }
            if a.verb != "create" && a.name != Some(node) {
                return Err("can only access node lease with the same name as the requesting node".into());
            }
            Ok(())
        }
        ("storage.k8s.io", "csinodes") => {
            if !["get", "create", "update", "patch", "delete"].contains(&a.verb) {
                return Err("can only get, create, update, patch, or delete a CSINode".into());
            }
            if a.verb != "create" && a.name != Some(node) {
                return Err("can only access CSINode with the same name as the requesting node".into());
            }
            Ok(())
        }
        _ if static_rules_allow(a) => Ok(()),
        _ => Err(String::new()),
    }
}

/// What the pods bound to a node reference: the Node authorizer's graph.
#[derive(Default, Debug)]
pub struct NodeRefs {
    pub secrets: HashSet<(String, String)>,
    pub configmaps: HashSet<(String, String)>,
    pub serviceaccounts: HashSet<(String, String)>,
    pub pvcs: HashSet<(String, String)>,
}

fn s(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

/// The secrets, configmaps, service account and PVCs a pod references.
pub fn pod_refs(pod: &Value) -> (Vec<String>, Vec<String>, Option<String>, Vec<String>) {
    let spec = &pod["spec"];
    let (mut secrets, mut configmaps, mut pvcs) = (Vec::new(), Vec::new(), Vec::new());
    for v in spec["volumes"].as_array().into_iter().flatten() {
        secrets.extend(s(&v["secret"]["secretName"]));
        configmaps.extend(s(&v["configMap"]["name"]));
        pvcs.extend(s(&v["persistentVolumeClaim"]["claimName"]));
        for src in v["projected"]["sources"].as_array().into_iter().flatten() {
            secrets.extend(s(&src["secret"]["name"]));
            configmaps.extend(s(&src["configMap"]["name"]));
        }
        if let Value::Object(m) = v {
            for source in m.values() {
                for r in [
                    "secretRef",
                    "nodePublishSecretRef",
                    "controllerPublishSecretRef",
                    "nodeStageSecretRef",
                ] {
                    secrets.extend(s(&source[r]["name"]));
                }
            }
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in spec[list].as_array().into_iter().flatten() {
            for e in c["env"].as_array().into_iter().flatten() {
                secrets.extend(s(&e["valueFrom"]["secretKeyRef"]["name"]));
                configmaps.extend(s(&e["valueFrom"]["configMapKeyRef"]["name"]));
            }
            for e in c["envFrom"].as_array().into_iter().flatten() {
                secrets.extend(s(&e["secretRef"]["name"]));
                configmaps.extend(s(&e["configMapRef"]["name"]));
            }
        }
    }
    for p in spec["imagePullSecrets"].as_array().into_iter().flatten() {
        secrets.extend(s(&p["name"]));
    }
    (secrets, configmaps, s(&spec["serviceAccountName"]), pvcs)
}

pub fn node_refs(st: &State, node: &str) -> NodeRefs {
    let mut refs = NodeRefs::default();
    for pod in st.list(PODS, &Default::default()) {
        if pod["spec"]["nodeName"] != node {
            continue;
        }
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let (secrets, configmaps, sa, pvcs) = pod_refs(&pod);
        refs.secrets.extend(secrets.into_iter().map(|n| (ns.clone(), n)));
        refs.configmaps.extend(configmaps.into_iter().map(|n| (ns.clone(), n)));
        refs.serviceaccounts.extend(sa.map(|n| (ns.clone(), n)));
        refs.pvcs.extend(pvcs.into_iter().map(|n| (ns.clone(), n)));
    }
    refs
}

/// NodeRestriction's 403: `<res> "<name>" is forbidden: <err>` (no nosniff header).
fn deny(rid: Rid, name: &str, err: String) -> ApiError {
    let def = &RESOURCES[rid];
    ApiError::forbidden(def.group, def.plural, name, &err)
}

fn label_namespace(label: &str) -> &str {
    label.split_once('/').map(|(ns, _)| ns).unwrap_or("")
}

/// NodeRestriction's `getForbiddenLabels`: node-restriction labels, and kubernetes.io /
/// k8s.io labels a kubelet may not set.
fn forbidden_labels(labels: &[String]) -> Vec<String> {
    const KUBELET_LABELS: &[&str] = &[
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    ];
    let under = |ns: &str, domain: &str| ns == domain || ns.ends_with(&format!(".{domain}"));
    let mut out: Vec<String> = labels
        .iter()
        .filter(|l| {
            let ns = label_namespace(l);
            if under(ns, "node-restriction.kubernetes.io") {
                return true;
            }
            let kubernetes = under(ns, "kubernetes.io") || under(ns, "k8s.io");
            let kubelet = KUBELET_LABELS.contains(&l.as_str())
                || under(ns, "kubelet.kubernetes.io")
                || under(ns, "node.kubernetes.io");
            kubernetes && !kubelet
        })
        .cloned()
        .collect();
    out.sort();
    out
}

fn modified_labels(new: &Value, old: Option<&Value>) -> Vec<String> {
    let empty = serde_json::Map::new();
    let a = new["metadata"]["labels"].as_object().unwrap_or(&empty);
    let b = old.and_then(|o| o["metadata"]["labels"].as_object()).unwrap_or(&empty);
    let mut keys: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    keys.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    keys
}

/// NodeRestriction on create.
pub fn admit_create(st: &State, node: &str, rid: Rid, ns: &str, obj: &Value) -> ApiResult<()> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    match rid {
        NODES => {
            if name != node {
                return Err(deny(
                    rid,
                    name,
                    format!("node \"{node}\" is not allowed to modify node \"{name}\""),
                ));
            }
            let forbidden = forbidden_labels(&modified_labels(obj, None));
            if !forbidden.is_empty() {
                return Err(deny(
                    rid,
                    name,
                    format!(
                        "node \"{node}\" is not allowed to set the following labels: {}",
                        forbidden.join(", ")
                    ),
                ));
            }
            Ok(())
        }
        PODS => admit_mirror_pod(st, node, name, obj),
        LEASES => {
            if ns != "kube-node-lease" {
                return Err(deny(
                    rid,
                    name,
                    "can only access leases in the \"kube-node-lease\" system namespace".into(),
                ));
            }
            if name != node {
                return Err(deny(
                    rid,
                    name,
                    "can only access node lease with the same name as the requesting node".into(),
                ));
            }
            Ok(())
        }
        CSINODES if name != node => Err(deny(
            rid,
            name,
            format!("node \"{node}\" is not allowed to modify CSINode \"{name}\""),
        )),
        _ => Ok(()),
    }
}

fn admit_mirror_pod(st: &State, node: &str, name: &str, pod: &Value) -> ApiResult<()> {
    let deny = |err: String| deny(PODS, name, err);
    if !is_mirror(pod) {
        return Err(deny(format!(
            "pod does not have \"{MIRROR_ANNOTATION}\" annotation, node \"{node}\" can only create mirror pods"
        )));
    }
    if pod["spec"]["nodeName"] != node {
        return Err(deny(format!(
            "node \"{node}\" can only create pods with spec.nodeName set to itself"
        )));
    }
    let owners = pod["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if owners.len() > 1 {
        return Err(deny(format!(
            "node \"{node}\" can only create pods with a single owner reference set to itself"
        )));
    }
    if let Some(owner) = owners.first() {
        if owner["apiVersion"] != "v1" || owner["kind"] != "Node" || owner["name"] != node {
            return Err(deny(format!(
                "node \"{node}\" can only create pods with an owner reference set to itself"
            )));
        }
        if owner["controller"] != true {
            return Err(deny(format!(
                "node \"{node}\" can only create pods with a controller owner reference set to itself"
            )));
        }
        if owner["blockOwnerDeletion"] == true {
            return Err(deny(format!(
                "node \"{node}\" must not set blockOwnerDeletion on an owner reference"
            )));
        }
        let Some(node_obj) = st.get(&ObjKey::new(NODES, "", node)) else {
            return Err(ApiError::not_found(&RESOURCES[NODES], node));
        };
        let uid = node_obj["metadata"]["uid"].as_str().unwrap_or("");
        if owner["uid"] != uid {
            return Err(deny(format!(
                "node {node} UID mismatch: expected {} got {uid}",
                owner["uid"].as_str().unwrap_or("")
            )));
        }
    }
    let (secrets, configmaps, sa, pvcs) = pod_refs(pod);
    if sa.is_some() {
        return Err(deny(format!(
            "node \"{node}\" can not create pods that reference a service account"
        )));
    }
    if !secrets.is_empty() {
        return Err(deny(format!(
            "node \"{node}\" can not create pods that reference secrets"
        )));
    }
    if !configmaps.is_empty() {
        return Err(deny(format!(
            "node \"{node}\" can not create pods that reference configmaps"
        )));
    }
    if !pvcs.is_empty() {
        return Err(deny(format!(
            "node \"{node}\" can not create pods that reference persistentvolumeclaims"
        )));
    }
    Ok(())
}

/// NodeRestriction on update and patch.
pub fn admit_update(
    node: &str,
    rid: Rid,
    subresource: Option<&str>,
    name: &str,
    old: &Value,
    new: &Value,
) -> ApiResult<()> {
    match rid {
        NODES => {
            if name != node {
                return Err(deny(
                    rid,
                    name,
                    format!("node \"{node}\" is not allowed to modify node \"{name}\""),
                ));
            }
            if subresource.is_none() && new["spec"]["taints"] != old["spec"]["taints"] {
                return Err(deny(
                    rid,
                    name,
                    format!("node \"{node}\" is not allowed to modify taints"),
                ));
            }
            let forbidden = forbidden_labels(&modified_labels(new, Some(old)));
            if !forbidden.is_empty() {
                return Err(deny(
                    rid,
                    name,
                    format!(
                        "node \"{node}\" is not allowed to modify labels: {}",
                        forbidden.join(", ")
                    ),
                ));
            }
            Ok(())
        }
        PODS if subresource == Some("status") => {
            if old["spec"]["nodeName"] != node {
                return Err(deny(
                    rid,
                    name,
                    format!("node \"{node}\" can only update pod status for pods with spec.nodeName set to itself"),
                ));
            }
            Ok(())
        }
        PODS => Err(deny(
            rid,
            name,
            format!("unexpected operation UPDATE, node \"{node}\" can only create and delete mirror pods"),
        )),
        LEASES if name != node => Err(deny(
            rid,
            name,
            "can only access node lease with the same name as the requesting node".into(),
        )),
        PVCS if subresource == Some("status") => Ok(()),
        _ => Ok(()),
    }
}

/// NodeRestriction on delete.
pub fn admit_delete(node: &str, rid: Rid, name: &str, old: &Value) -> ApiResult<()> {
    match rid {
        PODS if old["spec"]["nodeName"] != node => Err(deny(
            rid,
            name,
            format!("node \"{node}\" can only delete pods with spec.nodeName set to itself"),
        )),
        NODES if name != node => Err(deny(
            rid,
            name,
            format!("node \"{node}\" is not allowed to modify node \"{name}\""),
        )),
        LEASES if name != node => Err(deny(
            rid,
            name,
            "can only access node lease with the same name as the requesting node".into(),
        )),
        _ => Ok(()),
    }
}

/// NodeRestriction on a TokenRequest: bound to a pod on this node.
pub fn admit_token(st: &State, node: &str, ns: &str, sa: &str, request: &Value) -> ApiResult<()> {
    let rid = super::resources::SERVICEACCOUNTS;
    let r = &request["spec"]["boundObjectRef"];
    if r.is_null() || r["apiVersion"] != "v1" || r["kind"] != "Pod" || r["name"].as_str().unwrap_or("").is_empty() {
        return Err(deny(rid, sa, "node requested token not bound to a pod".into()));
    }
    let uid = r["uid"].as_str().unwrap_or("");
    if uid.is_empty() {
        return Err(deny(
            rid,
            sa,
            "node requested token with a pod binding without a uid".into(),
        ));
    }
    let pod_name = r["name"].as_str().unwrap_or("");
    let Some(pod) = st.get(&ObjKey::new(PODS, ns, pod_name)) else {
        return Err(ApiError::not_found(&RESOURCES[PODS], pod_name));
    };
    if pod["metadata"]["uid"] != uid {
        return Err(deny(
            rid,
            sa,
            format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    if pod["spec"]["nodeName"] != node {
        return Err(deny(
            rid,
            sa,
            "node requested token bound to a pod scheduled on a different node".into(),
        ));
    }
    Ok(())
}
