//! When to renew a certificate, as upstream's certificate manager decides:
//! at a uniformly jittered point between 70 % and 90 % of its lifetime
//! (`notBefore + lifetime × (0.7 + 0.2 × r)`), immediately when that point
//! has passed (including an expired certificate).

use std::time::Duration;

use super::store::Validity;

/// The renewal deadline (Unix seconds) of a certificate valid over
/// `validity`, with `jitter` in `[0, 1)` (uniform random).
pub fn rotation_deadline(validity: Validity, jitter: f64) -> i64 {
    let lifetime = (validity.not_after - validity.not_before).max(0);
    let jitter = jitter.clamp(0.0, 1.0);
    // integer 70 % plus the jittered 20 %: no float rounding below the window
    let window = lifetime / 5;
    validity.not_before + lifetime * 7 / 10 + (window as f64 * jitter) as i64
}

/// How long to sleep from `now` until `deadline` (both Unix seconds); zero
/// when it has passed.
pub fn wait_until(deadline: i64, now: i64) -> Duration {
    Duration::from_secs((deadline - now).max(0) as u64)
}

/// The wait before asking again after a failed request: 2 s, doubling up
/// to 5 min; back to 2 s after a success (both certificate managers).
#[derive(Clone, Copy, Debug)]
pub struct RetryBackoff(Duration);

impl RetryBackoff {
    /// The first retry after a failure.
    pub const FIRST: Duration = Duration::from_secs(2);
    /// The longest wait between two requests.
    pub const MAX: Duration = Duration::from_secs(300);

    /// The wait after the next failure.
    pub fn current(&self) -> Duration {
        self.0
    }

    /// A failure: how long to wait now (the next one waits twice as long).
    pub fn failed(&mut self) -> Duration {
        let wait = self.0;
        self.0 = (self.0 * 2).min(Self::MAX);
        wait
    }

    /// A success: the next failure waits [`Self::FIRST`] again.
    pub fn succeeded(&mut self) {
        self.0 = Self::FIRST;
    }
}

impl Default for RetryBackoff {
    fn default() -> Self {
        Self(Self::FIRST)
    }
}

/// A random jitter in `[0, 1)`.
pub fn random_jitter() -> f64 {
    rand::random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Validity = Validity {
        not_before: 1_000,
        not_after: 11_000,
    };

    #[test]
    fn deadline_is_between_70_and_90_percent() {
        assert_eq!(rotation_deadline(V, 0.0), 8_000);
        assert_eq!(rotation_deadline(V, 0.5), 9_000);
        assert_eq!(rotation_deadline(V, 0.999_999), 9_999);
        // out-of-range jitter stays in the window
        assert_eq!(rotation_deadline(V, 7.0), 10_000);
        assert_eq!(rotation_deadline(V, -1.0), 8_000);
        for _ in 0..1000 {
            let d = rotation_deadline(V, random_jitter());
            assert!((8_000..10_000).contains(&d), "{d}");
        }
    }

    #[test]
    fn retries_double_up_to_five_minutes_and_reset_on_success() {
        let mut b = RetryBackoff::default();
        let waits: Vec<u64> = (0..10).map(|_| b.failed().as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        b.succeeded();
        assert_eq!(b.current(), Duration::from_secs(2));
    }

    #[test]
    fn passed_or_expired_deadline_is_immediate() {
        assert_eq!(wait_until(rotation_deadline(V, 0.0), 20_000), Duration::ZERO);
        assert_eq!(wait_until(8_000, 8_000), Duration::ZERO);
        assert_eq!(wait_until(8_000, 7_000), Duration::from_secs(1_000));
        // a certificate with NotAfter before NotBefore: renew at once
        let broken = Validity {
            not_before: 5_000,
            not_after: 4_000,
        };
        assert_eq!(rotation_deadline(broken, 0.5), 5_000);
    }
}
