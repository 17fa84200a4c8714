//! Disk-pressure eviction through the real stats pipeline: the kubelet's root
//! dir is a 64 MiB tmpfs, the node summary comes from the kubelet's own stats
//! provider (`statvfs` of the root dir, `du` of the pod volumes), the eviction
//! manager runs at upstream's 10 s monitoring interval on real time. Filling
//! one pod's emptyDir past `nodefs.available<40%` turns DiskPressure True and
//! evicts that pod (not the idle one); its volume is reclaimed and the
//! pressure ends after the transition period. Prints the reaction time
//! (threshold crossed → pod Failed/Evicted).
//!
//! Needs root (a tmpfs mount); without it the test SKIPS loudly
//! (`ACTLET_REQUIRE_ROOT=1` makes that a failure). The pods run on the mock
//! CRI: the test writes into the emptyDir on the host, as the container would.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actlet::eviction::{Pressure, ThresholdSettings, parse_thresholds};
use actlet::testing::{PodBuilder, TestNode, TestSystem, wait_until};
use k8s_openapi::api::core::v1::Pod;
use nix::mount::{MntFlags, MsFlags, mount, umount2};

/// Unmounts the tmpfs when the test ends, however it ends.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = umount2(&self.0, MntFlags::MNT_DETACH);
    }
}

fn tmpfs(at: &Path, size: &str) -> Option<Tmpfs> {
    std::fs::create_dir_all(at).unwrap();
    let opts = format!("size={size}");
    match mount(Some("tmpfs"), at, Some("tmpfs"), MsFlags::empty(), Some(opts.as_str())) {
        Ok(()) => Some(Tmpfs(at.to_path_buf())),
        Err(e) if std::env::var("ACTLET_REQUIRE_ROOT").as_deref() == Ok("1") => {
            panic!("ACTLET_REQUIRE_ROOT=1 but a tmpfs cannot be mounted: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED eviction_disk_pressure: cannot mount a tmpfs (needs root): {e}");
            None
        }
    }
}

fn pod(name: &str) -> Pod {
    PodBuilder::new(name)
        .uid(format!("uid-{name}"))
        .container("c", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| {
            let spec = p.spec.as_mut().unwrap();
            spec.volumes = Some(vec![
                serde_json::from_value(serde_json::json!({"name": "cache", "emptyDir": {}})).unwrap(),
            ]);
            spec.containers[0].volume_mounts = Some(vec![
                serde_json::from_value(serde_json::json!({"name": "cache", "mountPath": "/cache"})).unwrap(),
            ]);
        })
        .build()
}

fn condition(node: &TestNode, type_: &str) -> Option<String> {
    let conds = node.kubelet().node.view().conditions;
    conds.into_iter().find(|c| c.type_ == type_).map(|c| c.status)
}

#[test]
fn filling_an_empty_dir_evicts_that_pod_and_the_pressure_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let Some(_mount) = tmpfs(&root, "64m") else { return };
    TestSystem::real_time().block_on(async {
        let events: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let log = events.clone();
        let r = root.clone();
        let node = TestNode::builder()
            .customize(move |b| {
                b.configure(move |c| {
                    c.root_dir = r;
                    let hard = [("nodefs.available".to_string(), "40%".to_string())].into();
                    c.eviction.thresholds =
                        parse_thresholds(&ThresholdSettings { hard, ..Default::default() }, false).unwrap();
                    c.eviction.pressure_transition_period = Duration::from_secs(15);
                    c.node_status_update_frequency = Duration::from_secs(1);
                })
                .on_event(move |e| {
                    if e.reason == "Evicted" {
                        log.lock().unwrap().push((e.involved.name.clone().unwrap_or_default(), e.message));
                    }
                })
            })
            .start();
        node.set_pods(vec![pod("filler"), pod("idle")]);
        for name in ["filler", "idle"] {
            node.wait_for_phase("default", name, "Running", Duration::from_secs(30))
                .await
                .unwrap();
        }
        let dir = root.join("pods/uid-filler/volumes/kubernetes.io~empty-dir/cache");
        assert!(dir.is_dir(), "the emptyDir is on the tmpfs: {}", dir.display());
        wait_until(|| condition(&node, "DiskPressure").as_deref() == Some("False"), Duration::from_secs(15))
            .await
            .unwrap();

        // 44 MiB of 64: under 40% left.
        std::fs::write(dir.join("fill"), vec![1u8; 44 << 20]).unwrap();
        let crossed = Instant::now();
        node.wait_for_phase("default", "filler", "Failed", Duration::from_secs(60))
            .await
            .unwrap();
        let took = crossed.elapsed();
        println!(
            "eviction reaction time (nodefs.available<40% crossed -> pod Failed/Evicted, monitoring interval 10 s): {:.1} s",
            took.as_secs_f64()
        );
        let st = node.status("default", "filler").unwrap();
        assert_eq!(st.reason.as_deref(), Some("Evicted"));
        let msg = st.message.unwrap_or_default();
        assert!(
            msg.starts_with("The node was low on resource: ephemeral-storage. Threshold quantity: "),
            "{msg}"
        );
        assert!(events.lock().unwrap().iter().any(|(n, _)| n == "filler"), "an Evicted event");
        assert!(node.kubelet().eviction.pressures().contains(&Pressure::Disk));
        wait_until(|| condition(&node, "DiskPressure").as_deref() == Some("True"), Duration::from_secs(15))
            .await
            .unwrap();

        // The evicted pod's emptyDir is reclaimed; the idle pod keeps running
        // and the condition clears after the transition period.
        wait_until(|| !dir.exists(), Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("the evicted pod's emptyDir stays: {e:?}"));
        wait_until(|| condition(&node, "DiskPressure").as_deref() == Some("False"), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(node.status("default", "idle").and_then(|s| s.phase).as_deref(), Some("Running"));
        assert_eq!(events.lock().unwrap().len(), 1, "one eviction: {:?}", events.lock().unwrap());
        drop(node);
    });
}
