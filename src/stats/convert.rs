//! CRI stats and host readings → Summary API types (upstream
//! `cri_stats_provider.go`'s `makeContainerStats`, `addCRIPodCPUStats`, …).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cpu_usage::{CpuSample, CpuUsageCache};
use super::host::{CpuMemory, FsInfo, Interface};
use super::types::{CpuStats, FsStats, InterfaceStats, MemoryStats, NetworkStats};
use crate::cri::v1;

/// The network interface upstream reports inline (`network.DefaultInterfaceName`).
pub const DEFAULT_INTERFACE: &str = "eth0";

/// Unix nanoseconds as a `metav1.Time`.
pub fn time(nanos: i64) -> Time {
    Time(jiff::Timestamp::from_nanosecond(i128::from(nanos)).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

/// Now, in Unix nanoseconds.
pub fn now_nanos() -> i64 {
    jiff::Timestamp::now().as_nanosecond() as i64
}

fn value(v: &Option<v1::UInt64Value>) -> Option<u64> {
    v.as_ref().map(|v| v.value)
}

/// CPU stats from a CRI sample; `usageNanoCores` from the runtime or the
/// cache under `key`.
pub fn cpu(cache: &CpuUsageCache, key: &str, c: &v1::CpuUsage) -> CpuStats {
    let total = value(&c.usage_core_nano_seconds);
    let nano_cores = match total {
        Some(t) => cache.update(
            key,
            CpuSample {
                timestamp: c.timestamp,
                usage_core_nano_seconds: t,
            },
            value(&c.usage_nano_cores),
        ),
        None => value(&c.usage_nano_cores),
    };
    CpuStats {
        time: time(c.timestamp),
        usage_nano_cores: nano_cores,
        usage_core_nano_seconds: total,
    }
}

/// Memory stats from a CRI sample.
pub fn memory(m: &v1::MemoryUsage) -> MemoryStats {
    MemoryStats {
        time: time(m.timestamp),
        available_bytes: value(&m.available_bytes),
        usage_bytes: value(&m.usage_bytes),
        working_set_bytes: value(&m.working_set_bytes),
        rss_bytes: value(&m.rss_bytes),
        page_faults: value(&m.page_faults),
        major_page_faults: value(&m.major_page_faults),
    }
}

/// CPU stats from a host or cgroup reading taken at `now`.
pub fn cpu_from_host(cache: &CpuUsageCache, key: &str, now: i64, total: Option<u64>) -> Option<CpuStats> {
    let total = total?;
    let sample = CpuSample {
        timestamp: now,
        usage_core_nano_seconds: total,
    };
    Some(CpuStats {
        time: time(now),
        usage_nano_cores: cache.update(key, sample, None),
        usage_core_nano_seconds: Some(total),
    })
}

/// Memory stats from a host or cgroup reading (available = limit − working set).
pub fn memory_from_host(now: i64, m: &CpuMemory) -> Option<MemoryStats> {
    m.usage_bytes?;
    Some(MemoryStats {
        time: time(now),
        available_bytes: m.limit_bytes.zip(m.working_set_bytes).map(|(l, w)| l.saturating_sub(w)),
        usage_bytes: m.usage_bytes,
        working_set_bytes: m.working_set_bytes,
        rss_bytes: m.rss_bytes,
        page_faults: m.page_faults,
        major_page_faults: m.major_page_faults,
    })
}

/// Sums a container's CPU and memory into the pod's (upstream, when the
/// pod cgroup cannot be read).
pub fn add_to_pod(
    cpu: &mut Option<CpuStats>,
    mem: &mut Option<MemoryStats>,
    c_cpu: Option<&CpuStats>,
    c_mem: Option<&MemoryStats>,
) {
    let add = |a: Option<u64>, b: Option<u64>| Some(a.unwrap_or(0) + b.unwrap_or(0));
    if let Some(c) = c_cpu {
        let p = cpu.get_or_insert_with(|| CpuStats {
            time: c.time.clone(),
            usage_nano_cores: None,
            usage_core_nano_seconds: None,
        });
        p.time = c.time.clone();
        p.usage_core_nano_seconds = add(p.usage_core_nano_seconds, c.usage_core_nano_seconds);
        p.usage_nano_cores = add(p.usage_nano_cores, c.usage_nano_cores);
    }
    if let Some(c) = c_mem {
        let p = mem.get_or_insert_with(|| MemoryStats {
            time: c.time.clone(),
            available_bytes: None,
            usage_bytes: None,
            working_set_bytes: None,
            rss_bytes: None,
            page_faults: None,
            major_page_faults: None,
        });
        p.time = c.time.clone();
        p.available_bytes = add(p.available_bytes, c.available_bytes);
        p.usage_bytes = add(p.usage_bytes, c.usage_bytes);
        p.working_set_bytes = add(p.working_set_bytes, c.working_set_bytes);
        p.rss_bytes = add(p.rss_bytes, c.rss_bytes);
        p.page_faults = add(p.page_faults, c.page_faults);
        p.major_page_faults = add(p.major_page_faults, c.major_page_faults);
    }
}

/// A whole filesystem (node fs, image fs): capacity, available and inodes
/// from `info`, used bytes/inodes from `used` or the filesystem's own.
pub fn fs(now: i64, info: Option<FsInfo>, used: Option<(u64, Option<u64>)>) -> FsStats {
    let mut out = FsStats::at(time(now));
    if let Some(i) = info {
        out.capacity_bytes = Some(i.capacity_bytes);
        out.available_bytes = Some(i.available_bytes);
        out.inodes = Some(i.inodes);
        out.inodes_free = Some(i.inodes_free);
        out.used_bytes = Some(i.used_bytes);
        out.inodes_used = Some(i.inodes.saturating_sub(i.inodes_free));
    }
    if let Some((bytes, inodes)) = used {
        out.used_bytes = Some(bytes);
        out.inodes_used = inodes.or(out.inodes_used);
    }
    out
}

/// Usage of something on a filesystem: `used` bytes/inodes, and the
/// filesystem's capacity, available and inodes.
pub fn usage_on(now: i64, info: Option<FsInfo>, used_bytes: u64, inodes_used: u64) -> FsStats {
    let mut out = FsStats::at(time(now));
    if let Some(i) = info {
        out.capacity_bytes = Some(i.capacity_bytes);
        out.available_bytes = Some(i.available_bytes);
        out.inodes = Some(i.inodes);
        out.inodes_free = Some(i.inodes_free);
    }
    out.used_bytes = Some(used_bytes);
    out.inodes_used = Some(inodes_used);
    out
}

fn interface(i: &Interface) -> InterfaceStats {
    InterfaceStats {
        name: i.name.clone(),
        rx_bytes: Some(i.rx_bytes),
        rx_errors: Some(i.rx_errors),
        tx_bytes: Some(i.tx_bytes),
        tx_errors: Some(i.tx_errors),
    }
}

/// Network stats: every interface, the default one also inline.
pub fn network(now: i64, interfaces: &[Interface]) -> Option<NetworkStats> {
    if interfaces.is_empty() {
        return None;
    }
    let all: Vec<InterfaceStats> = interfaces.iter().map(interface).collect();
    let default = all
        .iter()
        .find(|i| i.name == DEFAULT_INTERFACE)
        .cloned()
        .unwrap_or_default();
    Some(NetworkStats {
        time: time(now),
        default,
        interfaces: all,
    })
}

/// Network stats from a CRI `NetworkUsage`.
pub fn network_from_cri(n: &v1::NetworkUsage) -> Option<NetworkStats> {
    let conv = |i: &v1::NetworkInterfaceUsage| Interface {
        name: i.name.clone(),
        rx_bytes: value(&i.rx_bytes).unwrap_or(0),
        rx_errors: value(&i.rx_errors).unwrap_or(0),
        tx_bytes: value(&i.tx_bytes).unwrap_or(0),
        tx_errors: value(&i.tx_errors).unwrap_or(0),
    };
    let mut all: Vec<Interface> = n.default_interface.iter().map(conv).collect();
    all.extend(n.interfaces.iter().map(conv));
    let mut out = network(n.timestamp, &all)?;
    if let Some(d) = &n.default_interface {
        out.default = interface(&conv(d));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_sums_its_containers() {
        let (mut cpu, mut mem) = (None, None);
        let c = CpuStats {
            time: time(5),
            usage_nano_cores: Some(10),
            usage_core_nano_seconds: Some(100),
        };
        let m = memory(&v1::MemoryUsage {
            timestamp: 5,
            working_set_bytes: Some(v1::UInt64Value { value: 7 }),
            ..Default::default()
        });
        add_to_pod(&mut cpu, &mut mem, Some(&c), Some(&m));
        add_to_pod(&mut cpu, &mut mem, Some(&c), Some(&m));
        let cpu = cpu.unwrap();
        assert_eq!(
            (cpu.usage_nano_cores, cpu.usage_core_nano_seconds),
            (Some(20), Some(200))
        );
        assert_eq!(mem.unwrap().working_set_bytes, Some(14));
    }

    #[test]
    fn default_interface_is_inline() {
        let ifs = [
            Interface {
                name: "eth1".into(),
                rx_bytes: 1,
                ..Default::default()
            },
            Interface {
                name: "eth0".into(),
                rx_bytes: 2,
                ..Default::default()
            },
        ];
        let n = network(0, &ifs).unwrap();
        assert_eq!((n.default.name.as_str(), n.default.rx_bytes), ("eth0", Some(2)));
        assert_eq!(n.interfaces.len(), 2);
        let json = serde_json::to_value(&n).unwrap();
        assert_eq!(json["name"], "eth0");
        assert_eq!(json["rxBytes"], 2);
    }
}
