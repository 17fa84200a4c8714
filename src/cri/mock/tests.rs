//! Tests of the mock's features beyond scripts and faults (those, and the
//! conformance suite, are in `tests/cri_mock.rs`): log format and rotation,
//! outside events and the event stream, the network condition, the image
//! store and fake registry, and the status fields.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;
use tonic::Code;

use super::*;
use crate::cri::Runtime;
use crate::cri::v1::{self, NamespaceMode};
use crate::kuberuntime::labels::POD_UID_LABEL;

thread_local! {
    /// Each test (one thread each) writes its logs into its own temp dir,
    /// deleted when the test's thread ends.
    static LOGS: tempfile::TempDir = tempfile::tempdir().unwrap();
}

fn pod_config(name: &str, host_network: bool) -> v1::PodSandboxConfig {
    let network = if host_network {
        NamespaceMode::Node
    } else {
        NamespaceMode::Pod
    } as i32;
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: name.into(),
            uid: format!("uid-{name}"),
            namespace: "ns".into(),
            attempt: 0,
        }),
        log_directory: LOGS.with(|d| d.path().join(name).display().to_string()),
        linux: Some(v1::LinuxPodSandboxConfig {
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(v1::NamespaceOption {
                    network,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn run_pod(rt: &MockRuntime, name: &str) -> (String, v1::PodSandboxConfig) {
    let config = pod_config(name, false);
    let req = v1::RunPodSandboxRequest {
        config: Some(config.clone()),
        runtime_handler: String::new(),
    };
    (rt.run_pod_sandbox(req).await.unwrap().pod_sandbox_id, config)
}

fn create_req(
    pod: &(String, v1::PodSandboxConfig),
    name: &str,
    attempt: u32,
    argv: &[&str],
) -> v1::CreateContainerRequest {
    v1::CreateContainerRequest {
        pod_sandbox_id: pod.0.clone(),
        config: Some(v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: name.into(),
                attempt,
            }),
            image: Some(v1::ImageSpec {
                image: "busybox".into(),
                ..Default::default()
            }),
            command: argv.iter().map(|s| s.to_string()).collect(),
            log_path: format!("{name}/{attempt}.log"),
            ..Default::default()
        }),
        sandbox_config: Some(pod.1.clone()),
    }
}

/// Creates and starts container `name` (attempt `attempt`) running `sleep 3600`.
async fn start(rt: &MockRuntime, pod: &(String, v1::PodSandboxConfig), name: &str, attempt: u32) -> String {
    let id = rt
        .create_container(create_req(pod, name, attempt, &["sleep", "3600"]))
        .await
        .unwrap()
        .container_id;
    rt.start_container(v1::StartContainerRequest {
        container_id: id.clone(),
    })
    .await
    .unwrap();
    id
}

async fn status(rt: &MockRuntime, id: &str) -> v1::ContainerStatus {
    rt.container_status(v1::ContainerStatusRequest {
        container_id: id.into(),
        verbose: false,
    })
    .await
    .unwrap()
    .status
    .unwrap()
}

fn log_lines(path: &str) -> Vec<(LogStream, bool, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| parse_cri_log_line(l).unwrap())
        .map(|l| (l.stream, l.partial, l.content))
        .collect()
}

// ------------------------------------------------------------------ tests

#[tokio::test(start_paused = true)]
async fn partial_lines_and_log_reopen() {
    let steps = vec![
        Step::Output(LogStream::Stdout, "first\n".into()),
        Step::Sleep(Duration::from_secs(10)),
        Step::Output(LogStream::Stderr, "second\nunterminated".into()),
        Step::Exit(0),
    ];
    let rt = MockRuntime::builder()
        .script("app", Behaviour::from_steps(steps))
        .build();
    let pod = run_pod(&rt, "logs").await;
    let id = start(&rt, &pod, "app", 0).await;
    let path = status(&rt, &id).await.log_path;
    std::fs::rename(&path, format!("{path}.1")).unwrap();
    rt.reopen_container_log(v1::ReopenContainerLogRequest {
        container_id: id.clone(),
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(
        log_lines(&format!("{path}.1")),
        [(LogStream::Stdout, false, "first".to_string())]
    );
    let rest = log_lines(&path);
    assert_eq!(
        rest,
        [
            (LogStream::Stderr, false, "second".into()),
            (LogStream::Stderr, true, "unterminated".into())
        ]
    );
    let err = rt
        .reopen_container_log(v1::ReopenContainerLogRequest { container_id: id })
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (Code::Unknown, "container is not running")
    );
}

#[tokio::test(start_paused = true)]
async fn exits_from_outside_and_events() {
    let rt = MockRuntime::new();
    let mut events = rt.subscribe();
    let pod = run_pod(&rt, "outside").await;
    let a = start(&rt, &pod, "a", 0).await;
    let b = start(&rt, &pod, "b", 0).await;
    assert!(rt.exit_container(&a, 137));
    assert!(rt.oom_kill_container(&b));
    assert!(!rt.exit_container(&a, 1), "already exited");
    assert_eq!(
        (status(&rt, &a).await.exit_code, status(&rt, &a).await.reason),
        (137, "Error".to_string())
    );
    assert_eq!(status(&rt, &b).await.reason, "OOMKilled");
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push(e);
    }
    assert!(
        seen.contains(&MockEvent::ContainerStarted { id: a.clone() }),
        "{seen:?}"
    );
    assert!(
        seen.contains(&MockEvent::ContainerExited {
            id: a,
            exit_code: 137,
            reason: "Error".into()
        }),
        "{seen:?}"
    );
    assert_eq!(rt.find_container("outside", "b").unwrap().status.id, b);
}

#[tokio::test(start_paused = true)]
async fn network_not_ready_blocks_pod_network_sandboxes_only() {
    let rt = MockRuntime::builder().network_ready(false).build();
    let conds = rt.status(Default::default()).await.unwrap().status.unwrap().conditions;
    let net = conds.iter().find(|c| c.r#type == "NetworkReady").unwrap();
    assert_eq!((net.status, net.reason.as_str()), (false, "NetworkPluginNotReady"));
    let req = |host| v1::RunPodSandboxRequest {
        config: Some(pod_config("net", host)),
        runtime_handler: String::new(),
    };
    let err = rt.run_pod_sandbox(req(false)).await.unwrap_err();
    assert!(err.message.contains("cni plugin not initialized"), "{err}");
    rt.run_pod_sandbox(req(true)).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn images_pull_from_the_fake_registry_only() {
    let rt = MockRuntime::builder()
        .pullable(
            MockImage::new("nginx:1.25").entrypoint(["nginx"]),
            Duration::from_secs(4),
        )
        .build();
    let pull = |name: &str| v1::PullImageRequest {
        image: Some(v1::ImageSpec {
            image: name.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = rt.pull_image(pull("busybox:1.36")).await.unwrap_err();
    assert!(
        err.message
            .starts_with("failed to pull and unpack image \"docker.io/library/busybox:1.36\""),
        "{err}"
    );
    let t = Instant::now();
    let image_ref = rt.pull_image(pull("nginx:1.25")).await.unwrap().image_ref;
    assert_eq!(t.elapsed(), Duration::from_secs(4));
    let spec = |name: &str| {
        Some(v1::ImageSpec {
            image: name.into(),
            ..Default::default()
        })
    };
    let img = rt
        .image_status(v1::ImageStatusRequest {
            image: spec("docker.io/library/nginx:1.25"),
            verbose: false,
        })
        .await
        .unwrap();
    let img = img.image.unwrap();
    assert_eq!((img.id, img.repo_digests.len()), (image_ref, 1));
    rt.remove_image(v1::RemoveImageRequest {
        image: spec("nginx:1.25"),
    })
    .await
    .unwrap();
    let gone = rt
        .image_status(v1::ImageStatusRequest {
            image: spec("nginx:1.25"),
            verbose: false,
        })
        .await
        .unwrap();
    assert!(gone.image.is_none());
    let fs = rt.image_fs_info(Default::default()).await.unwrap();
    assert!(fs.image_filesystems[0].used_bytes.as_ref().unwrap().value > 0);
}

#[tokio::test(start_paused = true)]
async fn container_status_reports_normalized_image_and_labels() {
    let rt = MockRuntime::new();
    let pod = run_pod(&rt, "fields").await;
    let mut req = create_req(&pod, "app", 0, &["sleep", "1"]);
    let cfg = req.config.as_mut().unwrap();
    cfg.labels = HashMap::from([("k".into(), "v".into())]);
    let id = rt.create_container(req).await.unwrap().container_id;
    let s = status(&rt, &id).await;
    assert_eq!(s.image.unwrap().image, "docker.io/library/busybox:1.36");
    assert!(s.image_ref.starts_with("sha256:"));
    assert_eq!(s.labels["k"], "v");
    let listed = rt.list_containers(Default::default()).await.unwrap().containers;
    assert_eq!(
        listed[0].image.as_ref().unwrap().image,
        "busybox",
        "ListContainers keeps the name as given"
    );
}

/// A pod whose sandbox and containers carry the pod UID label, as the
/// kubelet's do; returns the sandbox id and its config.
async fn run_labelled_pod(rt: &MockRuntime, name: &str) -> (String, v1::PodSandboxConfig) {
    let mut config = pod_config(name, false);
    let uid = format!("uid-{name}");
    config.labels.insert(POD_UID_LABEL.into(), uid);
    let req = v1::RunPodSandboxRequest {
        config: Some(config.clone()),
        runtime_handler: String::new(),
    };
    (rt.run_pod_sandbox(req).await.unwrap().pod_sandbox_id, config)
}

async fn labelled_container(rt: &MockRuntime, pod: &(String, v1::PodSandboxConfig), name: &str) -> String {
    let mut req = create_req(pod, name, 0, &["sleep", "3600"]);
    if let Some(c) = req.config.as_mut() {
        c.labels = pod.1.labels.clone();
        c.labels.insert("io.kubernetes.container.name".into(), name.into());
    }
    rt.create_container(req).await.unwrap().container_id
}

async fn list_containers(rt: &MockRuntime, filter: v1::ContainerFilter) -> Vec<String> {
    let req = v1::ListContainersRequest { filter: Some(filter) };
    rt.list_containers(req)
        .await
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.id)
        .collect()
}

async fn list_sandboxes(rt: &MockRuntime, filter: v1::PodSandboxFilter) -> Vec<String> {
    let req = v1::ListPodSandboxRequest { filter: Some(filter) };
    rt.list_pod_sandbox(req)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|s| s.id)
        .collect()
}

fn uid_selector(uid: &str) -> HashMap<String, String> {
    HashMap::from([(POD_UID_LABEL.to_string(), uid.to_string())])
}

#[tokio::test(start_paused = true)]
async fn filtered_lists_answer_from_the_indexes_as_a_scan_would() {
    let rt = MockRuntime::new();
    let a = run_labelled_pod(&rt, "a").await;
    let b = run_labelled_pod(&rt, "b").await;
    let a1 = labelled_container(&rt, &a, "one").await;
    tokio::time::advance(Duration::from_millis(1)).await;
    let a2 = labelled_container(&rt, &a, "two").await;
    let b1 = labelled_container(&rt, &b, "one").await;

    // By pod UID label (indexed), oldest first; combined with another label.
    let by_uid = |uid: &str| v1::ContainerFilter {
        label_selector: uid_selector(uid),
        ..Default::default()
    };
    assert_eq!(list_containers(&rt, by_uid("uid-a")).await, [a1.clone(), a2.clone()]);
    assert_eq!(list_containers(&rt, by_uid("uid-b")).await, vec![b1.clone()]);
    assert!(list_containers(&rt, by_uid("uid-none")).await.is_empty());
    let mut two = by_uid("uid-a");
    two.label_selector
        .insert("io.kubernetes.container.name".into(), "two".into());
    assert_eq!(list_containers(&rt, two).await, vec![a2.clone()]);
    // A state filter still applies to indexed candidates.
    let mut running = by_uid("uid-a");
    running.state = Some(v1::ContainerStateValue {
        state: v1::ContainerState::ContainerRunning as i32,
    });
    assert!(list_containers(&rt, running).await.is_empty());
    // Not indexed: a scan.
    let by_name = v1::ContainerFilter {
        label_selector: HashMap::from([("io.kubernetes.container.name".to_string(), "one".to_string())]),
        ..Default::default()
    };
    let mut ones = list_containers(&rt, by_name).await;
    let mut want = vec![a1.clone(), b1.clone()];
    ones.sort();
    want.sort();
    assert_eq!(ones, want);

    // By sandbox id: exact (indexed) and by prefix (scan); by container id and prefix.
    let by_sandbox = |id: &str| v1::ContainerFilter {
        pod_sandbox_id: id.to_string(),
        ..Default::default()
    };
    assert_eq!(list_containers(&rt, by_sandbox(&a.0)).await, [a1.clone(), a2.clone()]);
    assert_eq!(list_containers(&rt, by_sandbox(&b.0[..12])).await, vec![b1.clone()]);
    let by_id = |id: &str| v1::ContainerFilter {
        id: id.to_string(),
        ..Default::default()
    };
    assert_eq!(list_containers(&rt, by_id(&a2)).await, vec![a2.clone()]);
    assert_eq!(list_containers(&rt, by_id(&b1[..12])).await, vec![b1.clone()]);
    let sandboxes = |uid: &str| v1::PodSandboxFilter {
        label_selector: uid_selector(uid),
        ..Default::default()
    };
    assert_eq!(list_sandboxes(&rt, sandboxes("uid-b")).await, vec![b.0.clone()]);
    let sandbox_by_id = v1::PodSandboxFilter {
        id: a.0[..10].to_string(),
        ..Default::default()
    };
    assert_eq!(list_sandboxes(&rt, sandbox_by_id).await, vec![a.0.clone()]);

    // Removal takes the entries out of every index.
    rt.remove_container(v1::RemoveContainerRequest {
        container_id: a1.clone(),
    })
    .await
    .unwrap();
    assert_eq!(list_containers(&rt, by_uid("uid-a")).await, vec![a2.clone()]);
    assert_eq!(list_containers(&rt, by_sandbox(&a.0)).await, vec![a2.clone()]);
    rt.remove_pod_sandbox(v1::RemovePodSandboxRequest {
        pod_sandbox_id: a.0.clone(),
    })
    .await
    .unwrap();
    assert!(list_containers(&rt, by_uid("uid-a")).await.is_empty());
    assert!(list_containers(&rt, by_sandbox(&a.0)).await.is_empty());
    assert!(list_sandboxes(&rt, sandboxes("uid-a")).await.is_empty());
    assert_eq!(list_containers(&rt, by_uid("uid-b")).await, [b1]);
    rt.remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: b.0 })
        .await
        .unwrap();
    assert_eq!(rt.shared.lock().index_keys(), 0, "no index entry outlives its record");
}
