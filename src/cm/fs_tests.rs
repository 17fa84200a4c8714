use super::*;

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn guaranteed() -> ResourceConfig {
    ResourceConfig {
        cpu_shares: Some(512),
        cpu_quota: Some(50_000),
        cpu_period: Some(100_000),
        memory: Some(64 << 20),
        pids_limit: Some(100),
    }
}

/// A v1 host: controller hierarchies, a root cpuset.
fn v1_tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for c in ["cpu", "cpuacct", "cpuset", "memory", "pids", "devices"] {
        std::fs::create_dir_all(t.path().join(c)).unwrap();
    }
    std::fs::write(t.path().join("cpuset/cpuset.cpus"), "0-1\n").unwrap();
    std::fs::write(t.path().join("cpuset/cpuset.mems"), "0\n").unwrap();
    t
}

#[test]
fn v1_creates_in_every_mounted_hierarchy_and_writes_v1_files() {
    let t = v1_tree();
    let fs = Cgroupfs::detect(t.path());
    assert_eq!(fs.version(), CgroupVersion::V1);
    let pod = "/kubepods/burstable/podu1";
    assert!(!fs.exists(pod));
    fs.create(pod, &guaranteed()).unwrap();
    assert!(fs.exists(pod));
    for c in ["cpu", "cpuacct", "cpuset", "memory", "pids", "devices"] {
        assert!(t.path().join(c).join("kubepods/burstable/podu1").is_dir(), "{c}");
    }
    assert!(
        !t.path().join("hugetlb").exists(),
        "unmounted hierarchies are left alone"
    );
    let cpu = t.path().join("cpu/kubepods/burstable/podu1");
    assert_eq!(read(cpu.join("cpu.shares")), "512");
    assert_eq!(read(cpu.join("cpu.cfs_period_us")), "100000");
    assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "50000");
    assert_eq!(
        read(t.path().join("memory/kubepods/burstable/podu1/memory.limit_in_bytes")),
        "67108864"
    );
    assert_eq!(read(t.path().join("pids/kubepods/burstable/podu1/pids.max")), "100");
    // cpuset inherited down every level
    assert_eq!(read(t.path().join("cpuset/kubepods/cpuset.cpus")), "0-1");
    assert_eq!(read(t.path().join("cpuset/kubepods/burstable/podu1/cpuset.mems")), "0");
}

#[test]
fn v1_unset_values_are_not_written_and_unlimited_quota_is_minus_one() {
    let t = v1_tree();
    let fs = Cgroupfs::detect(t.path());
    let be = ResourceConfig {
        cpu_shares: Some(2),
        ..Default::default()
    };
    fs.create("/kubepods/besteffort", &be).unwrap();
    let dir = t.path().join("cpu/kubepods/besteffort");
    assert_eq!(read(dir.join("cpu.shares")), "2");
    assert!(!dir.join("cpu.cfs_quota_us").exists());
    assert!(
        !t.path()
            .join("memory/kubepods/besteffort/memory.limit_in_bytes")
            .exists()
    );
    fs.update(
        "/kubepods/besteffort",
        &ResourceConfig {
            cpu_quota: Some(-1),
            pids_limit: Some(-1),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(read(dir.join("cpu.cfs_quota_us")), "-1");
    assert_eq!(read(t.path().join("pids/kubepods/besteffort/pids.max")), "max");
}

#[test]
fn v2_writes_unified_files_and_enables_controllers() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
    let fs = Cgroupfs::detect(t.path());
    assert_eq!(fs.version(), CgroupVersion::V2);
    let pod = "/kubepods/podu2";
    fs.create(pod, &guaranteed()).unwrap();
    assert!(fs.exists(pod));
    let dir = t.path().join("kubepods/podu2");
    assert_eq!(read(dir.join("cpu.weight")), "20"); // 1 + (510·9999)/262142
    assert_eq!(read(dir.join("cpu.max")), "50000 100000");
    assert_eq!(read(dir.join("memory.max")), "67108864");
    assert_eq!(read(dir.join("pids.max")), "100");
    assert!(!dir.join("cpu.shares").exists(), "no v1 files on v2");
    for parent in ["", "kubepods"] {
        let control = read(t.path().join(parent).join("cgroup.subtree_control"));
        assert_eq!(control, "+cpu +memory +pids", "{parent:?}");
    }
    // unlimited values
    fs.update(
        pod,
        &ResourceConfig {
            cpu_quota: Some(-1),
            cpu_period: Some(100_000),
            pids_limit: Some(0),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(read(dir.join("cpu.max")), "max 100000");
    assert_eq!(read(dir.join("pids.max")), "max");
}

#[test]
fn errors_name_the_path() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("cgroup.controllers"), "").unwrap();
    // a regular file where the kubepods directory should be
    std::fs::write(t.path().join("kubepods"), "").unwrap();
    let fs = Cgroupfs::detect(t.path());
    let e = fs.create("/kubepods/podx", &guaranteed()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("kubepods"), "{msg}");
    assert!(msg.starts_with("failed to"), "{msg}");
}
