//! [`ImageGc`]: the `image-gc` actor. Every `ImageGCPeriod` (5 min; the
//! first round at start) it detects images and their use, removes images
//! unused for longer than `imageMaximumGCAge`, and, when the image
//! filesystem is at or above `imageGCHighThresholdPercent`, removes unused
//! images least recently used first until it is back at
//! `imageGCLowThresholdPercent` (see [`super::images`]).
//!
//! Events on the node, as upstream: `InvalidDiskCapacity` for a zero
//! capacity, `FreeDiskSpaceFailed` when not enough could be freed, and
//! `ImageGCFailed` when rounds fail twice in a row. The records of image use
//! and the failure streak live in [`GcState`], outside the actor.

use std::collections::HashSet;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use super::error::GcError;
use super::exec::{self, RoundGuard, detached};
use super::image_fs::ImageFsSource;
use super::images::{bytes_to_free, images_in_use, space_candidates, split_old_images};
use super::policy::ImageGcPolicy;
use super::state::GcState;
use crate::cri::{SharedRuntime, v1};
use crate::events::{EventRecorder, node_ref};
use crate::messages::event::EventType;

/// What the image GC works with.
#[derive(Clone)]
pub struct ImageGcDeps {
    /// The runtime.
    pub runtime: SharedRuntime,
    /// The policy.
    pub policy: ImageGcPolicy,
    /// Round period (`ImageGCPeriod`).
    pub period: Duration,
    /// Where the image filesystem's usage comes from.
    pub image_fs: ImageFsSource,
    /// State outliving the actor.
    pub state: GcState,
    /// Node events.
    pub events: EventRecorder,
    /// The node's name (events).
    pub node_name: String,
}

/// What one round did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageRound {
    /// Images removed for their age.
    pub removed_by_age: usize,
    /// Bytes that had to be freed (0: below the high threshold).
    pub bytes_to_free: u64,
    /// Bytes freed for space.
    pub freed: u64,
}

/// The `image-gc` actor.
pub struct ImageGc {
    deps: ImageGcDeps,
}

impl ImageGc {
    /// An actor collecting with `deps`.
    pub fn new(deps: ImageGcDeps) -> Self {
        Self { deps }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let Some(guard) = self.deps.state.try_image_round() else {
            tracing::debug!("image GC: the previous round is still running");
            return;
        };
        let deps = self.deps.clone();
        ctx.spawn(
            async move { round(&deps, guard).await }
                .into_actor(self)
                .map(|result, act, _| act.finished(result)),
        );
    }

    fn event(&self, reason: &str, message: String) {
        self.deps
            .events
            .event(node_ref(&self.deps.node_name), EventType::Warning, reason, message);
    }

    fn finished(&mut self, result: Result<ImageRound, GcError>) {
        use std::sync::atomic::Ordering;
        let failed_before = &self.deps.state.image_failed;
        match result {
            Ok(r) => {
                if failed_before.swap(false, Ordering::AcqRel) {
                    tracing::info!(?r, "image garbage collection succeeded");
                } else {
                    tracing::debug!(?r, "image garbage collection succeeded");
                }
            }
            Err(e) => {
                match &e {
                    GcError::InvalidCapacity => self.event("InvalidDiskCapacity", e.to_string()),
                    GcError::FreeSpace { .. } => self.event("FreeDiskSpaceFailed", e.to_string()),
                    _ => {}
                }
                if failed_before.swap(true, Ordering::AcqRel) {
                    tracing::error!(error = %e, "image garbage collection failed multiple times in a row");
                    self.event("ImageGCFailed", e.to_string());
                } else {
                    tracing::error!(error = %e, "image garbage collection failed once; stats initialization may not have completed yet");
                }
            }
        }
    }
}

impl Actor for ImageGc {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.tick(ctx);
        ctx.run_interval(self.deps.period, |act, ctx| act.tick(ctx));
    }
}

fn cri(call: &'static str) -> impl FnOnce(crate::cri::CriError) -> GcError {
    move |source| GcError::Cri { call, source }
}

/// The ID of the runtime's sandbox (pause) image, as its verbose `Status`
/// names it (containerd: `config.sandboxImage`); `None` when it does not.
/// Image GC never removes it (containerd 1.6 does not pin it).
pub async fn sandbox_image_id(runtime: &SharedRuntime) -> Option<String> {
    let status = runtime.status(v1::StatusRequest { verbose: true }).await.ok()?;
    let config: serde_json::Value = serde_json::from_str(status.info.get("config")?).ok()?;
    let name = config.get("sandboxImage")?.as_str()?.to_string();
    let req = v1::ImageStatusRequest {
        image: Some(v1::ImageSpec {
            image: name,
            ..Default::default()
        }),
        verbose: false,
    };
    Some(runtime.image_status(req).await.ok()?.image?.id)
}

async fn remove(
    deps: &ImageGcDeps,
    images: Vec<super::images::Candidate>,
    bytes: u64,
    guard: &RoundGuard,
) -> (u64, Vec<String>) {
    let task = exec::remove_images(
        deps.runtime.clone(),
        images,
        bytes,
        deps.state.forget_image(),
        guard.clone(),
    );
    detached(task)
        .await
        .unwrap_or_else(|| (0, vec!["image removal task panicked".into()]))
}

/// The unused images in eviction order (least recently used first), the
/// records updated from the runtime's listing.
async fn unused_in_order(deps: &ImageGcDeps) -> Result<Vec<super::images::Candidate>, GcError> {
    let images = deps
        .runtime
        .list_images(v1::ListImagesRequest { filter: None })
        .await
        .map_err(cri("ListImages"))?
        .images;
    let containers = deps
        .runtime
        .list_containers(v1::ListContainersRequest {
            filter: Some(Default::default()),
        })
        .await
        .map_err(cri("ListContainers"))?
        .containers;
    let protected: HashSet<String> = sandbox_image_id(&deps.runtime).await.into_iter().collect();
    let in_use = images_in_use(&images, &containers);
    let mut records = deps.state.images();
    records.detect(&images, &in_use, Instant::now());
    Ok(records.eviction_order(&in_use, &protected))
}

/// Upstream `DeleteUnusedImages` (node-level reclaim for the eviction
/// manager): every unused image past `imageMinimumGCAge`, least recently
/// used first, whatever the thresholds say. The bytes freed.
pub(crate) async fn delete_unused_images(deps: &ImageGcDeps, guard: RoundGuard) -> Result<u64, GcError> {
    let order = unused_in_order(deps).await?;
    let candidates = space_candidates(order, deps.policy.min_age, Instant::now());
    let (freed, errors) = remove(deps, candidates, u64::MAX, &guard).await;
    if !errors.is_empty() {
        return Err(GcError::Removals {
            what: "errors in image deletion",
            errors,
        });
    }
    Ok(freed)
}

/// One round (upstream `GarbageCollect`).
async fn round(deps: &ImageGcDeps, guard: RoundGuard) -> Result<ImageRound, GcError> {
    let order = unused_in_order(deps).await?;
    let now = Instant::now();
    let mut report = ImageRound::default();

    let (old, rest) = split_old_images(order, &deps.policy, now, deps.state.began);
    if !old.is_empty() {
        report.removed_by_age = old.len();
        let (_, errors) = remove(deps, old, u64::MAX, &guard).await;
        if !errors.is_empty() {
            return Err(GcError::Removals {
                what: "wanted to free images older than imageMaximumGCAge",
                errors,
            });
        }
    }

    let usage = deps.image_fs.0.usage(deps.runtime.as_ref()).await?;
    let Some(amount) = bytes_to_free(usage, &deps.policy)? else {
        return Ok(report);
    };
    tracing::info!(
        capacity = usage.capacity,
        available = usage.available,
        high = deps.policy.high_threshold_percent,
        low = deps.policy.low_threshold_percent,
        amount_to_free = amount,
        "disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold"
    );
    report.bytes_to_free = amount;
    let candidates = space_candidates(rest, deps.policy.min_age, now);
    let (freed, errors) = remove(deps, candidates, amount, &guard).await;
    report.freed = freed;
    if !errors.is_empty() {
        return Err(GcError::Removals {
            what: "errors in image deletion",
            errors,
        });
    }
    if freed < amount {
        return Err(GcError::FreeSpace { wanted: amount, freed });
    }
    Ok(report)
}
