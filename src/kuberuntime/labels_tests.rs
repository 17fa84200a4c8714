use super::*;
use crate::kuberuntime::test_support::pod;

fn web() -> Pod {
    pod(r#"
metadata:
  name: web
  namespace: prod
  uid: 1234-abcd
  labels: {app: web, tier: front}
  annotations: {kubernetes.io/config.source: file, kubernetes.io/config.hash: abc, note: hi}
spec:
  terminationGracePeriodSeconds: 45
  containers:
  - name: nginx
    image: nginx:1.25
    terminationMessagePolicy: FallbackToLogsOnError
    ports: [{containerPort: 80, hostPort: 8080, protocol: TCP}]
    lifecycle:
      preStop: {exec: {command: [nginx, -s, quit]}}
"#)
}

fn nginx(p: &Pod) -> &Container {
    &p.spec.as_ref().unwrap().containers[0]
}

#[test]
fn sandbox_labels_are_pod_labels_plus_identity() {
    let labels = sandbox_labels(&web());
    assert_eq!(labels.len(), 5);
    assert_eq!(labels["app"], "web");
    assert_eq!(labels["io.kubernetes.pod.name"], "web");
    assert_eq!(labels["io.kubernetes.pod.namespace"], "prod");
    assert_eq!(labels["io.kubernetes.pod.uid"], "1234-abcd");
}

#[test]
fn identity_labels_override_pod_labels_with_the_same_key() {
    let p = pod("metadata: {name: a, namespace: b, uid: c, labels: {io.kubernetes.pod.uid: forged}}");
    assert_eq!(sandbox_labels(&p)["io.kubernetes.pod.uid"], "c");
}

#[test]
fn sandbox_annotations_pass_pod_annotations_through() {
    let a = sandbox_annotations(&web());
    assert_eq!(a["kubernetes.io/config.source"], "file");
    assert_eq!(a["kubernetes.io/config.hash"], "abc");
    assert_eq!(a["note"], "hi");
    assert_eq!(a.len(), 3);
}

#[test]
fn container_labels_name_pod_and_container_only() {
    let p = web();
    let labels = container_labels(&p, nginx(&p));
    assert_eq!(labels.len(), 4);
    assert_eq!(labels["io.kubernetes.container.name"], "nginx");
    assert_eq!(labels["io.kubernetes.pod.uid"], "1234-abcd");
    assert!(!labels.contains_key("app"));
}

#[test]
fn container_annotations_carry_hash_restart_count_and_termination_settings() {
    let p = web();
    let a = container_annotations(&p, nginx(&p), 3);
    assert_eq!(a["io.kubernetes.container.hash"], container_hash(nginx(&p)));
    assert_eq!(a["io.kubernetes.container.restartCount"], "3");
    assert_eq!(
        a["io.kubernetes.container.terminationMessagePath"],
        "/dev/termination-log"
    );
    assert_eq!(
        a["io.kubernetes.container.terminationMessagePolicy"],
        "FallbackToLogsOnError"
    );
    assert_eq!(a["io.kubernetes.pod.terminationGracePeriod"], "45");
    assert!(!a.contains_key("io.kubernetes.pod.deletionGracePeriod"));
    assert_eq!(
        a["io.kubernetes.container.preStopHandler"],
        r#"{"exec":{"command":["nginx","-s","quit"]}}"#
    );
    assert_eq!(
        a["io.kubernetes.container.ports"],
        r#"[{"containerPort":80,"hostPort":8080,"protocol":"TCP"}]"#
    );
}

#[test]
fn container_annotations_default_grace_and_omit_empty_handlers() {
    let p = pod(
        "metadata: {name: a, namespace: b, uid: c, deletionGracePeriodSeconds: 5}\nspec: {containers: [{name: x, ports: []}]}",
    );
    let a = container_annotations(&p, &p.spec.as_ref().unwrap().containers[0], 0);
    assert_eq!(a["io.kubernetes.pod.terminationGracePeriod"], "30");
    assert_eq!(a["io.kubernetes.pod.deletionGracePeriod"], "5");
    assert_eq!(a["io.kubernetes.container.terminationMessagePolicy"], "File");
    assert!(!a.contains_key("io.kubernetes.container.preStopHandler"));
    assert!(!a.contains_key("io.kubernetes.container.ports"));
}

#[test]
fn sandbox_labels_read_back() {
    let info = sandbox_info_from_labels(&sandbox_labels(&web()));
    assert_eq!(
        (
            info.pod_name.as_str(),
            info.pod_namespace.as_str(),
            info.pod_uid.as_str()
        ),
        ("web", "prod", "1234-abcd")
    );
    assert_eq!(
        info.labels,
        HashMap::from([("app".into(), "web".into()), ("tier".into(), "front".into())])
    );
}

#[test]
fn container_labels_and_annotations_read_back() {
    let p = web();
    let labels = container_info_from_labels(&container_labels(&p, nginx(&p)));
    assert_eq!(labels.container_name, "nginx");
    assert_eq!(labels.pod_name, "web");
    let info = container_info_from_annotations(&container_annotations(&p, nginx(&p), 7));
    assert_eq!(info.hash, container_hash(nginx(&p)));
    assert_eq!(info.restart_count, 7);
    assert_eq!(info.pod_termination_grace_period, Some(45));
    assert_eq!(info.pod_deletion_grace_period, None);
    assert_eq!(info.termination_message_path, "/dev/termination-log");
    assert_eq!(info.termination_message_policy, "FallbackToLogsOnError");
    let handler = nginx(&p).lifecycle.as_ref().and_then(|l| l.pre_stop.clone());
    assert_eq!(info.pre_stop_handler, handler);
    assert_eq!(info.container_ports, nginx(&p).ports.clone().unwrap());
}

#[test]
fn missing_or_garbage_annotations_read_as_unset() {
    let garbage = HashMap::from([
        ("io.kubernetes.container.restartCount".to_string(), "many".to_string()),
        ("io.kubernetes.pod.terminationGracePeriod".to_string(), "-".to_string()),
        (
            "io.kubernetes.container.preStopHandler".to_string(),
            "{not json".to_string(),
        ),
        ("io.kubernetes.container.ports".to_string(), "[{]".to_string()),
    ]);
    let info = container_info_from_annotations(&garbage);
    assert_eq!(info, ContainerAnnotationInfo::default());
    assert_eq!(
        container_info_from_labels(&HashMap::new()),
        ContainerLabelInfo::default()
    );
    assert_eq!(sandbox_info_from_labels(&HashMap::new()), SandboxLabelInfo::default());
}
