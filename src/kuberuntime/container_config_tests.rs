use super::*;
use crate::cri::v1::NamespaceMode;
use crate::cri::v1::security_profile::ProfileType;
use crate::kuberuntime::hash::container_hash;
use crate::kuberuntime::test_support::pod;

const APP: &str = r#"
metadata: {name: app, namespace: prod, uid: u-7}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 10
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo $(GREETING) from $(POD_NAME) $$(HOME)']
    args: ['$(GREETING)']
    workingDir: /work
    tty: true
    stdin: true
    env:
    - {name: GREETING, value: hello}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 200m, memory: 64Mi}}
    securityContext: {readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
"#;

fn input<'a>(p: &'a Pod, user: &'a ImageUser, ips: &'a [String]) -> ContainerConfigInput<'a> {
    ContainerConfigInput {
        pod: p,
        container: &p.spec.as_ref().unwrap().containers[0],
        restart_count: 3,
        image_ref: "sha256:abc",
        image_user: user,
        pod_ips: ips,
        mounts: vec![Mount {
            container_path: "/data".into(),
            host_path: "/var/lib/x".into(),
            ..Default::default()
        }],
        volumes: None,
    }
}

#[test]
fn container_config_is_complete() {
    let p = pod(APP);
    let user = ImageUser::default();
    let ips = vec!["10.88.0.9".to_string()];
    let c = generate_container_config(input(&p, &user, &ips), &RuntimeManagerConfig::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.metadata,
        Some(ContainerMetadata {
            name: "main".into(),
            attempt: 3
        })
    );
    let image = c.image.clone().unwrap_or_default();
    assert_eq!(
        (image.image.as_str(), image.user_specified_image.as_str()),
        ("sha256:abc", "busybox:1.36")
    );
    assert_eq!(c.command, ["sh", "-c", "echo hello from app $(HOME)"]);
    assert_eq!(c.args, ["hello"]);
    assert_eq!(c.working_dir, "/work");
    let envs: Vec<_> = c.envs.iter().map(|kv| (kv.key.as_str(), kv.value.as_str())).collect();
    assert_eq!(
        envs,
        [("GREETING", "hello"), ("POD_NAME", "app"), ("POD_IP", "10.88.0.9")]
    );
    assert_eq!(c.mounts.len(), 1);
    assert_eq!(c.log_path, "main/3.log");
    assert!(c.tty && c.stdin && !c.stdin_once);
    assert_eq!(c.labels["io.kubernetes.container.name"], "main");
    assert_eq!(c.annotations["io.kubernetes.container.restartCount"], "3");
    assert_eq!(
        c.annotations["io.kubernetes.container.hash"],
        container_hash(&p.spec.as_ref().unwrap().containers[0])
    );
    assert_eq!(c.annotations["io.kubernetes.pod.terminationGracePeriod"], "10");
    let linux = c.linux.unwrap_or_default();
    let r = linux.resources.unwrap_or_default();
    assert_eq!(
        (r.cpu_shares, r.cpu_quota, r.memory_limit_in_bytes),
        (102, 20_000, 64 << 20)
    );
    let sc = linux.security_context.unwrap_or_default();
    assert!(sc.readonly_rootfs);
    assert_eq!(
        sc.capabilities.map(|c| c.drop_capabilities),
        Some(vec!["ALL".to_string()])
    );
    assert_eq!(sc.namespace_options.map(|n| n.pid()), Some(NamespaceMode::Container));
    assert_eq!(sc.seccomp.map(|s| s.profile_type()), Some(ProfileType::Unconfined));
    // No appArmorProfile: left to the runtime's default, as upstream.
    assert_eq!(sc.apparmor, None);
}

#[test]
fn run_as_non_root_violations_are_config_errors() {
    let p = pod(
        "metadata: {name: p}\nspec: {securityContext: {runAsNonRoot: true}, containers: [{name: c, image: busybox}]}",
    );
    let root = ImageUser {
        uid: Some(0),
        username: String::new(),
    };
    let err = generate_container_config(input(&p, &root, &[]), &RuntimeManagerConfig::default()).err();
    assert!(matches!(err, Some(ContainerConfigError::RunAsNonRoot(_))), "{err:?}");
    assert_eq!(err.map(|e| e.reason()), Some("CreateContainerConfigError"));
}

#[test]
fn unresolvable_env_and_bad_seccomp_are_config_errors() {
    let p = pod(
        "metadata: {name: p}\nspec: {containers: [{name: c, env: [{name: X, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}",
    );
    let err = generate_container_config(input(&p, &ImageUser::default(), &[]), &RuntimeManagerConfig::default()).err();
    assert!(
        matches!(err, Some(ContainerConfigError::Env(EnvError::NoClient { .. }))),
        "{err:?}"
    );
    let p = pod(
        "metadata: {name: p}\nspec: {containers: [{name: c, securityContext: {seccompProfile: {type: Localhost}}}]}",
    );
    let err = generate_container_config(input(&p, &ImageUser::default(), &[]), &RuntimeManagerConfig::default()).err();
    assert!(matches!(err, Some(ContainerConfigError::Seccomp(_))), "{err:?}");
}

#[test]
fn unset_optional_fields_produce_empty_values() {
    let p = pod("metadata: {name: p}\nspec: {containers: [{name: c}]}");
    let c = generate_container_config(input(&p, &ImageUser::default(), &[]), &RuntimeManagerConfig::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(c.command.is_empty() && c.args.is_empty() && c.envs.is_empty() && c.working_dir.is_empty());
    assert_eq!(c.image.map(|i| i.user_specified_image), Some(String::new()));
    assert!(!c.tty && !c.stdin);
}

#[test]
fn log_locations_follow_upstream_layout() {
    let p = pod(APP);
    assert_eq!(
        container_log_dir(Path::new("/var/log/pods"), &p, "main"),
        PathBuf::from("/var/log/pods/prod_app_u-7/main")
    );
    assert_eq!(container_log_path("main", 0), "main/0.log");
}

#[test]
fn restart_count_is_recovered_from_log_file_names() {
    assert_eq!(restart_count_from_log_names([]), 0);
    assert_eq!(restart_count_from_log_names(["0.log"]), 1);
    assert_eq!(
        restart_count_from_log_names(["0.log", "3.log", "2.log.20240101-000000", "x.log", "9", "log"]),
        4
    );
    assert_eq!(
        restart_count_from_log_names(["99999999999.log"]),
        0,
        "not a kubelet file"
    );
}
