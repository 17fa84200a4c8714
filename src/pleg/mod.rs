//! The pod lifecycle event generator (upstream "generic PLEG").
//!
//! Every relist period the [`Pleg`] actor lists the runtime's
//! sandboxes and containers, compares each container's state with the previous
//! relist ([`events::compute_events`], pure), refreshes the [`PodCache`] for the
//! pods that changed, and sends one [`PodLifecycleEvent`](crate::messages::pleg::PodLifecycleEvent)
//! per change to the sync loop. The cache is what pod workers read before a
//! sync: they wait until it holds a status newer than their previous sync,
//! asking for a targeted relist of their pod when it does not. With
//! `EventedPLEG`, the runtime's container events ([`watch`]) ask for targeted
//! relists too and the global relist becomes a 300 s safety net.

pub mod actor;
pub mod cache;
pub mod events;
pub mod health;
mod list;
pub mod records;
pub mod requests;
pub mod watch;

pub use actor::Pleg;
pub use cache::{CacheEntry, PodCache, RelistRequest, StepGuard};
pub use health::{EventedPlegMetrics, PlegHealthHandle};
