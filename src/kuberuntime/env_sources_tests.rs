//! `configMapKeyRef`, `secretKeyRef` and `envFrom` against fetched objects.

use super::*;
use crate::kuberuntime::test_support::pod;

fn data(items: &[(&str, &str)]) -> BTreeMap<String, String> {
    items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn ctx() -> EnvContext {
    let mut objects = EnvObjects {
        has_client: true,
        ..Default::default()
    };
    objects
        .config_maps
        .insert("cfg".into(), Ok(data(&[("mode", "fast"), ("level", "3")])));
    objects.config_maps.insert(
        "gone".into(),
        Err(ObjectError::NotFound {
            kind: "configmap",
            name: "gone".into(),
        }),
    );
    objects.config_maps.insert(
        "denied".into(),
        Err(ObjectError::Forbidden("configmaps \"denied\" is forbidden".into())),
    );
    objects.secrets.insert("db".into(), Ok(data(&[("password", "s3cr3t")])));
    EnvContext {
        objects,
        ..Default::default()
    }
}

fn env_of(containers: &str) -> Result<Vec<(String, String)>, EnvError> {
    let p = pod(&format!(
        "metadata: {{name: web, namespace: prod}}\nspec:\n  containers:\n{containers}"
    ));
    make_environment_variables(&p, &p.spec.as_ref().unwrap().containers[0], &ctx())
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn key_refs_read_the_objects() {
    let env = env_of(
        "  - name: c\n    env:\n    - {name: MODE, valueFrom: {configMapKeyRef: {name: cfg, key: mode}}}\n    - {name: PW, valueFrom: {secretKeyRef: {name: db, key: password}}}\n    - {name: URL, value: 'db://$(PW)@x'}",
    );
    assert_eq!(
        env.unwrap(),
        pairs(&[("MODE", "fast"), ("PW", "s3cr3t"), ("URL", "db://s3cr3t@x")])
    );
}

#[test]
fn env_from_comes_first_with_its_prefix_and_env_overrides_it() {
    let env = env_of(
        "  - name: c\n    envFrom: [{configMapRef: {name: cfg}, prefix: CFG_}, {secretRef: {name: db}}]\n    env:\n    - {name: CFG_level, value: '9'}",
    );
    assert_eq!(
        env.unwrap(),
        pairs(&[("CFG_level", "9"), ("CFG_mode", "fast"), ("password", "s3cr3t")])
    );
}

#[test]
fn missing_objects_and_keys_fail_with_upstreams_messages_unless_optional() {
    let err = |c: &str| env_of(c).unwrap_err().to_string();
    assert_eq!(
        err("  - name: c\n    env: [{name: X, valueFrom: {configMapKeyRef: {name: cfg, key: nope}}}]"),
        "couldn't find key nope in ConfigMap prod/cfg"
    );
    assert_eq!(
        err("  - name: c\n    env: [{name: X, valueFrom: {secretKeyRef: {name: db, key: nope}}}]"),
        "couldn't find key nope in Secret prod/db"
    );
    assert_eq!(
        err("  - name: c\n    envFrom: [{configMapRef: {name: gone}}]"),
        "configmap \"gone\" not found"
    );
    assert_eq!(
        err("  - name: c\n    env: [{name: X, valueFrom: {secretKeyRef: {name: unknown, key: k}}}]"),
        "secret \"unknown\" not found"
    );
    let optional = env_of(
        "  - name: c\n    envFrom: [{configMapRef: {name: gone, optional: true}}]\n    env:\n    - {name: X, valueFrom: {configMapKeyRef: {name: cfg, key: nope, optional: true}}}\n    - {name: Y, valueFrom: {configMapKeyRef: {name: gone, key: k, optional: true}}}\n    - {name: Z, value: z}",
    );
    assert_eq!(optional.unwrap(), pairs(&[("Z", "z")]));
}

#[test]
fn a_forbidden_object_fails_even_when_optional() {
    let env = env_of("  - name: c\n    envFrom: [{configMapRef: {name: denied, optional: true}}]");
    assert_eq!(env.unwrap_err().to_string(), "configmaps \"denied\" is forbidden");
}

#[test]
fn service_variables_come_last_unless_defined_and_expand() {
    let mut c = ctx();
    c.objects.services = data(&[("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("MODE", "from-service")]);
    let p = pod(
        "metadata: {name: web, namespace: prod}\nspec:\n  containers:\n  - name: c\n    env:\n    - {name: MODE, value: mine}\n    - {name: URL, value: 'https://$(KUBERNETES_SERVICE_HOST)'}",
    );
    let env = make_environment_variables(&p, &p.spec.as_ref().unwrap().containers[0], &c).unwrap();
    assert_eq!(
        env,
        pairs(&[
            ("MODE", "mine"),
            ("URL", "https://10.96.0.1"),
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        ])
    );
    c.objects.services_error = Some("services have not yet been read at least once, cannot construct envvars".into());
    let err = make_environment_variables(&p, &p.spec.as_ref().unwrap().containers[0], &c).unwrap_err();
    assert!(err.to_string().starts_with("services have not yet been read"), "{err}");
}
