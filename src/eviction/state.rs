//! [`EvictionHandle`]: what the eviction manager owns and must keep across
//! its restarts (the [`Tracker`], the pod being evicted), and what others
//! read from it synchronously: the node's pressure conditions (node status)
//! and the eviction admission check (sync loop; upstream `Admit`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{Pod, Toleration};
use tokio::time::Instant;

use super::thresholds::Pressure;
use super::tracker::Tracker;
use crate::admission::Rejection;
use crate::kuberuntime::qos::{QosClass, is_critical_pod, pod_qos};
use crate::messages::PodUid;

/// Upstream's eviction reason (pod status and events).
pub const REASON: &str = "Evicted";
/// The taint a BestEffort pod may tolerate to be admitted under memory pressure.
pub const MEMORY_PRESSURE_TAINT: &str = "node.kubernetes.io/memory-pressure";

/// The owned state.
#[derive(Debug, Default)]
pub struct EvictionState {
    /// Thresholds met, first-observed times, last pressure times.
    pub tracker: Tracker,
    /// The node conditions under pressure now.
    pub pressures: BTreeSet<Pressure>,
    /// The pods evicted last and when: the next eviction waits for them to
    /// be cleaned up (upstream `waitForPodsCleanup`).
    pub evicting: Option<(Vec<PodUid>, Instant)>,
}

/// The shared handle (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct EvictionHandle(Arc<Mutex<EvictionState>>);

fn tolerates_memory_pressure(tolerations: &[Toleration]) -> bool {
    tolerations.iter().any(|t| {
        let effect_ok = t.effect.as_deref().is_none_or(|e| e.is_empty() || e == "NoSchedule");
        let key = t.key.as_deref().unwrap_or("");
        let exists = t.operator.as_deref() == Some("Exists");
        let key_ok = if key.is_empty() {
            exists
        } else {
            key == MEMORY_PRESSURE_TAINT && (exists || t.value.as_deref().unwrap_or("").is_empty())
        };
        effect_ok && key_ok
    })
}

impl EvictionHandle {
    /// The state, locked.
    pub fn lock(&self) -> MutexGuard<'_, EvictionState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node conditions under pressure (`MemoryPressure`, …).
    pub fn pressures(&self) -> BTreeSet<Pressure> {
        self.lock().pressures.clone()
    }

    /// Upstream eviction `Admit`: under any pressure only critical pods are
    /// admitted, except that memory pressure alone still admits pods that
    /// are not BestEffort, and BestEffort pods tolerating the memory-pressure
    /// taint. The rejection is `Evicted`, "The node had condition: [...]".
    ///
    /// ```
    /// use actlet::eviction::{EvictionHandle, Pressure};
    /// use actlet::testing::PodBuilder;
    /// let h = EvictionHandle::default();
    /// let besteffort = PodBuilder::new("be").container("c", "busybox", ["true"]).build();
    /// assert!(h.admit(&besteffort).is_ok());
    /// h.lock().pressures.insert(Pressure::Memory);
    /// let r = h.admit(&besteffort).unwrap_err();
    /// assert_eq!((r.reason.as_str(), r.message.as_str()),
    ///            ("Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. "));
    /// let burstable = PodBuilder::new("b").container("c", "busybox", ["true"]).requests("c", &[("memory", "1Mi")]).build();
    /// assert!(h.admit(&burstable).is_ok());
    /// ```
    pub fn admit(&self, pod: &Pod) -> Result<(), Rejection> {
        let pressures = self.pressures();
        if pressures.is_empty() || is_critical_pod(pod) {
            return Ok(());
        }
        if pressures.len() == 1 && pressures.contains(&Pressure::Memory) {
            let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]);
            if pod_qos(pod) != QosClass::BestEffort || tolerates_memory_pressure(tolerations) {
                return Ok(());
            }
        }
        let names: Vec<&str> = pressures.iter().map(|p| p.condition()).collect();
        Err(Rejection::new(
            REASON,
            format!("The node had condition: [{}]. ", names.join(" ")),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::PodBuilder;

    fn besteffort() -> PodBuilder {
        PodBuilder::new("be").container("c", "busybox", ["true"])
    }

    #[test]
    fn disk_pressure_rejects_all_but_critical_pods() {
        let h = EvictionHandle::default();
        h.lock().pressures.extend([Pressure::Memory, Pressure::Disk]);
        let guaranteed = besteffort()
            .requests("c", &[("cpu", "1"), ("memory", "1Gi")])
            .limits("c", &[("cpu", "1"), ("memory", "1Gi")])
            .build();
        let r = h.admit(&guaranteed).unwrap_err();
        assert_eq!(
            r.event_message(),
            "The node had condition: [MemoryPressure DiskPressure]. "
        );
        let critical = besteffort()
            .modify(|p| p.spec.as_mut().unwrap().priority = Some(2_000_001_000))
            .build();
        assert!(h.admit(&critical).is_ok());
        let static_pod = besteffort().annotation("kubernetes.io/config.source", "file").build();
        assert!(h.admit(&static_pod).is_ok());
    }

    #[test]
    fn besteffort_tolerating_memory_pressure_is_admitted() {
        let h = EvictionHandle::default();
        h.lock().pressures.insert(Pressure::Memory);
        let tol = |key: Option<&str>, op: &str, effect: Option<&str>| {
            besteffort()
                .modify(|p| {
                    p.spec.as_mut().unwrap().tolerations = Some(vec![Toleration {
                        key: key.map(Into::into),
                        operator: Some(op.into()),
                        effect: effect.map(Into::into),
                        ..Default::default()
                    }])
                })
                .build()
        };
        assert!(
            h.admit(&tol(Some(MEMORY_PRESSURE_TAINT), "Exists", Some("NoSchedule")))
                .is_ok()
        );
        assert!(h.admit(&tol(None, "Exists", None)).is_ok());
        assert!(
            h.admit(&tol(Some(MEMORY_PRESSURE_TAINT), "Exists", Some("NoExecute")))
                .is_err()
        );
        assert!(
            h.admit(&tol(Some("node.kubernetes.io/disk-pressure"), "Exists", None))
                .is_err()
        );
    }
}
