//! Nothing silent: which pod spec fields actlet honours, and a report of the
//! ones a pod sets that it does not (yet). A kubelet never drops a field
//! without a word: each such field gets one `Warning` event
//! ([`UNSUPPORTED_FIELD_REASON`]) and one log line per pod, naming the field.
//!
//! The tables below list every field of `PodSpec`, `Container`,
//! `PodSecurityContext`, `SecurityContext` and every volume source, each
//! with how actlet treats it:
//! - [`Support::Honoured`] — implemented;
//! - [`Support::NotKubelet`] — acted on by the scheduler or the API server,
//!   not by a kubelet (or nothing to do until a value asks for it);
//! - [`Support::NotYet`] — a kubelet behaviour actlet does not have yet —
//!   reported.
//!
//! A field found in a pod that is in no table (a newer API) is reported too.
//! Fields that k8s-openapi itself does not know (newer than its API version)
//! never reach actlet: they are dropped while the pod is decoded.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value};

/// Event reason of the report.
pub const UNSUPPORTED_FIELD_REASON: &str = "UnsupportedField";

/// How actlet treats a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Implemented.
    Honoured,
    /// Not a kubelet's concern (scheduler, API server), nothing to report.
    NotKubelet,
    /// A kubelet behaviour actlet does not implement yet: reported.
    NotYet,
}

use Support::{Honoured, NotKubelet, NotYet};

/// `PodSpec` fields.
pub const POD_SPEC: &[(&str, Support)] = &[
    ("activeDeadlineSeconds", Honoured),
    ("affinity", NotKubelet),
    ("automountServiceAccountToken", NotKubelet),
    ("containers", Honoured),
    ("dnsConfig", Honoured),
    ("dnsPolicy", Honoured),
    ("enableServiceLinks", Honoured),
    ("ephemeralContainers", Honoured), // walked: CONTAINER
    ("hostAliases", Honoured),
    ("hostIPC", Honoured),
    ("hostNetwork", Honoured),
    ("hostPID", Honoured),
    ("hostUsers", Honoured), // reported by value below when false
    ("hostname", Honoured),
    ("hostnameOverride", Honoured),
    ("imagePullSecrets", Honoured),
    ("initContainers", Honoured),
    ("nodeName", Honoured),
    ("nodeSelector", Honoured),
    ("os", NotKubelet),
    ("overhead", Honoured), // cgroups and admission
    ("preemptionPolicy", NotKubelet),
    ("priority", NotKubelet),
    ("priorityClassName", NotKubelet),
    ("readinessGates", Honoured),
    ("resourceClaims", NotYet),
    ("resources", Honoured), // pod-level (KEP-2837): QoS, cgroups, admission
    ("restartPolicy", Honoured),
    ("runtimeClassName", Honoured),
    ("schedulerName", NotKubelet),
    ("schedulingGates", NotKubelet),
    ("schedulingGroup", NotKubelet),
    ("securityContext", Honoured), // walked: POD_SECURITY_CONTEXT
    ("serviceAccount", Honoured),
    ("serviceAccountName", Honoured),
    ("setHostnameAsFQDN", Honoured),
    ("shareProcessNamespace", Honoured),
    ("subdomain", Honoured),
    ("terminationGracePeriodSeconds", Honoured),
    ("tolerations", NotKubelet),
    ("topologySpreadConstraints", NotKubelet),
    ("volumes", Honoured), // walked: VOLUME_SOURCES
];

/// `Container` fields (containers, init containers).
pub const CONTAINER: &[(&str, Support)] = &[
    ("args", Honoured),
    ("command", Honoured),
    ("env", Honoured),
    ("envFrom", Honoured),
    ("image", Honoured),
    ("imagePullPolicy", Honoured),
    ("lifecycle", Honoured),
    ("livenessProbe", Honoured),
    ("name", Honoured),
    ("ports", Honoured),
    ("readinessProbe", Honoured),
    // Defaulted by the API server; matters only once a resize is asked for.
    ("resizePolicy", Honoured),
    ("resources", Honoured),
    ("restartPolicy", Honoured),
    ("restartPolicyRules", Honoured),
    ("securityContext", Honoured), // walked: SECURITY_CONTEXT
    ("startupProbe", Honoured),
    ("stdin", Honoured),
    ("stdinOnce", Honoured),
    ("terminationMessagePath", Honoured),
    ("terminationMessagePolicy", Honoured),
    ("tty", Honoured),
    ("volumeDevices", NotYet),
    ("volumeMounts", Honoured),
    ("workingDir", Honoured),
];

/// `PodSecurityContext` fields.
pub const POD_SECURITY_CONTEXT: &[(&str, Support)] = &[
    ("appArmorProfile", Honoured),
    ("fsGroup", Honoured),
    ("fsGroupChangePolicy", Honoured),
    ("runAsGroup", Honoured),
    ("runAsNonRoot", Honoured),
    ("runAsUser", Honoured),
    ("seLinuxChangePolicy", NotYet),
    ("seLinuxOptions", Honoured),
    ("seccompProfile", Honoured),
    ("supplementalGroups", Honoured),
    ("supplementalGroupsPolicy", Honoured),
    ("sysctls", Honoured),
    ("windowsOptions", NotKubelet),
];

/// Container `SecurityContext` fields.
pub const SECURITY_CONTEXT: &[(&str, Support)] = &[
    ("allowPrivilegeEscalation", Honoured),
    ("appArmorProfile", Honoured),
    ("capabilities", Honoured),
    ("privileged", Honoured),
    ("procMount", Honoured),
    ("readOnlyRootFilesystem", Honoured),
    ("runAsGroup", Honoured),
    ("runAsNonRoot", Honoured),
    ("runAsUser", Honoured),
    ("seLinuxOptions", Honoured),
    ("seccompProfile", Honoured),
    ("windowsOptions", NotKubelet),
];

/// Volume sources (the one key of a volume besides `name`).
pub const VOLUME_SOURCES: &[(&str, Support)] = &[
    ("awsElasticBlockStore", NotYet),
    ("azureDisk", NotYet),
    ("azureFile", NotYet),
    ("cephfs", NotYet),
    ("cinder", NotYet),
    ("configMap", Honoured),
    ("csi", NotYet),
    ("downwardAPI", Honoured),
    ("emptyDir", Honoured),
    ("ephemeral", NotYet),
    ("fc", NotYet),
    ("flexVolume", NotYet),
    ("flocker", NotYet),
    ("gcePersistentDisk", NotYet),
    ("gitRepo", NotYet),
    ("glusterfs", NotYet),
    ("hostPath", Honoured),
    ("image", NotYet),
    ("iscsi", NotYet),
    ("nfs", NotYet),
    ("persistentVolumeClaim", NotYet),
    ("photonPersistentDisk", NotYet),
    ("portworxVolume", NotYet),
    ("projected", Honoured),
    ("quobyte", NotYet),
    ("rbd", NotYet),
    ("scaleIO", NotYet),
    ("secret", Honoured),
    ("storageos", NotYet),
    ("vsphereVolume", NotYet),
];

fn support(table: &[(&str, Support)], key: &str) -> Support {
    table.iter().find(|(k, _)| *k == key).map_or(NotYet, |(_, s)| *s)
}

fn walk(obj: &Map<String, Value>, table: &[(&str, Support)], at: &str, out: &mut Vec<String>) {
    for key in obj.keys() {
        if support(table, key) == NotYet {
            out.push(format!("{at}.{key}"));
        }
    }
}

fn named(list: Option<&Value>) -> impl Iterator<Item = (&str, &Map<String, Value>)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|o| (o.get("name").and_then(Value::as_str).unwrap_or("?"), o))
}

/// The fields `pod` sets that actlet does not honour, as paths
/// (`spec.resourceClaims`, `spec.containers[app].volumeDevices`,
/// `spec.volumes[data].persistentVolumeClaim`), in spec order.
///
/// ```
/// use actlet::pod_fields::unsupported_fields;
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "web"},
///     "spec": {
///         "runtimeClassName": "gvisor",
///         "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
///         "containers": [{"name": "app", "image": "busybox"}],
///         "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "tmp", "emptyDir": {}}]
///     }
/// })).unwrap();
/// assert_eq!(unsupported_fields(&pod), ["spec.resourceClaims", "spec.volumes[data].persistentVolumeClaim"]);
/// ```
pub fn unsupported_fields(pod: &Pod) -> Vec<String> {
    let mut out = Vec::new();
    let Some(Value::Object(spec)) = pod.spec.as_ref().and_then(|s| serde_json::to_value(s).ok()) else {
        return out;
    };
    walk(&spec, POD_SPEC, "spec", &mut out);
    if spec.get("hostUsers").and_then(Value::as_bool) == Some(false) {
        out.push("spec.hostUsers=false (user namespaces)".into());
    }
    if let Some(Value::Object(sc)) = spec.get("securityContext") {
        walk(sc, POD_SECURITY_CONTEXT, "spec.securityContext", &mut out);
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (name, c) in named(spec.get(list)) {
            let at = format!("spec.{list}[{name}]");
            // Ephemeral containers' one extra field, the container whose PID
            // namespace they join, is honoured.
            let mut c = c.clone();
            c.remove("targetContainerName");
            walk(&c, CONTAINER, &at, &mut out);
            if let Some(Value::Object(sc)) = c.get("securityContext") {
                walk(sc, SECURITY_CONTEXT, &format!("{at}.securityContext"), &mut out);
            }
        }
    }
    for (name, v) in named(spec.get("volumes")) {
        let sources = v.keys().filter(|k| *k != "name");
        for key in sources {
            if support(VOLUME_SOURCES, key) == NotYet {
                out.push(format!("spec.volumes[{name}].{key}"));
            }
        }
    }
    out
}

/// The event message for `fields`.
///
/// ```
/// let m = actlet::pod_fields::message(&["spec.hostAliases".to_string()]);
/// assert_eq!(m, "actlet does not implement spec.hostAliases yet: ignored");
/// ```
pub fn message(fields: &[String]) -> String {
    format!("actlet does not implement {} yet: ignored", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod setting every field of every table (values that serialize).
    fn every_field() -> Value {
        let obj = |table: &[(&str, Support)], skip: &[&str]| -> Map<String, Value> {
            table
                .iter()
                .filter(|(k, _)| !skip.contains(k))
                .map(|(k, _)| (k.to_string(), sample(k)))
                .collect()
        };
        let mut container = obj(CONTAINER, &[]);
        container.insert("name".into(), "app".into());
        container.insert("securityContext".into(), Value::Object(obj(SECURITY_CONTEXT, &[])));
        let mut spec = obj(POD_SPEC, &[]);
        spec.insert("containers".into(), Value::Array(vec![Value::Object(container)]));
        spec.insert("securityContext".into(), Value::Object(obj(POD_SECURITY_CONTEXT, &[])));
        let volumes = VOLUME_SOURCES
            .iter()
            .map(|(k, _)| serde_json::json!({"name": format!("v-{k}"), *k: volume_sample(k)}))
            .collect();
        spec.insert("volumes".into(), Value::Array(volumes));
        serde_json::json!({"metadata": {"name": "all"}, "spec": spec})
    }

    /// A value of the right JSON shape for volume source `k`.
    fn volume_sample(k: &str) -> Value {
        match k {
            "image" => serde_json::json!({"reference": "x"}),
            _ => sample(k),
        }
    }

    /// A value of the right JSON shape for field `k`.
    fn sample(k: &str) -> Value {
        use serde_json::json;
        match k {
            "activeDeadlineSeconds"
            | "priority"
            | "terminationGracePeriodSeconds"
            | "fsGroup"
            | "runAsGroup"
            | "runAsUser" => json!(1),
            "automountServiceAccountToken"
            | "enableServiceLinks"
            | "hostIPC"
            | "hostNetwork"
            | "hostPID"
            | "hostUsers"
            | "setHostnameAsFQDN"
            | "shareProcessNamespace"
            | "stdin"
            | "stdinOnce"
            | "tty"
            | "allowPrivilegeEscalation"
            | "privileged"
            | "readOnlyRootFilesystem"
            | "runAsNonRoot" => json!(true),
            "args" | "command" => json!(["x"]),
            "containers"
            | "initContainers"
            | "ephemeralContainers"
            | "env"
            | "envFrom"
            | "ports"
            | "volumeMounts"
            | "volumeDevices"
            | "resizePolicy"
            | "restartPolicyRules"
            | "hostAliases"
            | "imagePullSecrets"
            | "readinessGates"
            | "resourceClaims"
            | "schedulingGates"
            | "tolerations"
            | "topologySpreadConstraints"
            | "volumes"
            | "sysctls"
            | "supplementalGroups" => json!([]),
            "nodeSelector" | "overhead" => json!({}),
            "dnsPolicy"
            | "hostname"
            | "hostnameOverride"
            | "image"
            | "imagePullPolicy"
            | "name"
            | "nodeName"
            | "preemptionPolicy"
            | "priorityClassName"
            | "restartPolicy"
            | "runtimeClassName"
            | "schedulerName"
            | "serviceAccount"
            | "serviceAccountName"
            | "subdomain"
            | "terminationMessagePath"
            | "terminationMessagePolicy"
            | "workingDir"
            | "fsGroupChangePolicy"
            | "procMount"
            | "seLinuxChangePolicy"
            | "supplementalGroupsPolicy" => json!("x"),
            "os" => json!({"name": "linux"}),
            "seccompProfile" | "appArmorProfile" => json!({"type": "RuntimeDefault"}),
            "hostPath" => json!({"path": "/x"}),
            "persistentVolumeClaim" => json!({"claimName": "x"}),
            "nfs" => json!({"server": "x", "path": "/x"}),
            "gitRepo" => json!({"repository": "x"}),
            "iscsi" => json!({"targetPortal": "x", "iqn": "x", "lun": 0}),
            "rbd" => json!({"monitors": [], "image": "x"}),
            "glusterfs" => json!({"endpoints": "x", "path": "x"}),
            "cephfs" => json!({"monitors": []}),
            "flexVolume" => json!({"driver": "x"}),
            "csi" => json!({"driver": "x"}),
            "cinder" | "vsphereVolume" => json!({"volumeID": "x", "volumePath": "x"}),
            "awsElasticBlockStore" => json!({"volumeID": "x"}),
            "gcePersistentDisk" => json!({"pdName": "x"}),
            "azureDisk" => json!({"diskName": "x", "diskURI": "x"}),
            "azureFile" => json!({"secretName": "x", "shareName": "x"}),
            "flocker" => json!({}),
            "photonPersistentDisk" => json!({"pdID": "x"}),
            "portworxVolume" => json!({"volumeID": "x"}),
            "quobyte" => json!({"registry": "x", "volume": "x"}),
            "scaleIO" => json!({"gateway": "x", "system": "x", "secretRef": {}}),
            "storageos" => json!({}),
            "fc" => json!({}),
            _ => json!({}),
        }
    }

    /// Every table names real fields of the API types: a pod setting all of
    /// them survives decoding into k8s-openapi's types with every field
    /// kept, and every field it keeps is classified.
    #[test]
    fn the_tables_cover_every_field_of_the_api_types() {
        let raw = every_field();
        let pod: Pod = serde_json::from_value(raw.clone()).expect("decodes");
        let back = serde_json::to_value(pod.spec.as_ref().expect("spec")).expect("encodes");
        for (key, _) in POD_SPEC {
            assert!(
                back.get(*key).is_some(),
                "PodSpec.{key} is not a field k8s-openapi knows"
            );
        }
        let c = &back["containers"][0];
        for (key, _) in CONTAINER {
            assert!(
                c.get(*key).is_some(),
                "Container.{key} is not a field k8s-openapi knows"
            );
        }
        for (key, _) in SECURITY_CONTEXT {
            assert!(c["securityContext"].get(*key).is_some(), "SecurityContext.{key}");
        }
        for (key, _) in POD_SECURITY_CONTEXT {
            assert!(back["securityContext"].get(*key).is_some(), "PodSecurityContext.{key}");
        }
        let kept_sources: Vec<&str> = back["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .flat_map(|v| v.as_object().expect("volume").keys().map(String::as_str))
            .filter(|k| *k != "name")
            .collect();
        for (key, _) in VOLUME_SOURCES {
            assert!(
                kept_sources.contains(key),
                "volume source {key} is not known to k8s-openapi"
            );
        }
    }

    /// Everything reported is a `NotYet` field of a table (or one reported by
    /// its value); the known gaps are reported and honoured fields are not.
    #[test]
    fn every_reported_field_is_not_yet_or_unknown() {
        let pod: Pod = serde_json::from_value(every_field()).expect("decodes");
        let reported = unsupported_fields(&pod);
        let not_yet = |table: &[(&str, Support)], key: &str| support(table, key) == NotYet;
        for path in &reported {
            let last = path.rsplit('.').next().unwrap_or_default();
            let key = last.split([' ', '=']).next().unwrap_or_default();
            let known = [
                POD_SPEC,
                CONTAINER,
                POD_SECURITY_CONTEXT,
                SECURITY_CONTEXT,
                VOLUME_SOURCES,
            ]
            .iter()
            .any(|t| not_yet(t, key))
                || key == "hostUsers";
            assert!(known, "{path} reported but not NotYet in a table");
        }
        for must in [
            "spec.resourceClaims",
            "spec.containers[app].volumeDevices",
            "spec.securityContext.seLinuxChangePolicy",
            "spec.volumes[v-persistentVolumeClaim].persistentVolumeClaim",
        ] {
            assert!(reported.iter().any(|r| r == must), "{must} not reported: {reported:?}");
        }
        for honoured in [
            "spec.runtimeClassName",
            "spec.hostnameOverride",
            "spec.containers[app].restartPolicyRules",
            "spec.overhead",
            "spec.resources",
            "spec.containers[app].livenessProbe",
            "spec.volumes[v-emptyDir].emptyDir",
            "spec.tolerations",
            "spec.enableServiceLinks",
        ] {
            assert!(!reported.iter().any(|r| r == honoured), "{honoured} reported");
        }
    }

    #[test]
    fn a_plain_pod_reports_nothing() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "1"]}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                     "enableServiceLinks": false, "tolerations": [{"key": "k", "operator": "Exists"}]}
        }))
        .expect("decodes");
        assert!(unsupported_fields(&pod).is_empty(), "{:?}", unsupported_fields(&pod));
    }
}
