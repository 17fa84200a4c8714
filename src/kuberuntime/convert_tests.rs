use super::*;
use crate::cri::mock::MockRuntime;

const SEC: i64 = 1_000_000_000;

fn labels(uid: &str, container: Option<&str>) -> HashMap<String, String> {
    let mut l = HashMap::from([
        ("io.kubernetes.pod.uid".to_string(), uid.to_string()),
        ("io.kubernetes.pod.name".to_string(), "web".to_string()),
        ("io.kubernetes.pod.namespace".to_string(), "prod".to_string()),
    ]);
    if let Some(c) = container {
        l.insert("io.kubernetes.container.name".into(), c.into());
    }
    l
}

fn annotations(hash: &str, restarts: u32) -> HashMap<String, String> {
    HashMap::from([
        ("io.kubernetes.container.hash".to_string(), hash.to_string()),
        ("io.kubernetes.container.restartCount".to_string(), restarts.to_string()),
    ])
}

fn cri_sandbox(
    id: &str,
    ready: bool,
    attempt: u32,
    created_s: i64,
    ip: Option<&str>,
    host: bool,
) -> v1::PodSandboxStatus {
    v1::PodSandboxStatus {
        id: id.into(),
        metadata: Some(v1::PodSandboxMetadata {
            name: "web".into(),
            uid: "u1".into(),
            namespace: "prod".into(),
            attempt,
        }),
        state: if ready {
            v1::PodSandboxState::SandboxReady
        } else {
            v1::PodSandboxState::SandboxNotready
        } as i32,
        created_at: created_s * SEC,
        network: ip.map(|ip| v1::PodSandboxNetworkStatus {
            ip: ip.into(),
            additional_ips: vec![v1::PodIp { ip: "fd00::5".into() }],
        }),
        linux: Some(v1::LinuxPodSandboxStatus {
            namespaces: Some(v1::Namespace {
                options: Some(v1::NamespaceOption {
                    network: if host { NamespaceMode::Node } else { NamespaceMode::Pod } as i32,
                    ..Default::default()
                }),
            }),
        }),
        labels: labels("u1", None),
        ..Default::default()
    }
}

fn cri_container(
    id: &str,
    name: &str,
    state: v1::ContainerState,
    created_s: i64,
    restarts: u32,
) -> v1::ContainerStatus {
    let exited = state == v1::ContainerState::ContainerExited;
    v1::ContainerStatus {
        id: id.into(),
        metadata: Some(v1::ContainerMetadata {
            name: name.into(),
            attempt: restarts,
        }),
        state: state as i32,
        created_at: created_s * SEC,
        started_at: if state == v1::ContainerState::ContainerCreated {
            0
        } else {
            (created_s + 1) * SEC
        },
        finished_at: if exited { (created_s + 5) * SEC } else { 0 },
        exit_code: if exited { 2 } else { 0 },
        image: Some(v1::ImageSpec {
            image: "docker.io/library/busybox:1.36".into(),
            ..Default::default()
        }),
        image_ref: "sha256:bb".into(),
        reason: if exited { "Error".into() } else { String::new() },
        message: if exited { "boom".into() } else { String::new() },
        labels: labels("u1", Some(name)),
        annotations: annotations("abc", restarts),
        ..Default::default()
    }
}

#[test]
fn timestamps_of_zero_are_none() {
    assert_eq!(timestamp_from_nanos(0), None);
    assert_eq!(
        timestamp_from_nanos(1_500_000_000).map(|t| t.as_millisecond()),
        Some(1500)
    );
}

#[test]
fn sandbox_status_converts_state_attempt_ips_and_network_mode() {
    let s = sandbox_from_status(&cri_sandbox("sb", true, 2, 100, Some("10.88.0.5"), false));
    assert_eq!(
        (s.id.as_str(), s.state, s.attempt, s.host_network),
        ("sb", SandboxState::Ready, 2, false)
    );
    assert_eq!(s.ips, ["10.88.0.5", "fd00::5"]);
    assert_eq!(s.created_at.as_second(), 100);
    let host = sandbox_from_status(&cri_sandbox("h", false, 0, 1, Some(""), true));
    assert!(host.host_network);
    assert_eq!(host.state, SandboxState::NotReady);
    assert_eq!(host.ips[0], "", "known to have no IP");
    assert!(
        sandbox_from_status(&cri_sandbox("n", true, 0, 1, None, false))
            .ips
            .is_empty(),
        "unknown network"
    );
}

#[test]
fn container_status_reads_labels_annotations_and_times() {
    let c = container_from_status(
        &cri_container("c1", "app", v1::ContainerState::ContainerExited, 100, 4),
        "sb",
    );
    assert_eq!(
        (c.name.as_str(), c.state, c.exit_code),
        ("app", ContainerState::Exited, 2)
    );
    assert_eq!((c.hash.as_str(), c.restart_count), ("abc", 4));
    assert_eq!((c.reason.as_str(), c.message.as_str()), ("Error", "boom"));
    assert_eq!(c.started_at.map(|t| t.as_second()), Some(101));
    assert_eq!(c.finished_at.map(|t| t.as_second()), Some(105));
    assert_eq!(
        (c.image.as_str(), c.image_ref.as_str(), c.image_id.as_str()),
        ("docker.io/library/busybox:1.36", "sha256:bb", "sha256:bb")
    );
    assert_eq!(c.sandbox_id, "sb");
    let mut logged = cri_container("c3", "app", v1::ContainerState::ContainerRunning, 100, 0);
    logged.log_path = "/var/log/pods/default_web_u/app/0.log".into();
    assert_eq!(
        container_from_status(&logged, "sb").log_path,
        "/var/log/pods/default_web_u/app/0.log"
    );
    let created = container_from_status(
        &cri_container("c2", "app", v1::ContainerState::ContainerCreated, 100, 0),
        "sb",
    );
    assert_eq!(
        (created.started_at, created.finished_at, created.reason.as_str()),
        (None, None, "")
    );
    let running = container_from_status(
        &cri_container("c3", "app", v1::ContainerState::ContainerRunning, 100, 0),
        "sb",
    );
    assert_eq!((running.state, running.finished_at), (ContainerState::Running, None));
}

#[test]
fn container_name_falls_back_to_metadata_and_user_image_wins() {
    let mut s = cri_container("c1", "meta-name", v1::ContainerState::ContainerRunning, 1, 0);
    s.labels.clear();
    s.image = Some(v1::ImageSpec {
        image: "sha256:bb".into(),
        user_specified_image: "busybox".into(),
        ..Default::default()
    });
    s.image_id = "sha256:id".into();
    let c = container_from_status(&s, "sb");
    assert_eq!(
        (c.name.as_str(), c.image.as_str(), c.image_id.as_str()),
        ("meta-name", "busybox", "sha256:id")
    );
    assert_eq!(container_state(99), ContainerState::Unknown);
}

#[test]
fn pod_status_sorts_newest_first_and_takes_ips_from_a_ready_newest_sandbox() {
    let sandboxes = vec![
        sandbox_from_status(&cri_sandbox("old", false, 0, 10, Some("10.88.0.1"), false)),
        sandbox_from_status(&cri_sandbox("new", true, 1, 20, Some("10.88.0.2"), false)),
    ];
    let containers = vec![
        container_from_status(
            &cri_container("a0", "a", v1::ContainerState::ContainerExited, 11, 0),
            "old",
        ),
        container_from_status(
            &cri_container("a1", "a", v1::ContainerState::ContainerRunning, 21, 1),
            "new",
        ),
        container_from_status(
            &cri_container("a2", "a", v1::ContainerState::ContainerCreated, 21, 2),
            "new",
        ),
    ];
    let st = build_pod_status(PodUid::new("u1"), "web", "prod", sandboxes, containers);
    assert_eq!(
        st.sandboxes.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["new", "old"]
    );
    assert_eq!(
        st.containers.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["a2", "a1", "a0"],
        "ties by restart count"
    );
    assert_eq!(st.ips, ["10.88.0.2", "fd00::5"]);
    assert_eq!(st.find_container("a").map(|c| c.id.as_str()), Some("a2"));
}

#[test]
fn pod_ips_are_empty_for_not_ready_sandboxes_and_invalid_ips() {
    let dead = vec![sandbox_from_status(&cri_sandbox(
        "s",
        false,
        0,
        1,
        Some("10.88.0.1"),
        false,
    ))];
    assert!(
        build_pod_status(PodUid::new("u"), "n", "ns", dead, vec![])
            .ips
            .is_empty()
    );
    let bad = vec![sandbox_from_status(&cri_sandbox(
        "s",
        true,
        0,
        1,
        Some("not-an-ip"),
        false,
    ))];
    assert!(
        build_pod_status(PodUid::new("u"), "n", "ns", bad, vec![])
            .ips
            .is_empty()
    );
    let host = vec![sandbox_from_status(&cri_sandbox("s", true, 0, 1, Some(""), true))];
    assert_eq!(
        build_pod_status(PodUid::new("u"), "n", "ns", host, vec![]).ips,
        ["fd00::5"]
    );
}

#[test]
fn list_answers_group_by_pod_uid_label() {
    let sandboxes = vec![
        v1::PodSandbox {
            id: "s1".into(),
            labels: labels("u1", None),
            created_at: SEC,
            ..Default::default()
        },
        v1::PodSandbox {
            id: "s2".into(),
            labels: labels("u2", None),
            ..Default::default()
        },
        v1::PodSandbox {
            id: "foreign".into(),
            ..Default::default()
        },
    ];
    let containers = vec![
        v1::Container {
            id: "c1".into(),
            pod_sandbox_id: "s1".into(),
            labels: labels("u1", Some("app")),
            annotations: annotations("h", 3),
            state: v1::ContainerState::ContainerRunning as i32,
            ..Default::default()
        },
        v1::Container {
            id: "c3".into(),
            labels: labels("u3", Some("x")),
            ..Default::default()
        },
    ];
    let pods = pod_statuses_from_lists(&sandboxes, &containers);
    assert_eq!(
        pods.iter().map(|p| p.uid.as_str()).collect::<Vec<_>>(),
        ["u1", "u2", "u3"]
    );
    let u1 = &pods[0];
    assert_eq!((u1.name.as_str(), u1.namespace.as_str()), ("web", "prod"));
    assert_eq!(u1.sandboxes[0].ips, Vec::<String>::new(), "network unknown from a list");
    let c = &u1.containers[0];
    assert_eq!(
        (
            c.name.as_str(),
            c.state,
            c.hash.as_str(),
            c.restart_count,
            c.sandbox_id.as_str()
        ),
        ("app", ContainerState::Running, "h", 3, "s1")
    );
    assert_eq!(pods[2].name, "web", "a pod known only by its containers");
}

#[tokio::test(start_paused = true)]
async fn get_pod_status_reads_one_pod_from_the_runtime() {
    let mock = MockRuntime::new();
    let config = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: "web".into(),
            uid: "u1".into(),
            namespace: "prod".into(),
            attempt: 0,
        }),
        labels: labels("u1", None),
        ..Default::default()
    };
    let sb = mock
        .run_pod_sandbox(v1::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .map(|r| r.pod_sandbox_id)
        .unwrap_or_else(|e| panic!("{e}"));
    let other = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: "x".into(),
            uid: "u2".into(),
            namespace: "prod".into(),
            attempt: 0,
        }),
        labels: labels("u2", None),
        ..Default::default()
    };
    mock.run_pod_sandbox(v1::RunPodSandboxRequest {
        config: Some(other),
        runtime_handler: String::new(),
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let container = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: "app".into(),
            attempt: 0,
        }),
        image: Some(v1::ImageSpec {
            image: "busybox".into(),
            ..Default::default()
        }),
        command: vec!["sleep".into(), "3600".into()],
        labels: labels("u1", Some("app")),
        annotations: annotations("feed", 0),
        ..Default::default()
    };
    let cid = mock
        .create_container(v1::CreateContainerRequest {
            pod_sandbox_id: sb.clone(),
            config: Some(container),
            sandbox_config: Some(config),
        })
        .await
        .map(|r| r.container_id)
        .unwrap_or_else(|e| panic!("{e}"));
    mock.start_container(v1::StartContainerRequest {
        container_id: cid.clone(),
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    let st = get_pod_status(&mock, &PodUid::new("u1"), "web", "prod")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(st.sandboxes.len(), 1);
    assert_eq!(st.sandboxes[0].id, sb);
    assert_eq!(st.ips.len(), 1, "mock pod IP");
    let c = st
        .find_container("app")
        .cloned()
        .unwrap_or_else(|| panic!("no container"));
    assert_eq!(
        (c.id.as_str(), c.state, c.hash.as_str(), c.sandbox_id.as_str()),
        (cid.as_str(), ContainerState::Running, "feed", sb.as_str())
    );
    assert!(c.started_at.is_some());

    mock.set_down(true);
    let err = get_pod_status(&mock, &PodUid::new("u1"), "web", "prod").await.err();
    assert!(err.is_some_and(|e| e.is_unavailable()));
}
