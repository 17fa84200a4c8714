//! Node-level samples for the Summary API, read from the host (blocking:
//! call through `spawn_blocking`): CPU and memory of the root cgroup (v1) or
//! `/proc` (v2 hosts, whose root cgroup has no usage files), the root dir's
//! filesystem (statvfs) and the process limits.

use std::path::Path;

/// One reading of the node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSample {
    /// Cumulative CPU time of everything on the node, ns.
    pub cpu_usage_ns: Option<u64>,
    /// Memory capacity, usage and working set (usage − inactive file), bytes.
    pub memory: Option<(u64, u64, u64)>,
    /// The root dir's filesystem: (capacity, available, used, inodes, inodes free).
    pub fs: Option<(u64, u64, u64, u64, u64)>,
    /// `kernel.pid_max` and the number of processes.
    pub rlimit: Option<(i64, i64)>,
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `key value` lines (cgroup `memory.stat`, `cpu.stat`).
fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// `/proc/meminfo` field in bytes.
pub fn meminfo(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

fn cpu_usage_ns(cgroup: &Path) -> Option<u64> {
    for dir in ["cpu,cpuacct", "cpuacct"] {
        if let Some(v) = read_u64(&cgroup.join(dir).join("cpuacct.usage")) {
            return Some(v);
        }
    }
    let stat = std::fs::read_to_string(cgroup.join("cpu.stat")).ok()?;
    stat_value(&stat, "usage_usec").map(|us| us * 1000)
}

fn memory(cgroup: &Path, meminfo_text: &str) -> Option<(u64, u64, u64)> {
    let capacity = meminfo(meminfo_text, "MemTotal")?;
    let v1 = cgroup.join("memory");
    let (usage, inactive) = match (
        read_u64(&v1.join("memory.usage_in_bytes")),
        std::fs::read_to_string(v1.join("memory.stat")).ok(),
    ) {
        (Some(usage), Some(stat)) => (usage, stat_value(&stat, "total_inactive_file").unwrap_or(0)),
        _ => {
            let free = meminfo(meminfo_text, "MemFree")?;
            let inactive = meminfo(meminfo_text, "Inactive(file)").unwrap_or(0);
            (capacity.saturating_sub(free), inactive)
        }
    };
    Some((capacity, usage, usage.saturating_sub(inactive)))
}

fn fs(root: &Path) -> Option<(u64, u64, u64, u64, u64)> {
    let s = nix::sys::statvfs::statvfs(root).ok()?;
    let frag = s.fragment_size() as u64;
    let capacity = s.blocks() as u64 * frag;
    let available = s.blocks_available() as u64 * frag;
    let used = capacity.saturating_sub(s.blocks_free() as u64 * frag);
    Some((capacity, available, used, s.files() as u64, s.files_free() as u64))
}

fn rlimit() -> Option<(i64, i64)> {
    let max = read_u64(Path::new("/proc/sys/kernel/pid_max"))?;
    let procs = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    Some((i64::try_from(max).ok()?, i64::try_from(procs).ok()?))
}

/// Reads the node (cgroups under `cgroup_mount`, the filesystem of `root_dir`).
pub fn sample(cgroup_mount: &Path, root_dir: &Path) -> NodeSample {
    let meminfo_text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    NodeSample {
        cpu_usage_ns: cpu_usage_ns(cgroup_mount),
        memory: memory(cgroup_mount, &meminfo_text),
        fs: fs(root_dir),
        rlimit: rlimit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_stat_lines_parse() {
        let m = "MemTotal:       16384 kB\nMemFree:         1024 kB\nInactive(file):   512 kB\n";
        assert_eq!(meminfo(m, "MemTotal"), Some(16384 * 1024));
        assert_eq!(meminfo(m, "Inactive(file)"), Some(512 * 1024));
        assert_eq!(meminfo(m, "Mem"), None);
        assert_eq!(stat_value("usage_usec 42\nuser_usec 1", "usage_usec"), Some(42));
    }

    #[test]
    fn a_v2_style_tree_falls_back_to_proc_meminfo() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.path().join("cpu.stat"), "usage_usec 1500\n").unwrap_or_else(|e| panic!("{e}"));
        let m = "MemTotal: 1000 kB\nMemFree: 400 kB\nInactive(file): 100 kB\n";
        assert_eq!(cpu_usage_ns(d.path()), Some(1_500_000));
        assert_eq!(memory(d.path(), m), Some((1_024_000, 614_400, 512_000)));
    }

    #[test]
    fn this_host_can_be_sampled() {
        let s = sample(Path::new("/sys/fs/cgroup"), Path::new("/"));
        assert!(s.memory.is_some() && s.fs.is_some() && s.rlimit.is_some(), "{s:?}");
    }
}
