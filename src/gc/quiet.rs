//! When a container GC round may be skipped: [`QuietRounds`].
//!
//! A round reads the whole runtime (two `ListContainers` and two
//! `ListPodSandbox` calls), every desired pod and every worker record: at
//! 10,000 pods more than half of an idle node's CPU. Its decisions
//! ([`super::containers`]) depend only on what the runtime holds, which pods
//! are desired and what their workers do — and on time, through
//! `minimum-container-ttl-duration` (`min_age`). So once a round found
//! nothing to remove, the next one would find nothing either while the
//! generations of those three inputs stay where they were when it began
//! (the PLEG's pod cache moves with every container or sandbox change it
//! sees, the pod manager with every pod added or removed, the worker
//! records with every change of state) and `min_age` is zero. A skipped
//! period costs three atomic reads. A full round still runs at least every
//! [`MAX_SKIPPED_ROUNDS`]` + 1` periods, for what none of those inputs see
//! (a container created or killed behind the kubelet's back while the
//! PLEG's relist has not come round yet, a pod log directory left by
//! someone else).

/// Periods in a row a quiet node may skip before a full round runs anyway
/// (with upstream's 1 min `ContainerGCPeriod`: a full round every 10 min).
pub const MAX_SKIPPED_ROUNDS: u32 = 9;

/// The generations of a round's inputs, read when it begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundMarks {
    /// [`PodManager::generation`](crate::pod_manager::PodManager::generation).
    pub pods: u64,
    /// [`PodSyncStatuses::generation`](crate::pod_workers::PodSyncStatuses::generation).
    pub workers: u64,
    /// [`PodCache::generation`](crate::pleg::PodCache::generation).
    pub runtime: u64,
}

/// The last round that removed nothing, and the periods skipped since.
///
/// ```
/// use actlet::gc::quiet::{MAX_SKIPPED_ROUNDS, QuietRounds, RoundMarks};
/// let marks = RoundMarks { pods: 1, workers: 1, runtime: 1 };
/// let mut quiet = QuietRounds::default();
/// assert!(!quiet.skip(marks), "no clean round yet");
/// quiet.finished(marks, true);
/// assert!(quiet.skip(marks));
/// assert!(!quiet.skip(RoundMarks { runtime: 2, ..marks }), "a container changed");
/// for _ in 1..MAX_SKIPPED_ROUNDS {
///     assert!(quiet.skip(marks));
/// }
/// assert!(!quiet.skip(marks), "a full round is due");
/// ```
#[derive(Clone, Debug, Default)]
pub struct QuietRounds {
    clean: Option<RoundMarks>,
    skipped: u32,
}

impl QuietRounds {
    /// Whether the round due now, whose inputs are at `now`, may be skipped
    /// (the last round removed nothing, began at the same marks, and fewer
    /// than [`MAX_SKIPPED_ROUNDS`] periods were skipped since); counts the
    /// skip.
    pub fn skip(&mut self, now: RoundMarks) -> bool {
        let quiet = self.clean == Some(now) && self.skipped < MAX_SKIPPED_ROUNDS;
        if quiet {
            self.skipped += 1;
        }
        quiet
    }

    /// A round that began at `marks` ended; `clean`: it succeeded and
    /// removed nothing.
    pub fn finished(&mut self, marks: RoundMarks, clean: bool) {
        self.clean = clean.then_some(marks);
        self.skipped = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: RoundMarks = RoundMarks {
        pods: 3,
        workers: 5,
        runtime: 7,
    };

    #[test]
    fn any_moved_input_or_an_unclean_round_means_a_round() {
        let mut quiet = QuietRounds::default();
        quiet.finished(M, true);
        for moved in [
            RoundMarks { pods: 4, ..M },
            RoundMarks { workers: 6, ..M },
            RoundMarks { runtime: 8, ..M },
        ] {
            assert!(!quiet.skip(moved), "{moved:?}");
        }
        quiet.finished(M, false);
        assert!(!quiet.skip(M), "the last round removed something or failed");
    }

    #[test]
    fn a_round_resets_the_skip_count() {
        let mut quiet = QuietRounds::default();
        quiet.finished(M, true);
        let skipped = std::iter::repeat_with(|| quiet.skip(M)).take_while(|s| *s).count();
        assert_eq!(skipped as u32, MAX_SKIPPED_ROUNDS);
        quiet.finished(M, true);
        assert!(quiet.skip(M), "counted afresh after the full round");
    }
}
