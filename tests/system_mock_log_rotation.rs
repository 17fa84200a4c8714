//! Container log rotation on the whole kubelet (mock CRI, paused time): a
//! chatty container's CRI log is rotated once it passes
//! `containerLogMaxSize`, the runtime reopens it (`ReopenContainerLog`),
//! older rotated files are gzipped and at most `containerLogMaxFiles` files
//! are kept, while the container keeps writing to the fresh log. Rounds
//! read nothing from the runtime: the running containers and their log
//! paths come from the PLEG's pod cache.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, LogStream, MockRuntime, Step};
use actlet::cri::v1;
use actlet::logrotate::LogRotatePolicy;
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};

/// The container's log directory under the node's pod log dir.
fn log_dir(root: &Path) -> Option<PathBuf> {
    let pods = std::fs::read_dir(root.join("pods")).ok()?;
    let pod = pods
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().contains("_chatty_"))?;
    Some(pod.path().join("c"))
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_chatty_containers_log_is_rotated_compressed_and_bounded() {
    run_paused(async {
        // 400 lines of ~100 bytes, one every 100 ms: ~40 KB over 40 s.
        let mut steps = vec![];
        for i in 0..400 {
            steps.push(Step::Output(
                LogStream::Stdout,
                format!("line {i:04} {}\n", "x".repeat(80)),
            ));
            steps.push(Step::Sleep(Duration::from_millis(100)));
        }
        steps.push(Step::Output(LogStream::Stdout, "the last line\n".into()));
        steps.push(Step::Block);
        let mock = MockRuntime::builder().script("c", Behaviour::from_steps(steps)).build();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(|b| {
                b.configure(|c| {
                    c.container_log_policy = LogRotatePolicy {
                        max_size: 4096,
                        max_files: 3,
                        max_workers: 1,
                        monitor_interval: Duration::from_secs(1),
                    }
                })
            })
            .start();
        node.set_pods(vec![
            PodBuilder::new("chatty").container("c", "busybox:1.36", ["sh"]).build(),
        ]);
        node.wait_for_phase("default", "chatty", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let dir = log_dir(node.dir()).unwrap_or_else(|| panic!("no log dir under {}", node.dir().display()));

        let mut most = 0;
        // The last line reached the current log or the newest rotated one.
        let done = || {
            files(&dir).iter().filter(|n| !n.ends_with(".gz")).any(|n| {
                std::fs::read_to_string(dir.join(n))
                    .unwrap_or_default()
                    .contains("the last line")
            })
        };
        for _ in 0..120 {
            most = most.max(files(&dir).len());
            if done() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        wait_until(done, Duration::from_secs(10))
            .await
            .unwrap_or_else(|_| panic!("the container stopped writing to its log: {:?}", files(&dir)));
        tokio::time::sleep(Duration::from_secs(3)).await;

        let names = files(&dir);
        assert!(most <= 3, "at most containerLogMaxFiles files at any time (saw {most})");
        assert!(
            names.iter().any(|n| n.ends_with(".gz")),
            "older rotated logs gzipped: {names:?}"
        );
        assert!(
            names.iter().any(|n| n.starts_with("0.log.") && !n.ends_with(".gz")),
            "the newest rotated log stays plain: {names:?}"
        );
        assert!(
            mock.call_count("ReopenContainerLog") >= 3,
            "the runtime reopened the log"
        );
        // The gzipped file is a CRI log.
        let gz = names.iter().find(|n| n.ends_with(".gz")).cloned().unwrap_or_default();
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(dir.join(gz)).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert!(text.lines().all(|l| l.contains(" stdout F line ")), "{text:.200}");
        // The kubelet API still reads the current log after the rotations.
        let current = std::fs::read_to_string(dir.join("0.log")).unwrap_or_default();
        assert!(
            current.len() < 4096 + 200,
            "the current log was rotated: {} bytes",
            current.len()
        );
    });
}

/// A rotation round reads nothing from the runtime: the running containers
/// and their log paths come from the PLEG's pod cache (at 10k pods a list of
/// every running container each round was most of an idle node's rotation
/// cost), yet a log that grows past the limit is still rotated.
#[test]
fn rotation_rounds_take_the_running_containers_from_the_pod_cache() {
    run_paused(async {
        // The chatty container ("c"): 200 lines of ~100 bytes, 20 a second.
        let mut steps = vec![];
        for i in 0..200 {
            steps.push(Step::Output(
                LogStream::Stdout,
                format!("line {i:04} {}\n", "x".repeat(90)),
            ));
            steps.push(Step::Sleep(Duration::from_millis(50)));
        }
        steps.push(Step::Block);
        let mock = MockRuntime::builder()
            .script("q", Behaviour::run_forever())
            .script("c", Behaviour::from_steps(steps))
            .build();
        let running_lists = Arc::new(AtomicU64::new(0));
        let statuses = Arc::new(AtomicU64::new(0));
        let (l, st) = (running_lists.clone(), statuses.clone());
        let runtime = HookedRuntime::new(mock.clone(), move |call| {
            let running = v1::ContainerState::ContainerRunning as i32;
            if let Some(r) = call.request::<v1::ListContainersRequest>()
                && r.filter
                    .as_ref()
                    .and_then(|f| f.state.as_ref())
                    .is_some_and(|s| s.state == running)
            {
                l.fetch_add(1, Ordering::SeqCst);
            }
            if call.method == "ContainerStatus" {
                st.fetch_add(1, Ordering::SeqCst);
            }
        });
        let node = TestNode::builder()
            .mock(mock.clone())
            .runtime(runtime)
            .customize(|b| {
                b.configure(|c| {
                    c.container_log_policy = LogRotatePolicy {
                        max_size: 8 * 1024,
                        monitor_interval: Duration::from_secs(1),
                        ..LogRotatePolicy::default()
                    }
                })
            })
            .start();
        node.set_pods(vec![
            PodBuilder::new("quiet")
                .container("q", "busybox:1.36", ["sleep", "3600"])
                .build(),
        ]);
        node.wait_for_phase("default", "quiet", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let before = statuses.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(
            running_lists.load(Ordering::SeqCst),
            0,
            "no round listed the running containers"
        );
        let more = statuses.load(Ordering::SeqCst) - before;
        assert!(more < 5, "{more} ContainerStatus calls in 30 rounds of an idle pod");

        // Rounds still rotate: a chatty container started now.
        node.set_pods(vec![
            PodBuilder::new("quiet")
                .container("q", "busybox:1.36", ["sleep", "3600"])
                .build(),
            PodBuilder::new("chatty").container("c", "busybox:1.36", ["sh"]).build(),
        ]);
        node.wait_for_phase("default", "chatty", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let dir = log_dir(node.dir()).unwrap_or_else(|| panic!("no log dir under {}", node.dir().display()));
        wait_until(|| files(&dir).iter().any(|f| f != "0.log"), Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("no rotated file beside 0.log: {:?}: {e}", files(&dir)));
        assert_eq!(running_lists.load(Ordering::SeqCst), 0);
    });
}
