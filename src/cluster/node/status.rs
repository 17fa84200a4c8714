//! Pure: the Node's status from what the kubelet knows — capacity and
//! allocatable, addresses, nodeInfo, daemonEndpoints, conditions (upstream
//! `defaultNodeStatusFuncs`), and whether a status changed enough to write.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ContainerImage, DaemonEndpoint, Node, NodeAddress, NodeDaemonEndpoints, NodeFeatures, NodeStatus, NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use super::conditions::{Health, conditions_changed, update_conditions};
use super::flags::Reserved;
use crate::kubelet::{MachineInfo, NodeFacts, go_arch};
use crate::messages::runtime_health::RuntimeFeatureSet;

/// The `kubeletVersion` actlet reports (the Kubernetes API level it speaks).
pub const KUBELET_VERSION: &str = "v1.36.0-actlet";

/// What the status is computed from (everything but the health checks).
#[derive(Clone, Debug)]
pub struct StatusInputs {
    /// The node name (also the `Hostname` address).
    pub node_name: String,
    /// The `InternalIP` address.
    pub node_ip: Option<String>,
    /// The machine's resources.
    pub facts: NodeFacts,
    /// The machine's identity.
    pub machine: MachineInfo,
    /// `maxPods`.
    pub max_pods: i64,
    /// kube-reserved + system-reserved.
    pub reserved: Reserved,
    /// `<runtimeName>://<runtimeVersion>` once CRI `Version` answered.
    pub runtime_version: Option<String>,
    /// The kubelet's port (`daemonEndpoints.kubeletEndpoint.Port`).
    pub kubelet_port: i32,
    /// `images`, when the runtime listed them (else the Node's are kept).
    pub images: Option<Vec<ContainerImage>>,
    /// `features` (from CRI `Status`), once the runtime answered.
    pub features: Option<RuntimeFeatureSet>,
    /// What the hard eviction thresholds take off allocatable.
    pub hard_eviction: crate::eviction::thresholds::HardReservation,
}

/// Bytes in canonical BinarySI form: `4025424Ki`, `1Gi`, `56403987978`.
pub fn format_bytes(bytes: i64) -> String {
    const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if bytes.abs() < 1024 {
        return bytes.to_string();
    }
    let (mut v, mut i) = (bytes, 0);
    while v != 0 && v % 1024 == 0 && i < SUFFIXES.len() - 1 {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", SUFFIXES[i])
}

/// Millicores in canonical DecimalSI form: `2`, `1900m`.
pub fn format_milli(milli: i64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

fn resources(cpu_milli: i64, memory: i64, storage: i64, pods: i64) -> BTreeMap<String, Quantity> {
    let mut m = BTreeMap::new();
    m.insert("cpu".into(), Quantity(format_milli(cpu_milli)));
    m.insert("memory".into(), Quantity(format_bytes(memory)));
    if storage > 0 {
        m.insert("ephemeral-storage".into(), Quantity(format_bytes(storage)));
    }
    m.insert("pods".into(), Quantity(pods.to_string()));
    if matches!(std::env::consts::ARCH, "x86_64" | "aarch64") {
        m.insert("hugepages-1Gi".into(), Quantity("0".into()));
        m.insert("hugepages-2Mi".into(), Quantity("0".into()));
    }
    m
}

/// `capacity`: the machine.
pub fn capacity(i: &StatusInputs) -> BTreeMap<String, Quantity> {
    resources(
        i.facts.cpus * 1000,
        i.facts.memory_bytes,
        i.facts.ephemeral_storage_bytes,
        i.max_pods,
    )
}

/// `allocatable`: capacity − kube-reserved − system-reserved − the hard
/// eviction thresholds (`memory.available`, `nodefs.available`), never below zero.
pub fn allocatable(i: &StatusInputs) -> BTreeMap<String, Quantity> {
    let storage = i.facts.ephemeral_storage_bytes;
    let (memory_eviction, storage_eviction) = i.hard_eviction.amounts(i.facts.memory_bytes, storage);
    resources(
        (i.facts.cpus * 1000 - i.reserved.cpu_milli).max(0),
        (i.facts.memory_bytes - i.reserved.memory_bytes - memory_eviction).max(0),
        if storage > 0 {
            (storage - i.reserved.ephemeral_storage_bytes - storage_eviction).max(0)
        } else {
            0
        },
        i.max_pods,
    )
}

/// `addresses`: `InternalIP` (when known), then `Hostname`.
pub fn addresses(i: &StatusInputs) -> Vec<NodeAddress> {
    let mut out = vec![];
    if let Some(ip) = &i.node_ip {
        out.push(NodeAddress {
            type_: "InternalIP".into(),
            address: ip.clone(),
        });
    }
    out.push(NodeAddress {
        type_: "Hostname".into(),
        address: i.node_name.clone(),
    });
    out
}

/// Sets `nodeInfo` on `info` (a copy of the current one, so fields actlet
/// does not own, and the runtime version before CRI answers, are kept).
pub fn set_node_info(info: &mut NodeSystemInfo, i: &StatusInputs) {
    info.machine_id = i.machine.machine_id.clone();
    info.system_uuid = i.machine.system_uuid.clone();
    info.boot_id = i.machine.boot_id.clone();
    info.kernel_version = i.machine.kernel_version.clone();
    info.os_image = i.machine.os_image.clone();
    if let Some(v) = &i.runtime_version {
        info.container_runtime_version = v.clone();
    }
    info.kubelet_version = KUBELET_VERSION.into();
    info.operating_system = std::env::consts::OS.into();
    info.architecture = go_arch().into();
}

/// Applies every status setter to `node` at `now`; returns the node events
/// upstream records (see [`update_conditions`]).
pub fn apply_status(node: &mut Node, i: &StatusInputs, health: &Health, now: Timestamp) -> Vec<&'static str> {
    let status = node.status.get_or_insert_with(NodeStatus::default);
    // Resources someone else added (extended resources) are kept, with
    // allocatable = capacity, as upstream's MachineInfo setter does.
    let cap = status.capacity.get_or_insert_with(BTreeMap::new);
    cap.extend(capacity(i));
    let mut alloc = cap.clone();
    alloc.extend(allocatable(i));
    status.allocatable = Some(alloc);
    status.addresses = Some(addresses(i));
    status.daemon_endpoints = Some(NodeDaemonEndpoints {
        kubelet_endpoint: Some(DaemonEndpoint { port: i.kubelet_port }),
    });
    set_node_info(status.node_info.get_or_insert_with(NodeSystemInfo::default), i);
    if let Some(images) = &i.images {
        status.images = Some(images.clone());
    }
    if let Some(f) = i.features {
        status.features = Some(NodeFeatures {
            supplemental_groups_policy: Some(f.supplemental_groups_policy),
        });
    }
    update_conditions(status.conditions.get_or_insert_with(Vec::new), health, now)
}

/// Upstream `nodeStatusHasChanged`: conditions compared without heartbeats,
/// everything else exactly.
pub fn status_changed(old: Option<&NodeStatus>, new: Option<&NodeStatus>) -> bool {
    let conds = |s: Option<&NodeStatus>| s.and_then(|s| s.conditions.clone()).unwrap_or_default();
    if conditions_changed(&conds(old), &conds(new)) {
        return true;
    }
    let rest = |s: Option<&NodeStatus>| s.cloned().map(|s| NodeStatus { conditions: None, ..s });
    rest(old) != rest(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> StatusInputs {
        StatusInputs {
            node_name: "test-node".into(),
            node_ip: Some("10.0.0.10".into()),
            facts: NodeFacts {
                memory_bytes: 4025424 * 1024,
                cpus: 2,
                ephemeral_storage_bytes: 61202244 * 1024,
            },
            machine: MachineInfo {
                kernel_version: "6.1.0-18-amd64".into(),
                os_image: "Debian GNU/Linux 12 (bookworm)".into(),
                machine_id: "m".into(),
                system_uuid: "s".into(),
                boot_id: "b".into(),
            },
            max_pods: 110,
            reserved: Reserved::default(),
            runtime_version: Some("containerd://1.6.20".into()),
            kubelet_port: 10250,
            images: None,
            features: None,
            hard_eviction: crate::eviction::thresholds::HardReservation::upstream_default(),
        }
    }

    fn q(m: &BTreeMap<String, Quantity>, k: &str) -> String {
        m.get(k).map(|q| q.0.clone()).unwrap_or_default()
    }

    #[test]
    fn quantities_are_canonical() {
        assert_eq!(format_bytes(4025424 * 1024), "4025424Ki");
        assert_eq!(format_bytes(1 << 30), "1Gi");
        assert_eq!(format_bytes(56403987978), "56403987978");
        assert_eq!(format_bytes(1000), "1000");
        assert_eq!(format_milli(2000), "2");
        assert_eq!(format_milli(1900), "1900m");
    }

    #[test]
    fn capacity_and_allocatable_match_the_recorded_kubelet() {
        let i = inputs();
        let c = capacity(&i);
        assert_eq!(q(&c, "cpu"), "2");
        assert_eq!(q(&c, "memory"), "4025424Ki");
        assert_eq!(q(&c, "ephemeral-storage"), "61202244Ki");
        assert_eq!(q(&c, "pods"), "110");
        let a = allocatable(&i);
        assert_eq!(q(&a, "cpu"), "2");
        assert_eq!(q(&a, "memory"), "3923024Ki", "fixture 02: capacity − 100Mi");
        assert_eq!(
            q(&a, "ephemeral-storage"),
            "56403987978",
            "fixture 02: capacity − float32(10%)"
        );
        assert_eq!(q(&a, "pods"), "110");
    }

    #[test]
    fn reserved_resources_come_off_allocatable() {
        let mut i = inputs();
        i.reserved = Reserved {
            cpu_milli: 100,
            memory_bytes: 100 << 20,
            ephemeral_storage_bytes: 1 << 30,
            pids: 0,
        };
        let a = allocatable(&i);
        assert_eq!(q(&a, "cpu"), "1900m");
        assert_eq!(q(&a, "memory"), format_bytes(4025424 * 1024 - (200 << 20)));
        assert_eq!(q(&a, "ephemeral-storage"), (56403987978i64 - (1 << 30)).to_string());
        i.reserved.cpu_milli = 5000;
        assert_eq!(q(&allocatable(&i), "cpu"), "0");
    }

    #[test]
    fn status_has_addresses_node_info_and_endpoint() {
        let mut node = Node::default();
        apply_status(&mut node, &inputs(), &Health::default(), Timestamp::UNIX_EPOCH);
        let s = node.status.unwrap_or_default();
        let addrs: Vec<(String, String)> = s
            .addresses
            .unwrap_or_default()
            .into_iter()
            .map(|a| (a.type_, a.address))
            .collect();
        assert_eq!(
            addrs,
            [
                ("InternalIP".to_string(), "10.0.0.10".to_string()),
                ("Hostname".into(), "test-node".into())
            ]
        );
        let info = s.node_info.unwrap_or_default();
        assert_eq!(info.container_runtime_version, "containerd://1.6.20");
        assert_eq!(info.os_image, "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(info.kubelet_version, KUBELET_VERSION);
        assert_eq!(info.operating_system, "linux");
        assert_eq!(info.architecture, go_arch());
        assert_eq!(
            s.daemon_endpoints.and_then(|d| d.kubelet_endpoint).map(|e| e.port),
            Some(10250)
        );
        assert_eq!(s.conditions.map(|c| c.len()), Some(4));
        assert_eq!(s.features, None, "unknown until the runtime answered");
    }

    #[test]
    fn features_are_the_runtimes() {
        let mut i = inputs();
        i.features = Some(RuntimeFeatureSet {
            supplemental_groups_policy: true,
        });
        let mut node = Node::default();
        apply_status(&mut node, &i, &Health::default(), Timestamp::UNIX_EPOCH);
        let features = node.status.and_then(|s| s.features);
        assert_eq!(features.and_then(|f| f.supplemental_groups_policy), Some(true));
    }

    #[test]
    fn extended_resources_of_others_are_kept() {
        let mut node = Node::default();
        let gpu = ("example.com/gpu".to_string(), Quantity("4".into()));
        node.status.get_or_insert_default().capacity = Some(BTreeMap::from([gpu.clone()]));
        apply_status(&mut node, &inputs(), &Health::default(), Timestamp::UNIX_EPOCH);
        let s = node.status.unwrap_or_default();
        assert_eq!(s.capacity.unwrap_or_default().get(&gpu.0), Some(&gpu.1));
        let alloc = s.allocatable.unwrap_or_default();
        assert_eq!(alloc.get(&gpu.0), Some(&gpu.1));
        assert_eq!(q(&alloc, "memory"), "3923024Ki");
    }

    #[test]
    fn unknown_runtime_version_keeps_the_reported_one() {
        let mut i = inputs();
        i.runtime_version = None;
        let mut info = NodeSystemInfo {
            container_runtime_version: "containerd://1.7".into(),
            kube_proxy_version: "keep".into(),
            ..NodeSystemInfo::default()
        };
        set_node_info(&mut info, &i);
        assert_eq!(info.container_runtime_version, "containerd://1.7");
        assert_eq!(info.kube_proxy_version, "keep");
    }

    #[test]
    fn only_heartbeats_is_no_change_but_anything_else_is() {
        let i = inputs();
        let mut a = Node::default();
        apply_status(&mut a, &i, &Health::default(), Timestamp::UNIX_EPOCH);
        let mut b = a.clone();
        apply_status(
            &mut b,
            &i,
            &Health::default(),
            Timestamp::from_second(100).unwrap_or_default(),
        );
        assert!(!status_changed(a.status.as_ref(), b.status.as_ref()));
        let mut c = b.clone();
        let mut i2 = i.clone();
        i2.node_ip = Some("10.0.0.11".into());
        apply_status(
            &mut c,
            &i2,
            &Health::default(),
            Timestamp::from_second(100).unwrap_or_default(),
        );
        assert!(status_changed(b.status.as_ref(), c.status.as_ref()));
        assert!(status_changed(None, c.status.as_ref()));
    }
}
