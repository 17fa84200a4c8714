//! Pure: what the eviction manager remembers between two observations
//! (upstream `managerImpl.thresholdsMet`, `thresholdsFirstObservedAt`,
//! `nodeConditionsLastObservedAt`) and one step of its `synchronize`:
//! thresholds met (not yet resolved ones held until their minimum reclaim is
//! reached), node conditions held for the pressure transition period, soft
//! thresholds acted on only after their grace period.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::time::Instant;

use super::signals::{Observations, met};
use super::thresholds::{Pressure, Threshold};

/// The remembered state (indices into the configured thresholds).
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    /// Thresholds met past their grace period at the last step.
    pub met: BTreeSet<usize>,
    /// When each currently met threshold was first seen met.
    pub first_observed: BTreeMap<usize, Instant>,
    /// When each pressure was last seen.
    pub last_pressure: BTreeMap<Pressure, Instant>,
}

/// The outcome of one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The node conditions to report (held for the transition period).
    pub pressures: BTreeSet<Pressure>,
    /// Thresholds to act on now (met, past their grace period), memory
    /// signals first (upstream `byEvictionPriority`), then in configured order.
    pub act_on: Vec<usize>,
}

impl Tracker {
    /// One observation at `now`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::eviction::{Observation, Observations, Signal, Threshold, Tracker, Value, Pressure};
    /// let soft = Threshold { signal: Signal::MemoryAvailable, value: Value::Quantity(100),
    ///                        grace_period: Duration::from_secs(60), min_reclaim: None };
    /// let low = Observations::from([(Signal::MemoryAvailable, Observation { available: 50, capacity: 1000 })]);
    /// let mut t = Tracker::default();
    /// let t0 = tokio::time::Instant::now();
    /// let s = t.step(&[soft.clone()], &low, t0, Duration::from_secs(300));
    /// assert!(s.pressures.contains(&Pressure::Memory) && s.act_on.is_empty()); // condition at once, eviction after the grace period
    /// let s = t.step(&[soft], &low, t0 + Duration::from_secs(60), Duration::from_secs(300));
    /// assert_eq!(s.act_on, vec![0]);
    /// ```
    pub fn step(&mut self, thresholds: &[Threshold], obs: &Observations, now: Instant, transition: Duration) -> Step {
        let mut now_met: BTreeSet<usize> = met(thresholds, obs, false).into_iter().collect();
        let previous: Vec<Threshold> = self.met.iter().filter_map(|&i| thresholds.get(i).cloned()).collect();
        let previous_idx: Vec<usize> = self.met.iter().copied().filter(|&i| i < thresholds.len()).collect();
        for j in met(&previous, obs, true) {
            now_met.insert(previous_idx[j]);
        }
        self.first_observed.retain(|i, _| now_met.contains(i));
        for &i in &now_met {
            self.first_observed.entry(i).or_insert(now);
            self.last_pressure.insert(thresholds[i].signal.pressure(), now);
        }
        self.last_pressure
            .retain(|_, seen| now.saturating_duration_since(*seen) < transition);
        let pressures = self.last_pressure.keys().copied().collect();
        self.met = now_met
            .into_iter()
            .filter(|i| {
                self.first_observed
                    .get(i)
                    .is_some_and(|t| now.saturating_duration_since(*t) >= thresholds[*i].grace_period)
            })
            .collect();
        let (mut act_on, rest): (Vec<usize>, Vec<usize>) = self
            .met
            .iter()
            .partition(|&&i| thresholds[i].signal.pressure() == Pressure::Memory);
        act_on.extend(rest);
        Step { pressures, act_on }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eviction::signals::Observation;
    use crate::eviction::thresholds::{Signal, Value};

    const TRANSITION: Duration = Duration::from_secs(300);

    fn hard(signal: Signal, value: i64, min_reclaim: Option<i64>) -> Threshold {
        Threshold {
            signal,
            value: Value::Quantity(value),
            grace_period: Duration::ZERO,
            min_reclaim: min_reclaim.map(Value::Quantity),
        }
    }

    fn obs(kv: &[(Signal, i64)]) -> Observations {
        kv.iter()
            .map(|&(s, a)| {
                (
                    s,
                    Observation {
                        available: a,
                        capacity: 1000,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn condition_held_for_the_transition_period() {
        let ts = [hard(Signal::MemoryAvailable, 100, None)];
        let mut t = Tracker::default();
        let t0 = Instant::now();
        let s = t.step(&ts, &obs(&[(Signal::MemoryAvailable, 50)]), t0, TRANSITION);
        assert_eq!(s.act_on, vec![0]);
        let calm = obs(&[(Signal::MemoryAvailable, 500)]);
        let s = t.step(&ts, &calm, t0 + Duration::from_secs(10), TRANSITION);
        assert!(s.act_on.is_empty());
        assert!(
            s.pressures.contains(&Pressure::Memory),
            "still under the transition period"
        );
        let s = t.step(&ts, &calm, t0 + TRANSITION, TRANSITION);
        assert!(s.pressures.is_empty());
    }

    #[test]
    fn min_reclaim_keeps_a_met_threshold_until_reclaimed() {
        let ts = [hard(Signal::NodeFsAvailable, 100, Some(50))];
        let mut t = Tracker::default();
        let t0 = Instant::now();
        assert_eq!(
            t.step(&ts, &obs(&[(Signal::NodeFsAvailable, 90)]), t0, TRANSITION)
                .act_on,
            vec![0]
        );
        // 120 is above the threshold but below threshold + min reclaim (150).
        let s = t.step(&ts, &obs(&[(Signal::NodeFsAvailable, 120)]), t0, TRANSITION);
        assert_eq!(s.act_on, vec![0]);
        assert!(s.pressures.contains(&Pressure::Disk));
        let s = t.step(&ts, &obs(&[(Signal::NodeFsAvailable, 160)]), t0, TRANSITION);
        assert!(s.act_on.is_empty());
        // Once resolved, 120 alone does not meet it again.
        assert!(
            t.step(&ts, &obs(&[(Signal::NodeFsAvailable, 120)]), t0, TRANSITION)
                .act_on
                .is_empty()
        );
    }

    #[test]
    fn soft_grace_restarts_when_the_threshold_clears() {
        let soft = Threshold {
            grace_period: Duration::from_secs(60),
            ..hard(Signal::PidAvailable, 100, None)
        };
        let ts = [soft];
        let (low, ok) = (obs(&[(Signal::PidAvailable, 10)]), obs(&[(Signal::PidAvailable, 900)]));
        let mut t = Tracker::default();
        let t0 = Instant::now();
        assert!(t.step(&ts, &low, t0, TRANSITION).act_on.is_empty());
        t.step(&ts, &ok, t0 + Duration::from_secs(30), TRANSITION);
        assert!(
            t.step(&ts, &low, t0 + Duration::from_secs(61), TRANSITION)
                .act_on
                .is_empty()
        );
        assert_eq!(
            t.step(&ts, &low, t0 + Duration::from_secs(121), TRANSITION).act_on,
            vec![0]
        );
    }

    #[test]
    fn memory_is_acted_on_first() {
        let ts = [
            hard(Signal::NodeFsAvailable, 100, None),
            hard(Signal::MemoryAvailable, 100, None),
        ];
        let mut t = Tracker::default();
        let s = t.step(
            &ts,
            &obs(&[(Signal::NodeFsAvailable, 1), (Signal::MemoryAvailable, 1)]),
            Instant::now(),
            TRANSITION,
        );
        assert_eq!(s.act_on, vec![1, 0]);
        assert_eq!(s.pressures.len(), 2);
    }
}
