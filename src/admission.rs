//! Pod admission (upstream `lifecycle.PredicateAdmitHandler` with the
//! kubelet's general predicates): may this node run a new pod next to the
//! pods it already runs? Pure; the sync loop calls it for every added pod.
//!
//! Checks, in upstream `AdmissionCheck`'s order: resources (pods, cpu,
//! memory, and any other resource the node lists in allocatable, e.g.
//! extended resources; ones the node does not list are ignored, as upstream
//! `removeMissingExtendedResources`), node selector and required node
//! affinity, node name, host ports. The effective request is upstream
//! `resourcehelper.PodRequests`: containers plus sidecars (restartable init
//! containers), the largest init step, pod-level `spec.resources` for cpu
//! and memory, plus the pod overhead. A rejected pod is set to phase
//! `Failed` with upstream's reason (`OutOfcpu`, `OutOfmemory`,
//! `OutOf<resource>`, `OutOfpods`, `NodeAffinity`, `NodeName`, `NodePorts`)
//! and message, and never started.
//!
//! Not checked yet: the node's `NoExecute` taints for API pods (actlet does
//! not watch its Node's taints).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, Taint};

use crate::quantity::ParsedQuantity;
use crate::scheduling_predicates::{required_affinity_matches, untolerated_no_execute};

/// What this node can give to pods.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeAllocatable {
    /// The node name.
    pub node_name: String,
    /// The node's labels (for `nodeSelector`).
    pub labels: BTreeMap<String, String>,
    /// The node's taints (only `NoExecute` ones are checked, and not for
    /// static pods, as upstream).
    pub taints: Vec<Taint>,
    /// Allocatable CPU in millicores.
    pub cpu_milli: i64,
    /// Allocatable memory in bytes.
    pub memory_bytes: i64,
    /// `maxPods`.
    pub pods: i64,
    /// Other allocatable resources (extended resources, hugepages,
    /// ephemeral-storage) in units; only these are checked besides cpu,
    /// memory and pods.
    pub other: BTreeMap<String, i64>,
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

fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// The pod's effective request of `resource` (upstream
/// `resourcehelper.PodRequests`): the sum over regular containers and
/// sidecars, or the largest init step (an init container plus the sidecars
/// started before it) when larger, plus `spec.overhead`; for cpu and memory,
/// pod-level `spec.resources` (KEP-2837) replaces the aggregate where set.
/// In milli-units for cpu and units otherwise.
///
/// ```
/// let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({"spec": {
///     "resources": {"requests": {"cpu": "2"}},
///     "overhead": {"cpu": "250m"},
///     "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "example.com/gpu": "1"}}}]
/// }})).unwrap();
/// assert_eq!(actlet::admission::pod_request(&pod, "cpu"), 2250);
/// assert_eq!(actlet::admission::pod_request(&pod, "example.com/gpu"), 1);
/// ```
pub fn pod_request(pod: &Pod, resource: &str) -> i64 {
    match resource {
        "cpu" => return crate::cm::resources::pod_requests(pod).cpu_milli.unwrap_or(0),
        "memory" => return crate::cm::resources::pod_requests(pod).memory.unwrap_or(0),
        _ => {}
    }
    let Some(spec) = &pod.spec else { return 0 };
    let to_units = |q: ParsedQuantity| q.value();
    let amount = |c: &Container| request(c, resource).map_or(0, to_units);
    let mut sum: i64 = spec.containers.iter().map(amount).sum();
    let (mut sidecars, mut init) = (0i64, 0i64);
    for c in spec.init_containers.iter().flatten() {
        if is_sidecar(c) {
            sum += amount(c);
            sidecars += amount(c);
            init = init.max(sidecars);
        } else {
            init = init.max(amount(c) + sidecars);
        }
    }
    let overhead = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get(resource))
        .and_then(|q| ParsedQuantity::from_quantity(q).ok())
        .map_or(0, to_units);
    sum.max(init) + overhead
}

/// The resources `pod` requests besides cpu and memory (non-zero).
fn other_requests(pod: &Pod) -> BTreeMap<String, i64> {
    let names: std::collections::BTreeSet<&String> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()))
        .filter_map(|c| c.resources.as_ref())
        .flat_map(|r| r.requests.iter().chain(r.limits.iter()).flat_map(|m| m.keys()))
        .filter(|n| *n != "cpu" && *n != "memory")
        .collect();
    names
        .into_iter()
        .map(|n| (n.clone(), pod_request(pod, n)))
        .filter(|(_, v)| *v != 0)
        .collect()
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
    other: BTreeMap<String, i64>,
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
        for (name, v) in other_requests(pod) {
            *self.other.entry(name).or_default() += v;
        }
        self.ports.extend(host_ports(pod));
    }

    /// Counts `pod` out (it was added before).
    pub fn remove(&mut self, pod: &Pod) {
        self.pods -= 1;
        self.cpu_milli -= pod_request(pod, "cpu");
        self.memory_bytes -= pod_request(pod, "memory");
        for (name, v) in other_requests(pod) {
            let used = self.other.entry(name.clone()).or_default();
            *used -= v;
            if *used == 0 {
                self.other.remove(&name);
            }
        }
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
    // Upstream `scheduler.AdmissionCheck`: resources (pods first), then
    // node affinity (nodeSelector and required affinity), node name, host
    // ports; the first failure is reported.
    if usage.pods + 1 > node.pods {
        return reject(
            "OutOfpods",
            format!(
                "Node didn't have enough resource: pods, requested: 1, used: {}, capacity: {}",
                usage.pods, node.pods
            ),
        );
    }
    let mut checks = vec![
        (
            "cpu".to_string(),
            node.cpu_milli,
            usage.cpu_milli,
            pod_request(pod, "cpu"),
        ),
        (
            "memory".to_string(),
            node.memory_bytes,
            usage.memory_bytes,
            pod_request(pod, "memory"),
        ),
    ];
    // Extended resources the node does not list are cluster-level ones,
    // ignored (upstream `removeMissingExtendedResources`).
    for (name, want) in other_requests(pod) {
        if let Some(capacity) = node.other.get(&name) {
            let used = usage.other.get(&name).copied().unwrap_or(0);
            checks.push((name, *capacity, used, want));
        }
    }
    for (resource, capacity, used, want) in checks {
        if want != 0 && used + want > capacity {
            return reject(
                &format!("OutOf{resource}"),
                format!(
                    "Node didn't have enough resource: {resource}, requested: {want}, used: {used}, capacity: {capacity}"
                ),
            );
        }
    }
    let selector_matches = spec
        .and_then(|s| s.node_selector.as_ref())
        .is_none_or(|sel| sel.iter().all(|(k, v)| node.labels.get(k) == Some(v)));
    if !selector_matches || !required_affinity_matches(pod, &node.node_name, &node.labels) {
        return predicate_failure("NodeAffinity", "node(s) didn't match Pod's node affinity/selector");
    }
    if spec
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|name| !name.is_empty() && name != node.node_name)
    {
        return predicate_failure("NodeName", "node(s) didn't match the requested node name");
    }
    for (proto, ip, port) in host_ports(pod) {
        let clash = usage.ports.iter().any(|(p2, ip2, port2)| {
            *p2 == proto && *port2 == port && (ip == "0.0.0.0" || ip2 == "0.0.0.0" || *ip2 == ip)
        });
        if clash {
            return predicate_failure(
                "NodePorts",
                "node(s) didn't have free ports for the requested pod ports",
            );
        }
    }
    if !crate::status::pod_predicates::is_static_pod(pod)
        && let Some(taint) = untolerated_no_execute(&node.taints, pod)
    {
        tracing::debug!(pod = %crate::pod_manager::format_pod(pod), taint = %taint.key, "untolerated NoExecute taint");
        return predicate_failure("TaintToleration", "node(s) had taints that the pod didn't tolerate");
    }
    Ok(())
}

/// Upstream `PredicateFailureError`: reason = the predicate's name, message
/// `Predicate <name> failed: <description>`.
fn predicate_failure(name: &str, description: &str) -> Result<(), Rejection> {
    reject(name, format!("Predicate {name} failed: {description}"))
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
            taints: vec![],
            cpu_milli: 2000,
            memory_bytes: 1 << 30,
            pods: 3,
            other: [("example.com/gpu".to_string(), 2)].into(),
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

    /// Upstream's messages, and its order: resources before the predicates.
    #[test]
    fn messages_and_order_are_upstreams() {
        let sel = pod("spec: {nodeSelector: {disk: hdd}, containers: [{name: c, image: i}]}");
        assert_eq!(
            admit(&sel, &[], &node()).unwrap_err().event_message(),
            "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
        );
        let other = pod("spec: {nodeName: n2, containers: [{name: c, image: i}]}");
        assert_eq!(
            admit(&other, &[], &node()).unwrap_err().event_message(),
            "Predicate NodeName failed: node(s) didn't match the requested node name"
        );
        let both = pod(
            "spec: {nodeSelector: {disk: hdd}, containers: [{name: c, image: i, resources: {requests: {cpu: '9'}}}]}",
        );
        assert_eq!(admit(&both, &[], &node()).unwrap_err().reason, "OutOfcpu");
    }

    /// NoExecute taints the pod does not tolerate reject it (upstream
    /// `generalFilter`), after every other predicate; static pods and
    /// NoSchedule taints are not checked.
    #[test]
    fn untolerated_no_execute_taints_reject_api_pods_only() {
        let mut n = node();
        n.taints = vec![
            Taint {
                key: "dedicated".into(),
                value: Some("db".into()),
                effect: "NoSchedule".into(),
                time_added: None,
            },
            Taint {
                key: "maintenance".into(),
                value: None,
                effect: "NoExecute".into(),
                time_added: None,
            },
        ];
        let bare = pod("spec: {containers: [{name: c, image: i}]}");
        let r = admit(&bare, &[], &n).unwrap_err();
        assert_eq!(r.reason, "TaintToleration");
        assert_eq!(
            r.event_message(),
            "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
        );
        let tolerant = pod(
            "spec: {tolerations: [{key: maintenance, operator: Exists, effect: NoExecute}], containers: [{name: c, image: i}]}",
        );
        assert!(
            admit(&tolerant, &[], &n).is_ok(),
            "NoSchedule taints are the scheduler's business"
        );
        let stat = pod(
            "metadata: {annotations: {kubernetes.io/config.source: file}}\nspec: {containers: [{name: c, image: i}]}",
        );
        assert!(admit(&stat, &[], &n).is_ok(), "static pods are not checked");
        let sel = pod("spec: {nodeSelector: {disk: hdd}, containers: [{name: c, image: i}]}");
        assert_eq!(
            admit(&sel, &[], &n).unwrap_err().reason,
            "NodeAffinity",
            "the other predicates first"
        );
    }

    /// Pod-level resources (KEP-2837) replace the containers' sum.
    #[test]
    fn pod_level_requests_decide() {
        let p = pod(
            "spec: {resources: {requests: {cpu: '3'}}, containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]}",
        );
        assert_eq!(pod_request(&p, "cpu"), 3000);
        let r = admit(&p, &[], &node()).unwrap_err();
        assert_eq!(
            (r.reason.as_str(), r.message.as_str()),
            (
                "OutOfcpu",
                "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"
            )
        );
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

    #[test]
    fn sidecars_and_overhead_count_in_the_effective_request() {
        // Sidecar 100Mi runs beside the containers (300Mi) and the later
        // init container (500Mi + 100Mi); overhead 10Mi on top.
        let p = pod(
            "spec: {overhead: {memory: 10Mi}, initContainers: [{name: s, image: i, restartPolicy: Always, resources: {requests: {memory: 100Mi}}}, {name: i, image: i, resources: {requests: {memory: 500Mi}}}], containers: [{name: c, image: i, resources: {requests: {memory: 300Mi}}}]}",
        );
        assert_eq!(pod_request(&p, "memory"), (600 + 10) << 20);
        let p = pod(
            "spec: {initContainers: [{name: s, image: i, restartPolicy: Always, resources: {requests: {cpu: 900m}}}], containers: [{name: c, image: i, resources: {requests: {cpu: 1200m}}}]}",
        );
        assert_eq!(pod_request(&p, "cpu"), 2100);
        assert_eq!(admit(&p, &[], &node()).unwrap_err().reason, "OutOfcpu");
    }

    #[test]
    fn extended_resources_listed_by_the_node_are_checked() {
        let gpu = |n: u32| {
            pod(&format!(
                "spec: {{containers: [{{name: c, image: i, resources: {{limits: {{example.com/gpu: '{n}'}}}}}}]}}"
            ))
        };
        let one = gpu(1);
        assert!(admit(&one, &[], &node()).is_ok());
        let r = admit(&gpu(2), &[&one], &node()).unwrap_err();
        assert_eq!(r.reason, "OutOfexample.com/gpu");
        assert!(
            r.message.contains("requested: 2, used: 1, capacity: 2"),
            "{}",
            r.message
        );
        // Not listed by the node: a cluster-level resource, ignored.
        let fpga = pod("spec: {containers: [{name: c, image: i, resources: {limits: {example.com/fpga: '9'}}}]}");
        assert!(admit(&fpga, &[], &node()).is_ok());
        let mut u = Usage::of([&one]);
        u.remove(&one);
        assert_eq!(u, Usage::default());
    }

    #[test]
    fn required_node_affinity_is_checked() {
        let want = |v: &str| {
            pod(&format!(
                "spec: {{affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{{matchExpressions: [{{key: disk, operator: In, values: [{v}]}}]}}]}}}}}}, containers: [{{name: c, image: i}}]}}"
            ))
        };
        assert!(admit(&want("ssd"), &[], &node()).is_ok());
        assert_eq!(admit(&want("hdd"), &[], &node()).unwrap_err().reason, "NodeAffinity");
    }
}
