//! Node-pressure eviction (upstream `pkg/kubelet/eviction`): the node
//! reclaims memory, disk and pids before it falls over.
//!
//! - [`thresholds`]: signals and `evictionHard`/`evictionSoft`/… parsing;
//! - [`signals`]: observations from the node summary, thresholds met;
//! - [`tracker`]: grace periods, minimum reclaim, the pressure transition period;
//! - [`rank`](mod@rank): which pod goes first, and the eviction message;
//! - [`local_storage`]: per-pod local storage limits (`emptyDir.sizeLimit`,
//!   `ephemeral-storage` limits), checked every round;
//! - [`state`]: the owned [`EvictionHandle`] (node conditions, admission);
//! - [`actor`]: the `eviction-manager` actor.
//!
//! For disk signals the GC reclaims first (unused containers and images), and
//! a pod is evicted only when that was not enough. Not built yet: memory
//! threshold notifications (cgroup events); the summary is polled every
//! `monitoringInterval` (10 s).

pub mod actor;
mod actor_memcg;
pub mod local_storage;
pub mod memcg;
pub mod rank;
pub mod signals;
pub mod state;
pub mod thresholds;
pub mod tracker;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use actor::{EvictionDeps, EvictionManager};
pub use rank::{Candidate, Usage, rank};
pub use signals::{Observation, Observations, observe};
pub use state::{EvictionHandle, EvictionState};
pub use thresholds::{Pressure, Signal, Threshold, ThresholdError, ThresholdSettings, Value, parse_thresholds};
pub use tracker::{Step, Tracker};

use crate::stats::types::Summary;

/// Upstream `evictionMonitoringPeriod`.
pub const MONITORING_INTERVAL: Duration = Duration::from_secs(10);
/// Upstream default `evictionPressureTransitionPeriod`.
pub const PRESSURE_TRANSITION_PERIOD: Duration = Duration::from_secs(300);

/// A source of the node summary the eviction manager reads.
#[async_trait::async_trait]
pub trait NodeSummary: Send + Sync + 'static {
    /// The current summary (only the fields the signals read need be set).
    async fn summary(&self) -> Result<Summary, String>;

    /// Whether the runtime keeps images (and writable layers) on a
    /// filesystem of their own (upstream `HasDedicatedImageFs`); asked once.
    async fn has_dedicated_image_fs(&self) -> Result<bool, String> {
        Ok(false)
    }
}

#[async_trait::async_trait]
impl NodeSummary for crate::stats::StatsProvider {
    async fn summary(&self) -> Result<Summary, String> {
        self.collect().await.map(|c| c.summary).map_err(|e| e.to_string())
    }

    async fn has_dedicated_image_fs(&self) -> Result<bool, String> {
        self.has_dedicated_image_fs().await.map_err(|e| e.to_string())
    }
}

/// Node-level reclaim tried before a pod is evicted for a disk signal
/// (upstream: container GC, then every unused image).
#[async_trait::async_trait]
pub trait NodeReclaim: Send + Sync + 'static {
    /// Frees what can be freed without evicting pods; what it did.
    async fn reclaim(&self) -> Result<String, String>;
}

/// A shared [`NodeReclaim`] (cheap to clone).
#[derive(Clone)]
pub struct Reclaimer(pub Arc<dyn NodeReclaim>);

impl Reclaimer {
    /// Shares `reclaim`.
    pub fn new(reclaim: impl NodeReclaim) -> Self {
        Self(Arc::new(reclaim))
    }
}

impl fmt::Debug for Reclaimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reclaimer")
    }
}

/// A shared [`NodeSummary`] (cheap to clone).
#[derive(Clone)]
pub struct SummarySource(pub Arc<dyn NodeSummary>);

impl SummarySource {
    /// Shares `source`.
    pub fn new(source: impl NodeSummary) -> Self {
        Self(Arc::new(source))
    }
}

impl fmt::Debug for SummarySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SummarySource")
    }
}

/// The eviction manager's settings (`KubeletConfig::eviction`).
///
/// ```
/// let c = actlet::eviction::EvictionConfig::default();
/// assert!(c.thresholds.is_empty()); // no thresholds…
/// assert!(c.local_storage_capacity_isolation); // …but the local storage limits are watched
/// assert_eq!(c.pressure_transition_period, std::time::Duration::from_secs(300));
/// ```
#[derive(Clone, Debug)]
pub struct EvictionConfig {
    /// Hard and soft thresholds (none: the manager is not started).
    pub thresholds: Vec<Threshold>,
    /// `evictionPressureTransitionPeriod`.
    pub pressure_transition_period: Duration,
    /// `evictionMaxPodGracePeriod` (seconds, soft evictions).
    pub max_pod_grace_period: i64,
    /// How often the summary is read.
    pub monitoring_interval: Duration,
    /// Where the summary comes from (`None`: the node's stats provider).
    pub summary: Option<SummarySource>,
    /// `localStorageCapacityIsolation`: evict pods over their local storage
    /// limits (default on; with it off and no thresholds the manager is not
    /// started).
    pub local_storage_capacity_isolation: bool,
    /// `kernelMemcgNotification`: the kernel signals memory thresholds at
    /// once ([`memcg`]; cgroup v1 only, default off as upstream).
    pub kernel_memcg_notification: bool,
    /// The cgroup v1 memory hierarchy (`/sys/fs/cgroup/memory`).
    pub memory_cgroup_mount: std::path::PathBuf,
    /// The pods' cgroup under it (`/kubepods`: `allocatableMemory.available`).
    pub pods_cgroup: String,
}

impl Default for EvictionConfig {
    fn default() -> Self {
        Self {
            thresholds: vec![],
            pressure_transition_period: PRESSURE_TRANSITION_PERIOD,
            max_pod_grace_period: 0,
            monitoring_interval: MONITORING_INTERVAL,
            summary: None,
            local_storage_capacity_isolation: true,
            kernel_memcg_notification: false,
            memory_cgroup_mount: std::path::PathBuf::from("/sys/fs/cgroup/memory"),
            pods_cgroup: "/kubepods".to_string(),
        }
    }
}
