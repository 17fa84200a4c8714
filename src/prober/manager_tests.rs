use k8s_openapi::api::core::v1::{ContainerState, ContainerStateRunning, ContainerStatus};

use super::*;

fn pod(yaml: &str) -> Pod {
    serde_yaml_ng::from_str(yaml).unwrap()
}

const POD: &str = r#"
metadata: {name: web, namespace: default, uid: u1}
spec:
  initContainers:
  - {name: init, image: busybox, readinessProbe: {exec: {command: [x]}}}
  - {name: side, image: busybox, restartPolicy: Always, startupProbe: {exec: {command: [x]}}}
  containers:
  - {name: app, image: busybox, livenessProbe: {exec: {command: [x]}}, readinessProbe: {tcpSocket: {port: 80}}}
  - {name: plain, image: busybox}
"#;

fn running(name: &str) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        container_id: Some(format!("containerd://{name}-1")),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn key(container: &str, kind: ProbeKind) -> WorkerKey {
    WorkerKey {
        uid: PodUid::new("u1"),
        container: container.into(),
        kind,
    }
}

fn desired(p: &Pod, status: Option<&PodStatus>, existing: &[WorkerKey]) -> Vec<String> {
    let existing = existing.iter().cloned().collect();
    let mut names: Vec<_> = desired_workers([(p, status)], &existing)
        .into_iter()
        .map(|k| k.child_name())
        .collect();
    names.sort();
    names
}

#[test]
fn workers_start_when_their_container_runs() {
    let p = pod(POD);
    assert!(desired(&p, None, &[]).is_empty(), "no status yet");
    let pending = PodStatus::default();
    assert!(desired(&p, Some(&pending), &[]).is_empty(), "nothing runs");
    let status = PodStatus {
        container_statuses: Some(vec![running("app"), running("plain")]),
        init_container_statuses: Some(vec![running("side")]),
        ..Default::default()
    };
    assert_eq!(
        desired(&p, Some(&status), &[]),
        [
            "probe-liveness-app.u1",
            "probe-readiness-app.u1",
            "probe-startup-side.u1"
        ],
        "regular containers and sidecars; not plain init containers"
    );
}

#[test]
fn existing_workers_stay_while_the_container_restarts_and_go_with_the_pod() {
    let p = pod(POD);
    let waiting = PodStatus::default();
    let existing = [key("app", ProbeKind::Liveness)];
    assert_eq!(desired(&p, Some(&waiting), &existing), ["probe-liveness-app.u1"]);
    let done = PodStatus {
        phase: Some("Succeeded".into()),
        container_statuses: Some(vec![running("app")]),
        ..Default::default()
    };
    assert!(desired(&p, Some(&done), &existing).is_empty(), "terminal pod");
    let mut changed = p.clone();
    changed.spec.as_mut().unwrap().containers[0].liveness_probe = None;
    assert!(desired(&changed, Some(&waiting), &existing).is_empty(), "probe removed");
}

#[test]
fn deletion_keeps_only_readiness() {
    let mut p = pod(POD);
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let status = PodStatus {
        container_statuses: Some(vec![running("app")]),
        ..Default::default()
    };
    assert_eq!(desired(&p, Some(&status), &[]), ["probe-readiness-app.u1"]);
}

#[test]
fn child_names_round_trip() {
    for kind in KINDS {
        let k = WorkerKey {
            uid: PodUid::new("0f3c-aa.b"),
            container: "my-app".into(),
            kind,
        };
        assert_eq!(WorkerKey::parse(&k.child_name()), Some(k));
    }
    assert_eq!(WorkerKey::parse("pod-u1"), None);
    assert_eq!(WorkerKey::parse("probe-bogus-app.u1"), None);
}

#[test]
fn only_pods_with_a_probe_on_a_probed_container_count() {
    assert!(has_probes(&pod(POD)));
    let plain = pod("metadata: {name: p, uid: u2}\nspec:\n  containers: [{name: app, image: busybox}]\n");
    assert!(!has_probes(&plain));
    // A probe on a plain init container is never run; on a sidecar it is.
    let init_only = pod(
        "metadata: {name: p, uid: u3}\nspec:\n  initContainers: [{name: i, image: b, readinessProbe: {exec: {command: [x]}}}]\n  containers: [{name: app, image: b}]\n",
    );
    assert!(!has_probes(&init_only));
    let sidecar = pod(
        "metadata: {name: p, uid: u4}\nspec:\n  initContainers: [{name: s, image: b, restartPolicy: Always, startupProbe: {exec: {command: [x]}}}]\n  containers: [{name: app, image: b}]\n",
    );
    assert!(has_probes(&sidecar));
    assert!(!has_probes(&pod("metadata: {name: p, uid: u5}\n")), "no spec");
}
