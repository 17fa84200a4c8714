//! The volume manager's protocol.

use actix::prelude::*;

/// "Reconcile now": sent by a pod worker's `VolumeHandle` when it waits for
/// its pod's volumes; received by the `volume-manager`
/// (`src/volumes/actor.rs`), which runs a pass at once instead of at its
/// next period. Several in a row coalesce into one pass.
#[derive(Clone, Copy, Debug, Default, Message)]
#[rtype(result = "()")]
pub struct Reconcile;
