//! Pure: per-pod local storage limits (upstream `localStorageEviction`, on
//! while `localStorageCapacityIsolation` is true). Checked every round, before
//! and independently of the node thresholds; a pod is evicted when
//!
//! 1. an `emptyDir` volume uses more than its `sizeLimit`;
//! 2. the pod's ephemeral storage (every container's writable layer and logs,
//!    and its local volumes) exceeds the sum of its containers'
//!    `ephemeral-storage` limits;
//! 3. one container's logs (and writable layer, unless the images live on a
//!    dedicated filesystem) exceed that container's `ephemeral-storage` limit.
//!
//! The first that holds names the cause, in upstream's words.

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::kuberuntime::qos::limit;
use crate::quantity::{ParsedQuantity, canonical_units, is_binary_si};
use crate::stats::types::{FsStats, PodStats};

/// `kubelet_evictions{eviction_signal}` of an `emptyDir` over its size limit.
pub const SIGNAL_EMPTY_DIR: &str = "emptydirfs.limit";
/// … of a pod over its containers' total limit.
pub const SIGNAL_POD: &str = "ephemeralpodfs.limit";
/// … of a container over its own limit.
pub const SIGNAL_CONTAINER: &str = "ephemeralcontainerfs.limit";

const EPHEMERAL: &str = "ephemeral-storage";

/// Why a pod breaks its local storage limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The metrics label (one of the `SIGNAL_*` constants).
    pub signal: &'static str,
    /// The eviction message (pod status and event), as upstream words it.
    pub message: String,
}

fn used(fs: Option<&FsStats>) -> i64 {
    fs.and_then(|f| f.used_bytes)
        .map_or(0, |b| i64::try_from(b).unwrap_or(i64::MAX))
}

/// The raw limit string of `c` for ephemeral storage, when set and valid.
fn ephemeral_limit(c: &Container) -> Option<(i64, bool)> {
    let raw = c.resources.as_ref()?.limits.as_ref()?.get(EPHEMERAL)?;
    Some((limit(c, EPHEMERAL)?.value(), is_binary_si(&raw.0)))
}

/// Upstream `PodLimits(pod)[ephemeral-storage]`: containers summed, sidecars
/// added, other init containers as a maximum, overhead added; `None` when no
/// container sets the limit. The flag: print in binary SI (the format of the
/// first limit found, as upstream's sum keeps it).
pub fn pod_ephemeral_limit(pod: &Pod) -> Option<(i64, bool)> {
    let spec = pod.spec.as_ref()?;
    let mut format = None;
    let mut amount = |c: &Container| {
        let l = ephemeral_limit(c);
        if let Some((_, binary)) = l {
            format.get_or_insert(binary);
        }
        l.map_or(0, |(v, _)| v)
    };
    let mut sum: i64 = 0;
    for c in &spec.containers {
        sum = sum.saturating_add(amount(c));
    }
    let (mut sidecars, mut init) = (0i64, 0i64);
    for c in spec.init_containers.iter().flatten() {
        let v = amount(c);
        if c.restart_policy.as_deref() == Some("Always") {
            sum = sum.saturating_add(v);
            sidecars = sidecars.saturating_add(v);
            init = init.max(sidecars);
        } else {
            init = init.max(v.saturating_add(sidecars));
        }
    }
    let binary = format?;
    let overhead = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get(EPHEMERAL))
        .and_then(|q| ParsedQuantity::from_quantity(q).ok())
        .map_or(0, |q| q.value());
    Some((sum.max(init).saturating_add(overhead), binary))
}

fn empty_dir(pod: &Pod, stats: &PodStats) -> Option<Violation> {
    for v in pod.spec.as_ref()?.volumes.iter().flatten() {
        let Some(size) = v.empty_dir.as_ref().and_then(|e| e.size_limit.as_ref()) else {
            continue;
        };
        let Ok(limit) = ParsedQuantity::from_quantity(size) else {
            continue;
        };
        let Some(stat) = stats.volume_stats.iter().find(|s| s.name == v.name) else {
            continue;
        };
        if limit.value() > 0 && used(Some(&stat.fs)) > limit.value() {
            return Some(Violation {
                signal: SIGNAL_EMPTY_DIR,
                message: format!(
                    "Usage of EmptyDir volume {:?} exceeds the limit {:?}. ",
                    v.name,
                    canonical_units(limit.value(), is_binary_si(&size.0))
                ),
            });
        }
    }
    None
}

fn pod_total(pod: &Pod, stats: &PodStats) -> Option<Violation> {
    let (limit, binary) = pod_ephemeral_limit(pod)?;
    (used(stats.ephemeral_storage.as_ref()) > limit).then(|| Violation {
        signal: SIGNAL_POD,
        message: format!(
            "Pod ephemeral local storage usage exceeds the total limit of containers {}. ",
            canonical_units(limit, binary)
        ),
    })
}

fn container(pod: &Pod, stats: &PodStats, dedicated_image_fs: bool) -> Option<Violation> {
    let spec = pod.spec.as_ref()?;
    for cs in &stats.containers {
        let Some(c) = spec.containers.iter().find(|c| c.name == cs.name) else {
            continue;
        };
        let Some((limit, binary)) = ephemeral_limit(c).filter(|(v, _)| *v != 0) else {
            continue;
        };
        let mut usage = used(cs.logs.as_ref());
        if !dedicated_image_fs {
            usage = usage.saturating_add(used(cs.rootfs.as_ref()));
        }
        if usage > limit {
            return Some(Violation {
                signal: SIGNAL_CONTAINER,
                message: format!(
                    "Container {} exceeded its local ephemeral storage limit {:?}. ",
                    cs.name,
                    canonical_units(limit, binary)
                ),
            });
        }
    }
    None
}

/// Whether `pod` sets any local storage limit (an `emptyDir.sizeLimit` or a
/// container's `ephemeral-storage` limit): without one it cannot break any,
/// and its stats need not be read for this.
pub fn has_limits(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return false };
    spec.volumes
        .iter()
        .flatten()
        .any(|v| v.empty_dir.as_ref().is_some_and(|e| e.size_limit.is_some()))
        || spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .any(|c| ephemeral_limit(c).is_some())
}

/// The first local storage limit `pod` breaks, given its stats (upstream
/// order: emptyDir size limits, the pod's total, each container's).
/// `dedicated_image_fs`: writable layers live on the image filesystem, so
/// a container's own limit counts only its logs.
pub fn violation(pod: &Pod, stats: &PodStats, dedicated_image_fs: bool) -> Option<Violation> {
    empty_dir(pod, stats)
        .or_else(|| pod_total(pod, stats))
        .or_else(|| container(pod, stats, dedicated_image_fs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::types::{ContainerStats, PodReference, VolumeStats};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "p", "uid": "u"}, "spec": json})).unwrap()
    }

    fn epoch() -> Time {
        Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    fn fs(bytes: u64) -> Option<FsStats> {
        Some(FsStats {
            time: epoch(),
            available_bytes: None,
            capacity_bytes: None,
            used_bytes: Some(bytes),
            inodes_free: None,
            inodes: None,
            inodes_used: None,
        })
    }

    fn stats(total: u64, containers: &[(&str, u64, u64)], volumes: &[(&str, u64)]) -> PodStats {
        let mut s = PodStats::empty(PodReference::default(), epoch());
        s.ephemeral_storage = fs(total);
        s.containers = containers
            .iter()
            .map(|(name, rootfs, logs)| ContainerStats {
                name: (*name).into(),
                start_time: s.start_time.clone(),
                cpu: None,
                memory: None,
                rootfs: fs(*rootfs),
                logs: fs(*logs),
            })
            .collect();
        s.volume_stats = volumes
            .iter()
            .map(|(name, used)| VolumeStats {
                fs: fs(*used).expect("built above"),
                name: (*name).into(),
                pvc_ref: None,
            })
            .collect();
        s
    }

    const MI: u64 = 1 << 20;

    #[test]
    fn an_empty_dir_over_its_size_limit_is_named_with_the_limit() {
        let p = pod(serde_json::json!({
            "containers": [{"name": "c"}],
            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"}}, {"name": "free", "emptyDir": {}}]
        }));
        assert_eq!(
            violation(&p, &stats(0, &[], &[("scratch", MI)]), false),
            None,
            "at the limit is fine"
        );
        assert_eq!(
            violation(&p, &stats(0, &[], &[("free", 100 * MI)]), false),
            None,
            "no limit, no check"
        );
        let v = violation(&p, &stats(0, &[], &[("scratch", MI + 1)]), false).unwrap();
        assert_eq!(v.signal, SIGNAL_EMPTY_DIR);
        assert_eq!(
            v.message,
            "Usage of EmptyDir volume \"scratch\" exceeds the limit \"1Mi\". "
        );
        let kib = pod(serde_json::json!({
            "containers": [{"name": "c"}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1024Ki"}}]
        }));
        let v = violation(&kib, &stats(0, &[], &[("v", 2 * MI)]), false).unwrap();
        assert!(
            v.message.ends_with("the limit \"1Mi\". "),
            "printed canonically: {}",
            v.message
        );
    }

    #[test]
    fn the_pod_total_is_checked_against_the_sum_of_container_limits() {
        let p = pod(serde_json::json!({
            "containers": [
                {"name": "a", "resources": {"limits": {"ephemeral-storage": "1Mi"}}},
                {"name": "b", "resources": {"limits": {"ephemeral-storage": "2Mi"}}},
                {"name": "c"}
            ]
        }));
        assert_eq!(pod_ephemeral_limit(&p), Some((3 * MI as i64, true)));
        assert_eq!(violation(&p, &stats(3 * MI, &[], &[]), false), None);
        let v = violation(&p, &stats(3 * MI + 1, &[], &[]), false).unwrap();
        assert_eq!(v.signal, SIGNAL_POD);
        assert_eq!(
            v.message,
            "Pod ephemeral local storage usage exceeds the total limit of containers 3Mi. "
        );
        let none = pod(serde_json::json!({"containers": [{"name": "c"}]}));
        assert_eq!(pod_ephemeral_limit(&none), None);
        assert!(has_limits(&p) && !has_limits(&none));
        assert_eq!(
            violation(&none, &stats(u64::MAX / 2, &[], &[]), false),
            None,
            "no limit, no check"
        );
    }

    #[test]
    fn the_pod_limit_counts_sidecars_init_containers_and_overhead_as_upstream() {
        let p = pod(serde_json::json!({
            "overhead": {"ephemeral-storage": "1M"},
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"ephemeral-storage": "2M"}}},
                {"name": "big", "resources": {"limits": {"ephemeral-storage": "10M"}}}
            ],
            "containers": [{"name": "a", "resources": {"limits": {"ephemeral-storage": "3M"}}}]
        }));
        // max(3 + 2, 10 + 2) + 1
        assert_eq!(pod_ephemeral_limit(&p), Some((13_000_000, false)));
        let v = violation(&p, &stats(13_000_001, &[], &[]), false).unwrap();
        assert!(v.message.ends_with("containers 13M. "), "{}", v.message);
    }

    #[test]
    fn a_container_over_its_limit_counts_its_layer_unless_images_are_on_their_own_fs() {
        let p = pod(serde_json::json!({
            "containers": [
                {"name": "a", "resources": {"limits": {"ephemeral-storage": "5Mi"}}},
                {"name": "b", "resources": {"limits": {"ephemeral-storage": "100Mi"}}}
            ]
        }));
        let s = stats(0, &[("b", 4 * MI, MI), ("a", 4 * MI, 2 * MI)], &[]);
        let v = violation(&p, &s, false).unwrap();
        assert_eq!(v.signal, SIGNAL_CONTAINER);
        assert_eq!(
            v.message,
            "Container a exceeded its local ephemeral storage limit \"5Mi\". "
        );
        assert_eq!(violation(&p, &s, true), None, "logs alone are under the limit");
    }

    #[test]
    fn the_empty_dir_cause_is_named_before_the_pod_and_container_causes() {
        let p = pod(serde_json::json!({
            "containers": [{"name": "a", "resources": {"limits": {"ephemeral-storage": "1Mi"}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Mi"}}]
        }));
        let s = stats(10 * MI, &[("a", 5 * MI, 0)], &[("v", 5 * MI)]);
        assert_eq!(violation(&p, &s, false).unwrap().signal, SIGNAL_EMPTY_DIR);
        let s = stats(10 * MI, &[("a", 5 * MI, 0)], &[("v", MI)]);
        assert_eq!(violation(&p, &s, false).unwrap().signal, SIGNAL_POD);
    }
}
