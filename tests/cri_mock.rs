//! The mock CRI runtime: the conformance suite in process (one test per
//! check, paused time) and over gRPC (the real tonic client against
//! `CriServer`), then every scripted behaviour and fault, each under paused
//! tokio time so that minutes of container life take no wall time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actlet::cri::conformance::{self, ConformanceEnv};
use actlet::cri::mock::{
    Behaviour, CallOutcome, ExecResult, Fault, LogStream, Match, MockImage, MockRuntime, OnTerm, Script,
    parse_cri_log_line,
};
use actlet::cri::server::CriServer;
use actlet::cri::v1::{self, ContainerState, NamespaceMode, PodSandboxState};
use actlet::cri::{CriClient, Runtime};
use tokio::time::Instant;
use tonic::Code;

// ------------------------------------------------------------------ conformance

async fn conformance_in_process(name: &str) {
    let logs = tempfile::tempdir().unwrap();
    let mock = MockRuntime::new();
    let outcome = conformance::run_check(name, &mock, &ConformanceEnv::new(logs.path()))
        .await
        .expect("known check");
    if let Err(e) = outcome.result {
        panic!("{e}");
    }
    assert!(mock.snapshot().sandboxes.is_empty(), "{name} left sandboxes behind");
}

macro_rules! conformance_cases {
    ($($name:ident),* $(,)?) => {
        /// The conformance suite against the mock in process, one test per check.
        mod conformance_in_process {
            $(#[tokio::test(start_paused = true)] async fn $name() { super::conformance_in_process(stringify!($name)).await })*
        }
        const CASES: &[&str] = &[$(stringify!($name)),*];
    };
}

conformance_cases!(
    version_and_status,
    image_status,
    sandbox_ready_with_ip,
    host_network_sandbox,
    duplicate_sandbox_name_rejected,
    container_lifecycle,
    container_log_file,
    exec_sync,
    exec_sync_timeout,
    exec_in_exited_container_fails,
    container_exit_codes,
    stop_container_sigterm,
    stop_container_ignoring_sigterm,
    stop_exited_and_unknown_container,
    remove_container,
    create_container_errors,
    list_filters,
    stop_pod_sandbox,
    remove_pod_sandbox,
    remove_ready_pod_sandbox,
    unknown_ids,
);

#[test]
fn every_conformance_check_has_a_test_case() {
    let names: Vec<&str> = conformance::checks().iter().map(|c| c.name).collect();
    assert_eq!(names, CASES);
}

/// Serves `mock` on a socket in `dir` and returns a connected tonic client.
async fn serve(
    mock: MockRuntime,
    dir: &std::path::Path,
    timeout: Duration,
) -> (CriClient, tokio::sync::oneshot::Sender<()>) {
    let sock = dir.join("mock.sock");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = CriServer::new(Arc::new(mock));
    let path = sock.clone();
    tokio::spawn(async move {
        server
            .serve(&path, async {
                stopped.await.ok();
            })
            .await
            .unwrap()
    });
    while !sock.exists() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (
        CriClient::new(&format!("unix://{}", sock.display()), timeout).unwrap(),
        stop,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let (client, _stop) = serve(MockRuntime::new(), dir.path(), Duration::from_secs(30)).await;
    let report = conformance::run_all(&client, &ConformanceEnv::new(dir.path().join("logs"))).await;
    println!("{report}");
    assert!(report.all_passed(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_client_deadline_ends_a_hung_call() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockRuntime::new();
    mock.inject("ListPodSandbox", Fault::hang_forever());
    let (client, _stop) = serve(mock.clone(), dir.path(), Duration::from_millis(300)).await;
    let err = client.list_pod_sandbox(Default::default()).await.unwrap_err();
    // As against containerd (tests/cri_containerd.rs): tonic's client timer
    // fires first and reports CANCELLED "Timeout expired".
    let timed_out =
        err.code == Code::DeadlineExceeded || (err.code == Code::Cancelled && err.message == "Timeout expired");
    assert!(timed_out, "{err}");
    mock.clear_faults(None);
    mock.fail_next("Version", 1, Code::ResourceExhausted, "busy");
    let err = client.version(Default::default()).await.unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (Code::ResourceExhausted, "busy"));
}

/// Per-verb deadlines (issue #10): StopContainer's deadline is the request
/// timeout plus the grace period the runtime is asked to wait, and PullImage
/// has none. With the request timeout as the only deadline, a grace period
/// longer than it failed and was retried with a new SIGTERM every second,
/// and a slow pull looped ErrImagePull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_stop_waits_its_grace_and_pull_has_no_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockRuntime::builder()
        .script("stubborn", Behaviour::run_forever().ignore_sigterm())
        .build();
    let (client, _stop) = serve(mock.clone(), dir.path(), Duration::from_millis(500)).await;
    let pod = run_pod(&mock, "grace").await;
    let id = start(&mock, &pod, "stubborn", 0).await;
    let t = Instant::now();
    client
        .stop_container(v1::StopContainerRequest {
            container_id: id.clone(),
            timeout: 2,
        })
        .await
        .expect("a 2 s grace with a 0.5 s request timeout");
    assert!(t.elapsed() >= Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(status(&mock, &id).await.exit_code, 137, "killed after its grace");

    mock.publish_image(MockImage::new("registry.local/big:1"), Duration::from_millis(1500));
    client
        .pull_image(v1::PullImageRequest {
            image: Some(v1::ImageSpec {
                image: "registry.local/big:1".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("a 1.5 s pull outlives the 0.5 s request timeout");
    // The others keep the request timeout.
    mock.inject("ListContainers", Fault::hang_forever());
    assert!(client.list_containers(Default::default()).await.is_err());
}

/// `GetContainerEvents` over gRPC: the stream outlives the request timeout,
/// carries each transition with the pod's sandbox metadata, and ends with
/// `UNAVAILABLE` when the runtime goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_container_events_stream_until_the_runtime_goes_away() {
    use futures::StreamExt;
    use v1::ContainerEventType as T;
    let dir = tempfile::tempdir().unwrap();
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let (client, _stop) = serve(mock.clone(), dir.path(), Duration::from_millis(300)).await;
    let mut events = client.get_container_events(v1::GetEventsRequest {}).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await; // past the request timeout
    let pod = run_pod(&mock, "evented").await;
    let id = start(&mock, &pod, "app", 0).await;
    assert!(mock.exit_container(&id, 1));
    let mut seen = vec![];
    while seen.len() < 4 {
        let e = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("an event within 5 s")
            .expect("the stream is open")
            .expect("an event, not an error");
        let pod_uid = e.pod_sandbox_status.and_then(|s| s.metadata).map(|m| m.uid);
        assert_eq!(pod_uid.as_deref(), Some("uid-evented"), "every event names its pod");
        seen.push((e.container_id == id, T::try_from(e.container_event_type).unwrap()));
    }
    assert_eq!(
        seen,
        [
            (false, T::ContainerStartedEvent), // the sandbox
            (true, T::ContainerCreatedEvent),
            (true, T::ContainerStartedEvent),
            (true, T::ContainerStoppedEvent),
        ]
    );
    mock.set_down(true);
    let end = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the stream ends");
    assert_eq!(end.map(|r| r.map_err(|e| e.code).err()), Some(Some(Code::Unavailable)));
}

// ------------------------------------------------------------------ helpers

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

async fn stop(rt: &MockRuntime, id: &str, timeout: i64) -> Duration {
    let t = Instant::now();
    rt.stop_container(v1::StopContainerRequest {
        container_id: id.into(),
        timeout,
    })
    .await
    .unwrap();
    t.elapsed()
}

fn log_lines(path: &str) -> Vec<(LogStream, bool, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| parse_cri_log_line(l).unwrap())
        .map(|l| (l.stream, l.partial, l.content))
        .collect()
}

// ------------------------------------------------------------------ scripted behaviours

#[tokio::test(start_paused = true)]
async fn script_run_forever_keeps_running() {
    let rt = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let pod = run_pod(&rt, "forever").await;
    let id = start(&rt, &pod, "app", 0).await;
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    assert_eq!(status(&rt, &id).await.state(), ContainerState::ContainerRunning);
}

#[tokio::test(start_paused = true)]
async fn script_exit_after_with_code_and_output() {
    let rt = MockRuntime::builder()
        .script(
            "app",
            Behaviour::exit_after(Duration::from_secs(30), 7).stdout("working"),
        )
        .build();
    let pod = run_pod(&rt, "exit-after").await;
    let id = start(&rt, &pod, "app", 0).await;
    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(status(&rt, &id).await.state(), ContainerState::ContainerRunning);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let s = status(&rt, &id).await;
    assert_eq!(
        (s.state(), s.exit_code, s.reason.as_str()),
        (ContainerState::ContainerExited, 7, "Error")
    );
    assert_eq!(
        s.finished_at - s.started_at,
        30_000_000_000,
        "timestamps follow tokio time"
    );
    assert_eq!(
        log_lines(&s.log_path),
        [(LogStream::Stdout, false, "working".to_string())]
    );
}

#[tokio::test(start_paused = true)]
async fn script_crash_on_start_is_exited_when_start_returns() {
    let rt = MockRuntime::builder()
        .script("app", Behaviour::crash_on_start(2))
        .build();
    let pod = run_pod(&rt, "crash").await;
    let id = start(&rt, &pod, "app", 0).await;
    let s = status(&rt, &id).await;
    assert_eq!(
        (s.state(), s.exit_code, s.reason.as_str()),
        (ContainerState::ContainerExited, 2, "Error")
    );
}

#[tokio::test(start_paused = true)]
async fn script_fail_create_creates_nothing() {
    let rt = MockRuntime::builder()
        .script("app", Behaviour::fail_create(Code::Internal, "no space left"))
        .build();
    let pod = run_pod(&rt, "fail-create").await;
    let err = rt
        .create_container(create_req(&pod, "app", 0, &["sh"]))
        .await
        .unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (Code::Internal, "no space left"));
    assert!(rt.snapshot().containers.is_empty());
}

#[tokio::test(start_paused = true)]
async fn script_fail_start_leaves_start_error() {
    let rt = MockRuntime::builder()
        .script("app", Behaviour::fail_start("exec format error"))
        .build();
    let pod = run_pod(&rt, "fail-start").await;
    let id = rt
        .create_container(create_req(&pod, "app", 0, &["sh"]))
        .await
        .unwrap()
        .container_id;
    let err = rt
        .start_container(v1::StartContainerRequest {
            container_id: id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (Code::Unknown, "exec format error"));
    let s = status(&rt, &id).await;
    assert_eq!(
        (s.state(), s.exit_code, s.reason.as_str()),
        (ContainerState::ContainerExited, 128, "StartError")
    );
    assert_eq!(s.message, "exec format error");
}

#[tokio::test(start_paused = true)]
async fn script_ignoring_sigterm_makes_stop_take_the_whole_timeout() {
    let rt = MockRuntime::builder()
        .script("app", Behaviour::run_forever().ignore_sigterm())
        .build();
    let pod = run_pod(&rt, "ignore-term").await;
    let id = start(&rt, &pod, "app", 0).await;
    assert_eq!(stop(&rt, &id, 30).await, Duration::from_secs(30));
    let s = status(&rt, &id).await;
    assert_eq!((s.exit_code, s.reason.as_str()), (137, "Error"));
}

#[tokio::test(start_paused = true)]
async fn script_graceful_shutdown_and_default_sigterm() {
    let graceful = Behaviour::run_forever().on_sigterm(OnTerm::ExitAfter(Duration::from_secs(5), 0));
    let rt = MockRuntime::builder()
        .script("graceful", graceful)
        .script("plain", Behaviour::run_forever())
        .build();
    let pod = run_pod(&rt, "term").await;
    let g = start(&rt, &pod, "graceful", 0).await;
    let p = start(&rt, &pod, "plain", 0).await;
    assert_eq!(stop(&rt, &g, 30).await, Duration::from_secs(5));
    assert_eq!(stop(&rt, &p, 30).await, Duration::ZERO);
    assert_eq!(
        (status(&rt, &g).await.exit_code, status(&rt, &g).await.reason),
        (0, "Completed".to_string())
    );
    assert_eq!(status(&rt, &p).await.exit_code, 143);
}

#[tokio::test(start_paused = true)]
async fn script_oom_killed() {
    let rt = MockRuntime::builder()
        .script("app", Behaviour::oom_killed_after(Duration::from_secs(10)))
        .build();
    let pod = run_pod(&rt, "oom").await;
    let id = start(&rt, &pod, "app", 0).await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    let s = status(&rt, &id).await;
    assert_eq!(
        (s.state(), s.exit_code, s.reason.as_str()),
        (ContainerState::ContainerExited, 137, "OOMKilled")
    );
}

#[tokio::test(start_paused = true)]
async fn script_slow_operations() {
    let slow = Behaviour::run_forever()
        .slow("StartContainer", Duration::from_secs(3))
        .slow("StopContainer", Duration::from_secs(2));
    let rt = MockRuntime::builder().script("app", slow).build();
    let pod = run_pod(&rt, "slow").await;
    let id = rt
        .create_container(create_req(&pod, "app", 0, &["sh"]))
        .await
        .unwrap()
        .container_id;
    let t = Instant::now();
    rt.start_container(v1::StartContainerRequest {
        container_id: id.clone(),
    })
    .await
    .unwrap();
    assert_eq!(t.elapsed(), Duration::from_secs(3));
    assert_eq!(stop(&rt, &id, 10).await, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn script_depends_on_attempt() {
    let per_attempt = Script::PerAttempt(vec![
        Behaviour::crash_on_start(1),
        Behaviour::crash_on_start(1),
        Behaviour::run_forever(),
    ]);
    let rt = MockRuntime::builder()
        .script(Match::container("app").pod("attempts"), per_attempt)
        .build();
    let pod = run_pod(&rt, "attempts").await;
    let mut states = Vec::new();
    for attempt in 0..4 {
        let id = start(&rt, &pod, "app", attempt).await;
        states.push(status(&rt, &id).await.state());
    }
    use ContainerState::{ContainerExited as E, ContainerRunning as R};
    assert_eq!(states, [E, E, R, R]);
    // Other pods are not matched: busybox `sleep 3600` runs.
    let other = run_pod(&rt, "other").await;
    let id = start(&rt, &other, "app", 0).await;
    assert_eq!(status(&rt, &id).await.state(), R);
}

#[tokio::test(start_paused = true)]
async fn script_exec_replies_and_stateful_handler() {
    let healthy = Arc::new(AtomicBool::new(false));
    let h = healthy.clone();
    let behaviour = Behaviour::run_forever()
        .exec_reply(&["cat", "/ready"], ExecResult::ok("yes"))
        .exec(move |cmd| (cmd == ["healthz"]).then(|| ExecResult::exit(if h.load(Ordering::SeqCst) { 0 } else { 1 })))
        .exec_reply(&["hang"], ExecResult::hanging());
    let rt = MockRuntime::builder().script("app", behaviour).build();
    let pod = run_pod(&rt, "exec").await;
    let id = start(&rt, &pod, "app", 0).await;
    let exec = |cmd: &[&str], timeout| v1::ExecSyncRequest {
        container_id: id.clone(),
        cmd: cmd.iter().map(|s| s.to_string()).collect(),
        timeout,
    };
    assert_eq!(rt.exec_sync(exec(&["cat", "/ready"], 0)).await.unwrap().stdout, b"yes");
    assert_eq!(rt.exec_sync(exec(&["healthz"], 0)).await.unwrap().exit_code, 1);
    healthy.store(true, Ordering::SeqCst);
    assert_eq!(rt.exec_sync(exec(&["healthz"], 0)).await.unwrap().exit_code, 0);
    assert_eq!(
        rt.exec_sync(exec(&["echo", "fallback"], 0)).await.unwrap().stdout,
        b"fallback\n"
    );
    let t = Instant::now();
    let err = rt.exec_sync(exec(&["hang"], 5)).await.unwrap_err();
    assert_eq!(
        (err.code, t.elapsed()),
        (Code::DeadlineExceeded, Duration::from_secs(5))
    );
}

// ------------------------------------------------------------------ faults

#[tokio::test(start_paused = true)]
async fn fault_error_for_the_next_n_calls() {
    let rt = MockRuntime::new();
    rt.fail_next("RunPodSandbox", 2, Code::Unavailable, "transient");
    let req = v1::RunPodSandboxRequest {
        config: Some(pod_config("flaky", false)),
        runtime_handler: String::new(),
    };
    for _ in 0..2 {
        assert_eq!(
            rt.run_pod_sandbox(req.clone()).await.unwrap_err().code,
            Code::Unavailable
        );
    }
    rt.run_pod_sandbox(req).await.unwrap();
    assert_eq!(rt.call_count("RunPodSandbox"), 3);
    let outcomes: Vec<_> = rt.calls_to("RunPodSandbox").iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [
            CallOutcome::Err(Code::Unavailable),
            CallOutcome::Err(Code::Unavailable),
            CallOutcome::Ok
        ]
    );
    assert_eq!(rt.snapshot().sandboxes.len(), 1, "failed calls changed nothing");
}

#[tokio::test(start_paused = true)]
async fn fault_latency_delays_the_answer() {
    let rt = MockRuntime::builder()
        .fault("ListContainers", Fault::latency(Duration::from_secs(2)))
        .build();
    let t = Instant::now();
    rt.list_containers(Default::default()).await.unwrap();
    assert_eq!(t.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn fault_hang_ends_with_deadline_exceeded_after_the_request_timeout() {
    let rt = MockRuntime::builder().request_timeout(Duration::from_secs(120)).build();
    let pod = run_pod(&rt, "hang").await;
    rt.inject("StopPodSandbox", Fault::hang().times(1));
    let t = Instant::now();
    let err = rt
        .stop_pod_sandbox(v1::StopPodSandboxRequest {
            pod_sandbox_id: pod.0.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (err.code, t.elapsed()),
        (Code::DeadlineExceeded, Duration::from_secs(120))
    );
    assert_eq!(
        rt.snapshot().sandboxes[0].state(),
        PodSandboxState::SandboxReady,
        "the hung call did nothing"
    );
    rt.inject("Status", Fault::hang_for(Duration::from_secs(3)));
    let t = Instant::now();
    assert_eq!(
        rt.status(Default::default()).await.unwrap_err().code,
        Code::DeadlineExceeded
    );
    assert_eq!(t.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn fault_hang_forever_never_answers() {
    let rt = MockRuntime::builder().fault("Version", Fault::hang_forever()).build();
    let r = tokio::time::timeout(Duration::from_secs(3600), rt.version(Default::default())).await;
    assert!(r.is_err(), "answered: {r:?}");
    assert_eq!(rt.calls_to("Version")[0].outcome, CallOutcome::InFlight);
}

#[tokio::test(start_paused = true)]
async fn runtime_down_makes_every_call_unavailable_then_comes_back() {
    let rt = MockRuntime::new();
    let pod = run_pod(&rt, "down").await;
    let id = start(&rt, &pod, "app", 0).await;
    rt.set_down(true);
    assert_eq!(
        rt.version(Default::default()).await.unwrap_err().code,
        Code::Unavailable
    );
    assert_eq!(
        rt.list_pod_sandbox(Default::default()).await.unwrap_err().code,
        Code::Unavailable
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    rt.set_down(false);
    assert_eq!(
        status(&rt, &id).await.state(),
        ContainerState::ContainerRunning,
        "containers survive"
    );
}

#[tokio::test(start_paused = true)]
async fn restart_leaves_sandboxes_notready_and_containers_unknown() {
    let rt = MockRuntime::new();
    let pod = run_pod(&rt, "restart").await;
    let running = start(&rt, &pod, "app", 0).await;
    let created = rt
        .create_container(create_req(&pod, "later", 0, &["sh"]))
        .await
        .unwrap()
        .container_id;
    rt.simulate_restart();
    let s = status(&rt, &running).await;
    assert_eq!(
        (s.state(), s.exit_code, s.reason.as_str()),
        (ContainerState::ContainerExited, 255, "Unknown")
    );
    assert_eq!(status(&rt, &created).await.state(), ContainerState::ContainerCreated);
    let sb = rt
        .pod_sandbox_status(v1::PodSandboxStatusRequest {
            pod_sandbox_id: pod.0,
            verbose: false,
        })
        .await
        .unwrap();
    let sb = sb.status.unwrap();
    assert_eq!(sb.state(), PodSandboxState::SandboxNotready);
    assert!(
        !sb.network.unwrap().ip.is_empty(),
        "containerd keeps the IP after a restart"
    );
}
