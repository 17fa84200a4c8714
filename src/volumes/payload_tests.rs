use std::collections::BTreeMap;

use k8s_openapi::ByteString;

use super::*;

fn pod(yaml: &str) -> Pod {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad pod: {e}"))
}

fn volume(yaml: &str) -> Volume {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad volume: {e}"))
}

const POD: &str = r#"
metadata:
  name: web
  namespace: prod
  uid: u1
  labels: {app: web, tier: "fe"}
  annotations: {note: "a\"b"}
spec:
  containers:
  - name: app
    resources: {limits: {memory: 64Mi, cpu: 250m}, requests: {cpu: 100m}}
"#;

fn cm(data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        data: Some(data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

fn fetched_cm(name: &str, c: ConfigMap) -> Fetched {
    let mut f = Fetched::default();
    f.config_maps.insert(name.into(), Ok(c));
    f
}

fn files(p: &Payload) -> BTreeMap<String, (String, u32)> {
    p.iter()
        .map(|(k, v)| (k.clone(), (String::from_utf8_lossy(&v.data).into_owned(), v.mode)))
        .collect()
}

fn entry(data: &str, mode: u32) -> (String, u32) {
    (data.to_string(), mode)
}

#[test]
fn a_config_map_without_items_projects_every_key_with_the_default_mode() {
    let mut c = cm(&[("a.conf", "A")]);
    c.binary_data = Some(BTreeMap::from([("b.bin".to_string(), ByteString(vec![0, 1]))]));
    let v = volume("{name: cfg, configMap: {name: app}}");
    let p = volume_payload(&v, &pod(POD), &fetched_cm("app", c), &EnvContext::default())
        .unwrap()
        .unwrap();
    assert_eq!(p["a.conf"].data, b"A");
    assert_eq!(p["b.bin"].data, vec![0, 1]);
    assert!(p.values().all(|f| f.mode == 0o644));
}

#[test]
fn items_map_keys_to_paths_with_their_modes() {
    let v = volume(
        "{name: cfg, configMap: {name: app, defaultMode: 256, items: [{key: a, path: dir/x.conf, mode: 384}, {key: b, path: y}]}}",
    );
    let p = volume_payload(
        &v,
        &pod(POD),
        &fetched_cm("app", cm(&[("a", "A"), ("b", "B"), ("c", "C")])),
        &EnvContext::default(),
    );
    let p = p.unwrap().unwrap();
    assert_eq!(
        files(&p),
        BTreeMap::from([
            ("dir/x.conf".into(), entry("A", 0o600)),
            ("y".into(), entry("B", 0o400))
        ])
    );
}

#[test]
fn a_missing_key_or_object_fails_unless_optional() {
    let ctx = EnvContext::default();
    let v = volume("{name: cfg, configMap: {name: app, items: [{key: nope, path: x}]}}");
    let err = volume_payload(&v, &pod(POD), &fetched_cm("app", cm(&[])), &ctx).unwrap();
    assert_eq!(err.unwrap_err(), "configmap references non-existent config key: nope");
    let v = volume("{name: cfg, configMap: {name: app, optional: true, items: [{key: nope, path: x}]}}");
    let ok = volume_payload(&v, &pod(POD), &fetched_cm("app", cm(&[])), &ctx).unwrap();
    assert!(ok.unwrap().is_empty());

    let mut missing = Fetched::default();
    missing.secrets.insert(
        "db".into(),
        Err(ObjectError::NotFound {
            kind: "secret",
            name: "db".into(),
        }),
    );
    let v = volume("{name: s, secret: {secretName: db}}");
    let err = volume_payload(&v, &pod(POD), &missing, &ctx).unwrap().unwrap_err();
    assert_eq!(err, "secret \"db\" not found");
    let v = volume("{name: s, secret: {secretName: db, optional: true}}");
    assert!(
        volume_payload(&v, &pod(POD), &missing, &ctx)
            .unwrap()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_forbidden_object_fails_even_when_optional() {
    let mut f = Fetched::default();
    f.config_maps.insert(
        "app".into(),
        Err(ObjectError::Forbidden("configmaps \"app\" is forbidden".into())),
    );
    let v = volume("{name: cfg, configMap: {name: app, optional: true}}");
    let err = volume_payload(&v, &pod(POD), &f, &EnvContext::default())
        .unwrap()
        .unwrap_err();
    assert!(err.contains("forbidden"), "{err}");
}

#[test]
fn secrets_project_their_bytes() {
    let mut f = Fetched::default();
    let s = Secret {
        data: Some(BTreeMap::from([(
            "password".to_string(),
            ByteString(b"s3cr3t".to_vec()),
        )])),
        ..Default::default()
    };
    f.secrets.insert("db".into(), Ok(s));
    let v = volume("{name: s, secret: {secretName: db, defaultMode: 256}}");
    let p = volume_payload(&v, &pod(POD), &f, &EnvContext::default())
        .unwrap()
        .unwrap();
    assert_eq!(files(&p), BTreeMap::from([("password".into(), entry("s3cr3t", 0o400))]));
}

#[test]
fn downward_api_renders_fields_and_resources() {
    let v = volume(
        r#"
name: info
downwardAPI:
  items:
  - {path: labels, fieldRef: {fieldPath: metadata.labels}}
  - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
  - {path: ./name, fieldRef: {fieldPath: metadata.name}}
  - {path: tier, fieldRef: {fieldPath: "metadata.labels['tier']"}, mode: 384}
  - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
  - {path: cpu, resourceFieldRef: {containerName: app, resource: requests.cpu, divisor: 1m}}
"#,
    );
    let p = volume_payload(&v, &pod(POD), &Fetched::default(), &EnvContext::default())
        .unwrap()
        .unwrap();
    assert_eq!(
        files(&p),
        BTreeMap::from([
            ("labels".into(), entry("app=\"web\"\ntier=\"fe\"", 0o644)),
            ("annotations".into(), entry("note=\"a\\\"b\"", 0o644)),
            ("name".into(), entry("web", 0o644)),
            ("tier".into(), entry("fe", 0o600)),
            ("mem".into(), entry("64", 0o644)),
            ("cpu".into(), entry("100", 0o644)),
        ])
    );
    let bad = volume(
        "{name: i, downwardAPI: {items: [{path: x, resourceFieldRef: {containerName: nope, resource: limits.cpu}}]}}",
    );
    let err = volume_payload(&bad, &pod(POD), &Fetched::default(), &EnvContext::default()).unwrap();
    assert_eq!(err.unwrap_err(), "container nope not found");
}

#[test]
fn projected_merges_its_sources_like_the_service_account_volume() {
    let v = volume(
        r#"
name: kube-api-access-x
projected:
  defaultMode: 420
  sources:
  - serviceAccountToken: {expirationSeconds: 3607, path: token}
  - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
  - downwardAPI: {items: [{path: namespace, fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}]}
"#,
    );
    let mut f = fetched_cm("kube-root-ca.crt", cm(&[("ca.crt", "PEM")]));
    f.tokens.insert(0, Ok("jwt".into()));
    let p = volume_payload(&v, &pod(POD), &f, &EnvContext::default())
        .unwrap()
        .unwrap();
    assert_eq!(
        files(&p),
        BTreeMap::from([
            ("token".into(), entry("jwt", 0o644)),
            ("ca.crt".into(), entry("PEM", 0o644)),
            ("namespace".into(), entry("prod", 0o644)),
        ])
    );
    f.tokens.insert(
        0,
        Err(ObjectError::Forbidden(
            "serviceaccounts \"default\" is forbidden".into(),
        )),
    );
    f.config_maps.clear();
    let err = volume_payload(&v, &pod(POD), &f, &EnvContext::default())
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err,
        "[serviceaccounts \"default\" is forbidden, configmap \"kube-root-ca.crt\" not found]"
    );
}

#[test]
fn other_kinds_have_no_payload() {
    let v = volume("{name: e, emptyDir: {}}");
    assert!(volume_payload(&v, &pod(POD), &Fetched::default(), &EnvContext::default()).is_none());
}
