//! Pod workers: one actor per pod UID that runs the pod's syncs one at a time.
//!
//! - [`worker::PodWorker`]: the per-pod actor (a thin shell over [`sync`] and
//!   [`pending::UpdateSlot`]);
//! - [`manager::PodWorkers`]: creates a supervised worker per UID, routes
//!   updates, forgets terminated workers;
//! - [`pending::UpdateSlot`]: what a busy worker keeps of the updates it receives;
//! - [`sync_slots::SyncSlots`]: how many sync steps run their runtime work at once;
//! - [`work_queue::WorkQueue`]: when each pod is next due for a resync;
//! - [`active_deadline`]: `spec.activeDeadlineSeconds`;
//! - [`publish_memo::PublishMemo`]: a pod's last status publication, so a
//!   sync with the same inputs does not generate it again.

pub mod active_deadline;
pub mod deps;
pub mod finished;
pub mod manager;
pub mod pending;
pub mod publish_memo;
pub mod sync;
pub mod sync_slots;
pub mod sync_statuses;
pub mod work_queue;
pub mod worker;

pub use deps::WorkerDeps;
pub use manager::{ForgetWorkers, GetWorkerStates, PodWorkers};
pub use sync_slots::{DEFAULT_MAX_CONCURRENT_POD_SYNCS, SyncSlots};
pub use sync_statuses::{PodSyncStatus, PodSyncStatuses};
pub use worker::PodWorker;
