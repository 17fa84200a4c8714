//! Pod admission (upstream `lifecycle.PredicateAdmitHandler` with the
//! kubelet's general predicates): may this node run a new pod next to the
//! pods it already runs? Pure; the sync loop calls it for every added pod.
//!
//! Checks, in upstream order: node name, node selector, host ports, then
//! resources (pods, cpu, memory) against allocatable. A rejected pod is set
//! to phase `Failed` with the reason (`OutOfcpu`, `OutOfmemory`, `OutOfpods`,
//! `NodeName`, `NodeAffinity`, `NodePorts`) and never started.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::quantity::ParsedQuantity;

/// What this node can give to pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAllocatable {
    /// The node name.
    pub node_name: String,
    /// The node's labels (for `nodeSelector`).
    pub labels: BTreeMap<String, String>,
    /// Allocatable CPU in millicores.
    pub cpu_milli: i64,
    /// Allocatable memory in bytes.
    pub memory_bytes: i64,
    /// `maxPods`.
    pub pods: i64,
}

/// Why a pod was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Upstream reason, e.g. `OutOfcpu`.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
}

/// What upstream's `rejectPod` puts before the reason in the pod's status.
const REJECTED: &str = "Pod was rejected: ";

impl Rejection {
    /// A rejection whose status message is `Pod was rejected: <message>`.
    pub fn new(reason: &str, message: impl std::fmt::Display) -> Self {
        Self {
            reason: reason.into(),
            message: format!("{REJECTED}{message}"),
        }
    }

    /// The message without the status prefix, as upstream's `rejectPod`
    /// records it in the Warning event.
    ///
    /// ```
    /// let r = actlet::admission::Rejection::new("OutOfcpu", "Node didn't have enough resource: cpu");
    /// assert_eq!(r.message, "Pod was rejected: Node didn't have enough resource: cpu");
    /// assert_eq!(r.event_message(), "Node didn't have enough resource: cpu");
    /// ```
    pub fn event_message(&self) -> &str {
        self.message.strip_prefix(REJECTED).unwrap_or(&self.message)
    }
}

fn reject(reason: &str, message: String) -> Result<(), Rejection> {
    Err(Rejection::new(reason, message))
}

/// Upstream `rejectPodAdmissionBasedOnSupplementalGroupsPolicy`: a pod asking
/// for `supplementalGroupsPolicy: Strict` is refused on a node whose runtime
/// does not implement it (or has not said yet), instead of silently running
/// it with `Merge`.
///
/// ```
/// use actlet::admission::admit_supplemental_groups_policy;
/// use actlet::messages::runtime_health::RuntimeFeatureSet;
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "p"},
///     "spec": {"securityContext": {"supplementalGroupsPolicy": "Strict"}, "containers": []}
/// })).unwrap();
/// let r = admit_supplemental_groups_policy(&pod, Some(RuntimeFeatureSet::default())).unwrap_err();
/// assert_eq!(r.reason, "SupplementalGroupsPolicyNotSupported");
/// assert_eq!(r.message, "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node");
/// let supported = RuntimeFeatureSet { supplemental_groups_policy: true };
/// assert!(admit_supplemental_groups_policy(&pod, Some(supported)).is_ok());
/// ```
pub fn admit_supplemental_groups_policy(
    pod: &Pod,
    features: Option<crate::messages::runtime_health::RuntimeFeatureSet>,
) -> Result<(), Rejection> {
    let strict = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.supplemental_groups_policy.as_deref())
        == Some("Strict");
    if strict && !features.is_some_and(|f| f.supplemental_groups_policy) {
        return reject(
            "SupplementalGroupsPolicyNotSupported",
            "SupplementalGroupsPolicy=Strict is not supported in this node".into(),
        );
    }
    Ok(())
}

fn request(c: &Container, resource: &str) -> Option<ParsedQuantity> {
    let res = c.resources.as_ref()?;
    let q = res
        .requests
        .as_ref()
        .and_then(|r| r.get(resource))
        .or_else(|| res.limits.as_ref().and_then(|l| l.get(resource)))?;
    ParsedQuantity::from_quantity(q).ok()
}

/// The pod's effective request of `resource` (upstream: max of the sum over
/// regular containers and of any single init container), in milli-units for
/// cpu and units otherwise.
pub fn pod_request(pod: &Pod, resource: &str) -> i64 {
    let Some(spec) = &pod.spec else { return 0 };
    let amount = |c: &Container| match (resource, request(c, resource)) {
        ("cpu", Some(q)) => q.milli_value(),
        (_, Some(q)) => q.value(),
        (_, None) => 0,
    };
    let sum: i64 = spec.containers.iter().map(amount).sum();
    let init = spec.init_containers.iter().flatten().map(amount).max().unwrap_or(0);
    sum.max(init)
}

fn host_ports(pod: &Pod) -> Vec<(String, String, i32)> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let hp = p.host_port.filter(|hp| *hp > 0)?;
            let ip = p
                .host_ip
                .clone()
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(|| "0.0.0.0".into());
            Some((p.protocol.clone().unwrap_or_else(|| "TCP".into()), ip, hp))
        })
        .collect()
}

/// What the admitted pods use, kept incrementally so admitting one more pod
/// costs O(its ports), not O(all pods).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pods: i64,
    cpu_milli: i64,
    memory_bytes: i64,
    ports: Vec<(String, String, i32)>,
}

impl Usage {
    /// The usage of `pods`.
    pub fn of<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Self {
        let mut u = Self::default();
        for p in pods {
            u.add(p);
        }
        u
    }

    /// Counts `pod` in.
    pub fn add(&mut self, pod: &Pod) {
        self.pods += 1;
        self.cpu_milli += pod_request(pod, "cpu");
        self.memory_bytes += pod_request(pod, "memory");
        self.ports.extend(host_ports(pod));
    }

    /// Counts `pod` out (it was added before).
    pub fn remove(&mut self, pod: &Pod) {
        self.pods -= 1;
        self.cpu_milli -= pod_request(pod, "cpu");
        self.memory_bytes -= pod_request(pod, "memory");
        for hp in host_ports(pod) {
            if let Some(i) = self.ports.iter().position(|p| *p == hp) {
                self.ports.swap_remove(i);
            }
        }
    }
}

/// Decides whether `pod` may run on the node given the `active` pods
/// (admitted, not terminal).
pub fn admit(pod: &Pod, active: &[&Pod], node: &NodeAllocatable) -> Result<(), Rejection> {
    admit_with(pod, &Usage::of(active.iter().copied()), node)
}

/// [`admit`] against precomputed usage.
pub fn admit_with(pod: &Pod, usage: &Usage, node: &NodeAllocatable) -> Result<(), Rejection> {
    let spec = pod.spec.as_ref();
    if let Some(name) = spec.and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
        && name != node.node_name
    {
        return reject(
            "NodeName",
            format!("node name {name:?} does not match this node {:?}", node.node_name),
        );
    }
    if let Some(sel) = spec.and_then(|s| s.node_selector.as_ref())
        && let Some((k, v)) = sel.iter().find(|(k, v)| node.labels.get(*k) != Some(*v))
    {
        return reject(
            "NodeAffinity",
            format!("node didn't match Pod's node affinity/selector: {k}={v}"),
        );
    }
    for (proto, ip, port) in host_ports(pod) {
        let clash = usage.ports.iter().any(|(p2, ip2, port2)| {
            *p2 == proto && *port2 == port && (ip == "0.0.0.0" || ip2 == "0.0.0.0" || *ip2 == ip)
        });
        if clash {
            return reject(
                "NodePorts",
                format!("node didn't have free ports for the requested pod ports: {proto}/{port}"),
            );
        }
    }
    if usage.pods + 1 > node.pods {
        return reject(
            "OutOfpods",
            format!(
                "Node didn't have enough resource: pods, requested: 1, used: {}, capacity: {}",
                usage.pods, node.pods
            ),
        );
    }
    for (resource, capacity, used) in [
        ("cpu", node.cpu_milli, usage.cpu_milli),
        ("memory", node.memory_bytes, usage.memory_bytes),
    ] {
        let want = pod_request(pod, resource);
        if want == 0 {
            continue;
        }
        if used + want > capacity {
            return reject(
                &format!("OutOf{resource}"),
                format!(
                    "Node didn't have enough resource: {resource}, requested: {want}, used: {used}, capacity: {capacity}"
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn node() -> NodeAllocatable {
        NodeAllocatable {
            node_name: "n1".into(),
            labels: [("disk".to_string(), "ssd".to_string())].into(),
            cpu_milli: 2000,
            memory_bytes: 1 << 30,
            pods: 3,
        }
    }

    fn with_cpu(cpu: &str) -> Pod {
        pod(&format!(
            "spec: {{containers: [{{name: c, image: i, resources: {{requests: {{cpu: '{cpu}'}}}}}}]}}"
        ))
    }

    #[test]
    fn fits_until_cpu_runs_out() {
        let a = with_cpu("1500m");
        assert!(admit(&a, &[], &node()).is_ok());
        let b = with_cpu("600m");
        let r = admit(&b, &[&a], &node()).unwrap_err();
        assert_eq!(r.reason, "OutOfcpu");
        assert!(
            r.message.contains("requested: 600, used: 1500, capacity: 2000"),
            "{}",
            r.message
        );
        assert!(admit(&with_cpu("500m"), &[&a], &node()).is_ok());
    }

    #[test]
    fn init_container_requests_count_as_the_max() {
        let p = pod(
            "spec: {initContainers: [{name: i, image: i, resources: {requests: {memory: 2Gi}}}], containers: [{name: c, image: i}]}",
        );
        assert_eq!(admit(&p, &[], &node()).unwrap_err().reason, "OutOfmemory");
    }

    #[test]
    fn pods_limit_node_name_selector_and_ports() {
        let plain = pod("spec: {containers: [{name: c, image: i}]}");
        assert_eq!(
            admit(&plain, &[&plain, &plain, &plain], &node()).unwrap_err().reason,
            "OutOfpods"
        );
        let other = pod("spec: {nodeName: n2, containers: [{name: c, image: i}]}");
        assert_eq!(admit(&other, &[], &node()).unwrap_err().reason, "NodeName");
        let sel = pod("spec: {nodeSelector: {disk: hdd}, containers: [{name: c, image: i}]}");
        assert_eq!(admit(&sel, &[], &node()).unwrap_err().reason, "NodeAffinity");
        let ok_sel = pod("spec: {nodeSelector: {disk: ssd}, containers: [{name: c, image: i}]}");
        assert!(admit(&ok_sel, &[], &node()).is_ok());
        let hp = pod("spec: {containers: [{name: c, image: i, ports: [{containerPort: 80, hostPort: 8080}]}]}");
        assert_eq!(admit(&hp, &[&hp], &node()).unwrap_err().reason, "NodePorts");
        let udp = pod(
            "spec: {containers: [{name: c, image: i, ports: [{containerPort: 80, hostPort: 8080, protocol: UDP}]}]}",
        );
        assert!(admit(&udp, &[&hp], &node()).is_ok());
    }

    #[test]
    fn usage_add_remove_round_trips() {
        let a = with_cpu("1500m");
        let hp = pod("spec: {containers: [{name: c, image: i, ports: [{containerPort: 80, hostPort: 8080}]}]}");
        let mut u = Usage::default();
        u.add(&a);
        u.add(&hp);
        assert_eq!(admit_with(&hp, &u, &node()).unwrap_err().reason, "NodePorts");
        u.remove(&hp);
        u.remove(&a);
        assert_eq!(u, Usage::default());
    }
}
