//! Facts about this machine the kubelet reports and uses: IP, memory, CPUs.

use std::net::IpAddr;

/// What the node has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    /// Memory in bytes (`MemTotal`).
    pub memory_bytes: i64,
    /// Logical CPUs.
    pub cpus: i64,
}

impl NodeFacts {
    /// Reads `/proc/meminfo` and the CPU count; falls back to 1 GiB / 1 CPU
    /// (with a warning) when they cannot be read.
    pub fn detect() -> Self {
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| parse_mem_total(&s))
            .unwrap_or_else(|| {
                tracing::warn!("cannot read MemTotal from /proc/meminfo; assuming 1 GiB");
                1 << 30
            });
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as i64)
            .unwrap_or(1);
        Self { memory_bytes, cpus }
    }
}

/// `MemTotal:  24576000 kB` → bytes.
pub fn parse_mem_total(meminfo: &str) -> Option<i64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The node IP when none is configured: the first IPv4 address of an
/// interface that is up, not loopback, and not a container bridge or veth
/// (`cni*`, `actlet*`, `docker*`, `veth*`, `cali*`, `flannel*`).
pub fn detect_node_ip() -> Option<IpAddr> {
    let addrs = nix::ifaddrs::getifaddrs().ok()?;
    let skip = ["lo", "cni", "actlet", "docker", "veth", "cali", "flannel", "kube"];
    for ifa in addrs {
        if !ifa.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP)
            || skip.iter().any(|p| ifa.interface_name.starts_with(p))
        {
            continue;
        }
        if let Some(sin) = ifa.address.as_ref().and_then(|a| a.as_sockaddr_in()) {
            return Some(IpAddr::V4(sin.ip()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_is_parsed_in_bytes() {
        assert_eq!(
            parse_mem_total("MemFree: 1 kB\nMemTotal:       2048 kB\n"),
            Some(2 * 1024 * 1024)
        );
        assert_eq!(parse_mem_total("nothing"), None);
    }
}
