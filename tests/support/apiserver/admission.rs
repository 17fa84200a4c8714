//! What v1.24 adds to objects on their way in: API defaulting, the mutating admission plugins
//! a kubelet's objects meet (ServiceAccount, DefaultTolerationSeconds, Priority,
//! TaintNodesByCondition) and the shape Go's typed structs give the JSON (fields that are
//! always written even when empty, like a condition's `lastProbeTime: null`).

use serde_json::{Map, Value, json};

use super::meta;
use super::resources::{EVENTS, LEASES, NAMESPACES, NODES, PODS, Rid, SECRETS, SERVICEACCOUNTS, SERVICES};
use super::status::{ApiError, ApiResult};
use super::store::{ObjKey, State};

pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
pub const SA_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn absent(m: &Map<String, Value>, k: &str) -> bool {
    matches!(m.get(k), None | Some(Value::Null))
}

fn set_default(m: &mut Map<String, Value>, k: &str, v: Value) {
    if absent(m, k) {
        m.insert(k.to_string(), v);
    }
}

/// The map at `m[k]`, created when missing or not a map.
fn child<'a>(m: &'a mut Map<String, Value>, k: &str) -> &'a mut Map<String, Value> {
    if !m.get(k).is_some_and(Value::is_object) {
        m.insert(k.to_string(), json!({}));
    }
    m.get_mut(k).and_then(Value::as_object_mut).expect("object")
}

fn for_each_obj(m: &mut Map<String, Value>, k: &str, mut f: impl FnMut(&mut Map<String, Value>)) {
    if let Some(Value::Array(items)) = m.get_mut(k) {
        for item in items {
            if let Value::Object(o) = item {
                f(o);
            }
        }
    }
}

pub fn is_mirror(pod: &Value) -> bool {
    pod["metadata"]["annotations"].get(MIRROR_ANNOTATION).is_some()
}

/// `imagePullPolicy` default: Always for `:latest` or no tag (and no digest), else IfNotPresent.
fn pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    match tag {
        Some("latest") => "Always",
        None if !digest => "Always",
        _ => "IfNotPresent",
    }
}

fn default_http_get(h: &mut Map<String, Value>) {
    set_default(h, "path", "/".into());
    set_default(h, "scheme", "HTTP".into());
}

fn default_probe(p: &mut Map<String, Value>) {
    set_default(p, "timeoutSeconds", 1.into());
    set_default(p, "periodSeconds", 10.into());
    set_default(p, "successThreshold", 1.into());
    set_default(p, "failureThreshold", 3.into());
    if let Some(Value::Object(h)) = p.get_mut("httpGet") {
        default_http_get(h);
    }
}

fn default_container(c: &mut Map<String, Value>, host_network: bool) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("").to_string();
    set_default(c, "terminationMessagePath", "/dev/termination-log".into());
    set_default(c, "terminationMessagePolicy", "File".into());
    set_default(c, "imagePullPolicy", pull_policy(&image).into());
    let resources = child(c, "resources");
    if let Some(Value::Object(limits)) = resources.get("limits").cloned() {
        let requests = child(resources, "requests");
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
    for_each_obj(c, "ports", |p| {
        set_default(p, "protocol", "TCP".into());
        if host_network && absent(p, "hostPort") {
            if let Some(cp) = p.get("containerPort").cloned() {
                p.insert("hostPort".into(), cp);
            }
        }
    });
    for_each_obj(c, "env", |e| {
        if let Some(Value::Object(from)) = e.get_mut("valueFrom") {
            if let Some(Value::Object(f)) = from.get_mut("fieldRef") {
                set_default(f, "apiVersion", "v1".into());
            }
        }
    });
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(Value::Object(p)) = c.get_mut(probe) {
            default_probe(p);
        }
    }
    if let Some(Value::Object(lc)) = c.get_mut("lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(Value::Object(h)) = lc.get_mut(hook) {
                if let Some(Value::Object(g)) = h.get_mut("httpGet") {
                    default_http_get(g);
                }
            }
        }
    }
}

fn default_downward_items(m: &mut Map<String, Value>) {
    for_each_obj(m, "items", |i| {
        if let Some(Value::Object(f)) = i.get_mut("fieldRef") {
            set_default(f, "apiVersion", "v1".into());
        }
    });
}

fn default_volume(v: &mut Map<String, Value>) {
    if !v.keys().any(|k| k != "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    for src in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(Value::Object(s)) = v.get_mut(src) {
            set_default(s, "defaultMode", 420.into());
            if src == "downwardAPI" {
                default_downward_items(s);
            }
            if src == "projected" {
                for_each_obj(s, "sources", |source| {
                    if let Some(Value::Object(d)) = source.get_mut("downwardAPI") {
                        default_downward_items(d);
                    }
                    if let Some(Value::Object(t)) = source.get_mut("serviceAccountToken") {
                        set_default(t, "expirationSeconds", 3600.into());
                    }
                });
            }
        }
    }
    if let Some(Value::Object(h)) = v.get_mut("hostPath") {
        set_default(h, "type", "".into());
    }
}

/// `SetDefaults_PodSpec` and friends.
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", "Always".into());
    set_default(spec, "terminationGracePeriodSeconds", 30.into());
    set_default(spec, "dnsPolicy", "ClusterFirst".into());
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", "default-scheduler".into());
    set_default(spec, "enableServiceLinks", true.into());
    let host_network = spec.get("hostNetwork") == Some(&Value::Bool(true));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for_each_obj(spec, list, |c| default_container(c, host_network));
    }
    for_each_obj(spec, "volumes", default_volume);
}

/// Go's `GetPodQOS` (quantities compared as written).
pub fn qos_class(spec: &Value) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    for list in ["initContainers", "containers"] {
        for c in spec[list].as_array().into_iter().flatten() {
            let r = &c["resources"];
            for res in ["cpu", "memory"] {
                let req = r["requests"].get(res);
                let lim = r["limits"].get(res);
                if req.is_some() || lim.is_some() {
                    any = true;
                }
                if lim.is_none() || req != lim {
                    guaranteed = false;
                }
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The mutating admission plugins on pod create: ServiceAccount (not for mirror pods),
/// DefaultTolerationSeconds and Priority.
pub fn admit_pod(st: &State, ns: &str, name: &str, pod: &mut Value) -> ApiResult<()> {
    let mirror = is_mirror(pod);
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Err(ApiError::bad_request("pod has no spec"));
    };
    if !mirror {
        let sa_name = spec
            .get("serviceAccountName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_string();
        spec.insert("serviceAccountName".into(), sa_name.clone().into());
        spec.insert("serviceAccount".into(), sa_name.clone().into());
        let Some(sa) = st.get(&ObjKey::new(SERVICEACCOUNTS, ns, &sa_name)) else {
            return Err(ApiError::forbidden(
                "",
                "pods",
                name,
                &format!("error looking up service account {ns}/{sa_name}: serviceaccount \"{sa_name}\" not found"),
            ));
        };
        let automount = spec
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .or_else(|| sa["automountServiceAccountToken"].as_bool())
            .unwrap_or(true);
        let mounted = ["initContainers", "containers"].iter().any(|list| {
            spec.get(*list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| {
                    c["volumeMounts"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|m| m["mountPath"] == SA_MOUNT_PATH)
                })
        });
        if automount && !mounted {
            let volume = format!("kube-api-access-{}", meta::rand_suffix(5));
            let vols = spec.entry("volumes").or_insert_with(|| json!([]));
            if !vols.is_array() {
                *vols = json!([]);
            }
            vols.as_array_mut()
                .expect("array")
                .push(json!({"name": volume, "projected": {
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ],
                "defaultMode": 420}}));
            for list in ["initContainers", "containers"] {
                for_each_obj(spec, list, |c| {
                    let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
                    if let Value::Array(m) = mounts {
                        m.push(json!({"name": volume, "readOnly": true, "mountPath": SA_MOUNT_PATH}));
                    }
                });
            }
        }
    }
    // DefaultTolerationSeconds.
    let tolerations: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tolerates = |key: &str| {
        tolerations.iter().any(|t| {
            let k = t["key"].as_str().unwrap_or("");
            let e = t["effect"].as_str().unwrap_or("");
            (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
        })
    };
    let mut added = Vec::new();
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        if !tolerates(key) {
            added.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    if !added.is_empty() {
        let mut all = tolerations.clone();
        all.extend(added);
        spec.insert("tolerations".into(), Value::Array(all));
    }
    // Priority.
    let priority = match spec.get("priorityClassName").and_then(Value::as_str).unwrap_or("") {
        "" => 0,
        "system-node-critical" => 2_000_001_000,
        "system-cluster-critical" => 2_000_000_000,
        other => {
            return Err(ApiError::forbidden(
                "",
                "pods",
                name,
                &format!("no PriorityClass with name {other} was found"),
            ));
        }
    };
    spec.insert("priority".into(), priority.into());
    set_default(spec, "preemptionPolicy", "PreemptLowerPriority".into());
    Ok(())
}

/// Defaults and admission of a Node create: TaintNodesByCondition's not-ready taint and
/// allocatable defaulted from capacity. The posted status is kept.
pub fn default_node(node: &mut Value) {
    let obj = node.as_object_mut().expect("object");
    let spec = child(obj, "spec");
    let taint = json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"});
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    let list = taints.as_array_mut().expect("array");
    if !list
        .iter()
        .any(|t| t["key"] == taint["key"] && t["effect"] == taint["effect"])
    {
        list.push(taint);
    }
    let status = child(obj, "status");
    if absent(status, "allocatable") {
        if let Some(c) = status.get("capacity").cloned() {
            status.insert("allocatable".into(), c);
        }
    }
}

/// Defaults of other kinds on create.
pub fn default_other(rid: Rid, obj: &mut Value) {
    let m = obj.as_object_mut().expect("object");
    match rid {
        SECRETS => set_default(m, "type", "Opaque".into()),
        NAMESPACES => {
            let name = m["metadata"]["name"].clone();
            child(child(m, "metadata"), "labels").insert("kubernetes.io/metadata.name".into(), name);
            child(m, "spec")
                .entry("finalizers")
                .or_insert_with(|| json!(["kubernetes"]));
            child(m, "status").insert("phase".into(), "Active".into());
        }
        SERVICES => {
            let spec = child(m, "spec");
            set_default(spec, "type", "ClusterIP".into());
            set_default(spec, "sessionAffinity", "None".into());
            for_each_obj(spec, "ports", |p| {
                set_default(p, "protocol", "TCP".into());
                if let Some(port) = p.get("port").cloned() {
                    p.entry("targetPort").or_insert(port);
                }
            });
        }
        _ => {}
    }
}

/// The JSON shape Go's typed structs give: non-pointer struct fields are always written, a
/// zero `metav1.Time` as `null`, a zero string as `""` when the field has no omitempty.
pub fn normalize(rid: Rid, obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    set_default(child(m, "metadata"), "creationTimestamp", Value::Null);
    match rid {
        PODS => {
            child(m, "spec");
            let status = child(m, "status");
            for_each_obj(status, "conditions", |c| {
                set_default(c, "lastProbeTime", Value::Null);
                set_default(c, "lastTransitionTime", Value::Null);
            });
            for list in [
                "initContainerStatuses",
                "containerStatuses",
                "ephemeralContainerStatuses",
            ] {
                for_each_obj(status, list, |c| {
                    set_default(c, "state", json!({}));
                    set_default(c, "lastState", json!({}));
                    set_default(c, "ready", false.into());
                    set_default(c, "restartCount", 0.into());
                    set_default(c, "image", "".into());
                    set_default(c, "imageID", "".into());
                });
            }
        }
        NODES => {
            child(m, "spec");
            let status = child(m, "status");
            let endpoint = child(child(status, "daemonEndpoints"), "kubeletEndpoint");
            set_default(endpoint, "Port", 0.into());
            let info = child(status, "nodeInfo");
            for f in [
                "machineID",
                "systemUUID",
                "bootID",
                "kernelVersion",
                "osImage",
                "containerRuntimeVersion",
                "kubeletVersion",
                "kubeProxyVersion",
                "operatingSystem",
                "architecture",
            ] {
                set_default(info, f, "".into());
            }
            for_each_obj(status, "conditions", |c| {
                set_default(c, "lastHeartbeatTime", Value::Null);
                set_default(c, "lastTransitionTime", Value::Null);
            });
        }
        EVENTS => {
            child(m, "involvedObject");
            child(m, "source");
            for f in ["firstTimestamp", "lastTimestamp", "eventTime"] {
                set_default(m, f, Value::Null);
            }
            for f in ["reportingComponent", "reportingInstance"] {
                set_default(m, f, "".into());
            }
        }
        LEASES => {
            child(m, "spec");
        }
        SERVICES => {
            child(m, "spec");
            child(child(m, "status"), "loadBalancer");
        }
        NAMESPACES => {
            child(m, "spec");
            child(m, "status");
        }
        _ => {}
    }
}

/// Whether an update of a pod's spec only touches what v1.24 lets change: container images,
/// activeDeadlineSeconds, tolerations (additions) and terminationGracePeriodSeconds.
pub fn pod_spec_update_allowed(old: &Value, new: &Value) -> bool {
    let mut a = old.clone();
    let mut b = new.clone();
    for s in [&mut a, &mut b] {
        if let Some(m) = s.as_object_mut() {
            for f in ["activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"] {
                m.remove(f);
            }
            for list in ["initContainers", "containers"] {
                for_each_obj(m, list, |c| {
                    c.remove("image");
                });
            }
        }
    }
    let old_tolerations = old["tolerations"].as_array().cloned().unwrap_or_default();
    let new_tolerations = new["tolerations"].as_array().cloned().unwrap_or_default();
    a == b && old_tolerations.iter().all(|t| new_tolerations.contains(t))
}

pub const POD_UPDATE_FORBIDDEN: &str = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The pod status validation a real API server applies to `status.podIPs` (and `hostIPs`):
/// at most one IP per family, the first one equal to `podIP` (`hostIP`). Returns the
/// 422 cause (reason, field, message) of the first violation.
pub fn pod_status_invalid(new: &Value) -> Option<(&'static str, &'static str, String)> {
    let st = &new["status"];
    for (list, single, field) in [
        ("podIPs", "podIP", "status.podIPs"),
        ("hostIPs", "hostIP", "status.hostIPs"),
    ] {
        let ips: Vec<&str> = st[list]
            .as_array()
            .map(|a| a.iter().filter_map(|i| i["ip"].as_str()).collect())
            .unwrap_or_default();
        if ips.is_empty() {
            continue;
        }
        let go_list = || {
            let items: Vec<String> = ips.iter().map(|ip| format!("{{\"IP\":\"{ip}\"}}")).collect();
            format!("[{}]", items.join(","))
        };
        if st[single].as_str() != Some(ips[0]) {
            let msg = format!("Invalid value: {}: must be equal to {single}", go_list());
            return Some(("FieldValueInvalid", field, msg));
        }
        let v6 = ips.iter().filter(|ip| ip.contains(':')).count();
        if v6 > 1 || ips.len() - v6 > 1 {
            let msg = format!(
                "Invalid value: {}: may specify no more than one IP for each IP family",
                go_list()
            );
            return Some(("FieldValueInvalid", field, msg));
        }
    }
    None
}
