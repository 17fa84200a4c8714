//! GC policies and periods (upstream `kubecontainer.GCPolicy`,
//! `images.ImageGCPolicy`, `ContainerGCPeriod`, `ImageGCPeriod`).

use std::time::Duration;

/// How often dead containers and sandboxes are collected (upstream `ContainerGCPeriod`).
pub const CONTAINER_GC_PERIOD: Duration = Duration::from_secs(60);
/// How often unused images are collected (upstream `ImageGCPeriod`).
pub const IMAGE_GC_PERIOD: Duration = Duration::from_secs(300);

/// Which dead containers may go (upstream `GCPolicy`; defaults in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerGcPolicy {
    /// Minimum age (since creation) of a dead container before it may be collected (0).
    pub min_age: Duration,
    /// Dead containers kept per (pod UID, container name); negative: no limit (1).
    pub max_per_pod_container: i32,
    /// Dead containers kept on the node; negative: no limit (-1).
    pub max_containers: i32,
}

impl Default for ContainerGcPolicy {
    fn default() -> Self {
        Self {
            min_age: Duration::ZERO,
            max_per_pod_container: 1,
            max_containers: -1,
        }
    }
}

/// When unused images are collected (upstream `ImageGCPolicy`; defaults in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageGcPolicy {
    /// `imageGCHighThresholdPercent` (85): at or above this disk usage, images are freed.
    pub high_threshold_percent: i32,
    /// `imageGCLowThresholdPercent` (80): images are freed down to this usage.
    pub low_threshold_percent: i32,
    /// `imageMinimumGCAge` (2 min): an image first seen more recently is kept.
    pub min_age: Duration,
    /// `imageMaximumGCAge` (0: off): an image unused for longer is removed whatever the usage.
    pub max_age: Duration,
}

impl Default for ImageGcPolicy {
    fn default() -> Self {
        Self {
            high_threshold_percent: 85,
            low_threshold_percent: 80,
            min_age: Duration::from_secs(120),
            max_age: Duration::ZERO,
        }
    }
}

impl ImageGcPolicy {
    /// Upstream `NewImageGCManager`'s checks; `Err` names the field and the reason.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let (high, low) = (self.high_threshold_percent, self.low_threshold_percent);
        if !(0..=100).contains(&high) {
            return Err((
                "imageGCHighThresholdPercent",
                format!("invalid HighThresholdPercent {high}, must be in range [0-100]"),
            ));
        }
        if !(0..=100).contains(&low) {
            return Err((
                "imageGCLowThresholdPercent",
                format!("invalid LowThresholdPercent {low}, must be in range [0-100]"),
            ));
        }
        if low > high {
            return Err((
                "imageGCLowThresholdPercent",
                format!("LowThresholdPercent {low} can not be higher than HighThresholdPercent {high}"),
            ));
        }
        if !self.max_age.is_zero() && self.max_age <= self.min_age {
            return Err((
                "imageMaximumGCAge",
                format!(
                    "imageMaximumGCAge {:?} must be greater than imageMinimumGCAge {:?}",
                    self.max_age, self.min_age
                ),
            ));
        }
        Ok(())
    }

    /// Upstream stubs image GC out when the high threshold is 100 and there is no maximum age.
    pub fn disabled(&self) -> bool {
        self.high_threshold_percent == 100 && self.max_age.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_upstreams() {
        let c = ContainerGcPolicy::default();
        assert_eq!(
            (c.min_age, c.max_per_pod_container, c.max_containers),
            (Duration::ZERO, 1, -1)
        );
        let i = ImageGcPolicy::default();
        assert_eq!((i.high_threshold_percent, i.low_threshold_percent), (85, 80));
        assert_eq!((i.min_age, i.max_age), (Duration::from_secs(120), Duration::ZERO));
        assert!(i.validate().is_ok() && !i.disabled());
    }

    #[test]
    fn bad_image_policies_name_their_field() {
        let bad = |f: fn(&mut ImageGcPolicy)| {
            let mut p = ImageGcPolicy::default();
            f(&mut p);
            p.validate().unwrap_err().0
        };
        assert_eq!(bad(|p| p.high_threshold_percent = 101), "imageGCHighThresholdPercent");
        assert_eq!(bad(|p| p.low_threshold_percent = -1), "imageGCLowThresholdPercent");
        assert_eq!(bad(|p| p.low_threshold_percent = 90), "imageGCLowThresholdPercent");
        assert_eq!(bad(|p| p.max_age = Duration::from_secs(60)), "imageMaximumGCAge");
        let off = ImageGcPolicy {
            high_threshold_percent: 100,
            ..Default::default()
        };
        assert!(off.disabled());
    }
}
