//! `spec.activeDeadlineSeconds` (upstream `pkg/kubelet/active_deadline.go`):
//! a pod active on the node longer than its deadline (counted from
//! `status.startTime`) is failed with reason [`REASON`] and its containers
//! killed. Before the deadline, the worker asks to be synced again when it
//! falls due.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::messages::pod_work::KillStatus;

/// Status reason (and event reason) of a pod past its active deadline.
pub const REASON: &str = "DeadlineExceeded";
/// Status message (and event message) of a pod past its active deadline.
pub const MESSAGE: &str = "Pod was active on the node longer than the specified deadline";

/// Where a pod stands against its active deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// No deadline, or the pod has no start time yet.
    None,
    /// The deadline falls due after this much more time.
    In(Duration),
    /// The pod was active for its whole deadline (upstream: `>=`).
    Exceeded,
}

/// The pod's standing against `spec.activeDeadlineSeconds`, with `start`
/// the `status.startTime` of the pod's latest status and `now` the wall clock.
///
/// ```
/// use actlet::pod_workers::active_deadline::{Deadline, check};
/// use k8s_openapi::api::core::v1::{Pod, PodSpec};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
/// use k8s_openapi::jiff::Timestamp;
/// let pod = Pod { spec: Some(PodSpec { active_deadline_seconds: Some(5), ..Default::default() }), ..Default::default() };
/// let start = Timestamp::from_second(100).unwrap();
/// let start = Some(Time(start));
/// assert_eq!(check(&pod, start.as_ref(), Timestamp::from_second(103).unwrap()), Deadline::In(std::time::Duration::from_secs(2)));
/// assert_eq!(check(&pod, start.as_ref(), Timestamp::from_second(105).unwrap()), Deadline::Exceeded);
/// ```
pub fn check(pod: &Pod, start: Option<&Time>, now: Timestamp) -> Deadline {
    let Some(seconds) = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds) else {
        return Deadline::None;
    };
    let Some(start) = start else {
        return Deadline::None;
    };
    let allowed = Duration::from_secs(seconds.max(0) as u64);
    // A start time in the future (clock skew) counts as no time active.
    let active = Duration::try_from(now.duration_since(start.0)).unwrap_or(Duration::ZERO);
    match allowed.checked_sub(active) {
        Some(left) if !left.is_zero() => Deadline::In(left),
        _ => Deadline::Exceeded,
    }
}

/// The terminal status of a pod past its deadline.
pub fn kill_status() -> KillStatus {
    KillStatus {
        phase: "Failed".into(),
        reason: REASON.into(),
        message: MESSAGE.into(),
        disruption: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn pod(deadline: Option<i64>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                active_deadline_seconds: deadline,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn started_at(s: i64) -> Option<Time> {
        Some(Time(Timestamp::from_second(s).unwrap()))
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn no_deadline_or_no_start_time_is_no_deadline() {
        assert_eq!(check(&pod(None), started_at(0).as_ref(), at(1_000)), Deadline::None);
        assert_eq!(check(&pod(Some(1)), None, at(1_000)), Deadline::None);
    }

    #[test]
    fn exceeded_once_active_for_the_whole_deadline() {
        let p = pod(Some(30));
        assert_eq!(
            check(&p, started_at(100).as_ref(), at(100)),
            Deadline::In(Duration::from_secs(30))
        );
        assert_eq!(
            check(&p, started_at(100).as_ref(), at(129)),
            Deadline::In(Duration::from_secs(1))
        );
        assert_eq!(check(&p, started_at(100).as_ref(), at(130)), Deadline::Exceeded);
        assert_eq!(check(&p, started_at(100).as_ref(), at(500)), Deadline::Exceeded);
    }

    #[test]
    fn zero_deadline_is_exceeded_at_once_and_future_start_counts_as_not_active() {
        assert_eq!(
            check(&pod(Some(0)), started_at(100).as_ref(), at(100)),
            Deadline::Exceeded
        );
        assert_eq!(
            check(&pod(Some(10)), started_at(200).as_ref(), at(100)),
            Deadline::In(Duration::from_secs(10))
        );
    }

    #[test]
    fn kill_status_is_failed_with_upstream_reason_and_message() {
        let k = kill_status();
        assert_eq!((k.phase.as_str(), k.reason.as_str()), ("Failed", "DeadlineExceeded"));
        assert_eq!(
            k.message,
            "Pod was active on the node longer than the specified deadline"
        );
    }
}
