//! Pure: the shutdown budget per priority group (upstream `migrateConfig`,
//! `groupByPriority`, `periodRequested`) and each pod's grace period.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

/// Upstream `scheduling.SystemCriticalPriority`.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// One `shutdownGracePeriodByPodPriority` entry: pods of at least
/// `priority` (up to the next entry) get `grace_period` in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityPeriod {
    /// The lowest priority of the group.
    pub priority: i32,
    /// How long the group may take.
    pub grace_period: Duration,
}

/// Upstream `migrateConfig`: `shutdownGracePeriod` split into the
/// non-critical part and `shutdownGracePeriodCriticalPods`; empty (off)
/// when the total is zero or smaller than the critical part.
///
/// ```
/// use std::time::Duration;
/// use actlet::nodeshutdown::groups::{migrate_config, PriorityPeriod};
/// let g = migrate_config(Duration::from_secs(30), Duration::from_secs(10));
/// assert_eq!(g, vec![
///     PriorityPeriod { priority: 0, grace_period: Duration::from_secs(20) },
///     PriorityPeriod { priority: 2_000_000_000, grace_period: Duration::from_secs(10) },
/// ]);
/// assert!(migrate_config(Duration::ZERO, Duration::ZERO).is_empty());
/// ```
pub fn migrate_config(total: Duration, critical: Duration) -> Vec<PriorityPeriod> {
    if total.is_zero() || critical > total {
        return vec![];
    }
    vec![
        PriorityPeriod {
            priority: 0,
            grace_period: total - critical,
        },
        PriorityPeriod {
            priority: SYSTEM_CRITICAL_PRIORITY,
            grace_period: critical,
        },
    ]
}

/// The groups in the order they are shut down (lowest priority first).
pub fn sorted(mut periods: Vec<PriorityPeriod>) -> Vec<PriorityPeriod> {
    periods.sort_by_key(|p| p.priority);
    periods
}

/// The sum of the groups' periods (what the logind inhibit delay must allow).
pub fn period_requested(periods: &[PriorityPeriod]) -> Duration {
    periods.iter().map(|p| p.grace_period).sum()
}

/// Upstream `groupByPriority`: each pod in the group of the highest
/// `priority` not above its own (below the lowest: the lowest). `periods`
/// must be sorted.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use actlet::nodeshutdown::groups::{group_by_priority, PriorityPeriod};
/// use actlet::testing::PodBuilder;
/// let p = |name: &str, prio: i32| Arc::new(PodBuilder::new(name).modify(|p| p.spec.as_mut().unwrap().priority = Some(prio)).build());
/// let periods = [PriorityPeriod { priority: 0, grace_period: Duration::from_secs(20) },
///                PriorityPeriod { priority: 1000, grace_period: Duration::from_secs(10) }];
/// let groups = group_by_priority(&periods, vec![p("low", -5), p("mid", 999), p("high", 1000), p("top", 5000)]);
/// let names = |i: usize| groups[i].1.iter().map(|p| p.metadata.name.clone().unwrap()).collect::<Vec<_>>();
/// assert_eq!(names(0), ["low", "mid"]);
/// assert_eq!(names(1), ["high", "top"]);
/// ```
pub fn group_by_priority(periods: &[PriorityPeriod], pods: Vec<Arc<Pod>>) -> Vec<(PriorityPeriod, Vec<Arc<Pod>>)> {
    let mut groups: Vec<(PriorityPeriod, Vec<Arc<Pod>>)> = periods.iter().map(|p| (*p, vec![])).collect();
    if groups.is_empty() {
        return groups;
    }
    for pod in pods {
        let priority = pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
        let index = groups.iter().rposition(|(g, _)| g.priority <= priority).unwrap_or(0);
        groups[index].1.push(pod);
    }
    groups
}

/// The grace period a pod of a group gets: the group's, or the pod's own
/// `terminationGracePeriodSeconds` when that is shorter.
pub fn pod_grace(group: &PriorityPeriod, pod: &Pod) -> Duration {
    let own = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs);
    match own {
        Some(own) if own <= group.grace_period => own,
        _ => group.grace_period,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::PodBuilder;

    #[test]
    fn critical_part_larger_than_total_turns_it_off() {
        assert!(migrate_config(Duration::from_secs(10), Duration::from_secs(20)).is_empty());
        let all_critical = migrate_config(Duration::from_secs(10), Duration::from_secs(10));
        assert_eq!(all_critical[0].grace_period, Duration::ZERO);
        assert_eq!(period_requested(&all_critical), Duration::from_secs(10));
    }

    #[test]
    fn pod_grace_is_the_shorter() {
        let g = PriorityPeriod {
            priority: 0,
            grace_period: Duration::from_secs(20),
        };
        assert_eq!(
            pod_grace(&g, &PodBuilder::new("a").grace_period(5).build()),
            Duration::from_secs(5)
        );
        assert_eq!(
            pod_grace(&g, &PodBuilder::new("b").grace_period(60).build()),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn sorted_lowest_first() {
        let s = sorted(vec![
            PriorityPeriod {
                priority: 100,
                grace_period: Duration::from_secs(1),
            },
            PriorityPeriod {
                priority: -1,
                grace_period: Duration::from_secs(2),
            },
        ]);
        assert_eq!(s[0].priority, -1);
    }
}
