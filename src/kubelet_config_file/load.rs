//! Reading `--config` and the `--config-dir` drop-ins: YAML or JSON, the
//! type header checked, relative paths resolved against the file's
//! directory, each document decoded strictly first and leniently second (one
//! warning per unknown field, as upstream's lenient decoder), then merged as
//! upstream does: drop-ins (`*.conf`, walked in lexical order) are JSON merge
//! patches (RFC 7386) over the file. Which source set each field is kept for
//! error messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::types::{API_VERSION, KIND, KubeletConfiguration};
use super::{LoadError, Origin};

/// Fields holding paths, resolved against the config file's directory when
/// relative (upstream `KubeletConfigurationPathRefs`).
const PATH_FIELDS: &[&[&str]] = &[
    &["staticPodPath"],
    &["authentication", "x509", "clientCAFile"],
    &["tlsCertFile"],
    &["tlsPrivateKeyFile"],
    &["resolvConf"],
    &["volumePluginDir"],
    &["podLogsDir"],
];

/// The merged document of all config sources, before flags and defaults.
#[derive(Debug, Default)]
pub struct Merged {
    /// The merged JSON (file ← drop-ins).
    pub value: Value,
    /// Dotted field path → the source that last set it.
    pub origins: BTreeMap<String, Origin>,
    /// Warnings (unknown fields).
    pub warnings: Vec<String>,
}

/// Parses one document (YAML or JSON) and checks its type header.
///
/// ```
/// use actlet::kubelet_config_file::load::parse_document;
/// let v = parse_document("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 10\n").unwrap();
/// assert_eq!(v["maxPods"], 10);
/// assert!(parse_document("maxPods: 10").unwrap_err().contains("'Kind' is missing"));
/// ```
pub fn parse_document(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Err("the file is empty".into());
    }
    let value: Value = serde_yaml_ng::from_str(text).map_err(|e| format!("failed to decode: {e}"))?;
    let Value::Object(map) = &value else {
        return Err("failed to decode: not a YAML/JSON object".into());
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    let version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if kind.is_empty() {
        return Err("failed to decode: Object 'Kind' is missing".into());
    }
    if version.is_empty() {
        return Err("failed to decode: Object 'apiVersion' is missing".into());
    }
    if kind != KIND || version != API_VERSION {
        return Err(format!(
            "failed to decode: no kind {kind:?} is registered for version {version:?} (actlet reads {KIND} {API_VERSION})"
        ));
    }
    Ok(value)
}

/// Decodes a document into the typed configuration: strict first (unknown
/// fields collected), lenient second (they are ignored). A value of the wrong
/// type is an error naming its field.
///
/// ```
/// use actlet::kubelet_config_file::load::decode;
/// let v = serde_json::json!({"maxPods": 5, "fooBar": 1, "authentication": {"x509": {"nope": 1}}});
/// let (kc, unknown) = decode(&v).unwrap();
/// assert_eq!(kc.max_pods, Some(5));
/// assert_eq!(unknown, vec!["authentication.x509.nope", "fooBar"]);
/// let err = decode(&serde_json::json!({"maxPods": "ten"})).unwrap_err();
/// assert!(err.starts_with("maxPods: "), "{err}");
/// ```
pub fn decode(value: &Value) -> Result<(KubeletConfiguration, Vec<String>), String> {
    let mut unknown = vec![];
    // serde_ignored writes `?` for each Option level: drop it
    let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string().replace(".?", ""));
    let ignored = serde_ignored::Deserializer::new(value, &mut note);
    let kc: KubeletConfiguration = serde_path_to_error::deserialize(ignored).map_err(|e| {
        let path = e.path().to_string();
        format!("{path}: {}", e.inner())
    })?;
    Ok((kc, unknown))
}

/// Records `origin` for every leaf of `value` (objects are walked, arrays and
/// scalars are leaves).
fn record(prefix: &str, value: &Value, origin: &Origin, out: &mut BTreeMap<String, Origin>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if prefix.is_empty() && (k == "apiVersion" || k == "kind") {
                    continue;
                }
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                record(&path, v, origin, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), origin.clone());
        }
    }
}

fn resolve_relative_paths(value: &mut Value, dir: &Path) {
    for path in PATH_FIELDS {
        let pointer = format!("/{}", path.join("/"));
        if let Some(Value::String(s)) = value.pointer_mut(&pointer)
            && !s.is_empty()
            && Path::new(s.as_str()).is_relative()
        {
            *s = dir.join(s.as_str()).to_string_lossy().into_owned();
        }
    }
}

/// The drop-in files of `dir`: every `*.conf` below it (recursively), in the
/// lexical order of Go's `filepath.WalkDir`.
pub fn drop_in_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let walk_err = |e: std::io::Error| LoadError::DropInDir {
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    };
    let mut out = vec![];
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(walk_err)?
        .collect::<Result<_, _>>()
        .map_err(walk_err)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type().map_err(walk_err)?.is_dir() {
            out.extend(drop_in_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "conf") {
            out.push(path);
        }
    }
    Ok(out)
}

fn load_one(path: &Path, origin: Origin, merged: &mut Merged, main: bool) -> Result<(), LoadError> {
    let failed = |reason: String| LoadError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    let mut value = parse_document(&text).map_err(failed)?;
    if main {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(dir) = abs.parent() {
            resolve_relative_paths(&mut value, dir);
        }
    }
    let (_, unknown) = decode(&value).map_err(failed)?;
    for field in unknown {
        merged.warnings.push(format!(
            "{}: strict decoding error: unknown field {field:?}; using lenient decoding, the field is ignored",
            path.display()
        ));
    }
    record("", &value, &origin, &mut merged.origins);
    if merged.value.is_null() {
        merged.value = value;
    } else {
        json_patch::merge(&mut merged.value, &value);
    }
    Ok(())
}

/// Reads `--config` (if any) and then the drop-ins of `--config-dir` (if any).
pub fn load(config: Option<&Path>, config_dir: Option<&Path>) -> Result<Merged, LoadError> {
    let mut merged = Merged::default();
    if let Some(path) = config {
        load_one(path, Origin::File(path.to_path_buf()), &mut merged, true)?;
    }
    if let Some(dir) = config_dir {
        for path in drop_in_files(dir)? {
            load_one(&path, Origin::DropIn(path.clone()), &mut merged, false)?;
        }
    }
    if merged.value.is_null() {
        merged.value = Value::Object(Default::default());
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

    fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("{HEAD}{body}")).unwrap();
        p
    }

    #[test]
    fn drop_ins_merge_in_lexical_order_over_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let file = write(
            tmp.path(),
            "config.yaml",
            "maxPods: 10\nevictionHard:\n  memory.available: 1Gi\n",
        );
        let dir = tmp.path().join("conf.d");
        std::fs::create_dir(&dir).unwrap();
        write(&dir, "20-b.conf", "maxPods: 30\n");
        write(
            &dir,
            "10-a.conf",
            "maxPods: 20\nevictionHard:\n  nodefs.available: 5%\n",
        );
        write(&dir, "30-ignored.yaml", "maxPods: 99\n");
        let m = load(Some(&file), Some(&dir)).unwrap();
        assert_eq!(m.value["maxPods"], 30);
        // maps merge (RFC 7386), the last writer of a key wins
        assert_eq!(m.value["evictionHard"]["memory.available"], "1Gi");
        assert_eq!(m.value["evictionHard"]["nodefs.available"], "5%");
        assert_eq!(m.origins["maxPods"], Origin::DropIn(dir.join("20-b.conf")));
        assert_eq!(m.origins["evictionHard.memory.available"], Origin::File(file));
    }

    #[test]
    fn relative_paths_resolve_against_the_config_files_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let file = write(
            tmp.path(),
            "c.yaml",
            "staticPodPath: manifests\nauthentication:\n  x509:\n    clientCAFile: pki/ca.crt\n",
        );
        let m = load(Some(&file), None).unwrap();
        let dir = std::path::absolute(tmp.path()).unwrap();
        assert_eq!(m.value["staticPodPath"], dir.join("manifests").to_str().unwrap());
        assert_eq!(
            m.value["authentication"]["x509"]["clientCAFile"],
            dir.join("pki/ca.crt").to_str().unwrap()
        );
    }

    #[test]
    fn unknown_fields_warn_once_each_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let file = write(
            tmp.path(),
            "c.yaml",
            "maxPods: 10\nfooBar: 1\nlogging:\n  colour: red\n",
        );
        let m = load(Some(&file), None).unwrap();
        assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
        assert!(m.warnings[0].contains("unknown field \"fooBar\""));
        assert!(m.warnings[0].contains(file.to_str().unwrap()));
        assert!(
            m.warnings[1].contains("unknown field \"logging.colour\""),
            "{:?}",
            m.warnings
        );
    }

    #[test]
    fn bad_documents_name_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("bad.yaml");
        for (body, needle) in [
            ("", "empty"),
            ("maxPods: 1\n", "'Kind' is missing"),
            (
                "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
                "no kind",
            ),
            ("apiVersion: v1\nkind: Pod\n", "no kind \"Pod\""),
            ("{{{", "failed to decode"),
        ] {
            std::fs::write(&p, body).unwrap();
            let e = load(Some(&p), None).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("bad.yaml"), "{body:?}: {e}");
        }
        let file = write(tmp.path(), "t.yaml", "maxPods: lots\n");
        let e = load(Some(&file), None).unwrap_err().to_string();
        assert!(e.contains("maxPods") && e.contains("t.yaml"), "{e}");
        let e = load(None, Some(&tmp.path().join("missing"))).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
