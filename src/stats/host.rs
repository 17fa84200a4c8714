//! What the node itself reports: CPU and memory from the root cgroup or
//! `/proc`, network from `/proc/net/dev`, filesystems from `statvfs`, PID
//! limits from `/proc/sys/kernel` (upstream `pidlimit`), boot time. The
//! parsers are pure; the readers take the `/proc` root so tests can give a
//! fixture directory.

use std::collections::HashMap;
use std::path::Path;

/// Cumulative CPU time and memory of a cgroup or the node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuMemory {
    /// Cumulative core-nanoseconds.
    pub cpu_core_nano_seconds: Option<u64>,
    /// All memory in use (page cache included).
    pub usage_bytes: Option<u64>,
    /// usage − inactive file pages.
    pub working_set_bytes: Option<u64>,
    /// Anonymous memory.
    pub rss_bytes: Option<u64>,
    /// Minor page faults.
    pub page_faults: Option<u64>,
    /// Major page faults.
    pub major_page_faults: Option<u64>,
    /// The memory limit, when there is one.
    pub limit_bytes: Option<u64>,
}

/// Counters of one network interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interface {
    /// Name.
    pub name: String,
    /// Received bytes.
    pub rx_bytes: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Sent bytes.
    pub tx_bytes: u64,
    /// Transmit errors.
    pub tx_errors: u64,
}

/// Capacity and usage of a filesystem (`statvfs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsInfo {
    /// Size.
    pub capacity_bytes: u64,
    /// Free for unprivileged users.
    pub available_bytes: u64,
    /// Used (size − free).
    pub used_bytes: u64,
    /// All inodes.
    pub inodes: u64,
    /// Free inodes.
    pub inodes_free: u64,
}

/// `key value` lines (`/proc/meminfo` with its `kB`, `memory.stat`, `/proc/vmstat`).
pub fn parse_key_values(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let key = it.next()?.trim_end_matches(':').to_string();
            let value: u64 = it.next()?.parse().ok()?;
            let scale = if it.next() == Some("kB") { 1024 } else { 1 };
            Some((key, value * scale))
        })
        .collect()
}

/// Busy CPU time from `/proc/stat`'s `cpu` line, in nanoseconds
/// (user+nice+system+irq+softirq+steal; USER_HZ 100).
///
/// ```
/// let stat = "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n";
/// assert_eq!(actlet::stats::host::parse_proc_stat_cpu(stat), Some((100 + 5 + 50 + 3 + 2 + 1) * 10_000_000));
/// ```
pub fn parse_proc_stat_cpu(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    let busy = [0, 1, 2, 5, 6, 7].iter().filter_map(|i| f.get(*i)).sum::<u64>();
    Some(busy * 10_000_000)
}

/// `btime` from `/proc/stat` (Unix seconds).
pub fn parse_boot_time(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// Node memory from `/proc/meminfo` and `/proc/vmstat` (cAdvisor's root
/// container: usage = total − free, working set = usage − inactive file).
pub fn node_memory(meminfo: &str, vmstat: &str) -> CpuMemory {
    let m = parse_key_values(meminfo);
    let v = parse_key_values(vmstat);
    let total = m.get("MemTotal").copied();
    let usage = total.zip(m.get("MemFree")).map(|(t, f)| t.saturating_sub(*f));
    let inactive = m.get("Inactive(file)").copied().unwrap_or(0);
    CpuMemory {
        usage_bytes: usage,
        working_set_bytes: usage.map(|u| u.saturating_sub(inactive)),
        rss_bytes: m.get("AnonPages").copied(),
        page_faults: v.get("pgfault").copied(),
        major_page_faults: v.get("pgmajfault").copied(),
        limit_bytes: total,
        ..CpuMemory::default()
    }
}

/// Interfaces from `/proc/net/dev`, without the ones cAdvisor ignores
/// (`lo`, `veth*`, `docker*`).
///
/// ```
/// let dev = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 10 1 0 0 0 0 0 0 10 1 0 0 0 0 0 0\n  eth0: 1000 10 2 0 0 0 0 0 500 5 1 0 0 0 0 0\n";
/// let ifs = actlet::stats::host::parse_net_dev(dev);
/// assert_eq!(ifs.len(), 1);
/// assert_eq!((ifs[0].name.as_str(), ifs[0].rx_bytes, ifs[0].rx_errors, ifs[0].tx_bytes, ifs[0].tx_errors), ("eth0", 1000, 2, 500, 1));
/// ```
pub fn parse_net_dev(text: &str) -> Vec<Interface> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let name = name.trim();
            if ["lo", "veth", "docker"].iter().any(|p| name.starts_with(p)) {
                return None;
            }
            let f: Vec<u64> = rest.split_whitespace().filter_map(|v| v.parse().ok()).collect();
            Some(Interface {
                name: name.to_string(),
                rx_bytes: *f.first()?,
                rx_errors: *f.get(2)?,
                tx_bytes: *f.get(8)?,
                tx_errors: *f.get(10)?,
            })
        })
        .collect()
}

/// The node's busy CPU time: the root cgroup (v1 `cpuacct.usage`, v2
/// `cpu.stat` `usage_usec`) as cAdvisor reads it, else `/proc/stat`.
pub fn node_cpu(cgroup_mount: &Path, proc_root: &Path) -> Option<u64> {
    if let Ok(v) = std::fs::read_to_string(cgroup_mount.join("cpuacct/cpuacct.usage"))
        && let Ok(n) = v.trim().parse()
    {
        return Some(n);
    }
    if let Ok(v) = std::fs::read_to_string(cgroup_mount.join("cpu.stat"))
        && let Some(us) = parse_key_values(&v).get("usage_usec")
    {
        return Some(us * 1000);
    }
    parse_proc_stat_cpu(&std::fs::read_to_string(proc_root.join("stat")).ok()?)
}

/// The node's memory (see [`node_memory`]).
pub fn read_node_memory(proc_root: &Path) -> CpuMemory {
    let read = |f: &str| std::fs::read_to_string(proc_root.join(f)).unwrap_or_default();
    node_memory(&read("meminfo"), &read("vmstat"))
}

/// The node's boot time (Unix seconds).
pub fn boot_time(proc_root: &Path) -> Option<i64> {
    parse_boot_time(&std::fs::read_to_string(proc_root.join("stat")).ok()?)
}

/// The node's interfaces (see [`parse_net_dev`]).
pub fn node_interfaces(proc_root: &Path) -> Vec<Interface> {
    std::fs::read_to_string(proc_root.join("net/dev"))
        .map(|t| parse_net_dev(&t))
        .unwrap_or_default()
}

/// `(maxpid, curproc)`: min(`pid_max`, `threads-max`) and the task count
/// from `/proc/loadavg` (upstream `pidlimit.Stats`).
pub fn rlimit(proc_root: &Path) -> (Option<i64>, Option<i64>) {
    let read = |f: &str| -> Option<i64> { std::fs::read_to_string(proc_root.join(f)).ok()?.trim().parse().ok() };
    let max = [read("sys/kernel/pid_max"), read("sys/kernel/threads-max")]
        .into_iter()
        .flatten()
        .min();
    let procs = std::fs::read_to_string(proc_root.join("loadavg")).ok().and_then(|l| {
        let field = l.split_whitespace().nth(3)?;
        field.split_once('/')?.1.parse().ok()
    });
    (max, procs)
}

/// `statvfs` of the filesystem holding `path`.
pub fn fs_info(path: &Path) -> Option<FsInfo> {
    let s = nix::sys::statvfs::statvfs(path).ok()?;
    let frsize = s.fragment_size() as u64;
    let (blocks, free, avail) = (s.blocks() as u64, s.blocks_free() as u64, s.blocks_available() as u64);
    Some(FsInfo {
        capacity_bytes: blocks * frsize,
        available_bytes: avail * frsize,
        used_bytes: blocks.saturating_sub(free) * frsize,
        inodes: s.files() as u64,
        inodes_free: s.files_free() as u64,
    })
}

/// Bytes and inodes used under `path` (files counted once per inode, like
/// `du`); `(0, 0)` when it does not exist.
pub fn disk_usage(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let (mut bytes, mut inodes) = (0u64, 0u64);
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        bytes += meta.blocks() * 512;
        inodes += 1;
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(&p)
        {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    (bytes, inodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_gives_usage_and_working_set() {
        let meminfo = "MemTotal:  1000 kB\nMemFree: 400 kB\nInactive(file): 100 kB\nAnonPages: 250 kB\n";
        let m = node_memory(meminfo, "pgfault 77\npgmajfault 3\n");
        assert_eq!(m.usage_bytes, Some(600 * 1024));
        assert_eq!(m.working_set_bytes, Some(500 * 1024));
        assert_eq!(m.rss_bytes, Some(250 * 1024));
        assert_eq!((m.page_faults, m.major_page_faults), (Some(77), Some(3)));
        assert_eq!(m.limit_bytes, Some(1000 * 1024));
    }

    #[test]
    fn proc_fixture_gives_rlimit_boot_time_and_interfaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(p.join("net")).unwrap();
        std::fs::write(p.join("sys/kernel/pid_max"), "4194304\n").unwrap();
        std::fs::write(p.join("sys/kernel/threads-max"), "94000\n").unwrap();
        std::fs::write(p.join("loadavg"), "0.25 0.22 0.66 1/97 12866\n").unwrap();
        std::fs::write(p.join("stat"), "cpu  1 0 1 0 0 0 0 0 0 0\nbtime 1700000000\n").unwrap();
        assert_eq!(rlimit(p), (Some(94000), Some(97)));
        assert_eq!(boot_time(p), Some(1_700_000_000));
        assert_eq!(node_cpu(&p.join("nocgroup"), p), Some(20_000_000));
        assert!(node_interfaces(p).is_empty());
    }

    #[test]
    fn disk_usage_counts_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![b'x'; 10_000]).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let (bytes, inodes) = disk_usage(dir.path());
        assert!(bytes >= 10_000, "{bytes}");
        assert_eq!(inodes, 3);
        assert_eq!(disk_usage(&dir.path().join("none")), (0, 0));
        assert!(fs_info(dir.path()).unwrap().capacity_bytes > 0);
    }
}
