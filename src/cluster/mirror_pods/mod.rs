//! Mirror pods (upstream `pod.MirrorClient` and the kubelet's mirror pod
//! handling): every static pod gets a mirror pod on the API server so the
//! cluster can see it; the static pod's status is written there by the
//! [status syncer](crate::cluster::status_sync).
//!
//! The [`MirrorPodManager`] compares the static pods in the
//! [`PodManager`](crate::pod_manager::PodManager) with the mirror pods the API
//! source's watch reports ([`MirrorPods`](crate::cluster::MirrorPods)) every
//! couple of seconds, or on [`SyncMirrorPods`]:
//!
//! - missing → created: a copy of the static pod with
//!   `kubernetes.io/config.mirror` = its `kubernetes.io/config.hash`, owned by
//!   the Node (what NodeRestriction allows, fixture 43);
//! - outdated (another hash) or being deleted → deleted (grace 0, UID
//!   precondition) and created again;
//! - orphaned (no static pod of that `namespace/name`) → deleted.
//!
//! A creation is remembered until the watch reports it (for at most
//! `pending_ttl`, 5 s: a mirror pod removed before the watch was looked at is
//! then created again), so a lagging watch does not cause a second create; a
//! deleted mirror is ignored for as long while the watch may still report it.
//! Every call is idempotent: a create that finds the same mirror answers
//! AlreadyExists and counts as done, a delete that finds it gone (404) or
//! replaced (409, UID precondition) too.

pub mod actor;
pub mod api;
pub mod logic;

pub use actor::{MirrorPodDeps, MirrorPodManager, SyncMirrorPods};
