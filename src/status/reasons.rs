//! The upstream names the status carries: container waiting reasons, pod
//! condition types and condition reasons. Users, `kubectl` and monitoring rely
//! on these exact strings.

/// Waiting reason of a regular container while init containers run.
pub const POD_INITIALIZING: &str = "PodInitializing";
/// Default waiting reason of a container not created yet.
pub const CONTAINER_CREATING: &str = "ContainerCreating";
/// Terminated reason of a container the runtime lost track of.
pub const CONTAINER_STATUS_UNKNOWN: &str = "ContainerStatusUnknown";
/// Message of a container that was running and is now reported `Unknown`.
pub const MSG_NOT_LOCATED_TERMINATED: &str = "The container could not be located when the pod was terminated";
/// Message of a container that was running and vanished from the runtime.
pub const MSG_NOT_LOCATED_DELETED: &str =
    "The container could not be located when the pod was deleted.  The container used to be Running";
/// Exit code reported for containers whose real exit is unknown (SIGKILL).
pub const EXIT_CODE_UNKNOWN: i32 = 137;
/// Terminated reason when a container exited 0 and the runtime gave none.
pub const COMPLETED: &str = "Completed";
/// Terminated reason when a container exited non-zero and the runtime gave none.
pub const ERROR: &str = "Error";

/// Condition reason: every container status is unknown.
pub const UNKNOWN_CONTAINER_STATUSES: &str = "UnknownContainerStatuses";
/// Condition reason: all related containers have succeeded.
pub const POD_COMPLETED: &str = "PodCompleted";
/// Condition reason: the pod has failed, so have its containers.
pub const POD_FAILED: &str = "PodFailed";
/// Condition reason: one or more containers are not ready.
pub const CONTAINERS_NOT_READY: &str = "ContainersNotReady";
/// Condition reason: one or more init containers have not succeeded.
pub const CONTAINERS_NOT_INITIALIZED: &str = "ContainersNotInitialized";
/// Condition reason: one or more readiness gates are not ready.
pub const READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// Condition type `PodScheduled`.
pub const POD_SCHEDULED: &str = "PodScheduled";
/// Condition type `PodReadyToStartContainers` (sandbox with network exists).
pub const POD_READY_TO_START_CONTAINERS: &str = "PodReadyToStartContainers";
/// Condition type `Initialized`.
pub const INITIALIZED: &str = "Initialized";
/// Condition type `ContainersReady`.
pub const CONTAINERS_READY: &str = "ContainersReady";
/// Condition type `Ready`.
pub const READY: &str = "Ready";
/// Condition type `DisruptionTarget` (shared by the kubelet and controllers).
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// `DisruptionTarget`'s reason when the kubelet evicts or shuts down a pod.
pub const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";

/// Condition status `True`.
pub const TRUE: &str = "True";
/// Condition status `False`.
pub const FALSE: &str = "False";

/// Condition type: an in-place resize is being applied.
pub const POD_RESIZE_IN_PROGRESS: &str = "PodResizeInProgress";
/// Condition type: a resize waits (Deferred) or cannot be done (Infeasible).
pub const POD_RESIZE_PENDING: &str = "PodResizePending";

/// Whether the kubelet owns conditions of this type (upstream `PodConditionByKubelet`).
pub fn is_kubelet_condition(type_: &str) -> bool {
    matches!(
        type_,
        POD_SCHEDULED
            | READY
            | INITIALIZED
            | CONTAINERS_READY
            | POD_READY_TO_START_CONTAINERS
            | POD_RESIZE_IN_PROGRESS
            | POD_RESIZE_PENDING
    )
}

/// Whether conditions of this type are shared by the kubelet and other
/// components (upstream `PodConditionSharedByKubelet`).
pub fn is_shared_condition(type_: &str) -> bool {
    type_ == DISRUPTION_TARGET
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_owned_condition_types() {
        for t in [
            POD_SCHEDULED,
            READY,
            INITIALIZED,
            CONTAINERS_READY,
            POD_READY_TO_START_CONTAINERS,
        ] {
            assert!(is_kubelet_condition(t), "{t}");
            assert!(!is_shared_condition(t), "{t}");
        }
        assert!(!is_kubelet_condition(DISRUPTION_TARGET));
        assert!(is_shared_condition(DISRUPTION_TARGET));
        assert!(!is_kubelet_condition("example.com/gate"));
        assert!(!is_shared_condition("example.com/gate"));
    }
}
