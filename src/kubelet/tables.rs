//! [`PodTableSizes`]: how many pods each per-pod table of a running kubelet
//! holds — the leak check of issue #10 ("after 1,000 pods come and go, the
//! maps hold only the live pods"), for tests, and on `/metrics` as
//! `actlet_pod_table_entries{table}` (see [`PodTableSizes::entries`]).

use std::collections::HashSet;
use std::sync::Arc;

use super::handle::Kubelet;
use crate::actors::supervisor::SupervisionTree;
use crate::allocation::Allocations;
use crate::kuberuntime::RuntimeManager;
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;
use crate::pod_workers::PodSyncStatuses;
use crate::prober::store::ProbeStore;
use crate::status::StatusCache;
use crate::sync_loop::SyncLoopState;
use crate::volumes::VolumeStore;

/// The shared handles of every per-pod table: what
/// [`Kubelet::pod_table_sizes`] and `/metrics` count ([`Tables::sizes`]).
#[derive(Clone)]
pub(crate) struct Tables {
    /// Desired pods.
    pub pods: PodManager,
    /// API statuses.
    pub statuses: StatusCache,
    /// Lifecycle records of the pod workers.
    pub lifecycle: PodSyncStatuses,
    /// The PLEG's cache.
    pub cache: PodCache,
    /// Probe results and probe worker progress.
    pub probes: ProbeStore,
    /// The supervision tree (the pod workers).
    pub tree: SupervisionTree,
    /// The runtime manager (restart and image pull backoffs).
    pub manager: Arc<RuntimeManager>,
    /// Mounted volumes, per pod.
    pub volumes: VolumeStore,
    /// Admission totals.
    pub sync_state: SyncLoopState,
    /// Pending in-place resizes.
    pub allocations: Allocations,
}

/// How many entries each per-pod table holds, at one moment. Once pods have
/// come and gone, each is at most the number of live pods (the backoffs: once
/// their entries are older than twice the longest delay, 10 min).
///
/// ```
/// # actlet::testing::run_paused(async {
/// let node = actlet::testing::TestNode::start();
/// let sizes = node.kubelet().pod_table_sizes();
/// assert_eq!(sizes, actlet::kubelet::PodTableSizes::default()); // no pods, nothing known
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PodTableSizes {
    /// Desired pods (the pod manager).
    pub desired: usize,
    /// API statuses (the status cache).
    pub statuses: usize,
    /// Lifecycle records (`PodSyncStatuses`).
    pub lifecycle: usize,
    /// Runtime statuses (the PLEG's cache).
    pub runtime_cache: usize,
    /// Pods with probe results or probe worker progress.
    pub probes: usize,
    /// Pods with volume state.
    pub volumes: usize,
    /// Pods counted by admission.
    pub admitted: usize,
    /// Pods admission refused.
    pub rejected: usize,
    /// Pods with a pending in-place resize.
    pub pending_resizes: usize,
    /// Pods with a container restart backoff (`CrashLoopBackOff`) entry.
    pub restart_backoffs: usize,
    /// Pods with an image pull backoff (`ImagePullBackOff`) entry.
    pub image_backoffs: usize,
    /// Supervised pod workers (`root/pod-workers/pod-<uid>`).
    pub pod_workers: usize,
}

impl PodTableSizes {
    /// Every table by name (its field's name), in declaration order: the
    /// `table` label of `actlet_pod_table_entries` on `/metrics`.
    ///
    /// ```
    /// let sizes = actlet::kubelet::PodTableSizes::default();
    /// let names: Vec<&str> = sizes.entries().iter().map(|(name, _)| *name).collect();
    /// assert_eq!(names[..4], ["desired", "statuses", "lifecycle", "runtime_cache"]);
    /// assert!(sizes.entries().iter().all(|(_, n)| *n == 0));
    /// ```
    pub fn entries(&self) -> [(&'static str, usize); 12] {
        [
            ("desired", self.desired),
            ("statuses", self.statuses),
            ("lifecycle", self.lifecycle),
            ("runtime_cache", self.runtime_cache),
            ("probes", self.probes),
            ("volumes", self.volumes),
            ("admitted", self.admitted),
            ("rejected", self.rejected),
            ("pending_resizes", self.pending_resizes),
            ("restart_backoffs", self.restart_backoffs),
            ("image_backoffs", self.image_backoffs),
            ("pod_workers", self.pod_workers),
        ]
    }
}

impl Kubelet {
    /// How many pods each per-pod table holds now (see [`PodTableSizes`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::testing::{PodBuilder, TestNode, wait_until};
    /// # actlet::testing::run_paused(async {
    /// let node = TestNode::start();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(30)).await.unwrap();
    /// let sizes = node.kubelet().pod_table_sizes();
    /// assert_eq!((sizes.desired, sizes.statuses, sizes.pod_workers), (1, 1, 1));
    /// assert_eq!(sizes.restart_backoffs, 0); // it never crashed
    /// # });
    /// ```
    pub fn pod_table_sizes(&self) -> PodTableSizes {
        self.tables.sizes()
    }
}

impl Tables {
    /// How many pods each table holds now.
    pub(crate) fn sizes(&self) -> PodTableSizes {
        let (admitted, rejected) = {
            let book = self.sync_state.lock();
            (book.admitted.len(), book.rejected.len())
        };
        PodTableSizes {
            desired: self.pods.len(),
            statuses: self.statuses.len(),
            lifecycle: self.lifecycle.len(),
            runtime_cache: self.cache.len(),
            probes: self.probes.pods().len(),
            volumes: self.volumes.uids().len(),
            admitted,
            rejected,
            pending_resizes: self.allocations.pending_uids().len(),
            restart_backoffs: distinct_uids(self.manager.backoff().keys(), uid_of_restart_key),
            image_backoffs: distinct_uids(self.manager.image_backoff().keys(), uid_of_image_key),
            pod_workers: (self.tree.subtree("root/pod-workers").iter())
                .filter(|c| c.path.starts_with("root/pod-workers/pod-"))
                .count(),
        }
    }
}

fn distinct_uids(keys: Vec<String>, uid: fn(&str) -> &str) -> usize {
    keys.iter().map(|k| uid(k)).collect::<HashSet<_>>().len()
}

/// The UID in a restart backoff key `<pod>_<namespace>_<uid>_<container>_<hash>`
/// (names and namespaces have no `_`; UIDs neither).
fn uid_of_restart_key(key: &str) -> &str {
    key.split('_').nth(2).unwrap_or(key)
}

/// The UID in an image backoff key `<uid>_<image>`.
fn uid_of_image_key(key: &str) -> &str {
    key.split_once('_').map_or(key, |(uid, _)| uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kuberuntime::backoff::{container_backoff_key, image_backoff_key};

    #[test]
    fn backoff_keys_name_their_pod() {
        let k = container_backoff_key("web", "default", "u-1", "app", "abc");
        assert_eq!(uid_of_restart_key(&k), "u-1");
        assert_eq!(uid_of_image_key(&image_backoff_key("u-2", "busybox:1.36")), "u-2");
        let keys = vec![
            container_backoff_key("web", "default", "u-1", "app", "abc"),
            container_backoff_key("web", "default", "u-1", "side", "def"),
        ];
        assert_eq!(distinct_uids(keys, uid_of_restart_key), 1, "one pod, two containers");
    }
}
