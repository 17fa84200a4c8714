//! The live supervision tree: one [`ChildInfo`] per supervised actor, shared
//! by every supervisor of a tree and readable from anywhere.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use dashmap::DashMap;

use super::exit::ExitReason;
use super::strategy::RestartPolicy;

/// Lifecycle state of a child, as last seen by its supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildState {
    /// Its factory is being called.
    Starting,
    /// An instance is running.
    Running,
    /// It exited and is about to be restarted (or waits for siblings to stop).
    Restarting,
    /// An orderly stop was requested and not yet confirmed.
    Stopping,
    /// Stopped on purpose or exited normally; not running.
    Stopped,
    /// Exited abnormally and was not restarted.
    Failed,
}

/// The last abnormal exit of a child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// How it ended.
    pub reason: ExitReason,
    /// When the supervisor saw it (wall clock).
    pub at: SystemTime,
}

/// What the tree knows about one supervised actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildInfo {
    /// Slash-separated path from the root, e.g. `root/pod-workers/pod-1234`.
    pub path: String,
    /// The child's name (last path segment).
    pub name: String,
    /// Short type name of the actor, e.g. `Supervisor` or `PodWorker`.
    pub kind: &'static str,
    /// Restart policy of the child.
    pub policy: RestartPolicy,
    /// Current state.
    pub state: ChildState,
    /// Instances started so far under the current supervisor instance (1 = first).
    pub generation: u64,
    /// Restarts so far under the current supervisor instance.
    pub restarts: u64,
    /// This child's restarts inside the supervisor's intensity window, as of
    /// its last restart.
    pub restarts_in_window: usize,
    /// The last abnormal exit, if any.
    pub last_failure: Option<Failure>,
    /// When the current (or last) instance was started.
    pub started_at: Option<SystemTime>,
}

impl ChildInfo {
    pub(crate) fn new(path: String, name: String, kind: &'static str, policy: RestartPolicy) -> Self {
        Self {
            path,
            name,
            kind,
            policy,
            state: ChildState::Starting,
            generation: 0,
            restarts: 0,
            restarts_in_window: 0,
            last_failure: None,
            started_at: None,
        }
    }
}

/// A cheap, cloneable, thread-safe handle on the live tree.
#[derive(Clone)]
pub struct SupervisionTree {
    entries: Arc<DashMap<String, ChildInfo>>,
    changes: Arc<tokio::sync::broadcast::Sender<ChildInfo>>,
}

impl Default for SupervisionTree {
    fn default() -> Self {
        Self {
            entries: Arc::default(),
            changes: Arc::new(tokio::sync::broadcast::channel(256).0),
        }
    }
}

impl fmt::Debug for SupervisionTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.snapshot()).finish()
    }
}

/// Whether `path` is `root` or below it.
fn within(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl SupervisionTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry, sorted by path (a parent comes before its children).
    pub fn snapshot(&self) -> Vec<ChildInfo> {
        let mut all: Vec<ChildInfo> = self.entries.iter().map(|e| e.value().clone()).collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        all
    }

    /// The entry at `path` and everything below it, sorted by path.
    pub fn subtree(&self, path: &str) -> Vec<ChildInfo> {
        let mut all: Vec<ChildInfo> = self
            .entries
            .iter()
            .filter(|e| within(e.key(), path))
            .map(|e| e.value().clone())
            .collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        all
    }

    /// The entry at `path`.
    pub fn get(&self, path: &str) -> Option<ChildInfo> {
        self.entries.get(path).map(|e| e.value().clone())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the tree has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every change of an entry from now on (start, restart, failure, stop),
    /// as the entry's new value. A subscriber that falls more than 256
    /// changes behind misses the oldest ones (`RecvError::Lagged`).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ChildInfo> {
        self.changes.subscribe()
    }

    pub(crate) fn insert(&self, info: ChildInfo) {
        let _ = self.changes.send(info.clone());
        self.entries.insert(info.path.clone(), info);
    }

    pub(crate) fn update(&self, path: &str, f: impl FnOnce(&mut ChildInfo)) {
        if let Some(mut entry) = self.entries.get_mut(path) {
            f(entry.value_mut());
            let _ = self.changes.send(entry.value().clone());
        }
    }

    /// Removes `path` and everything below it.
    pub(crate) fn remove_subtree(&self, path: &str) {
        self.entries.retain(|key, _| !within(key, path));
    }

    /// Removes everything strictly below `path`.
    pub(crate) fn remove_descendants(&self, path: &str) {
        self.entries.retain(|key, _| key == path || !within(key, path));
    }

    /// Marks everything strictly below `path` that still looks alive as stopped.
    pub(crate) fn mark_descendants_stopped(&self, path: &str) {
        for mut entry in self.entries.iter_mut() {
            let info = entry.value_mut();
            if info.path != path
                && within(&info.path, path)
                && !matches!(info.state, ChildState::Stopped | ChildState::Failed)
            {
                info.state = ChildState::Stopped;
            }
        }
    }
}
