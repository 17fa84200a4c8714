use super::*;
use crate::kuberuntime::test_support::pod;

fn ctx() -> EnvContext {
    EnvContext {
        host_ips: vec!["192.168.1.10".into(), "fd00::10".into()],
        pod_ips: vec!["10.88.0.7".into(), "fd88::7".into()],
        allocatable_cpu: ParsedQuantity::from_units(2),
        allocatable_memory: ParsedQuantity::parse("4Gi").unwrap_or_default(),
        objects: EnvObjects::default(),
    }
}

fn env_of(yaml: &str) -> Result<Vec<(String, String)>, EnvError> {
    let p = pod(yaml);
    make_environment_variables(&p, &p.spec.as_ref().unwrap().containers[0], &ctx())
}

fn ok(yaml: &str) -> Vec<(String, String)> {
    env_of(yaml).unwrap_or_else(|e| panic!("{e}"))
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

const META: &str = r#"
metadata:
  name: web
  namespace: prod
  uid: u-1
  labels: {app: web, tier: "front\"end"}
  annotations: {owner: team-a}
"#;

#[test]
fn plain_values_keep_declaration_order() {
    let env = ok(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: B, value: '2'}}, {{name: A, value: '1'}}, {{name: E}}]"
    ));
    assert_eq!(env, pairs(&[("B", "2"), ("A", "1"), ("E", "")]));
}

#[test]
fn values_expand_references_to_earlier_variables_only() {
    let env = ok(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    env:\n    - {{name: A, value: x}}\n    - {{name: B, value: '$(A)-$(C)-$$(A)'}}\n    - {{name: C, value: z}}"
    ));
    assert_eq!(env, pairs(&[("A", "x"), ("B", "x-$(C)-$(A)"), ("C", "z")]));
}

#[test]
fn redeclared_variables_keep_their_first_position_and_last_value() {
    let env = ok(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: A, value: '1'}}, {{name: B, value: '$(A)'}}, {{name: A, value: '3'}}]"
    ));
    assert_eq!(env, pairs(&[("A", "3"), ("B", "1")]));
}

#[test]
fn field_refs_resolve_metadata_spec_and_status() {
    let env = ok(&format!(
        r#"{META}spec:
  nodeName: node-1
  serviceAccountName: sa
  containers:
  - name: c
    env:
    - {{name: NAME, valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}}}
    - {{name: NS, valueFrom: {{fieldRef: {{fieldPath: metadata.namespace, apiVersion: v1}}}}}}
    - {{name: UID, valueFrom: {{fieldRef: {{fieldPath: metadata.uid}}}}}}
    - {{name: APP, valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['app']"}}}}}}
    - {{name: NONE, valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['missing']"}}}}}}
    - {{name: OWNER, valueFrom: {{fieldRef: {{fieldPath: "metadata.annotations['owner']"}}}}}}
    - {{name: LABELS, valueFrom: {{fieldRef: {{fieldPath: metadata.labels}}}}}}
    - {{name: NODE, valueFrom: {{fieldRef: {{fieldPath: spec.nodeName}}}}}}
    - {{name: SA, valueFrom: {{fieldRef: {{fieldPath: spec.serviceAccountName}}}}}}
    - {{name: HOST_IP, valueFrom: {{fieldRef: {{fieldPath: status.hostIP}}}}}}
    - {{name: HOST_IPS, valueFrom: {{fieldRef: {{fieldPath: status.hostIPs}}}}}}
    - {{name: POD_IP, valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}}}
    - {{name: POD_IPS, valueFrom: {{fieldRef: {{fieldPath: status.podIPs}}}}}}
    - {{name: REF, value: "$(NODE)/$(POD_IP)"}}
"#
    ));
    assert_eq!(
        env,
        pairs(&[
            ("NAME", "web"),
            ("NS", "prod"),
            ("UID", "u-1"),
            ("APP", "web"),
            ("NONE", ""),
            ("OWNER", "team-a"),
            ("LABELS", "app=\"web\"\ntier=\"front\\\"end\""),
            ("NODE", "node-1"),
            ("SA", "sa"),
            ("HOST_IP", "192.168.1.10"),
            ("HOST_IPS", "192.168.1.10,fd00::10"),
            ("POD_IP", "10.88.0.7"),
            ("POD_IPS", "10.88.0.7,fd88::7"),
            ("REF", "node-1/10.88.0.7"),
        ])
    );
}

#[test]
fn unsupported_field_refs_fail() {
    let e = |path: &str, version: &str| {
        env_of(&format!(
            "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: X, valueFrom: {{fieldRef: {{fieldPath: \"{path}\", apiVersion: {version}}}}}}}]"
        ))
    };
    assert_eq!(
        e("spec.restartPolicy", "v1"),
        Err(EnvError::UnsupportedFieldPath("spec.restartPolicy".into()))
    );
    assert_eq!(
        e("metadata.name['x']", "v1"),
        Err(EnvError::UnsupportedFieldPath("metadata.name['x']".into()))
    );
    assert_eq!(
        e("metadata.name", "v2"),
        Err(EnvError::UnsupportedApiVersion("v2".into()))
    );
}

#[test]
fn host_ip_without_known_node_ips_fails() {
    let p = pod(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: H, valueFrom: {{fieldRef: {{fieldPath: status.hostIP}}}}}}]"
    ));
    let r = make_environment_variables(&p, &p.spec.as_ref().unwrap().containers[0], &EnvContext::default());
    assert_eq!(r, Err(EnvError::HostIpUnknown));
}

#[test]
fn resource_field_refs_divide_and_round_up() {
    let env = ok(&format!(
        r#"{META}spec:
  containers:
  - name: c
    resources: {{requests: {{cpu: 250m, memory: 64Mi}}, limits: {{cpu: 1500m, memory: 128Mi}}}}
    env:
    - {{name: LCPU, valueFrom: {{resourceFieldRef: {{resource: limits.cpu}}}}}}
    - {{name: LCPU_M, valueFrom: {{resourceFieldRef: {{resource: limits.cpu, divisor: 1m}}}}}}
    - {{name: RCPU, valueFrom: {{resourceFieldRef: {{resource: requests.cpu}}}}}}
    - {{name: LMEM_MI, valueFrom: {{resourceFieldRef: {{resource: limits.memory, divisor: 1Mi}}}}}}
    - {{name: RMEM, valueFrom: {{resourceFieldRef: {{resource: requests.memory}}}}}}
    - {{name: RMEM_G, valueFrom: {{resourceFieldRef: {{resource: requests.memory, divisor: 1G}}}}}}
    - {{name: ZERO_DIV, valueFrom: {{resourceFieldRef: {{resource: limits.cpu, divisor: '0'}}}}}}
"#
    ));
    assert_eq!(
        env,
        pairs(&[
            ("LCPU", "2"),
            ("LCPU_M", "1500"),
            ("RCPU", "1"),
            ("LMEM_MI", "128"),
            ("RMEM", "67108864"),
            ("RMEM_G", "1"),
            ("ZERO_DIV", "2"),
        ])
    );
}

#[test]
fn unset_limits_read_as_node_allocatable_and_unset_requests_as_zero() {
    let env = ok(&format!(
        r#"{META}spec:
  containers:
  - name: c
    env:
    - {{name: LCPU, valueFrom: {{resourceFieldRef: {{resource: limits.cpu}}}}}}
    - {{name: LMEM, valueFrom: {{resourceFieldRef: {{resource: limits.memory, divisor: 1Gi}}}}}}
    - {{name: RCPU, valueFrom: {{resourceFieldRef: {{resource: requests.cpu, divisor: 1m}}}}}}
"#
    ));
    assert_eq!(env, pairs(&[("LCPU", "2"), ("LMEM", "4"), ("RCPU", "0")]));
}

#[test]
fn unsupported_resources_and_bad_divisors_fail() {
    let e = |res: &str, div: &str| {
        env_of(&format!(
            "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: X, valueFrom: {{resourceFieldRef: {{resource: {res}, divisor: '{div}'}}}}}}]"
        ))
    };
    assert_eq!(
        e("limits.gpu", "1"),
        Err(EnvError::UnsupportedResource("limits.gpu".into()))
    );
    assert_eq!(e("limits.cpu", "lots"), Err(EnvError::InvalidDivisor("lots".into())));
    assert_eq!(e("limits.cpu", "-1"), Err(EnvError::InvalidDivisor("-1".into())));
}

#[test]
fn without_an_api_server_every_config_map_or_secret_reference_fails() {
    let no_client = |kind: &'static str, name: &str| {
        Err(EnvError::NoClient {
            kind,
            namespace: "prod".into(),
            name: name.into(),
        })
    };
    let cm = env_of(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: X, valueFrom: {{configMapKeyRef: {{name: cfg, key: k}}}}}}]"
    ));
    assert_eq!(cm, no_client("configMap", "cfg"));
    let secret = env_of(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    env: [{{name: X, valueFrom: {{secretKeyRef: {{name: s, key: k, optional: true}}}}}}]"
    ));
    assert_eq!(
        secret,
        no_client("secret", "s"),
        "upstream: optional does not help without a client"
    );
    let from = env_of(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    envFrom: [{{secretRef: {{name: s2}}}}]"
    ));
    assert_eq!(
        from.unwrap_err().to_string(),
        "couldn't get secret prod/s2, no kubeClient defined"
    );
}

#[test]
fn command_and_args_expand_env_references() {
    let p = pod(&format!(
        "{META}spec:\n  containers:\n  - name: c\n    command: [sh, -c, 'echo $(GREETING) $$(HOME) $(MISSING)']\n    args: ['$(GREETING)']"
    ));
    let envs = pairs(&[("GREETING", "hi")]);
    let (cmd, args) = expand_command_and_args(&p.spec.as_ref().unwrap().containers[0], &envs);
    assert_eq!(cmd, ["sh", "-c", "echo hi $(HOME) $(MISSING)"]);
    assert_eq!(args, ["hi"]);
    let bare = pod("metadata: {name: x}\nspec: {containers: [{name: c}]}");
    let (cmd, args) = expand_command_and_args(&bare.spec.as_ref().unwrap().containers[0], &envs);
    assert!(cmd.is_empty() && args.is_empty());
}

#[test]
fn go_quoting_escapes_like_strconv_quote() {
    assert_eq!(go_quote("plain"), "\"plain\"");
    assert_eq!(go_quote("a\"b\\c\nd\te\u{1}"), "\"a\\\"b\\\\c\\nd\\te\\x01\"");
    assert_eq!(go_quote("héllo"), "\"héllo\"");
}
