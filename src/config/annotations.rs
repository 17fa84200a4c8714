//! The `kubernetes.io/config.*` annotations the kubelet manages (upstream
//! `pkg/kubelet/types/pod_update.go`). Users and tools (`kubectl`, kubeadm)
//! read them, so the keys and value formats are upstream's.

/// Where the pod came from: `file`, `http`, `api` (set by the merge).
pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
/// Hash of a static pod's manifest; equals the pod UID when it was generated.
pub const CONFIG_HASH: &str = "kubernetes.io/config.hash";
/// When the kubelet first saw the pod, RFC 3339 with nanoseconds (set by the
/// source that read it, else by the merge).
pub const CONFIG_SEEN: &str = "kubernetes.io/config.seen";
/// Set on mirror pods: the hash of the static pod they mirror.
pub const CONFIG_MIRROR: &str = "kubernetes.io/config.mirror";

/// Annotations the kubelet keeps for itself: ignored when the merge compares
/// two versions of a pod, and carried over from the stored version on update.
pub const LOCAL: [&str; 3] = [CONFIG_SOURCE, CONFIG_MIRROR, CONFIG_SEEN];

/// Whether `key` is one of the [`LOCAL`] annotations.
pub fn is_local(key: &str) -> bool {
    LOCAL.contains(&key)
}

/// Stamps `config.seen` with `now` unless the pod has it: a source calls it
/// when it reads a pod, so the merge stores the source's allocation as it is
/// instead of a copy with the stamp (one copy of each pod, issue #16).
///
/// ```
/// use actlet::config::annotations::{CONFIG_SEEN, stamp_seen};
/// let mut pod = k8s_openapi::api::core::v1::Pod::default();
/// stamp_seen(&mut pod, "2026-12-01T10:00:00Z".parse().unwrap());
/// stamp_seen(&mut pod, "2026-12-02T10:00:00Z".parse().unwrap()); // kept
/// let seen = pod.metadata.annotations.as_ref().and_then(|a| a.get(CONFIG_SEEN));
/// assert_eq!(seen.map(String::as_str), Some("2026-12-01T10:00:00Z"));
/// ```
pub fn stamp_seen(pod: &mut k8s_openapi::api::core::v1::Pod, now: k8s_openapi::jiff::Timestamp) {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .entry(CONFIG_SEEN.to_owned())
        .or_insert_with(|| crate::config::merge::seen_timestamp(now));
}
