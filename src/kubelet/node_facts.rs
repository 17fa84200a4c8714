//! Facts about this machine the kubelet reports and uses: IP, memory, CPUs,
//! disk, and the identity shown in the Node's `nodeInfo`.

use std::net::IpAddr;
use std::path::Path;

/// What the node has.
///
/// ```
/// let facts = actlet::kubelet::NodeFacts::detect();
/// assert!(facts.cpus >= 1 && facts.memory_bytes > 0);
/// println!("{} CPUs, {} MiB", facts.cpus, facts.memory_bytes >> 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    /// Memory in bytes (`MemTotal`).
    pub memory_bytes: i64,
    /// Logical CPUs.
    pub cpus: i64,
    /// Size of the filesystem holding the kubelet's root directory (nodefs),
    /// in bytes; 0 when unknown.
    pub ephemeral_storage_bytes: i64,
}

impl NodeFacts {
    /// Reads `/proc/meminfo` and the CPU count; falls back to 1 GiB / 1 CPU
    /// (with a warning) when they cannot be read.
    ///
    /// ```
    /// let facts = actlet::kubelet::NodeFacts::detect();
    /// assert_eq!(facts.cpus, std::thread::available_parallelism().unwrap().get() as i64);
    /// ```
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
        Self {
            memory_bytes,
            cpus,
            ephemeral_storage_bytes: filesystem_size(Path::new("/")).unwrap_or(0),
        }
    }

    /// Takes ephemeral storage from the filesystem of `root_dir` (the
    /// kubelet's root directory, or its nearest existing parent).
    ///
    /// ```
    /// let tmp = tempfile::tempdir().unwrap();
    /// // a root dir that does not exist yet: its nearest existing parent is measured
    /// let facts = actlet::kubelet::NodeFacts::detect().with_root_dir(&tmp.path().join("kubelet"));
    /// assert!(facts.ephemeral_storage_bytes > 0);
    /// ```
    pub fn with_root_dir(mut self, root_dir: &Path) -> Self {
        if let Some(size) = root_dir.ancestors().find(|p| p.exists()).and_then(filesystem_size) {
            self.ephemeral_storage_bytes = size;
        }
        self
    }
}

/// Total bytes of the filesystem holding `path` (`statvfs`: blocks × fragment size).
///
/// ```
/// // not exported: reached through NodeFacts, which measures the root dir's filesystem
/// let tmp = tempfile::tempdir().unwrap();
/// let facts = actlet::kubelet::NodeFacts::detect().with_root_dir(tmp.path());
/// assert!(facts.ephemeral_storage_bytes > 0);
/// ```
pub(crate) fn filesystem_size(path: &Path) -> Option<i64> {
    let st = nix::sys::statvfs::statvfs(path).ok()?;
    let bytes = u128::from(st.blocks()) * u128::from(st.fragment_size());
    i64::try_from(bytes).ok()
}

/// Who this machine is, as `nodeInfo` reports it; empty strings where a
/// file cannot be read (as upstream reports them).
///
/// ```
/// let info = actlet::kubelet::MachineInfo::detect();
/// assert!(!info.os_image.is_empty()); // PRETTY_NAME, or "Linux"
/// println!("{} ({}), boot {}", info.os_image, info.kernel_version, info.boot_id);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineInfo {
    /// `/proc/sys/kernel/osrelease`.
    pub kernel_version: String,
    /// `PRETTY_NAME` of `/etc/os-release`.
    pub os_image: String,
    /// `/etc/machine-id`.
    pub machine_id: String,
    /// `/sys/class/dmi/id/product_uuid` (root only).
    pub system_uuid: String,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
}

impl MachineInfo {
    /// Reads the files above.
    ///
    /// ```
    /// let info = actlet::kubelet::MachineInfo::detect();
    /// let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    /// assert_eq!(info.kernel_version, release.trim());
    /// ```
    pub fn detect() -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        Self {
            kernel_version: read("/proc/sys/kernel/osrelease"),
            os_image: parse_pretty_name(&read("/etc/os-release")).unwrap_or_else(|| "Linux".into()),
            machine_id: read("/etc/machine-id"),
            system_uuid: read("/sys/class/dmi/id/product_uuid"),
            boot_id: read("/proc/sys/kernel/random/boot_id"),
        }
    }
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → `Debian GNU/Linux 12 (bookworm)`.
///
/// ```
/// // not exported: reached through MachineInfo::detect, which reads /etc/os-release
/// let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
/// let info = actlet::kubelet::MachineInfo::detect();
/// if os_release.contains("PRETTY_NAME=") {
///     assert!(os_release.contains(&info.os_image), "{}", info.os_image);
/// }
/// ```
pub(crate) fn parse_pretty_name(os_release: &str) -> Option<String> {
    let line = os_release.lines().find_map(|l| l.trim().strip_prefix("PRETTY_NAME="))?;
    let v = line.trim().trim_matches(|c| c == '"' || c == '\'');
    (!v.is_empty()).then(|| v.to_string())
}

/// `MemTotal:  24576000 kB` → bytes.
///
/// ```
/// // not exported: reached through NodeFacts::detect, which reads /proc/meminfo
/// let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
/// let kb: i64 = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:")).unwrap().trim().trim_end_matches(" kB").parse().unwrap();
/// assert_eq!(actlet::kubelet::NodeFacts::detect().memory_bytes, kb * 1024);
/// ```
pub(crate) fn parse_mem_total(meminfo: &str) -> Option<i64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The node IP when none is configured: the first IPv4 address of an
/// interface that is up, not loopback, and not a container bridge or veth
/// (`cni*`, `actlet*`, `docker*`, `veth*`, `cali*`, `flannel*`).
///
/// ```
/// match actlet::kubelet::detect_node_ip() {
///     Some(ip) => assert!(!ip.is_loopback(), "{ip}"),
///     None => println!("no usable interface: pods get no hostIP unless node_ip is set"),
/// }
/// ```
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

/// Allocatable as the Node reports it: capacity − kube/system reserved −
/// the hard eviction threshold; labels and taints as registered (in cluster
/// mode the sync loop follows the Node object's).
pub(super) fn node_allocatable(config: &super::KubeletConfig, facts: &NodeFacts) -> crate::admission::NodeAllocatable {
    let node_name = config.node_name.as_str();
    // The labels the Node gets (--node-labels first, the well-known ones win).
    let mut labels = config.node_labels.clone();
    labels.extend(
        [
            ("kubernetes.io/hostname", node_name),
            ("kubernetes.io/os", std::env::consts::OS),
            ("kubernetes.io/arch", super::go_arch()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let reserved = config.kube_reserved.plus(config.system_reserved);
    let (hard_memory, _) = crate::eviction::thresholds::HardReservation::of(&config.eviction.thresholds)
        .amounts(facts.memory_bytes, facts.ephemeral_storage_bytes);
    crate::admission::NodeAllocatable {
        node_name: node_name.to_string(),
        labels,
        taints: config.register_with_taints.clone(),
        cpu_milli: (facts.cpus * 1000 - reserved.cpu_milli).max(0),
        memory_bytes: (facts.memory_bytes - reserved.memory_bytes - hard_memory).max(0),
        pods: config.max_pods,
        other: Default::default(),
    }
}

/// Node allocatable memory before the hard eviction threshold (upstream
/// `GetNodeAllocatable`: capacity minus kube and system reserved).
pub(super) fn allocatable_memory(config: &super::KubeletConfig, facts: &NodeFacts) -> i64 {
    let reserved = config.kube_reserved.plus(config.system_reserved);
    (facts.memory_bytes - reserved.memory_bytes).max(0)
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

    #[test]
    fn pretty_name_is_unquoted() {
        let os = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(parse_pretty_name(os).as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(parse_pretty_name("PRETTY_NAME=Alpine").as_deref(), Some("Alpine"));
        assert_eq!(parse_pretty_name("ID=x"), None);
    }

    #[test]
    fn the_root_filesystem_has_a_size() {
        let f = NodeFacts::detect().with_root_dir(Path::new("/nonexistent/deeper"));
        assert!(f.ephemeral_storage_bytes > 0);
    }
}
