use super::*;
use crate::kuberuntime::test_support::pod;

const MI: i64 = 1 << 20;

fn pod_with(containers: &str, extra: &str) -> Pod {
    pod(&format!(
        "metadata: {{name: p, namespace: default, uid: u1}}\nspec:\n  containers:\n{containers}\n{extra}"
    ))
}

fn c(name: &str, resources: &str) -> String {
    format!("  - name: {name}\n    image: busybox\n    resources: {resources}\n")
}

#[test]
fn guaranteed_pod_gets_shares_quota_and_memory() {
    let r = "{limits: {cpu: 500m, memory: 128Mi}}";
    let p = pod_with(&format!("{}{}", c("a", r), c("b", r)), "");
    let rc = resource_config_for_pod(&p, true, -1);
    assert_eq!(
        rc,
        ResourceConfig {
            cpu_shares: Some(1024),
            cpu_quota: Some(100_000),
            cpu_period: Some(100_000),
            memory: Some(256 * MI),
            pids_limit: None,
        }
    );
    // cpuCFSQuota=false: unlimited quota; podPidsLimit > 0 is applied
    let rc = resource_config_for_pod(&p, false, 1024);
    assert_eq!((rc.cpu_quota, rc.pids_limit), (Some(-1), Some(1024)));
}

#[test]
fn burstable_pod_gets_limits_only_when_every_container_declares_them() {
    let p = pod_with(
        &format!(
            "{}{}",
            c(
                "a",
                "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}"
            ),
            c("b", "{requests: {cpu: 150m}, limits: {cpu: 300m}}")
        ),
        "",
    );
    let rc = resource_config_for_pod(&p, true, 0);
    assert_eq!(rc.cpu_shares, Some(256)); // 250m · 1024 / 1000
    assert_eq!((rc.cpu_quota, rc.cpu_period), (Some(50_000), Some(100_000)));
    assert_eq!(rc.memory, None, "container b has no memory limit");
    assert_eq!(rc.pids_limit, None);

    let p = pod_with(&c("a", "{requests: {memory: 64Mi}, limits: {memory: 100Mi}}"), "");
    let rc = resource_config_for_pod(&p, true, 0);
    assert_eq!(rc.cpu_shares, Some(2), "no cpu request: minimum shares");
    assert_eq!((rc.cpu_quota, rc.memory), (None, Some(100 * MI)));
}

#[test]
fn best_effort_pod_gets_minimum_shares_only() {
    let p = pod_with(&c("a", "{}"), "");
    assert_eq!(
        resource_config_for_pod(&p, true, -1),
        ResourceConfig {
            cpu_shares: Some(2),
            ..Default::default()
        }
    );
}

#[test]
fn init_containers_and_sidecars_aggregate_as_upstream() {
    // regular 100m + sidecar 50m = 150m; init 500m (+ sidecar before it: none) → max 500m
    let p = pod_with(
        &c("app", "{requests: {cpu: 100m}}"),
        &format!(
            "  initContainers:\n{}{}",
            c("setup", "{requests: {cpu: 500m}}"),
            c("side", "{requests: {cpu: 50m}}").replace(
                "    image: busybox\n",
                "    image: busybox\n    restartPolicy: Always\n"
            )
        ),
    );
    assert_eq!(pod_requests(&p).cpu_milli, Some(500));
    // sidecar before a regular init container counts with it
    let p = pod_with(
        &c("app", "{requests: {cpu: 100m}}"),
        &format!(
            "  initContainers:\n{}{}",
            c("side", "{requests: {cpu: 300m}}").replace(
                "    image: busybox\n",
                "    image: busybox\n    restartPolicy: Always\n"
            ),
            c("setup", "{requests: {cpu: 500m}}")
        ),
    );
    assert_eq!(pod_requests(&p).cpu_milli, Some(800));
}

#[test]
fn overhead_adds_to_requests_and_to_set_limits() {
    let p = pod_with(
        &c("a", "{requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}"),
        "  overhead: {cpu: 250m, memory: 32Mi}",
    );
    assert_eq!(
        pod_requests(&p),
        CpuMemory {
            cpu_milli: Some(350),
            memory: Some(96 * MI)
        }
    );
    assert_eq!(
        pod_limits(&p),
        CpuMemory {
            cpu_milli: None,
            memory: Some(160 * MI)
        }
    );
}

#[test]
fn pod_level_resources_decide_class_and_cgroup() {
    // containers declare nothing; the pod declares cpu and memory limits
    let p = pod_with(
        &format!("{}{}", c("a", "{}"), c("b", "{}")),
        "  resources: {limits: {cpu: '1', memory: 256Mi}}",
    );
    assert_eq!(pod_qos(&p), QosClass::Guaranteed);
    let rc = resource_config_for_pod(&p, true, 0);
    assert_eq!(rc.cpu_shares, Some(1024));
    assert_eq!(rc.cpu_quota, Some(100_000));
    assert_eq!(rc.memory, Some(256 * MI));
    // pod-level requests below limits: Burstable, limits still apply
    let p = pod_with(
        &c("a", "{}"),
        "  resources: {requests: {cpu: 500m}, limits: {cpu: '1', memory: 256Mi}}",
    );
    assert_eq!(pod_qos(&p), QosClass::Burstable);
    let rc = resource_config_for_pod(&p, true, 0);
    assert_eq!(
        (rc.cpu_shares, rc.cpu_quota, rc.memory),
        (Some(512), Some(100_000), Some(256 * MI))
    );
}

#[test]
fn qos_cgroups_follow_upstream() {
    let burst = pod_with(&c("a", "{requests: {cpu: 300m}}"), "");
    let burst2 = pod_with(&c("a", "{requests: {cpu: 200m, memory: 1Mi}}"), "");
    let guaranteed = pod_with(&c("a", "{limits: {cpu: '4', memory: 1Gi}}"), "");
    let best = pod_with(&c("a", "{}"), "");
    assert_eq!(
        burstable_qos_config([&burst, &burst2, &guaranteed, &best]).cpu_shares,
        Some(512)
    );
    assert_eq!(burstable_qos_config([&best]).cpu_shares, Some(2));
    assert_eq!(besteffort_qos_config().cpu_shares, Some(2));
}

#[test]
fn node_allocatable_subtracts_reserved_when_enforced() {
    let cap = NodeResources {
        cpu_milli: 2000,
        memory: 4096 * MI,
    };
    let reserved = NodeResources {
        cpu_milli: 500,
        memory: 1024 * MI,
    };
    let rc = node_allocatable_config(cap, reserved, true);
    assert_eq!((rc.cpu_shares, rc.memory), (Some(1536), Some(3072 * MI)));
    assert_eq!(rc.cpu_quota, None, "kubepods gets no quota");
    let rc = node_allocatable_config(cap, reserved, false);
    assert_eq!((rc.cpu_shares, rc.memory), (Some(2048), Some(4096 * MI)));
}

#[test]
fn cgroup_v2_conversions() {
    assert_eq!(cpu_shares_to_weight(2), 1);
    assert_eq!(cpu_shares_to_weight(1024), 39);
    assert_eq!(cpu_shares_to_weight(262_144), 10_000);
    assert_eq!(cpu_shares_to_weight(0), 1, "clamped");
    assert_eq!(cpu_max(Some(50_000), Some(100_000)).as_deref(), Some("50000 100000"));
    assert_eq!(cpu_max(Some(-1), Some(100_000)).as_deref(), Some("max 100000"));
    assert_eq!(cpu_max(None, None), None);
    assert_eq!(v2_limit(128 * MI), "134217728");
    assert_eq!(v2_limit(-1), "max");
}
