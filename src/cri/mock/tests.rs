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
