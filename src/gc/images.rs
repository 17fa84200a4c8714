//! Pure: image records and which unused images an image GC round removes
//! (upstream `images/image_gc_manager.go`).
//!
//! Every round first *detects*: each image present gets a record (first
//! detected now if new); images used by any container (running or not) get
//! `last_used = now`; records of vanished images are dropped. The eviction
//! order is least recently used first (never used before used; ties: first
//! detected first), leaving out images in use, pinned ones and the sandbox
//! image. With `imageMaximumGCAge` set (and the GC running for longer than
//! it), images unused for longer go first. Then, when the image filesystem
//! is at or above the high threshold, images at least `imageMinimumGCAge`
//! old are removed in that order until usage is back at the low threshold.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use super::error::GcError;
use super::policy::ImageGcPolicy;
use crate::cri::v1;

/// What is known about one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRecord {
    /// When a round first saw it.
    pub first_detected: Instant,
    /// When a round last saw a container using it (`None`: never).
    pub last_used: Option<Instant>,
    /// Its size in bytes.
    pub size: u64,
    /// Pinned by the runtime (never collected).
    pub pinned: bool,
}

/// The records of every image, by image ID. Lives outside the image GC
/// actor so that a restart does not forget when images were last used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageRecords(pub HashMap<String, ImageRecord>);

/// An image the eviction order names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Image ID.
    pub id: String,
    /// Size in bytes.
    pub size: u64,
    /// See [`ImageRecord`].
    pub first_detected: Instant,
    /// See [`ImageRecord`].
    pub last_used: Option<Instant>,
}

/// The IDs of the images `containers` use: an image is in use when its ID,
/// a tag or a digest of it is a container's image reference or image name.
pub fn images_in_use(images: &[v1::Image], containers: &[v1::Container]) -> HashSet<String> {
    let mut refs: HashSet<&str> = HashSet::new();
    for c in containers {
        refs.insert(c.image_ref.as_str());
        refs.insert(c.image_id.as_str());
        if let Some(spec) = &c.image {
            refs.insert(spec.image.as_str());
        }
    }
    refs.remove("");
    images
        .iter()
        .filter(|i| {
            refs.contains(i.id.as_str())
                || i.id.strip_prefix("sha256:").is_some_and(|h| refs.contains(h))
                || i.repo_tags
                    .iter()
                    .chain(&i.repo_digests)
                    .any(|r| refs.contains(r.as_str()))
        })
        .map(|i| i.id.clone())
        .collect()
}

impl ImageRecords {
    /// Upstream `detectImages` at `now` with the images present and those in use.
    pub fn detect(&mut self, images: &[v1::Image], in_use: &HashSet<String>, now: Instant) {
        let present: HashSet<&str> = images.iter().map(|i| i.id.as_str()).collect();
        self.0.retain(|id, _| present.contains(id.as_str()));
        for i in images {
            let r = self.0.entry(i.id.clone()).or_insert(ImageRecord {
                first_detected: now,
                last_used: None,
                size: 0,
                pinned: false,
            });
            if in_use.contains(&i.id) {
                r.last_used = Some(now);
            }
            r.size = i.size;
            r.pinned = i.pinned;
        }
    }

    /// Upstream `imagesInEvictionOrder`: unused, unpinned, unprotected
    /// images, least recently used first.
    pub fn eviction_order(&self, in_use: &HashSet<String>, protected: &HashSet<String>) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self
            .0
            .iter()
            .filter(|(id, r)| !in_use.contains(*id) && !protected.contains(*id) && !r.pinned)
            .map(|(id, r)| Candidate {
                id: id.clone(),
                size: r.size,
                first_detected: r.first_detected,
                last_used: r.last_used,
            })
            .collect();
        out.sort_by(|a, b| (a.last_used, a.first_detected, &a.id).cmp(&(b.last_used, b.first_detected, &b.id)));
        out
    }
}

/// Upstream `freeOldImages`: the images unused for longer than
/// `imageMaximumGCAge` (none while it is off, or until the GC has run for
/// that long), and the rest of the order.
pub fn split_old_images(
    order: Vec<Candidate>,
    policy: &ImageGcPolicy,
    now: Instant,
    began: Instant,
) -> (Vec<Candidate>, Vec<Candidate>) {
    if policy.max_age.is_zero() || now.saturating_duration_since(began) <= policy.max_age {
        return (vec![], order);
    }
    order.into_iter().partition(|c| {
        let since = c
            .last_used
            .map_or_else(|| now.saturating_duration_since(began), |t| now - t);
        // never used: as old as the GC itself (upstream compares with the zero time)
        since > policy.max_age
    })
}

/// Usage of the image filesystem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsUsage {
    /// Total bytes.
    pub capacity: u64,
    /// Bytes available.
    pub available: u64,
}

/// How much to free (upstream `GarbageCollect`): `Ok(None)` below the high
/// threshold, `Ok(Some(bytes))` to reach the low one; `Err` for a zero capacity.
pub fn bytes_to_free(usage: FsUsage, policy: &ImageGcPolicy) -> Result<Option<u64>, GcError> {
    if usage.capacity == 0 {
        return Err(GcError::InvalidCapacity);
    }
    let capacity = i128::from(usage.capacity);
    let available = i128::from(usage.available.min(usage.capacity));
    let usage_percent = 100 - available * 100 / capacity;
    if usage_percent < i128::from(policy.high_threshold_percent) {
        return Ok(None);
    }
    let amount = capacity * i128::from(100 - policy.low_threshold_percent) / 100 - available;
    Ok(Some(u64::try_from(amount.max(0)).unwrap_or(u64::MAX)))
}

/// The images old enough to be freed for space, in eviction order
/// (upstream `freeSpace`'s checks: not used at this round, at least
/// `imageMinimumGCAge` since first detected).
pub fn space_candidates(order: Vec<Candidate>, min_age: Duration, now: Instant) -> Vec<Candidate> {
    order
        .into_iter()
        .filter(|c| c.last_used.is_none_or(|t| t < now))
        .filter(|c| now.saturating_duration_since(c.first_detected) >= min_age)
        .collect()
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
