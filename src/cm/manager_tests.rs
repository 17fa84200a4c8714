use super::*;
use crate::kuberuntime::test_support::pod;
use crate::messages::pod_update::PodSource;

const MI: i64 = 1 << 20;

fn read(p: std::path::PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn v1_tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for c in ["cpu", "cpuacct", "cpuset", "memory", "pids"] {
        std::fs::create_dir_all(t.path().join(c)).unwrap();
    }
    t
}

fn node() -> NodeCapacity {
    NodeCapacity {
        capacity: NodeResources {
            cpu_milli: 4000,
            memory: 8192 * MI,
        },
        reserved: NodeResources {
            cpu_milli: 1000,
            memory: 1024 * MI,
        },
        cpu_cfs_quota: true,
    }
}

fn manager(
    t: &tempfile::TempDir,
    config: CmConfig,
    runtime: Option<SharedRuntime>,
    pods: PodManager,
) -> ContainerManager {
    let fs = Arc::new(Cgroupfs::detect(t.path()));
    ContainerManager::new(config, fs, runtime, pods, node())
}

fn burstable(uid: &str, cpu: &str) -> Pod {
    pod(&format!(
        "metadata: {{name: b-{uid}, namespace: default, uid: {uid}}}\nspec:\n  containers:\n  - name: a\n    image: busybox\n    resources: {{requests: {{cpu: {cpu}, memory: 32Mi}}, limits: {{memory: 64Mi}}}}\n"
    ))
}

fn guaranteed(uid: &str) -> Pod {
    pod(&format!(
        "metadata: {{name: g-{uid}, namespace: default, uid: {uid}}}\nspec:\n  containers:\n  - name: a\n    image: busybox\n    resources: {{limits: {{cpu: 250m, memory: 48Mi}}}}\n"
    ))
}

#[tokio::test]
async fn start_creates_the_qos_hierarchy_with_node_allocatable() {
    let t = v1_tree();
    let m = manager(&t, CmConfig::default(), None, PodManager::new());
    assert!(m.start().await);
    assert_eq!(m.is_active(), Some(true));
    let kubepods = t.path().join("cpu/kubepods");
    assert_eq!(read(kubepods.join("cpu.shares")), "3072"); // 3000m allocatable
    assert_eq!(
        read(t.path().join("memory/kubepods/memory.limit_in_bytes")),
        (7168 * MI).to_string()
    );
    assert_eq!(read(t.path().join("cpu/kubepods/besteffort/cpu.shares")), "2");
    assert_eq!(
        read(t.path().join("cpu/kubepods/burstable/cpu.shares")),
        "2",
        "no Burstable pods yet"
    );
}

#[tokio::test]
async fn without_pods_in_enforce_node_allocatable_kubepods_gets_capacity() {
    let t = v1_tree();
    let config = CmConfig {
        enforce_node_allocatable: vec![],
        ..CmConfig::default()
    };
    assert!(manager(&t, config, None, PodManager::new()).start().await);
    assert_eq!(
        read(t.path().join("memory/kubepods/memory.limit_in_bytes")),
        (8192 * MI).to_string()
    );
}

#[tokio::test]
async fn ensure_pod_creates_the_pod_cgroup_once_and_updates_burstable_shares() {
    let t = v1_tree();
    let pods = PodManager::new();
    let (b1, b2, g) = (burstable("b1", "300m"), burstable("b2", "200m"), guaranteed("g1"));
    for p in [&b1, &b2, &g] {
        pods.upsert(Arc::new(p.clone()), PodSource::File);
    }
    let config = CmConfig {
        pod_pids_limit: 4096,
        ..CmConfig::default()
    };
    let m = manager(&t, config, None, pods);
    m.ensure_pod(&b1).await.unwrap();
    let dir = t.path().join("cpu/kubepods/burstable/podb1");
    assert_eq!(read(dir.join("cpu.shares")), "307");
    assert!(!dir.join("cpu.cfs_quota_us").exists(), "no cpu limit: no quota");
    assert_eq!(
        read(t.path().join("memory/kubepods/burstable/podb1/memory.limit_in_bytes")),
        (64 * MI).to_string()
    );
    assert_eq!(read(t.path().join("pids/kubepods/burstable/podb1/pids.max")), "4096");
    assert_eq!(
        read(t.path().join("cpu/kubepods/burstable/cpu.shares")),
        "512",
        "300m + 200m"
    );

    m.ensure_pod(&g).await.unwrap();
    let dir = t.path().join("cpu/kubepods/podg1");
    assert_eq!(read(dir.join("cpu.shares")), "256");
    assert_eq!(read(dir.join("cpu.cfs_quota_us")), "25000");
    assert_eq!(
        read(t.path().join("memory/kubepods/podg1/memory.limit_in_bytes")),
        (48 * MI).to_string()
    );

    // an existing pod cgroup is left as it is (upstream EnsureExists)
    std::fs::write(t.path().join("cpu/kubepods/podg1/cpu.shares"), "999").unwrap();
    m.ensure_pod(&g).await.unwrap();
    assert_eq!(read(t.path().join("cpu/kubepods/podg1/cpu.shares")), "999");
}

#[tokio::test]
async fn v2_pod_cgroup_on_a_fake_unified_tree() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("cgroup.controllers"), "cpu memory pids").unwrap();
    let m = manager(&t, CmConfig::default(), None, PodManager::new());
    m.ensure_pod(&guaranteed("g2")).await.unwrap();
    let dir = t.path().join("kubepods/podg2");
    assert_eq!(read(dir.join("cpu.weight")), "10"); // shares 256
    assert_eq!(read(dir.join("cpu.max")), "25000 100000");
    assert_eq!(read(dir.join("memory.max")), (48 * MI).to_string());
    assert_eq!(read(t.path().join("kubepods/besteffort/cpu.weight")), "1");
    assert_eq!(read(t.path().join("kubepods/cpu.weight")), "118"); // 3072 shares
}

#[tokio::test]
async fn systemd_driver_uses_slice_paths() {
    let t = v1_tree();
    let config = CmConfig {
        naming: CgroupNaming {
            driver: CgroupDriver::Systemd,
            ..CgroupNaming::default()
        },
        ..CmConfig::default()
    };
    let m = manager(&t, config, None, PodManager::new());
    let p = burstable("ab-cd", "100m");
    assert_eq!(
        m.pod_cgroup(&p),
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab_cd.slice"
    );
    m.ensure_pod(&p).await.unwrap();
    assert_eq!(
        read(
            t.path()
                .join("cpu/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab_cd.slice/cpu.shares")
        ),
        "102"
    );
}

#[tokio::test]
async fn off_for_the_mock_runtime_for_off_mode_and_without_cgroups_per_qos() {
    let t = v1_tree();
    let mock: SharedRuntime = Arc::new(crate::cri::mock::MockRuntime::new());
    let m = manager(&t, CmConfig::default(), Some(mock), PodManager::new());
    m.ensure_pod(&guaranteed("g")).await.unwrap();
    assert_eq!(m.is_active(), Some(false));
    for config in [
        CmConfig {
            mode: CmMode::Off,
            ..CmConfig::default()
        },
        CmConfig {
            naming: CgroupNaming {
                cgroups_per_qos: false,
                ..CgroupNaming::default()
            },
            ..CmConfig::default()
        },
    ] {
        let m = manager(&t, config, None, PodManager::new());
        assert!(!m.start().await);
        m.ensure_pod(&guaranteed("g")).await.unwrap();
    }
    assert!(!t.path().join("cpu/kubepods").exists(), "nothing created");
    assert!(!ContainerManager::disabled().start().await);
}

#[tokio::test]
async fn unwritable_cgroupfs_turns_the_manager_off() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("cgroup.controllers"), "").unwrap();
    std::fs::write(t.path().join("kubepods"), "a file, not a cgroup").unwrap();
    let m = manager(&t, CmConfig::default(), None, PodManager::new());
    assert!(!m.start().await);
}

#[tokio::test]
async fn a_pod_cgroup_error_names_the_path() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("cgroup.controllers"), "").unwrap();
    let m = manager(&t, CmConfig::default(), None, PodManager::new());
    assert!(m.start().await);
    // the pod's cgroup path is taken by a regular file
    std::fs::write(t.path().join("kubepods/podbad"), "").unwrap();
    let e = m.ensure_pod(&guaranteed("bad")).await.unwrap_err();
    assert!(e.to_string().contains("kubepods/podbad"), "{e}");
}

#[tokio::test]
async fn a_runtime_that_does_not_answer_leaves_the_decision_open() {
    let t = v1_tree();
    let mock = crate::cri::mock::MockRuntime::new();
    mock.set_down(true);
    let shared: SharedRuntime = Arc::new(mock.clone());
    let m = manager(&t, CmConfig::default(), Some(shared), PodManager::new());
    assert!(!m.start().await);
    assert_eq!(m.is_active(), None, "undecided while the runtime is down");
    assert!(
        !t.path().join("cpu/kubepods").exists(),
        "no host cgroups for a runtime that may be the mock"
    );
    mock.set_down(false);
    assert!(!m.start().await);
    assert_eq!(m.is_active(), Some(false), "the mock answered: off for good");
}
