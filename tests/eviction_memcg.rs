//! Kernel memcg threshold notifications on this machine's cgroup v1 memory
//! hierarchy (`kernelMemcgNotification`): a level registered through
//! `cgroup.event_control` fires as soon as a process in the cgroup uses more,
//! and a higher level does not. Needs root and a v1 memory hierarchy
//! (skipped loudly otherwise: cgroup v2 has no memcg notifications, as
//! upstream says too).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use actlet::eviction::memcg::{CgroupNotifier, MEMORY_USAGE_ATTRIBUTE};

const MOUNT: &str = "/sys/fs/cgroup/memory";

fn skip(why: &str) {
    let msg = format!("\n*** SKIPPED eviction_memcg: {why} ***\n");
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

/// A child memory cgroup, removed on drop.
struct TestCgroup(PathBuf);

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_fires_when_the_cgroup_uses_more_and_a_higher_one_does_not() {
    if !Path::new(MOUNT).join("cgroup.event_control").exists() {
        return skip("no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (cgroup v2 host)");
    }
    let dir = Path::new(MOUNT).join(format!("actlet-memcg-test-{:08x}", rand::random::<u32>()));
    if let Err(e) = std::fs::create_dir(&dir) {
        return skip(&format!("cannot create {} ({e}): not root?", dir.display()));
    }
    let cgroup = TestCgroup(dir.clone());
    let low = CgroupNotifier::new(&cgroup.0, MEMORY_USAGE_ATTRIBUTE, 16 << 20).expect("register 16 MiB");
    let high = CgroupNotifier::new(&cgroup.0, MEMORY_USAGE_ATTRIBUTE, 1 << 30).expect("register 1 GiB");
    assert!(low.what.ends_with("memory.usage_in_bytes > 16777216"), "{}", low.what);

    // A process joins the cgroup and touches 64 MiB.
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec python3 -c 'b = bytearray(64 << 20); import time; time.sleep(5)'",
        dir.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .spawn()
        .expect("sh");
    let fired = tokio::time::timeout(Duration::from_secs(10), low.crossed()).await;
    let high_fired = tokio::time::timeout(Duration::from_millis(500), high.crossed()).await;
    let usage = std::fs::read_to_string(dir.join(MEMORY_USAGE_ATTRIBUTE)).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        matches!(fired, Ok(Ok(()))),
        "16 MiB level not signalled (usage {usage})"
    );
    assert!(high_fired.is_err(), "the 1 GiB level fired at usage {usage}");
    drop((low, high));
}

/// A summary whose `pods` system container (node allocatable) has a 64 MiB
/// capacity with 16 MiB in use; counts its reads.
#[derive(Clone, Default)]
struct CountingSummary(std::sync::Arc<std::sync::atomic::AtomicUsize>);

#[async_trait::async_trait]
impl actlet::eviction::NodeSummary for CountingSummary {
    async fn summary(&self) -> Result<actlet::stats::types::Summary, String> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let t = "2026-01-01T00:00:00Z";
        let mi: u64 = 1 << 20;
        let memory = serde_json::json!({"time": t, "availableBytes": 48 * mi, "usageBytes": 16 * mi, "workingSetBytes": 16 * mi});
        serde_json::from_value(serde_json::json!({
            "node": {"nodeName": "node-a", "startTime": t, "memory": memory,
                     "systemContainers": [{"name": "pods", "startTime": t, "memory": memory}]},
            "pods": []
        }))
        .map_err(|e| e.to_string())
    }
}

/// The eviction manager with `kernelMemcgNotification` runs a round as soon
/// as the node allocatable cgroup crosses its level (capacity 64 MiB −
/// threshold 48 MiB = 16 MiB of usage), not at its next monitoring interval
/// (60 s here).
#[test]
fn the_eviction_manager_runs_at_once_when_the_kernel_signals_a_memory_threshold() {
    use actlet::cm::names::CgroupName;
    use actlet::eviction::{SummarySource, ThresholdSettings, parse_thresholds};
    use std::sync::atomic::Ordering;
    if !Path::new(MOUNT).join("cgroup.event_control").exists() {
        return skip("no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (cgroup v2 host)");
    }
    let root = format!("actlet-memcg-node-{:08x}", rand::random::<u32>());
    let top = Path::new(MOUNT).join(&root);
    if let Err(e) = std::fs::create_dir(&top) {
        return skip(&format!("cannot create {} ({e}): not root?", top.display()));
    }
    let top = TestCgroup(top);
    let kubepods = TestCgroup(top.0.join("kubepods"));
    std::fs::create_dir(&kubepods.0).unwrap();
    let reads = CountingSummary::default();
    let source = SummarySource::new(reads.clone());
    let cgroup_root = root.clone();
    let procs = kubepods.0.join("cgroup.procs");
    actlet::testing::TestSystem::real_time().block_on(async move {
        let node = actlet::testing::TestNode::builder()
            .customize(move |b| {
                b.configure(move |c| {
                    let hard = [("allocatableMemory.available".to_string(), "48Mi".to_string())].into();
                    c.eviction.thresholds = parse_thresholds(
                        &ThresholdSettings {
                            hard,
                            ..Default::default()
                        },
                        false,
                    )
                    .unwrap();
                    c.eviction.monitoring_interval = Duration::from_secs(60);
                    c.eviction.kernel_memcg_notification = true;
                    c.eviction.summary = Some(source);
                    c.cgroups.naming.root = CgroupName::parse(&format!("/{cgroup_root}"), c.cgroups.naming.driver);
                })
            })
            .start();
        let r = reads.0.clone();
        actlet::testing::wait_until(|| r.load(Ordering::SeqCst) >= 1, Duration::from_secs(20))
            .await
            .expect("the first round");
        tokio::time::sleep(Duration::from_millis(500)).await; // the notifier is registered
        let before = reads.0.load(Ordering::SeqCst);

        let script = format!(
            "echo $$ > {} && exec python3 -c 'b = bytearray(64 << 20); import time; time.sleep(10)'",
            procs.display()
        );
        let t = std::time::Instant::now();
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdout(Stdio::null())
            .spawn()
            .expect("sh");
        let r = reads.0.clone();
        let reacted = actlet::testing::wait_until(|| r.load(Ordering::SeqCst) > before, Duration::from_secs(15)).await;
        println!("memcg: a round {:?} after the allocating process started", t.elapsed());
        let _ = child.kill();
        let _ = child.wait();
        drop(node);
        assert!(
            reacted.is_ok(),
            "no round within 15 s of crossing the level (monitoring interval 60 s)"
        );
    });
    drop((kubepods, top));
}
