//! The resources the fake serves, and what Go's zero value of each looks like on the wire.

use serde_json::{Value, json};

/// Index into [`RESOURCES`].
pub type Rid = usize;

#[derive(Debug)]
pub struct ResourceDef {
    /// API group, `""` for core.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    /// Served from the apiserver's watch cache: everything except events in v1.24.
    pub cached: bool,
    pub subresources: &'static [&'static str],
}

impl ResourceDef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural[.group]` as in messages.
    pub fn qualified(&self) -> String {
        super::status::qualify(self.plural, self.group)
    }

    /// `Kind[.group]` as in Invalid messages.
    pub fn qualified_kind(&self) -> String {
        super::status::qualify(self.kind, self.group)
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

pub const PODS: Rid = 0;
pub const NODES: Rid = 1;
pub const LEASES: Rid = 2;
pub const EVENTS: Rid = 3;
pub const EVENTS_V1: Rid = 4;
pub const CONFIGMAPS: Rid = 5;
pub const SECRETS: Rid = 6;
pub const SERVICES: Rid = 7;
pub const SERVICEACCOUNTS: Rid = 8;
pub const NAMESPACES: Rid = 9;
pub const ENDPOINTS: Rid = 10;
pub const PVCS: Rid = 11;
pub const PVS: Rid = 12;
pub const RUNTIMECLASSES: Rid = 13;
pub const CSIDRIVERS: Rid = 14;
pub const CSINODES: Rid = 15;

const fn def(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    cached: bool,
    subresources: &'static [&'static str],
) -> ResourceDef {
    ResourceDef {
        group,
        version,
        plural,
        kind,
        namespaced,
        cached,
        subresources,
    }
}

pub static RESOURCES: [ResourceDef; 16] = [
    def("", "v1", "pods", "Pod", true, true, &["status"]),
    def("", "v1", "nodes", "Node", false, true, &["status"]),
    def("coordination.k8s.io", "v1", "leases", "Lease", true, true, &[]),
    def("", "v1", "events", "Event", true, false, &[]),
    def("events.k8s.io", "v1", "events", "Event", true, false, &[]),
    def("", "v1", "configmaps", "ConfigMap", true, true, &[]),
    def("", "v1", "secrets", "Secret", true, true, &[]),
    def("", "v1", "services", "Service", true, true, &["status"]),
    def("", "v1", "serviceaccounts", "ServiceAccount", true, true, &["token"]),
    def("", "v1", "namespaces", "Namespace", false, true, &["status"]),
    def("", "v1", "endpoints", "Endpoints", true, true, &[]),
    def(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        true,
        &["status"],
    ),
    def(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        true,
        &["status"],
    ),
    def("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false, true, &[]),
    def("storage.k8s.io", "v1", "csidrivers", "CSIDriver", false, true, &[]),
    def("storage.k8s.io", "v1", "csinodes", "CSINode", false, true, &[]),
];

/// The resource served at `/api[s]/<group>/<version>/<plural>`.
pub fn find(group: &str, version: &str, plural: &str) -> Option<Rid> {
    RESOURCES
        .iter()
        .position(|d| d.group == group && d.version == version && d.plural == plural)
}

/// A resource by `plural` (core first) or `plural.group`.
pub fn by_name(name: &str) -> Option<Rid> {
    RESOURCES
        .iter()
        .position(|d| d.plural == name && d.group.is_empty())
        .or_else(|| RESOURCES.iter().position(|d| d.plural == name))
        .or_else(|| RESOURCES.iter().position(|d| d.qualified() == name))
}

/// Go's zero value of the kind, with `kind`/`apiVersion` and `metadata.resourceVersion`: the
/// object of a BOOKMARK event (`creationTimestamp: null`, `spec.containers: null`…).
pub fn bookmark_object(rid: Rid, rv: u64) -> Value {
    let def = &RESOURCES[rid];
    let mut obj = match rid {
        PODS => json!({"spec": {"containers": null}, "status": {}}),
        NODES => json!({"spec": {}, "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
                "containerRuntimeVersion": "", "kubeletVersion": "", "kubeProxyVersion": "",
                "operatingSystem": "", "architecture": ""}
        }}),
        LEASES => json!({"spec": {}}),
        EVENTS => json!({"involvedObject": {}, "source": {}, "firstTimestamp": null, "lastTimestamp": null,
            "eventTime": null, "reportingComponent": "", "reportingInstance": ""}),
        EVENTS_V1 => json!({"eventTime": null}),
        SERVICES => json!({"spec": {}, "status": {"loadBalancer": {}}}),
        NAMESPACES => json!({"spec": {}, "status": {}}),
        PVCS => json!({"spec": {"resources": {}}, "status": {}}),
        PVS => json!({"spec": {}, "status": {}}),
        RUNTIMECLASSES => json!({"handler": ""}),
        CSIDRIVERS => json!({"spec": {}}),
        CSINODES => json!({"spec": {"drivers": null}}),
        _ => json!({}),
    };
    obj["kind"] = def.kind.into();
    obj["apiVersion"] = def.api_version().into();
    obj["metadata"] = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    obj
}

/// `/apis`: the groups besides core.
pub fn api_group_list() -> Value {
    let mut groups: Vec<Value> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for d in RESOURCES.iter().filter(|d| !d.group.is_empty()) {
        if seen.contains(&d.group) {
            continue;
        }
        seen.push(d.group);
        let gv = json!({"groupVersion": d.api_version(), "version": d.version});
        groups.push(json!({"name": d.group, "versions": [gv.clone()], "preferredVersion": gv}));
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>/<version>`, or None for a group version not served.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let verbs = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|d| d.group == group && d.version == version)
        .map(|d| {
            json!({"name": d.plural, "singularName": "", "namespaced": d.namespaced, "kind": d.kind,
                "verbs": verbs})
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"),
        "resources": resources}),
    )
}
