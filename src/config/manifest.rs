//! Manifest bodies → pods (upstream `tryDecodeSinglePod` / `tryDecodePodList`).
//!
//! A manifest is one `v1 Pod`, a `v1 PodList`, or a `v1 List` whose items are
//! pods, written as YAML or JSON. JSON bodies (starting with `{`) are decoded
//! with `serde_json` so errors carry JSON line/column; everything else with
//! the YAML decoder, whose errors carry the field path and line/column.
//! Unknown fields are ignored, as upstream's decoder does.
//!
//! Parsing does not default or validate: see [`crate::config::static_pod`].

use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::messages::pod_update::ManifestError;

/// Manifests (files, HTTP bodies) larger than this are rejected (upstream `maxConfigLength`).
pub const MAX_MANIFEST_BYTES: usize = 10 << 20;

/// Why a manifest was rejected. Every variant names its origin (file path or
/// URL). Not retryable as such: the source reads the manifest again on its
/// next pass, and the error goes away once the manifest is fixed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The manifest could not be read (I/O error, too large, not UTF-8).
    #[error("{origin}: couldn't read manifest: {reason}")]
    Read {
        /// File path or URL.
        origin: String,
        /// The I/O error.
        reason: String,
    },
    /// The body is not well-formed YAML/JSON, or does not decode as a pod.
    #[error("{origin}: couldn't parse as pod: {reason}")]
    Parse {
        /// File path or URL.
        origin: String,
        /// The decoder's error, with its position.
        reason: String,
    },
    /// The object is not a `v1 Pod`, `v1 PodList` or `v1 List` of pods.
    #[error("{origin}: {field}: kind {kind:?}, apiVersion {api_version:?} is not a v1 Pod, PodList or List of pods")]
    WrongKind {
        /// File path or URL.
        origin: String,
        /// Where in the body (`kind`, or `items[2].kind` in a list).
        field: String,
        /// The `kind` found (empty when missing).
        kind: String,
        /// The `apiVersion` found (empty when missing).
        api_version: String,
    },
    /// A pod failed validation (upstream `field.Error`).
    #[error("{origin}: invalid pod: {field}: {reason}")]
    Invalid {
        /// File path or URL.
        origin: String,
        /// The field path, e.g. `spec.containers[1].image`.
        field: String,
        /// What is wrong, e.g. `Required value`.
        reason: String,
    },
}

impl Error {
    /// The file path or URL of the rejected manifest.
    pub fn origin(&self) -> &str {
        match self {
            Self::Read { origin, .. }
            | Self::Parse { origin, .. }
            | Self::WrongKind { origin, .. }
            | Self::Invalid { origin, .. } => origin,
        }
    }

    /// The message without the origin prefix.
    pub fn reason(&self) -> String {
        let full = self.to_string();
        full.strip_prefix(self.origin())
            .and_then(|rest| rest.strip_prefix(": "))
            .map_or_else(|| full.clone(), str::to_owned)
    }
}

impl From<&Error> for ManifestError {
    fn from(error: &Error) -> Self {
        ManifestError {
            origin: error.origin().to_owned(),
            reason: error.reason(),
        }
    }
}

/// Module result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `apiVersion` and `kind` of an object, and of a list's items.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct TypeHead {
    api_version: Option<String>,
    kind: Option<String>,
    items: Option<Vec<ItemHead>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ItemHead {
    api_version: Option<String>,
    kind: Option<String>,
}

#[derive(Deserialize)]
struct ListBody {
    #[serde(default)]
    items: Vec<Pod>,
}

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq)]
pub enum Manifest {
    /// A single `v1 Pod`.
    Pod(Box<Pod>),
    /// A `v1 PodList` or `v1 List`: its pods, in document order.
    List(Vec<Pod>),
}

impl Manifest {
    /// The pods, in document order.
    pub fn into_pods(self) -> Vec<Pod> {
        match self {
            Self::Pod(pod) => vec![*pod],
            Self::List(pods) => pods,
        }
    }
}

/// Parses a manifest body.
///
/// `origin` (file path or URL) only labels errors. An empty body is a
/// [`Error::Parse`]; so is a multi-document YAML stream.
pub fn parse_manifest(body: &str, origin: &str) -> Result<Manifest> {
    if body.trim().is_empty() {
        return Err(parse_error(origin, "empty manifest"));
    }
    // Decoding a map first rejects sequences and scalars ("expected a map").
    let object: serde_json::Map<String, serde_json::Value> = decode(body, origin)?;
    let head: TypeHead = serde_json::from_value(object.into())
        .map_err(|e| parse_error(origin, format!("apiVersion, kind or items: {e}")))?;
    let api_version = head.api_version.unwrap_or_default();
    let kind = head.kind.unwrap_or_default();
    let wrong_kind = |field: String, kind: &str, api_version: &str| Error::WrongKind {
        origin: origin.to_owned(),
        field,
        kind: kind.to_owned(),
        api_version: api_version.to_owned(),
    };
    if api_version != "v1" {
        return Err(wrong_kind("apiVersion".into(), &kind, &api_version));
    }
    match kind.as_str() {
        "Pod" => Ok(Manifest::Pod(Box::new(decode(body, origin)?))),
        "PodList" | "List" => {
            for (i, item) in head.items.iter().flatten().enumerate() {
                let item_kind = item.kind.as_deref().unwrap_or("Pod");
                let item_version = item.api_version.as_deref().unwrap_or("v1");
                if item_kind != "Pod" || item_version != "v1" {
                    return Err(wrong_kind(format!("items[{i}]"), item_kind, item_version));
                }
            }
            Ok(Manifest::List(decode::<ListBody>(body, origin)?.items))
        }
        _ => Err(wrong_kind("kind".into(), &kind, &api_version)),
    }
}

fn decode<T: DeserializeOwned>(body: &str, origin: &str) -> Result<T> {
    let result = if body.trim_start().starts_with('{') {
        serde_json::from_str(body).map_err(|e| e.to_string())
    } else {
        serde_yaml_ng::from_str(body).map_err(|e| e.to_string())
    };
    result.map_err(|reason| parse_error(origin, reason))
}

fn parse_error(origin: &str, reason: impl Into<String>) -> Error {
    Error::Parse {
        origin: origin.to_owned(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "/etc/kubernetes/manifests/web.yaml";

    fn names(manifest: Manifest) -> Vec<String> {
        manifest
            .into_pods()
            .into_iter()
            .map(|p| p.metadata.name.unwrap_or_default())
            .collect()
    }

    #[test]
    fn parses_a_yaml_pod() {
        let body =
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: nginx\n";
        let Manifest::Pod(pod) = parse_manifest(body, ORIGIN).unwrap() else {
            panic!("not a pod")
        };
        assert_eq!(pod.metadata.name.as_deref(), Some("web"));
        assert_eq!(pod.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx"));
    }

    #[test]
    fn parses_a_json_pod() {
        let body = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[]}}"#;
        assert_eq!(names(parse_manifest(body, ORIGIN).unwrap()), ["web"]);
    }

    #[test]
    fn parses_pod_lists_and_lists_of_pods() {
        let pod_list = "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n";
        assert_eq!(names(parse_manifest(pod_list, ORIGIN).unwrap()), ["a", "b"]);
        let list =
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}"#;
        assert_eq!(names(parse_manifest(list, ORIGIN).unwrap()), ["a"]);
        let empty = "apiVersion: v1\nkind: PodList\nitems: []\n";
        assert_eq!(parse_manifest(empty, ORIGIN).unwrap(), Manifest::List(vec![]));
    }

    #[test]
    fn ignores_unknown_fields() {
        let body = "apiVersion: v1\nkind: Pod\nfoo: bar\nmetadata:\n  name: web\n  bogus: 1\n";
        assert_eq!(names(parse_manifest(body, ORIGIN).unwrap()), ["web"]);
    }

    #[test]
    fn rejects_wrong_kinds_naming_the_field() {
        let cases = [
            ("apiVersion: v1\nkind: Service\n", "kind", "Service", "v1"),
            ("apiVersion: apps/v1\nkind: Pod\n", "apiVersion", "Pod", "apps/v1"),
            ("metadata: {name: x}\n", "apiVersion", "", ""),
            ("apiVersion: v1\nmetadata: {name: x}\n", "kind", "", "v1"),
            (
                "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n- {apiVersion: v1, kind: Service}\n",
                "items[1]",
                "Service",
                "v1",
            ),
        ];
        for (body, field, kind, api_version) in cases {
            let expected = Error::WrongKind {
                origin: ORIGIN.into(),
                field: field.into(),
                kind: kind.into(),
                api_version: api_version.into(),
            };
            assert_eq!(parse_manifest(body, ORIGIN).unwrap_err(), expected, "{body}");
        }
    }

    #[test]
    fn parse_errors_name_origin_and_position() {
        let err = parse_manifest("apiVersion: v1\nkind: Pod\nmetadata: [\n", ORIGIN).unwrap_err();
        assert!(matches!(err, Error::Parse { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("{ORIGIN}: couldn't parse as pod: ")),
            "{err}"
        );
        assert!(err.to_string().contains("line"), "{err}");

        let json = "{\"apiVersion\": \"v1\",\n \"kind\": \"Pod\",\n \"metadata\": {\"name\": 5}}";
        let err = parse_manifest(json, ORIGIN).unwrap_err();
        assert!(err.reason().contains("line 3"), "{err}");
    }

    #[test]
    fn type_errors_carry_the_field_path() {
        let body = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: c\n    ports:\n    - containerPort: eighty\n";
        let err = parse_manifest(body, ORIGIN).unwrap_err();
        assert!(
            err.reason().contains("spec.containers[0].ports[0].containerPort"),
            "{err}"
        );
    }

    #[test]
    fn rejects_empty_and_multi_document_bodies() {
        assert_eq!(
            parse_manifest(" \n", ORIGIN).unwrap_err(),
            parse_error(ORIGIN, "empty manifest")
        );
        let two = "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\n";
        assert!(matches!(parse_manifest(two, ORIGIN), Err(Error::Parse { .. })));
        assert!(matches!(parse_manifest("- a\n- b\n", ORIGIN), Err(Error::Parse { .. })));
    }

    #[test]
    fn converts_to_the_message_error() {
        let err = Error::Invalid {
            origin: "u".into(),
            field: "spec.containers".into(),
            reason: "Required value".into(),
        };
        let message = ManifestError::from(&err);
        assert_eq!(message.origin, "u");
        assert_eq!(message.reason, "invalid pod: spec.containers: Required value");
    }
}
