//! The eviction manager's kernel memcg notifiers (`kernelMemcgNotification`,
//! upstream `thresholdNotifiers`): after a summary, at most every
//! [`REFRESH_INTERVAL`], one notifier per memory threshold is registered at
//! the level the summary gives ([`memcg::level_for`]); when the kernel
//! signals one, the manager runs a round at once (registration writes
//! cgroupfs, so it runs on the blocking pool) ("… crossed", as upstream
//! logs it) and registers again from that round's summary.

use actix::prelude::*;
use tokio::time::Instant;

use super::actor::EvictionManager;
use super::memcg::{self, CgroupNotifier, MEMORY_USAGE_ATTRIBUTE, REFRESH_INTERVAL};
use crate::stats::types::Summary;

/// The notifiers in force (their waits, cancelled when replaced).
#[derive(Debug, Default)]
pub(super) struct MemcgWatches {
    waits: Vec<SpawnHandle>,
    updated: Option<Instant>,
    told_unsupported: bool,
}

impl EvictionManager {
    /// Registers the notifiers again when due.
    pub(super) fn update_memcg(&mut self, summary: &Summary, ctx: &mut Context<Self>) {
        let cfg = &self.deps.config;
        if !cfg.kernel_memcg_notification || self.memcg.updated.is_some_and(|t| t.elapsed() < REFRESH_INTERVAL) {
            return;
        }
        self.memcg.updated = Some(Instant::now());
        if !cfg.memory_cgroup_mount.join("cgroup.event_control").exists() {
            if !std::mem::replace(&mut self.memcg.told_unsupported, true) {
                tracing::warn!(
                    mount = %cfg.memory_cgroup_mount.display(),
                    "eviction manager: kernelMemcgNotification needs a cgroup v1 memory hierarchy; memory thresholds are checked every monitoring interval only"
                );
            }
            return;
        }
        for wait in self.memcg.waits.drain(..) {
            ctx.cancel_future(wait);
        }
        let thresholds: Vec<_> = cfg.thresholds.iter().filter(|t| memcg::watches(t)).cloned().collect();
        for t in thresholds {
            let description = memcg::description(&t);
            let Some(level) = memcg::level_for(&t, summary) else {
                tracing::info!(notifier = %description, "eviction manager: failed to update notifier: summary was incomplete");
                continue;
            };
            let cfg = &self.deps.config;
            let dir = memcg::cgroup_dir(&t, &cfg.memory_cgroup_mount, &cfg.pods_cgroup);
            // Registering writes cgroupfs: on the blocking pool, not here.
            let notifier = description.clone();
            let wait = async move {
                let register = move || CgroupNotifier::new(&dir, MEMORY_USAGE_ATTRIBUTE, level);
                let n = tokio::task::spawn_blocking(register)
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
                tracing::debug!(%notifier, watch = %n.what, "eviction manager: setting notifier");
                n.crossed().await.map_err(|e| e.to_string())
            };
            let handle = ctx.spawn(wait.into_actor(self).map(move |crossed, act, ctx| match crossed {
                Ok(()) => {
                    tracing::info!("eviction manager: {description} crossed");
                    act.memcg.updated = None; // register again from this round's summary
                    act.tick(ctx);
                }
                Err(e) => tracing::warn!(notifier = %description, error = %e, "eviction manager: memory threshold notifier failed; the monitoring interval still applies"),
            }));
            self.memcg.waits.push(handle);
        }
    }
}
