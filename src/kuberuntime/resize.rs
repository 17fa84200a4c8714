//! In-place pod resize (KEP-1287, GA 1.35), the kubelet's part: when a
//! running container's spec resources (changed through the `resize`
//! subresource) no longer match what the runtime says it runs with, the
//! kubelet either updates it in place (CRI `UpdateContainerResources`) or,
//! when the container's `resizePolicy` says `RestartContainer` for a changed
//! resource, restarts it — whatever the pod's restartPolicy (upstream
//! `computePodResizeAction`). The pod cgroup follows after the containers.
//!
//! What is compared is what the cgroups enforce ([`ActualResources`]): cpu
//! shares, CFS quota/period and the memory limit. A memory *request* change
//! alone changes nothing in the cgroups and is done at once, as upstream.
//! A memory limit is never lowered below what the container uses now
//! ([`memory_decrease_error`]): the resize fails with upstream's message and
//! the pod's `PodResizeInProgress` condition says so (reason `Error`).
//! Whether a resize is allocated at all (`PodResizePending`,
//! Deferred/Infeasible against node allocatable) is decided before, by the
//! sync loop ([`crate::allocation`]): this module sees the allocated spec.

use k8s_openapi::api::core::v1::Container;

use super::pod_status::ActualResources;
use crate::cri::v1::LinuxContainerResources;

/// What a running container needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Resize {
    /// It runs with what the spec asks.
    Keep,
    /// Update it in place with these resources.
    Update(LinuxContainerResources),
    /// Restart it (its resize policy asks so); the kill message.
    Restart(String),
}

/// The container's `resizePolicy` for `resource` is `RestartContainer`
/// (default `NotRequired`).
fn restart_required(container: &Container, resource: &str) -> bool {
    container
        .resize_policy
        .iter()
        .flatten()
        .any(|p| p.resource_name == resource && p.restart_policy == "RestartContainer")
}

/// Whether the cpu part (shares, quota) of `a` and `b` differs; a quota of
/// zero or less means no limit (and then the period does not matter).
fn cpu_differs(a: &ActualResources, b: &ActualResources) -> bool {
    let quota = |r: &ActualResources| (r.cpu_quota > 0).then_some((r.cpu_quota, r.cpu_period));
    a.cpu_shares != b.cpu_shares || quota(a) != quota(b)
}

/// Whether the memory limit of `a` and `b` differs (0 or less: none).
fn memory_differs(a: &ActualResources, b: &ActualResources) -> bool {
    a.memory_limit.max(0) != b.memory_limit.max(0)
}

/// Whether a container running with `actual` needs a resize to `desired`.
///
/// ```
/// use actlet::cri::v1::LinuxContainerResources;
/// use actlet::kuberuntime::pod_status::ActualResources;
/// use actlet::kuberuntime::resize::in_progress;
/// let want = LinuxContainerResources { cpu_shares: 256, memory_limit_in_bytes: 64 << 20, ..Default::default() };
/// assert!(!in_progress(&want, &ActualResources::of(&want)));
/// assert!(in_progress(&want, &ActualResources { cpu_shares: 256, ..Default::default() }));
/// ```
pub fn in_progress(desired: &LinuxContainerResources, actual: &ActualResources) -> bool {
    let want = ActualResources::of(desired);
    cpu_differs(&want, actual) || memory_differs(&want, actual)
}

/// What `container`, running with `actual`, needs so that it runs with
/// `desired` (its resources from the spec).
pub fn decide(container: &Container, desired: &LinuxContainerResources, actual: &ActualResources) -> Resize {
    let want = ActualResources::of(desired);
    let cpu = cpu_differs(&want, actual);
    let memory = memory_differs(&want, actual);
    if !cpu && !memory {
        return Resize::Keep;
    }
    if (cpu && restart_required(container, "cpu")) || (memory && restart_required(container, "memory")) {
        return Resize::Restart(format!("Container {} resize requires restart", container.name));
    }
    Resize::Update(desired.clone())
}

/// One container whose memory limit a resize changes: its name, the new
/// and the current limit (0: none), and what it uses now (`None`: unknown).
#[derive(Clone, Copy, Debug)]
pub struct MemoryChange<'a> {
    /// Container name.
    pub name: &'a str,
    /// The limit asked for (bytes; 0: none).
    pub new_limit: i64,
    /// The limit it runs with (bytes; 0: none).
    pub current_limit: i64,
    /// `usage_bytes` of its memory stats now.
    pub usage: Option<u64>,
}

impl MemoryChange<'_> {
    /// Whether the limit goes down (from none, or from a larger one).
    pub fn decreases(&self) -> bool {
        self.new_limit > 0 && (self.current_limit <= 0 || self.new_limit < self.current_limit)
    }
}

/// Upstream's refusal to lower memory limits below current usage: `None`
/// when every decrease fits, else `cannot decrease memory limits: …` naming
/// each container (one error alone, several in brackets, as Go's aggregate
/// error prints them).
///
/// ```
/// use actlet::kuberuntime::resize::{MemoryChange, memory_decrease_error};
/// let c = MemoryChange { name: "c1", new_limit: 10 << 10, current_limit: 30 << 20, usage: Some(1 << 20) };
/// assert_eq!(
///     memory_decrease_error(&[c]).as_deref(),
///     Some("cannot decrease memory limits: attempting to set container \"c1\" memory limit (10240) below current usage (1048576)")
/// );
/// assert_eq!(memory_decrease_error(&[MemoryChange { new_limit: 2 << 20, ..c }]), None);
/// ```
pub fn memory_decrease_error(changes: &[MemoryChange<'_>]) -> Option<String> {
    let errors: Vec<String> = changes
        .iter()
        .filter(|c| c.decreases())
        .filter_map(|c| {
            let usage = c.usage?;
            (u64::try_from(c.new_limit).unwrap_or(0) < usage).then(|| {
                format!(
                    "attempting to set container {:?} memory limit ({}) below current usage ({usage})",
                    c.name, c.new_limit
                )
            })
        })
        .collect();
    match errors.as_slice() {
        [] => None,
        [one] => Some(format!("cannot decrease memory limits: {one}")),
        many => Some(format!("cannot decrease memory limits: [{}]", many.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(policies: &[(&str, &str)]) -> Container {
        let policies: Vec<_> = policies
            .iter()
            .map(|(r, p)| serde_json::json!({"resourceName": r, "restartPolicy": p}))
            .collect();
        serde_json::from_value(serde_json::json!({"name": "c", "resizePolicy": policies})).unwrap_or_default()
    }

    fn res(shares: i64, quota: i64, memory: i64) -> LinuxContainerResources {
        LinuxContainerResources {
            cpu_shares: shares,
            cpu_quota: quota,
            cpu_period: 100_000,
            memory_limit_in_bytes: memory,
            oom_score_adj: 999,
            ..Default::default()
        }
    }

    #[test]
    fn matching_resources_are_kept() {
        let want = res(256, 50_000, 64 << 20);
        assert_eq!(
            decide(&container(&[]), &want, &ActualResources::of(&want)),
            Resize::Keep
        );
        // No quota: the period the runtime reports does not matter.
        let unlimited = res(256, 0, 0);
        let reported = ActualResources {
            cpu_period: 0,
            cpu_quota: -1,
            ..ActualResources::of(&unlimited)
        };
        assert_eq!(decide(&container(&[]), &unlimited, &reported), Resize::Keep);
    }

    #[test]
    fn changes_update_in_place_unless_the_policy_restarts() {
        let old = ActualResources::of(&res(256, 50_000, 64 << 20));
        let more_cpu = res(512, 100_000, 64 << 20);
        let more_memory = res(256, 50_000, 128 << 20);
        let plain = container(&[]);
        assert_eq!(decide(&plain, &more_cpu, &old), Resize::Update(more_cpu.clone()));
        let restart_memory = container(&[("cpu", "NotRequired"), ("memory", "RestartContainer")]);
        assert_eq!(
            decide(&restart_memory, &more_cpu, &old),
            Resize::Update(more_cpu.clone()),
            "cpu may change in place"
        );
        assert_eq!(
            decide(&restart_memory, &more_memory, &old),
            Resize::Restart("Container c resize requires restart".into())
        );
        let restart_cpu = container(&[("cpu", "RestartContainer")]);
        assert!(matches!(decide(&restart_cpu, &more_cpu, &old), Resize::Restart(_)));
        assert!(matches!(decide(&restart_cpu, &more_memory, &old), Resize::Update(_)));
    }

    #[test]
    fn memory_decreases_below_usage_are_refused_naming_every_container() {
        let change = |name, new_limit, current_limit, usage| MemoryChange {
            name,
            new_limit,
            current_limit,
            usage,
        };
        let changes = [
            change("a", 8 << 20, 16 << 20, Some(10 << 20)),
            change("b", 4 << 20, 0, Some(5 << 20)),
            change("grows", 64 << 20, 32 << 20, Some(40 << 20)),
            change("unknown", 1 << 20, 16 << 20, None),
            change("fits", 8 << 20, 16 << 20, Some(7 << 20)),
        ];
        assert_eq!(
            memory_decrease_error(&changes).as_deref(),
            Some(
                "cannot decrease memory limits: [attempting to set container \"a\" memory limit (8388608) below current usage (10485760), \
                 attempting to set container \"b\" memory limit (4194304) below current usage (5242880)]"
            )
        );
        assert!(!changes[2].decreases(), "an increase is never checked");
        assert!(
            !change("x", 0, 16 << 20, Some(1 << 30)).decreases(),
            "removing the limit is no decrease"
        );
        assert_eq!(memory_decrease_error(&changes[2..]), None);
    }
}
