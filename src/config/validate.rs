//! Basic validation of static pods (a subset of upstream
//! `validation.ValidatePodCreate`), run after defaulting. Returns the first
//! error, as a field path and an upstream-style reason
//! (`spec.containers[1].image: Required value`).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::ParsedQuantity;

/// One invalid field (upstream `field.Error`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FieldError {
    /// The field path, e.g. `spec.containers[0].name`.
    pub field: String,
    /// The upstream-style reason, e.g. `Required value`.
    pub reason: String,
}

impl FieldError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    fn required(field: impl Into<String>) -> Self {
        Self::new(field, "Required value")
    }

    fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Self::new(field, format!("Invalid value: {value:?}: {detail}"))
    }
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const RESTART_POLICIES: [&str; 3] = ["Always", "OnFailure", "Never"];

/// Whether `s` is a DNS-1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// Whether `s` is a DNS-1123 subdomain: at most 253 chars of dot-separated labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Validates a defaulted static pod; the first error wins.
pub fn validate_static_pod(pod: &Pod) -> Result<(), FieldError> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if name.is_empty() {
        return Err(FieldError::required("metadata.name"));
    }
    if !is_dns1123_subdomain(name) {
        return Err(FieldError::invalid("metadata.name", name, SUBDOMAIN_MSG));
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    if !is_dns1123_label(namespace) {
        return Err(FieldError::invalid("metadata.namespace", namespace, LABEL_MSG));
    }
    let Some(spec) = &pod.spec else {
        return Err(FieldError::required("spec.containers"));
    };
    if spec.containers.is_empty() {
        return Err(FieldError::required("spec.containers"));
    }
    let mut names = HashSet::new();
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| (format!("spec.initContainers[{i}]"), c));
    let regular = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("spec.containers[{i}]"), c));
    for (path, container) in init.chain(regular) {
        validate_container(&path, container, &mut names)?;
        let is_init = path.starts_with("spec.initContainers");
        super::validate_probes::validate_probes_and_hooks(&path, container, is_init)?;
        super::validate_restart::validate_container_restart(&path, container, is_init)?;
    }
    let policy = spec.restart_policy.as_deref().unwrap_or_default();
    if !RESTART_POLICIES.contains(&policy) {
        let reason = format!("Unsupported value: {policy:?}: supported values: \"Always\", \"Never\", \"OnFailure\"");
        return Err(FieldError::new("spec.restartPolicy", reason));
    }
    Ok(())
}

fn validate_container<'a>(
    path: &str,
    container: &'a Container,
    names: &mut HashSet<&'a str>,
) -> Result<(), FieldError> {
    let name = container.name.as_str();
    if name.is_empty() {
        return Err(FieldError::required(format!("{path}.name")));
    }
    if !is_dns1123_label(name) {
        return Err(FieldError::invalid(format!("{path}.name"), name, LABEL_MSG));
    }
    if !names.insert(name) {
        return Err(FieldError::new(
            format!("{path}.name"),
            format!("Duplicate value: {name:?}"),
        ));
    }
    if container.image.as_deref().is_none_or(|image| image.trim().is_empty()) {
        return Err(FieldError::required(format!("{path}.image")));
    }
    let Some(resources) = &container.resources else {
        return Ok(());
    };
    let limits = parse_list(&format!("{path}.resources.limits"), resources.limits.as_ref())?;
    let requests = parse_list(&format!("{path}.resources.requests"), resources.requests.as_ref())?;
    for (resource, (request_text, request)) in &requests {
        if let Some((limit_text, limit)) = limits.get(resource)
            && request > limit
        {
            let detail = format!("must be less than or equal to {resource} limit of {limit_text}");
            return Err(FieldError::invalid(
                format!("{path}.resources.requests[{resource}]"),
                request_text,
                &detail,
            ));
        }
    }
    Ok(())
}

/// The upstream message for a quantity that does not parse.
const QUANTITY_SYNTAX: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Parses a resource list into `name → (text, nanos)`, rejecting bad or negative quantities.
fn parse_list<'a>(
    path: &str,
    list: Option<&'a BTreeMap<String, Quantity>>,
) -> Result<BTreeMap<&'a str, (&'a str, i128)>, FieldError> {
    let mut parsed = BTreeMap::new();
    for (resource, Quantity(text)) in list.into_iter().flatten() {
        let field = format!("{path}[{resource}]");
        let value = ParsedQuantity::parse(text)
            .map(|q| q.nanos())
            .map_err(|_| FieldError::invalid(&field, text, QUANTITY_SYNTAX))?;
        if value < 0 {
            return Err(FieldError::invalid(&field, text, "must be greater than or equal to 0"));
        }
        parsed.insert(resource.as_str(), (text.as_str(), value));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod from YAML (no apiVersion/kind needed for validation).
    fn pod(yaml: &str) -> Pod {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    const GOOD: &str = "
metadata: {name: web-node1, namespace: default}
spec:
  restartPolicy: Always
  initContainers: [{name: init, image: busybox}]
  containers:
  - {name: a, image: nginx, resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: '1', memory: 1Gi}}}
  - {name: b, image: redis}
";

    #[test]
    fn accepts_a_valid_pod() {
        assert_eq!(validate_static_pod(&pod(GOOD)), Ok(()));
    }

    #[test]
    fn reports_the_first_error_with_its_field() {
        let cases = [
            ("name: web-node1", "name: ''", "metadata.name", "Required value"),
            (
                "name: web-node1",
                "name: Web_1",
                "metadata.name",
                "Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain",
            ),
            (
                "namespace: default",
                "namespace: a.b",
                "metadata.namespace",
                "Invalid value: \"a.b\": a lowercase RFC 1123 label",
            ),
            (
                "- {name: b, image: redis}",
                "- {name: b, image: ''}",
                "spec.containers[1].image",
                "Required value",
            ),
            (
                "- {name: b, image: redis}",
                "- {name: b}",
                "spec.containers[1].image",
                "Required value",
            ),
            (
                "- {name: b, image: redis}",
                "- {name: a, image: redis}",
                "spec.containers[1].name",
                "Duplicate value: \"a\"",
            ),
            (
                "- {name: b, image: redis}",
                "- {name: init, image: redis}",
                "spec.containers[1].name",
                "Duplicate value: \"init\"",
            ),
            (
                "- {name: b, image: redis}",
                "- {name: B, image: redis}",
                "spec.containers[1].name",
                "Invalid value: \"B\": a lowercase RFC 1123 label",
            ),
            (
                "- {name: b, image: redis}",
                "- {name: '', image: redis}",
                "spec.containers[1].name",
                "Required value",
            ),
            (
                "[{name: init, image: busybox}]",
                "[{name: init}]",
                "spec.initContainers[0].image",
                "Required value",
            ),
            (
                "restartPolicy: Always",
                "restartPolicy: Sometimes",
                "spec.restartPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\", \"OnFailure\"",
            ),
            (
                "cpu: 500m",
                "cpu: '2'",
                "spec.containers[0].resources.requests[cpu]",
                "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            ),
            (
                "memory: 1Gi}, limits",
                "memory: 1025Mi}, limits",
                "spec.containers[0].resources.requests[memory]",
                "Invalid value: \"1025Mi\": must be less than or equal to memory limit of 1Gi",
            ),
            (
                "cpu: '1'",
                "cpu: lots",
                "spec.containers[0].resources.limits[cpu]",
                "Invalid value: \"lots\": quantities must match",
            ),
            (
                "cpu: 500m",
                "cpu: -1",
                "spec.containers[0].resources.requests[cpu]",
                "Invalid value: \"-1\": must be greater than or equal to 0",
            ),
        ];
        for (from, to, field, reason) in cases {
            assert!(GOOD.contains(from), "{from}");
            let err = validate_static_pod(&pod(&GOOD.replacen(from, to, 1))).unwrap_err();
            assert_eq!(err.field, field, "{to}");
            assert!(err.reason.starts_with(reason), "{to}: {}", err.reason);
        }
    }

    #[test]
    fn requires_containers() {
        let none = pod("metadata: {name: a, namespace: default}\nspec: {containers: []}");
        assert_eq!(validate_static_pod(&none), Err(FieldError::required("spec.containers")));
        let no_spec = pod("metadata: {name: a, namespace: default}");
        assert_eq!(
            validate_static_pod(&no_spec),
            Err(FieldError::required("spec.containers"))
        );
    }

    #[test]
    fn dns1123_names() {
        assert!(is_dns1123_label("a-1"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label("a-"));
        assert!(!is_dns1123_label(""));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("kube-apiserver.node-1"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
    }
}
