//! A pod's usage read from its cgroup, for runtimes without
//! `ListPodSandboxStats` (upstream reads the pod cgroup through cAdvisor).
//! v1: `cpuacct.usage`, `memory.usage_in_bytes`, `memory.stat`
//! (`total_inactive_file`, `total_rss`, `total_pgfault`, `total_pgmajfault`),
//! `memory.limit_in_bytes`, `pids.current`; v2: `cpu.stat` `usage_usec`,
//! `memory.current`, `memory.stat` (`inactive_file`, `anon`, `pgfault`,
//! `pgmajfault`), `memory.max`, `pids.current`.

use std::path::Path;

use super::host::{CpuMemory, parse_key_values};
use crate::cm::fs::{CgroupVersion, Cgroupfs};

/// Limits at or above this mean "no limit" (v1's unlimited is 2^63 rounded to pages).
const UNLIMITED: u64 = 1 << 62;

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The usage of cgroup `path` (as the driver names it), `None` when it
/// does not exist.
pub fn read(fs: &Cgroupfs, path: &str) -> Option<(CpuMemory, Option<u64>)> {
    match fs.version() {
        CgroupVersion::V1 => {
            let mem = fs.dir("memory", path);
            if !mem.is_dir() {
                return None;
            }
            let stat = std::fs::read_to_string(mem.join("memory.stat"))
                .map(|t| parse_key_values(&t))
                .unwrap_or_default();
            let usage = read_u64(&mem.join("memory.usage_in_bytes"));
            let inactive = stat.get("total_inactive_file").copied().unwrap_or(0);
            let cpu = read_u64(&fs.dir("cpuacct", path).join("cpuacct.usage"))
                .or_else(|| read_u64(&fs.dir("cpu,cpuacct", path).join("cpuacct.usage")));
            let usage_stats = CpuMemory {
                cpu_core_nano_seconds: cpu,
                usage_bytes: usage,
                working_set_bytes: usage.map(|u| u.saturating_sub(inactive)),
                rss_bytes: stat.get("total_rss").copied(),
                page_faults: stat.get("total_pgfault").copied(),
                major_page_faults: stat.get("total_pgmajfault").copied(),
                limit_bytes: read_u64(&mem.join("memory.limit_in_bytes")).filter(|l| *l < UNLIMITED),
            };
            Some((usage_stats, read_u64(&fs.dir("pids", path).join("pids.current"))))
        }
        CgroupVersion::V2 => {
            let dir = fs.dir("", path);
            if !dir.is_dir() {
                return None;
            }
            let kv = |f: &str| {
                std::fs::read_to_string(dir.join(f))
                    .map(|t| parse_key_values(&t))
                    .unwrap_or_default()
            };
            let (cpu, stat) = (kv("cpu.stat"), kv("memory.stat"));
            let usage = read_u64(&dir.join("memory.current"));
            let inactive = stat.get("inactive_file").copied().unwrap_or(0);
            let usage_stats = CpuMemory {
                cpu_core_nano_seconds: cpu.get("usage_usec").map(|u| u * 1000),
                usage_bytes: usage,
                working_set_bytes: usage.map(|u| u.saturating_sub(inactive)),
                rss_bytes: stat.get("anon").copied(),
                page_faults: stat.get("pgfault").copied(),
                major_page_faults: stat.get("pgmajfault").copied(),
                limit_bytes: read_u64(&dir.join("memory.max")),
            };
            Some((usage_stats, read_u64(&dir.join("pids.current"))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_pod_cgroup_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let pod = "kubepods/burstable/podabc";
        for c in ["memory", "cpuacct", "pids"] {
            std::fs::create_dir_all(dir.path().join(c).join(pod)).unwrap();
        }
        let d = |c: &str, f: &str| dir.path().join(c).join(pod).join(f);
        std::fs::write(d("memory", "memory.usage_in_bytes"), "1000\n").unwrap();
        std::fs::write(d("memory", "memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        std::fs::write(
            d("memory", "memory.stat"),
            "cache 5\ntotal_inactive_file 300\ntotal_rss 600\ntotal_pgfault 9\ntotal_pgmajfault 1\n",
        )
        .unwrap();
        std::fs::write(d("cpuacct", "cpuacct.usage"), "123456789\n").unwrap();
        std::fs::write(d("pids", "pids.current"), "4\n").unwrap();
        let fs = Cgroupfs::new(dir.path(), CgroupVersion::V1);
        let (u, pids) = read(&fs, &format!("/{pod}")).unwrap();
        assert_eq!(u.cpu_core_nano_seconds, Some(123_456_789));
        assert_eq!(
            (u.usage_bytes, u.working_set_bytes, u.rss_bytes),
            (Some(1000), Some(700), Some(600))
        );
        assert_eq!(
            (u.page_faults, u.major_page_faults, u.limit_bytes),
            (Some(9), Some(1), None)
        );
        assert_eq!(pids, Some(4));
        assert!(read(&fs, "/kubepods/none").is_none());
    }

    #[test]
    fn v2_pod_cgroup_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let pod = dir.path().join("kubepods/podabc");
        std::fs::create_dir_all(&pod).unwrap();
        std::fs::write(pod.join("cpu.stat"), "usage_usec 2000\nuser_usec 1000\n").unwrap();
        std::fs::write(pod.join("memory.current"), "5000\n").unwrap();
        std::fs::write(pod.join("memory.max"), "8000\n").unwrap();
        std::fs::write(
            pod.join("memory.stat"),
            "anon 3000\ninactive_file 1000\npgfault 5\npgmajfault 0\n",
        )
        .unwrap();
        let fs = Cgroupfs::new(dir.path(), CgroupVersion::V2);
        let (u, pids) = read(&fs, "/kubepods/podabc").unwrap();
        assert_eq!(u.cpu_core_nano_seconds, Some(2_000_000));
        assert_eq!(
            (u.working_set_bytes, u.rss_bytes, u.limit_bytes),
            (Some(4000), Some(3000), Some(8000))
        );
        assert_eq!(pids, None);
    }
}
