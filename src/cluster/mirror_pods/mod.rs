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
//! A creation is remembered until the watch reports it, so a slow watch never
//! causes a second create; a deleted mirror is ignored while the watch may
//! still report it.

pub mod actor;
pub mod api;
pub mod logic;

pub use actor::{MirrorPodDeps, MirrorPodManager, SyncMirrorPods};
