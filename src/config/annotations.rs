//! The `kubernetes.io/config.*` annotations the kubelet manages (upstream
//! `pkg/kubelet/types/pod_update.go`). Users and tools (`kubectl`, kubeadm)
//! read them, so the keys and value formats are upstream's.

/// Where the pod came from: `file`, `http`, `api` (set by the merge).
pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
/// Hash of a static pod's manifest; equals the pod UID when it was generated.
pub const CONFIG_HASH: &str = "kubernetes.io/config.hash";
/// When the kubelet first saw the pod, RFC 3339 with nanoseconds (set by the merge).
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
