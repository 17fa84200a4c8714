//! Static pods (file and HTTP sources): upstream `applyDefaults`
//! (`pkg/kubelet/config/common.go`) and the whole per-manifest pipeline
//! [`load_static_pods`]: parse → API defaults → static defaults → validate.
//!
//! `applyDefaults`, exactly as upstream:
//! - UID, when the manifest has none: hex MD5 of the pod (after API defaults,
//!   before anything below) serialized as JSON, then `host:<nodeName>` and
//!   `file:<path>` for a file, or `url:<url>` for HTTP. Identical content at
//!   the same place on the same node always gives the same UID.
//! - name `<name>-<lowercase nodeName>`; namespace `default` when empty;
//!   `spec.nodeName = nodeName`.
//! - annotation `kubernetes.io/config.hash` = the UID (generated or not).
//! - file pods only: toleration `{operator: Exists, effect: NoExecute}`.
//! - `status.phase = Pending`.
//!
//! Besides upstream, `kubernetes.io/config.source` is set here too (upstream
//! sets it in the merge, which [`crate::config::merge`] also does), so a
//! source's output is self-describing. `kubernetes.io/config.seen` is set by
//! the merge when the pod is first seen.

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus, Toleration};
use md5::{Digest, Md5};

use crate::config::annotations;
use crate::config::manifest::{self, Manifest, parse_manifest};
use crate::config::pod_defaults::apply_api_defaults;
use crate::config::validate::validate_static_pod;
use crate::messages::pod_update::PodSource;

/// Where a static manifest came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManifestOrigin<'a> {
    /// A file of `staticPodPath` (its path).
    File(&'a str),
    /// The `staticPodURL` body (the URL).
    Url(&'a str),
}

impl ManifestOrigin<'_> {
    /// The source the pods belong to.
    pub fn source(&self) -> PodSource {
        match self {
            Self::File(_) => PodSource::File,
            Self::Url(_) => PodSource::Http,
        }
    }

    /// The path or URL.
    pub fn location(&self) -> &str {
        match self {
            Self::File(location) | Self::Url(location) => location,
        }
    }
}

/// Parses, defaults and validates every pod of one manifest. A manifest is
/// all or nothing: the first invalid pod rejects it (upstream `tryDecodePodList`).
pub fn load_static_pods(body: &str, origin: ManifestOrigin<'_>, node_name: &str) -> manifest::Result<Vec<Pod>> {
    let location = origin.location();
    let manifest = parse_manifest(body, location)?;
    let in_list = matches!(manifest, Manifest::List(_));
    let mut pods = manifest.into_pods();
    for (i, pod) in pods.iter_mut().enumerate() {
        let prefix = if in_list { format!("items[{i}].") } else { String::new() };
        let invalid = |field: &str, reason: String| manifest::Error::Invalid {
            origin: location.to_owned(),
            field: format!("{prefix}{field}"),
            reason,
        };
        // Upstream checks this before defaulting: the suffix would hide it.
        if pod.metadata.name.as_deref().is_none_or(str::is_empty) {
            return Err(invalid("metadata.name", "Required value".into()));
        }
        apply_api_defaults(pod);
        apply_static_defaults(pod, origin, node_name);
        validate_static_pod(pod).map_err(|e| invalid(&e.field, e.reason))?;
    }
    Ok(pods)
}

/// Upstream `applyDefaults` (see the module doc). Call after
/// [`apply_api_defaults`]: the UID hash covers the API-defaulted pod.
pub fn apply_static_defaults(pod: &mut Pod, origin: ManifestOrigin<'_>, node_name: &str) {
    if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
        pod.metadata.uid = Some(uid_hash(pod, origin, node_name));
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.metadata.name = Some(static_pod_name(name, node_name));
    if pod.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        pod.metadata.namespace = Some("default".to_owned());
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.node_name = Some(node_name.to_owned());
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let annotations = pod.metadata.annotations.get_or_insert_with(Default::default);
    annotations.insert(annotations::CONFIG_HASH.to_owned(), uid);
    annotations.insert(
        annotations::CONFIG_SOURCE.to_owned(),
        origin.source().as_str().to_owned(),
    );
    if let ManifestOrigin::File(_) = origin {
        let tolerate_all = Toleration {
            operator: Some("Exists".to_owned()),
            effect: Some("NoExecute".to_owned()),
            ..Default::default()
        };
        add_or_update_toleration(spec, tolerate_all);
    }
    pod.status.get_or_insert_with(PodStatus::default).phase = Some("Pending".to_owned());
}

/// Upstream `generatePodName`: `<name>-<lowercase nodeName>`.
pub fn static_pod_name(name: &str, node_name: &str) -> String {
    format!("{name}-{}", node_name.to_lowercase())
}

/// The generated UID: hex MD5 of the pod's JSON, then `host:<node>file:<path>`
/// (file) or `url:<url>` (HTTP), as upstream writes them into the hasher.
pub fn uid_hash(pod: &Pod, origin: ManifestOrigin<'_>, node_name: &str) -> String {
    let mut hasher = Md5::new();
    hasher.update(serde_json::to_vec(pod).expect("a Pod always serializes"));
    match origin {
        ManifestOrigin::File(path) => hasher.update(format!("host:{node_name}file:{path}")),
        ManifestOrigin::Url(url) => hasher.update(format!("url:{url}")),
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Upstream `AddOrUpdateTolerationInPodSpec`: replaces a toleration with the
/// same key, effect, operator and value, else appends. Returns whether the
/// spec changed.
pub fn add_or_update_toleration(spec: &mut PodSpec, toleration: Toleration) -> bool {
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    let same_match = |old: &Toleration| {
        old.key.as_deref().unwrap_or_default() == toleration.key.as_deref().unwrap_or_default()
            && old.effect.as_deref().unwrap_or_default() == toleration.effect.as_deref().unwrap_or_default()
            && old.operator.as_deref().unwrap_or_default() == toleration.operator.as_deref().unwrap_or_default()
            && old.value.as_deref().unwrap_or_default() == toleration.value.as_deref().unwrap_or_default()
    };
    match tolerations.iter_mut().find(|old| same_match(old)) {
        Some(old) if *old == toleration => false,
        Some(old) => {
            *old = toleration;
            true
        }
        None => {
            tolerations.push(toleration);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "Node-1";
    const FILE: ManifestOrigin<'static> = ManifestOrigin::File("/etc/kubernetes/manifests/web.yaml");
    const URL: ManifestOrigin<'static> = ManifestOrigin::Url("http://config/pods");
    const WEB: &str =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx:1.27\n";

    fn load(body: &str, origin: ManifestOrigin<'_>, node: &str) -> Pod {
        let mut pods = load_static_pods(body, origin, node).unwrap();
        assert_eq!(pods.len(), 1);
        pods.remove(0)
    }

    fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
        pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
    }

    #[test]
    fn applies_upstream_defaults_to_a_file_pod() {
        let pod = load(WEB, FILE, NODE);
        let uid = pod.metadata.uid.clone().unwrap();
        assert_eq!(uid.len(), 32);
        assert!(uid.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(pod.metadata.name.as_deref(), Some("web-node-1"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some(NODE));
        assert_eq!(annotation(&pod, annotations::CONFIG_HASH), Some(uid.as_str()));
        assert_eq!(annotation(&pod, annotations::CONFIG_SOURCE), Some("file"));
        assert_eq!(annotation(&pod, annotations::CONFIG_SEEN), None, "set by the merge");
        let tolerations = spec.tolerations.as_ref().unwrap();
        assert_eq!(tolerations.len(), 1);
        assert_eq!(tolerations[0].operator.as_deref(), Some("Exists"));
        assert_eq!(tolerations[0].effect.as_deref(), Some("NoExecute"));
        assert_eq!(tolerations[0].key, None);
        assert_eq!(pod.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"), "API defaults applied");
        assert_eq!(spec.containers[0].image_pull_policy.as_deref(), Some("IfNotPresent"));
    }

    #[test]
    fn http_pods_hash_the_url_and_get_no_toleration() {
        let pod = load(WEB, URL, NODE);
        assert_eq!(annotation(&pod, annotations::CONFIG_SOURCE), Some("http"));
        assert_eq!(pod.spec.unwrap().tolerations, None);
        // upstream: the URL alone, not the node, goes into an HTTP pod's hash
        assert_eq!(load(WEB, URL, "other").metadata.uid, pod.metadata.uid);
    }

    #[test]
    fn uid_is_stable_and_differs_per_node_source_and_content() {
        let uid = |body: &str, origin, node| load(body, origin, node).metadata.uid.unwrap();
        let base = uid(WEB, FILE, NODE);
        assert_eq!(uid(WEB, FILE, NODE), base, "same content, same place");
        let reformatted = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"},
            "spec":{"containers":[{"image":"nginx:1.27","name":"c"}]}}"#;
        assert_eq!(uid(reformatted, FILE, NODE), base, "formatting does not matter");
        assert_ne!(uid(WEB, FILE, "node-2"), base);
        assert_ne!(
            uid(WEB, ManifestOrigin::File("/etc/kubernetes/manifests/other.yaml"), NODE),
            base
        );
        assert_ne!(uid(WEB, URL, NODE), base);
        assert_ne!(uid(&WEB.replace("1.27", "1.28"), FILE, NODE), base);
    }

    #[test]
    fn uid_hash_matches_upstream_recipe() {
        let mut pod: Pod = serde_yaml_ng::from_str(WEB).unwrap();
        apply_api_defaults(&mut pod);
        let mut expected = serde_json::to_vec(&pod).unwrap();
        expected.extend_from_slice(format!("host:{NODE}file:{}", FILE.location()).as_bytes());
        let expected: String = Md5::digest(&expected).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(load(WEB, FILE, NODE).metadata.uid, Some(expected));
    }

    #[test]
    fn keeps_manifest_uid_namespace_and_tolerations() {
        let body = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: kube-system, uid: my-uid}
spec:
  tolerations: [{operator: Exists, effect: NoExecute, tolerationSeconds: 5}, {key: k, operator: Exists}]
  containers: [{name: c, image: nginx}]\n";
        let pod = load(body, FILE, NODE);
        assert_eq!(pod.metadata.uid.as_deref(), Some("my-uid"));
        assert_eq!(annotation(&pod, annotations::CONFIG_HASH), Some("my-uid"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("kube-system"));
        let tolerations = pod.spec.unwrap().tolerations.unwrap();
        assert_eq!(tolerations.len(), 2, "matching toleration replaced, not appended");
        assert_eq!(tolerations[0].toleration_seconds, None);
        assert_eq!(tolerations[1].key.as_deref(), Some("k"));
    }

    #[test]
    fn toleration_table() {
        let exists = |key: Option<&str>, effect: Option<&str>, seconds| Toleration {
            key: key.map(Into::into),
            operator: Some("Exists".into()),
            effect: effect.map(Into::into),
            toleration_seconds: seconds,
            ..Default::default()
        };
        let all = exists(None, Some("NoExecute"), None);
        let cases = [
            (vec![], true, vec![all.clone()]),
            (vec![all.clone()], false, vec![all.clone()]),
            (vec![exists(None, Some("NoExecute"), Some(3))], true, vec![all.clone()]),
            (
                vec![exists(Some("k"), None, None)],
                true,
                vec![exists(Some("k"), None, None), all.clone()],
            ),
        ];
        for (before, changed, after) in cases {
            let mut spec = PodSpec {
                tolerations: Some(before.clone()),
                ..Default::default()
            };
            assert_eq!(add_or_update_toleration(&mut spec, all.clone()), changed, "{before:?}");
            assert_eq!(spec.tolerations.unwrap(), after);
        }
    }

    #[test]
    fn loads_every_pod_of_a_list() {
        let body = "apiVersion: v1\nkind: PodList\nitems:
- metadata: {name: a}\n  spec: {containers: [{name: c, image: x}]}
- metadata: {name: b}\n  spec: {containers: [{name: c, image: x}]}\n";
        let pods = load_static_pods(body, URL, NODE).unwrap();
        let names: Vec<_> = pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(names, ["a-node-1", "b-node-1"]);
        assert_ne!(pods[0].metadata.uid, pods[1].metadata.uid);
    }

    #[test]
    fn rejects_invalid_pods_with_origin_and_field() {
        let cases = [
            ("name: web", "name: ''", "metadata.name", "Required value"),
            (
                "image: nginx:1.27",
                "image: ''",
                "spec.containers[0].image",
                "Required value",
            ),
            (
                "name: web",
                "name: Web",
                "metadata.name",
                "Invalid value: \"Web-node-1\"",
            ),
        ];
        for (from, to, field, reason) in cases {
            let err = load_static_pods(&WEB.replacen(from, to, 1), FILE, NODE).unwrap_err();
            let manifest::Error::Invalid {
                origin,
                field: got,
                reason: why,
            } = err
            else {
                panic!("{err:?}")
            };
            assert_eq!((origin.as_str(), got.as_str()), (FILE.location(), field));
            assert!(why.starts_with(reason), "{why}");
        }
        let list = "apiVersion: v1\nkind: List\nitems:
- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: x}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: b}, spec: {containers: [{name: c}]}}\n";
        let err = load_static_pods(list, URL, NODE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "http://config/pods: invalid pod: items[1].spec.containers[0].image: Required value"
        );
    }
}
