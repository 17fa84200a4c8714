//! Runtime health: the CRI `Status` call every 5 s, turned into the
//! RuntimeReady / NetworkReady verdict that gates pod syncs and the node's
//! Ready condition.

pub mod actor;
mod verdict;

pub use actor::RuntimeHealth;
pub use verdict::{HealthGate, verdict};
