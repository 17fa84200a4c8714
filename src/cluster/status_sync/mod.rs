//! The status syncer (upstream `status.manager`'s API half): writes the
//! status manager's pod statuses to the API server and finishes the deletion
//! of pods the API server is deleting once they have stopped.
//!
//! ```text
//! StatusManager ──StatusSyncSink──▶ StatusSyncer ──PATCH pods/<name>/status──▶ API
//!                  (uid changed)      │  reads the latest from StatusCache
//!                                     └─DELETE pods/<name> (grace 0, uid)──▶ API
//! ```
//!
//! - **Coalesced, latest wins.** The sink only says "uid changed"; the syncer
//!   keeps a set of dirty pods and reads the *latest* status when it writes.
//!   A failed write (API server down) keeps the pod dirty and is retried with
//!   backoff; nothing is lost and intermediate statuses are never replayed.
//! - **UID-checked.** The pod is read first, the status merged onto the API's
//!   ([`merge_for_api`]) and, when it differs, written as a two-way strategic
//!   merge patch ([`patch`]) carrying `metadata.uid` (a recreated pod of the
//!   same name answers 422).
//! - **Static pods** write to their mirror pod (found in [`MirrorPods`]); with
//!   no mirror yet the write waits.
//! - **Resync every 10 s**: every pod whose written version is older, whose
//!   target changed, or whose API copy differs is written again.
//! - **Finalisation** (upstream `canBeDeleted`): an API pod with a
//!   `deletionTimestamp`, nothing running in the runtime and its latest status
//!   written is deleted with grace 0 and a UID precondition. Mirror pods never.
//!
//! [`merge_for_api`]: crate::status::api_merge::merge_for_api
//! [`MirrorPods`]: crate::cluster::MirrorPods

pub mod actor;
pub mod api;
pub mod logic;
pub mod patch;
pub mod sink;

pub use actor::{GetSyncerPods, ResyncStatuses, StatusSyncDeps, StatusSyncEvent, StatusSyncer, SyncerPods};
pub use sink::StatusSyncSink;
