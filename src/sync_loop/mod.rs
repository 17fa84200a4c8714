//! The sync loop (upstream `syncLoop` / `syncLoopIteration`): the actor that
//! turns config updates, PLEG events, resync ticks and housekeeping into work
//! for the pod workers.
//!
//! - [`SyncLoop`]: the actor (a thin shell);
//! - [`dispatch`]: what each input means for the pod manager and the workers (pure);
//! - [`housekeeping`]: which pods to kill or forget (pure);
//! - [`requeue`]: when a pod whose sync finished is synced again, jittered (pure).

pub mod actor;
pub mod dispatch;
pub mod housekeeping;
pub mod requeue;
pub mod state;

pub use actor::{SyncLoop, SyncLoopConfig, SyncLoopHeartbeat};
pub use state::SyncLoopState;
