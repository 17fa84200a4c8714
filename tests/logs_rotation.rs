//! Container log rotation on the mock runtime (real files, real time):
//! a log crossing `containerLogMaxSize` is renamed to `<log>.<timestamp>`,
//! the runtime reopens the path (CRI `ReopenContainerLog`, the mock's log
//! writer opens a fresh file), older rotations are gzip-compressed, and no
//! more than `containerLogMaxFiles` files remain. The `container-log-manager`
//! actor killed while a rotation waits on `ReopenContainerLog` does not cut
//! it short, and its successor neither overlaps nor repeats it.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use actlet::actors::supervisor::{ChildSpec, KillChild, SupervisorSpec};
use actlet::clock::WallClock;
use actlet::cri::mock::{Behaviour, Fault, LogStream, MockRuntime, Step};
use actlet::cri::{Runtime, v1};
use actlet::logs::manager::{self, ContainerLogManager, LogManagerDeps, LogRotatePolicy, LogRotationState};

/// A line of ~1 KiB (with the CRI prefix the file grows by a bit more).
fn line(i: usize) -> String {
    format!("{i:04} {}\n", "x".repeat(1000))
}

/// A container writing `chunks` bursts of four lines, `pause` apart.
fn writer(chunks: usize, pause: Duration) -> Behaviour {
    let mut steps = vec![];
    for c in 0..chunks {
        let burst: String = (0..4).map(|i| line(c * 4 + i)).collect();
        steps.push(Step::Output(LogStream::Stdout, burst));
        steps.push(Step::Sleep(pause));
    }
    steps.push(Step::Block);
    Behaviour::from_steps(steps)
}

/// Runs container `app` of pod `p` with logs under `dir`; returns its ID
/// and log path.
async fn run(mock: &MockRuntime, dir: &Path) -> (String, PathBuf) {
    let config = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: "p".into(),
            uid: "uid-p".into(),
            namespace: "ns".into(),
            attempt: 0,
        }),
        log_directory: dir.display().to_string(),
        ..Default::default()
    };
    let sandbox = mock
        .run_pod_sandbox(v1::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .unwrap()
        .pod_sandbox_id;
    let id = mock
        .create_container(v1::CreateContainerRequest {
            pod_sandbox_id: sandbox,
            config: Some(v1::ContainerConfig {
                metadata: Some(v1::ContainerMetadata {
                    name: "app".into(),
                    attempt: 0,
                }),
                image: Some(v1::ImageSpec {
                    image: "busybox".into(),
                    ..Default::default()
                }),
                log_path: "app/0.log".into(),
                ..Default::default()
            }),
            sandbox_config: Some(config),
        })
        .await
        .unwrap()
        .container_id;
    mock.start_container(v1::StartContainerRequest {
        container_id: id.clone(),
    })
    .await
    .unwrap();
    (id, dir.join("app/0.log"))
}

/// A wall clock one second further on every reading (distinct suffixes).
fn ticking_clock() -> WallClock {
    let t = Arc::new(AtomicI64::new(1_700_000_000));
    WallClock::from_fn(move || jiff::Timestamp::from_second(t.fetch_add(1, Ordering::SeqCst)).unwrap())
}

fn deps(mock: &MockRuntime, max_size: u64, max_files: usize) -> LogManagerDeps {
    LogManagerDeps {
        runtime: Arc::new(mock.clone()),
        policy: LogRotatePolicy { max_size, max_files },
        workers: 2,
        interval: Duration::from_millis(100),
        wall_clock: ticking_clock(),
        state: LogRotationState::default(),
    }
}

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

async fn wait_size(path: &Path, at_least: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if std::fs::metadata(path).is_ok_and(|m| m.len() >= at_least) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} never reached {at_least} bytes",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn gunzip(path: &Path) -> String {
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_on_the_mock_reopens_compresses_and_keeps_max_files() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockRuntime::builder()
        .clock(actlet::cri::mock::Clock::system())
        .script("app", writer(12, Duration::from_millis(300)))
        .build();
    let (id, log) = run(&mock, dir.path()).await;
    let d = deps(&mock, 4000, 3);
    let app_dir = log.parent().unwrap();

    // below the size: nothing happens
    wait_size(&log, 1).await;
    let big = deps(&mock, 1 << 20, 3);
    assert_eq!(manager::rotate_container(&big, &id).await.unwrap(), None);
    assert_eq!(mock.call_count("ReopenContainerLog"), 0);

    let mut seen = String::new();
    for round in 0..4 {
        wait_size(&log, 4000).await;
        let rotated = manager::rotate_container(&d, &id).await.unwrap().expect("rotated");
        assert_eq!(mock.call_count("ReopenContainerLog"), round + 1);
        seen.push_str(&std::fs::read_to_string(&rotated).unwrap_or_default());
        // the runtime writes on into a fresh file at the path
        wait_size(&log, 1).await;
        let names = files(app_dir);
        assert!(names.len() <= 3, "at most max files: {names:?}");
        assert!(names.contains("0.log"), "{names:?}");
        let gz: Vec<_> = names.iter().filter(|n| n.ends_with(".gz")).collect();
        assert_eq!(
            gz.len(),
            usize::from(round > 0),
            "older rotations compressed: {names:?}"
        );
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    }
    // the newest compressed file holds the lines of the rotation before the last
    let names = files(app_dir);
    let gz = names.iter().find(|n| n.ends_with(".gz")).unwrap();
    let text = gunzip(&app_dir.join(gz));
    assert!(text.lines().all(|l| l.contains(" stdout F ")), "CRI lines kept intact");
    assert!(!text.is_empty());
    assert!(seen.contains("0000 xxx"), "the first lines went to the first rotation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_runs_every_running_container_and_skips_small_logs() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockRuntime::builder()
        .clock(actlet::cri::mock::Clock::system())
        .script("app", writer(2, Duration::from_millis(10)))
        .build();
    let (_, log) = run(&mock, dir.path()).await;
    wait_size(&log, 8000).await;
    let d = deps(&mock, 1 << 20, 5);
    assert_eq!(manager::round(&d).await.unwrap(), 0);
    let d = deps(&mock, 1000, 5);
    assert_eq!(manager::round(&d).await.unwrap(), 1);
    assert_eq!(d.state.rotations(), 1);
}

#[test]
fn killed_mid_rotation_the_manager_finishes_it_once() {
    let system = actix::System::new();
    system.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockRuntime::builder()
            .clock(actlet::cri::mock::Clock::system())
            .script("app", writer(3, Duration::from_millis(10)))
            .build();
        let (_, log) = run(&mock, dir.path()).await;
        wait_size(&log, 12_000).await;
        // the first reopen hangs for a while: the round is in flight then
        mock.inject(
            "ReopenContainerLog",
            Fault::latency(Duration::from_millis(1500)).times(1),
        );
        let d = deps(&mock, 4000, 5);
        let state = d.state.clone();
        let spec = ChildSpec::new("container-log-manager", move || ContainerLogManager::new(d.clone()));
        let root = SupervisorSpec::new("root").child(spec).start_root();

        // wait until the rename happened and the reopen is pending
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while mock.calls_to("ReopenContainerLog").is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "no rotation started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!log.exists(), "renamed, waiting for the reopen");
        root.addr()
            .send(KillChild("container-log-manager".into()))
            .await
            .unwrap()
            .unwrap();

        // the rotation in flight completes: the runtime reopened the path
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while state.rotations() < 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the rotation in flight was lost"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(log.exists(), "reopened");
        // ... once: the restarted manager's rounds waited, then found a small log
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(mock.call_count("ReopenContainerLog"), 1);
        assert_eq!(state.rotations(), 1);
        assert!(state.rounds() >= 2, "the restarted manager keeps going");
        let info = root.tree().get("root/container-log-manager").unwrap();
        assert_eq!(info.restarts, 1);
        let rotated: Vec<_> = files(log.parent().unwrap())
            .into_iter()
            .filter(|n| n.starts_with("0.log."))
            .collect();
        assert_eq!(rotated.len(), 1, "{rotated:?}");
        System::current().stop();
    });
}

use actix::System;
