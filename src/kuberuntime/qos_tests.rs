use super::*;
use crate::kuberuntime::test_support::pod;

const GI: i64 = 1 << 30;

fn with_resources(containers: &str, init: &str) -> Pod {
    pod(&format!(
        "metadata: {{name: p, namespace: default, uid: u1}}\nspec:\n  containers:\n{containers}\n  initContainers:\n{init}"
    ))
}

fn c(name: &str, resources: &str) -> String {
    format!("  - name: {name}\n    image: busybox\n    resources: {resources}")
}

#[test]
fn no_resources_anywhere_is_best_effort() {
    let p = with_resources(&c("a", "{}"), "    []");
    assert_eq!(pod_qos(&p), QosClass::BestEffort);
}

#[test]
fn equal_cpu_and_memory_requests_and_limits_is_guaranteed() {
    let r = "{requests: {cpu: 500m, memory: 128Mi}, limits: {cpu: 500m, memory: 128Mi}}";
    let p = with_resources(&format!("{}\n{}", c("a", r), c("b", r)), "    []");
    assert_eq!(pod_qos(&p), QosClass::Guaranteed);
}

#[test]
fn limits_only_default_requests_and_are_guaranteed() {
    let p = with_resources(&c("a", "{limits: {cpu: '1', memory: 1Gi}}"), "    []");
    assert_eq!(pod_qos(&p), QosClass::Guaranteed);
}

#[test]
fn equal_values_in_different_spellings_are_guaranteed() {
    let p = with_resources(
        &c(
            "a",
            "{requests: {cpu: '1', memory: 1024Mi}, limits: {cpu: 1000m, memory: 1Gi}}",
        ),
        "    []",
    );
    assert_eq!(pod_qos(&p), QosClass::Guaranteed);
}

#[test]
fn requests_below_limits_are_burstable() {
    let p = with_resources(
        &c(
            "a",
            "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 500m, memory: 128Mi}}",
        ),
        "    []",
    );
    assert_eq!(pod_qos(&p), QosClass::Burstable);
}

#[test]
fn only_a_memory_limit_is_burstable() {
    let p = with_resources(&c("a", "{limits: {memory: 128Mi}}"), "    []");
    assert_eq!(pod_qos(&p), QosClass::Burstable);
}

#[test]
fn one_best_effort_container_makes_a_guaranteed_pod_burstable() {
    let g = "{limits: {cpu: '1', memory: 1Gi}}";
    let p = with_resources(&format!("{}\n{}", c("a", g), c("b", "{}")), "    []");
    assert_eq!(pod_qos(&p), QosClass::Burstable);
}

#[test]
fn init_containers_count_for_qos() {
    let g = "{limits: {cpu: '1', memory: 1Gi}}";
    let p = with_resources(&c("a", g), &c("init", "{requests: {cpu: 100m}}"));
    assert_eq!(pod_qos(&p), QosClass::Burstable);
    let p = with_resources(&c("a", "{}"), &c("init", "{requests: {memory: 10Mi}}"));
    assert_eq!(pod_qos(&p), QosClass::Burstable);
    let p = with_resources(&c("a", g), &c("init", g));
    assert_eq!(pod_qos(&p), QosClass::Guaranteed);
}

#[test]
fn non_compute_resources_and_zero_quantities_are_ignored() {
    let p = with_resources(
        &c(
            "a",
            "{requests: {ephemeral-storage: 1Gi, cpu: '0'}, limits: {nvidia.com/gpu: '1'}}",
        ),
        "    []",
    );
    assert_eq!(pod_qos(&p), QosClass::BestEffort);
}

#[test]
fn status_qos_class_wins_over_the_spec() {
    let mut p = with_resources(&c("a", "{}"), "    []");
    p.status = Some(k8s_openapi::api::core::v1::PodStatus {
        qos_class: Some("Burstable".into()),
        ..Default::default()
    });
    assert_eq!(pod_qos(&p), QosClass::Burstable);
}

#[test]
fn qos_class_names_are_upstreams() {
    assert_eq!(QosClass::Guaranteed.as_str(), "Guaranteed");
    assert_eq!(QosClass::Burstable.as_str(), "Burstable");
    assert_eq!(QosClass::BestEffort.as_str(), "BestEffort");
}

#[test]
fn oom_score_adj_follows_the_qos_class() {
    let g = with_resources(&c("a", "{limits: {cpu: '1', memory: 1Gi}}"), "    []");
    assert_eq!(
        container_oom_score_adj(&g, &g.spec.as_ref().unwrap().containers[0], 4 * GI),
        -997
    );
    let be = with_resources(&c("a", "{}"), "    []");
    assert_eq!(
        container_oom_score_adj(&be, &be.spec.as_ref().unwrap().containers[0], 4 * GI),
        1000
    );
}

#[test]
fn burstable_oom_score_adj_scales_with_the_memory_request() {
    let adj = |req: &str| {
        let p = with_resources(
            &c(
                "a",
                &format!("{{requests: {{memory: {req}}}, limits: {{memory: 8Gi}}}}"),
            ),
            "    []",
        );
        container_oom_score_adj(&p, &p.spec.as_ref().unwrap().containers[0], 4 * GI)
    };
    assert_eq!(adj("1Gi"), 750, "a quarter of capacity");
    assert_eq!(adj("2Gi"), 500);
    assert_eq!(adj("4Gi"), 3, "clamped to 1000-997");
    assert_eq!(adj("1"), 999, "never equal to BestEffort's 1000");
    let cpu_only = with_resources(&c("a", "{requests: {cpu: 100m}}"), "    []");
    assert_eq!(
        container_oom_score_adj(&cpu_only, &cpu_only.spec.as_ref().unwrap().containers[0], 4 * GI),
        999
    );
}

#[test]
fn node_critical_static_pods_get_guaranteed_oom_score() {
    let p = pod("metadata:
  name: etcd
  annotations: {kubernetes.io/config.source: file}
spec:
  priorityClassName: system-node-critical
  containers: [{name: a, image: etcd}]");
    assert!(is_critical_pod(&p) && is_node_critical_pod(&p));
    assert_eq!(
        container_oom_score_adj(&p, &p.spec.as_ref().unwrap().containers[0], GI),
        -997
    );
    let api = pod("metadata: {name: x, annotations: {kubernetes.io/config.source: api}}
spec: {priorityClassName: system-node-critical, containers: [{name: a}]}");
    assert!(!is_critical_pod(&api));
    let high = pod("metadata: {name: x}\nspec: {priority: 2000000000, containers: [{name: a}]}");
    assert!(is_critical_pod(&high) && !is_node_critical_pod(&high));
}

#[test]
fn cgroup_parents_follow_the_kubepods_hierarchy() {
    assert_eq!(pod_cgroup_parent(QosClass::Guaranteed, "u1"), "/kubepods/podu1");
    assert_eq!(
        pod_cgroup_parent(QosClass::Burstable, "u1"),
        "/kubepods/burstable/podu1"
    );
    assert_eq!(
        pod_cgroup_parent(QosClass::BestEffort, "u1"),
        "/kubepods/besteffort/podu1"
    );
}

#[test]
fn cpu_shares_and_quota_match_upstream_arithmetic() {
    assert_eq!(milli_cpu_to_shares(0), 2);
    assert_eq!(milli_cpu_to_shares(1), 2);
    assert_eq!(milli_cpu_to_shares(100), 102);
    assert_eq!(milli_cpu_to_shares(1000), 1024);
    assert_eq!(milli_cpu_to_shares(i64::MAX), MAX_SHARES);
    assert_eq!(milli_cpu_to_quota(0, 100_000), 0);
    assert_eq!(milli_cpu_to_quota(500, 100_000), 50_000);
    assert_eq!(milli_cpu_to_quota(1, 100_000), 1_000, "at least 1ms");
    assert_eq!(milli_cpu_to_quota(2500, 100_000), 250_000);
}

#[test]
fn container_resources_fill_the_cri_message() {
    let p = with_resources(
        &c(
            "a",
            "{requests: {cpu: 250m, memory: 64Mi}, limits: {cpu: 500m, memory: 128Mi}}",
        ),
        "    []",
    );
    let r = container_resources(&p, &p.spec.as_ref().unwrap().containers[0], 4 * GI, true);
    assert_eq!(r.cpu_shares, 256);
    assert_eq!(r.cpu_period, 100_000);
    assert_eq!(r.cpu_quota, 50_000);
    assert_eq!(r.memory_limit_in_bytes, 128 << 20);
    assert_eq!(r.oom_score_adj, 1000 - 1000 * (64 << 20) / (4 * GI));
}

#[test]
fn container_resources_without_limits_have_no_quota_and_min_shares() {
    let p = with_resources(&c("a", "{}"), "    []");
    let r = container_resources(&p, &p.spec.as_ref().unwrap().containers[0], GI, true);
    assert_eq!(
        (r.cpu_shares, r.cpu_quota, r.cpu_period, r.memory_limit_in_bytes),
        (2, 0, 100_000, 0)
    );
    let r = container_resources(&p, &p.spec.as_ref().unwrap().containers[0], GI, false);
    assert_eq!((r.cpu_quota, r.cpu_period), (0, 0), "cpuCFSQuota=false sets neither");
}

#[test]
fn cpu_shares_come_from_the_limit_when_the_request_is_zero() {
    let p = with_resources(&c("a", "{requests: {cpu: '0'}, limits: {cpu: '2'}}"), "    []");
    let r = container_resources(&p, &p.spec.as_ref().unwrap().containers[0], GI, true);
    assert_eq!(r.cpu_shares, 2048);
}

#[test]
fn invalid_quantities_count_as_absent() {
    let p = with_resources(&c("a", "{limits: {cpu: lots, memory: 1Gi}}"), "    []");
    assert_eq!(pod_qos(&p), QosClass::Burstable);
    let r = container_resources(&p, &p.spec.as_ref().unwrap().containers[0], 2 * GI, true);
    assert_eq!((r.cpu_quota, r.memory_limit_in_bytes), (0, GI));
}

#[test]
fn sidecar_oom_score_adj_is_at_most_the_lowest_regular_containers() {
    let p = pod("metadata: {name: p, uid: u1}
spec:
  containers:
  - {name: big, image: busybox, resources: {requests: {memory: 2Gi}, limits: {memory: 3Gi}}}
  - {name: small, image: busybox, resources: {requests: {memory: 64Mi}}}
  initContainers:
  - {name: side, image: busybox, restartPolicy: Always, resources: {requests: {memory: 16Mi}}}
  - {name: setup, image: busybox, resources: {requests: {memory: 16Mi}}}");
    let spec = p.spec.as_ref().unwrap();
    let init = spec.init_containers.as_ref().unwrap();
    assert_eq!(container_oom_score_adj(&p, &spec.containers[0], 4 * GI), 500);
    assert_eq!(
        container_oom_score_adj(&p, &init[0], 4 * GI),
        500,
        "sidecar: the big container's score"
    );
    assert_eq!(
        container_oom_score_adj(&p, &init[1], 4 * GI),
        997,
        "a regular init container: its own"
    );
}
