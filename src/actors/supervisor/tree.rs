//! The live supervision tree: one [`ChildInfo`] per supervised actor, shared
//! by every supervisor of a tree and readable from anywhere.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use dashmap::DashMap;

use super::exit::ExitReason;
use super::mailbox::MailboxGauge;
use super::strategy::RestartPolicy;

/// Lifecycle state of a child, as last seen by its supervisor.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// let state = |tree: &SupervisionTree| tree.get("root/counter").unwrap().state;
/// assert_eq!(state(root.tree()), ChildState::Running);
/// root.stop_child("counter").await.unwrap();
/// assert_eq!(state(root.tree()), ChildState::Stopped);
/// # });
/// ```
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
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// counter_ref.do_send(Crash).unwrap();
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1)); // the restarted instance
/// let failure: Failure = root.tree().get("root/counter").unwrap().last_failure.unwrap();
/// assert_eq!(failure.reason, ExitReason::Failed("crashed on purpose".into()));
/// assert!(failure.at <= std::time::SystemTime::now());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// How it ended.
    pub reason: ExitReason,
    /// When the supervisor saw it (wall clock).
    pub at: SystemTime,
}

/// What the tree knows about one supervised actor.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0));
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// counter_ref.do_send(Crash).unwrap();
/// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
/// let info: ChildInfo = root.tree().get("root/counter").unwrap();
/// assert_eq!((info.name.as_str(), info.kind, info.policy), ("counter", "Counter", RestartPolicy::Permanent));
/// assert_eq!((info.state, info.generation, info.restarts), (ChildState::Running, 2, 1));
/// # });
/// ```
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
    /// False for a [`Criticality::NonCritical`](super::Criticality) child.
    pub critical: bool,
    /// A non-critical child that exceeded its restart intensity: it is retried
    /// at its longest backoff instead of escalating. Cleared once an instance
    /// has run for the backoff's `reset_after`.
    pub exhausted: bool,
    /// When the current (or last) instance was started.
    pub started_at: Option<SystemTime>,
    /// The child's mailbox as of this read (`None` in change notifications
    /// and for entries without a mailbox).
    pub mailbox: Option<MailboxDepth>,
}

/// How full a child's mailbox is.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let counter = ChildSpec::new("counter", || Counter(0)).mailbox_capacity(8);
/// let counter_ref = counter.child_ref();
/// let root = SupervisorSpec::new("root").child(counter).start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// counter_ref.do_send(Add(1)).unwrap();
/// counter_ref.do_send(Add(2)).unwrap(); // not handled before this task yields
/// let depth = root.tree().get("root/counter").unwrap().mailbox;
/// assert_eq!(depth, Some(MailboxDepth { queued: 2, capacity: 8 }));
/// assert_eq!(counter_ref.send(Add(0)).await, Ok(3));
/// assert_eq!(root.tree().get("root/counter").unwrap().mailbox.unwrap().queued, 0);
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailboxDepth {
    /// Messages waiting to be handled.
    pub queued: usize,
    /// The mailbox's capacity.
    pub capacity: usize,
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
            critical: true,
            exhausted: false,
            started_at: None,
            mailbox: None,
        }
    }
}

/// A cheap, cloneable, thread-safe handle on the live tree.
///
/// ```
/// # use std::time::Duration;
/// # use actix::{Actor, ActorContext, Context, Handler, Message};
/// # use actlet::actors::supervisor::*;
/// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
/// # actlet::testing::run_paused(async {
/// let root = SupervisorSpec::new("root")
///     .child(ChildSpec::new("counter", || Counter(0)))
///     .child(SupervisorSpec::new("workers").child(ChildSpec::new("pod-1", || Counter(0))))
///     .start_root();
/// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
/// let tree: SupervisionTree = root.tree().clone(); // cheap; readable from any thread
/// let dump = std::thread::spawn(move || {
///     tree.snapshot().iter().map(|c| format!("{} {:?}", c.path, c.state)).collect::<Vec<_>>()
/// });
/// assert_eq!(dump.join().unwrap()[3], "root/workers/pod-1 Running");
/// # });
/// ```
#[derive(Clone)]
pub struct SupervisionTree {
    entries: Arc<DashMap<String, ChildInfo>>,
    /// Parent path → its children's paths: subtree operations visit the
    /// subtree only (a supervisor may hold 10,000 pod workers).
    kids: Arc<DashMap<String, HashSet<String>>>,
    mailboxes: Arc<DashMap<String, Arc<dyn MailboxGauge>>>,
    changes: Arc<tokio::sync::broadcast::Sender<ChildInfo>>,
    /// Told when a non-critical child becomes exhausted (see [`SupervisionTree::on_exhausted`]).
    exhausted_hook: Arc<std::sync::RwLock<Option<ExhaustedHook>>>,
}

/// What [`SupervisionTree::on_exhausted`] calls.
pub type ExhaustedHook = Arc<dyn Fn(&ChildInfo) + Send + Sync>;

impl Default for SupervisionTree {
    fn default() -> Self {
        Self {
            entries: Arc::default(),
            kids: Arc::default(),
            mailboxes: Arc::default(),
            changes: Arc::new(tokio::sync::broadcast::channel(256).0),
            exhausted_hook: Arc::default(),
        }
    }
}

impl fmt::Debug for SupervisionTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.snapshot()).finish()
    }
}

/// The path of the supervisor above `info` (`None` for a root): its path
/// without `/<name>` (a name may itself hold a `/`).
fn parent_of(info: &ChildInfo) -> Option<&str> {
    info.path.strip_suffix(info.name.as_str())?.strip_suffix('/')
}

/// Whether `path` is `root` or below it.
fn within(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl SupervisionTree {
    /// An empty tree.
    ///
    /// ```
    /// # use actlet::actors::supervisor::SupervisionTree;
    /// let tree = SupervisionTree::new();
    /// assert!(tree.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Every entry, sorted by path (a parent comes before its children).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// let paths: Vec<String> = root.tree().snapshot().into_iter().map(|c| c.path).collect();
    /// assert_eq!(paths, ["root", "root/counter"]);
    /// # });
    /// ```
    pub fn snapshot(&self) -> Vec<ChildInfo> {
        let mut all: Vec<ChildInfo> = self.entries.iter().map(|e| self.read(e.value())).collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        all
    }

    /// The entry at `path` and everything below it, sorted by path.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root")
    ///     .child(ChildSpec::new("counter", || Counter(0)))
    ///     .child(SupervisorSpec::new("workers").child(ChildSpec::new("pod-1", || Counter(0))))
    ///     .start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// let below: Vec<String> = root.tree().subtree("root/workers").into_iter().map(|c| c.path).collect();
    /// assert_eq!(below, ["root/workers", "root/workers/pod-1"]);
    /// # });
    /// ```
    pub fn subtree(&self, path: &str) -> Vec<ChildInfo> {
        let mut all: Vec<ChildInfo> = self
            .entries
            .iter()
            .filter(|e| within(e.key(), path))
            .map(|e| self.read(e.value()))
            .collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        all
    }

    /// The entry at `path`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// assert_eq!(root.tree().get("root/counter").unwrap().kind, "Counter");
    /// assert_eq!(root.tree().get("root/nothing"), None);
    /// # });
    /// ```
    pub fn get(&self, path: &str) -> Option<ChildInfo> {
        self.entries.get(path).map(|e| self.read(e.value()))
    }

    /// A copy of `info` with its mailbox's live depth.
    fn read(&self, info: &ChildInfo) -> ChildInfo {
        let mut info = info.clone();
        info.mailbox = self.mailboxes.get(&info.path).map(|m| MailboxDepth {
            queued: m.queued(),
            capacity: m.capacity(),
        });
        info
    }

    /// Number of entries.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let root = SupervisorSpec::new("root").child(ChildSpec::new("counter", || Counter(0))).start_root();
    /// tokio::time::sleep(Duration::from_millis(10)).await; // let the tree start
    /// assert_eq!(root.tree().len(), 2, "the root and its child");
    /// # });
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the tree has no entry.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// assert!(SupervisionTree::new().is_empty());
    /// let root = SupervisorSpec::new("root").start_root();
    /// assert!(!root.tree().is_empty(), "a started tree holds at least its root");
    /// # });
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every change of an entry from now on (start, restart, failure, stop),
    /// as the entry's new value. A subscriber that falls more than 256
    /// changes behind misses the oldest ones (`RecvError::Lagged`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actix::{Actor, ActorContext, Context, Handler, Message};
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*; // Counter: Add(n) → total, Crash fails, Quit stops
    /// # actlet::testing::run_paused(async {
    /// let counter = ChildSpec::new("counter", || Counter(0));
    /// let counter_ref = counter.child_ref();
    /// let root = SupervisorSpec::new("root").child(counter).start_root();
    /// assert_eq!(counter_ref.send(Add(1)).await, Ok(1));
    /// let mut changes = root.tree().subscribe();
    /// counter_ref.do_send(Crash).unwrap();
    /// loop {
    ///     let info = changes.recv().await.unwrap();
    ///     println!("{} is {:?} (restarts: {})", info.path, info.state, info.restarts);
    ///     if info.path == "root/counter" && info.restarts == 1 && info.state == ChildState::Running {
    ///         break; // the restart is done
    ///     }
    /// }
    /// # });
    /// ```
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ChildInfo> {
        self.changes.subscribe()
    }

    pub(crate) fn insert(&self, info: ChildInfo) {
        let _ = self.changes.send(info.clone());
        if let Some(parent) = parent_of(&info) {
            self.kids
                .entry(parent.to_owned())
                .or_default()
                .insert(info.path.clone());
        }
        self.entries.insert(info.path.clone(), info);
    }

    /// Every path strictly below `path`, parents before their children.
    fn descendants(&self, path: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut next = 0;
        let mut parent = path.to_owned();
        loop {
            // Copied out so no shard lock is held while the next one is taken.
            let children: Vec<String> = self
                .kids
                .get(&parent)
                .map(|set| set.iter().cloned().collect())
                .unwrap_or_default();
            out.extend(children);
            let Some(p) = out.get(next) else { break };
            parent = p.clone();
            next += 1;
        }
        out
    }

    /// Forgets the entries of `paths` (their mailboxes and child lists too).
    fn forget(&self, paths: &[String]) {
        for p in paths {
            self.entries.remove(p);
            self.mailboxes.remove(p);
            self.kids.remove(p);
        }
    }

    /// Reads `path`'s mailbox depth from `gauge` from now on.
    pub(crate) fn watch_mailbox(&self, path: &str, gauge: Arc<dyn MailboxGauge>) {
        self.mailboxes.insert(path.to_owned(), gauge);
    }

    /// Calls `hook` each time a non-critical child exceeds its restart
    /// intensity and is reported [`exhausted`](ChildInfo::exhausted) (once
    /// per episode: again only after it was healthy for a while). The
    /// kubelet records a Warning event on the node with it. Replaces an
    /// earlier hook. The hook runs on the supervisor's thread: keep it short.
    ///
    /// ```
    /// # use std::sync::{Arc, Mutex};
    /// # use std::time::Duration;
    /// # use actlet::actors::supervisor::*;
    /// # use actlet::testing::toy::*;
    /// # actlet::testing::run_paused(async {
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let record = seen.clone();
    /// let server = ChildSpec::new("healthz", || Counter(0)).criticality(Criticality::NonCritical);
    /// let healthz = server.child_ref();
    /// let root = SupervisorSpec::new("root").intensity(2, Duration::from_secs(60)).child(server).start_root();
    /// root.tree().on_exhausted(move |info| record.lock().unwrap().push(info.path.clone()));
    /// for _ in 0..5 {
    ///     healthz.do_send(Crash).unwrap();
    /// }
    /// tokio::time::sleep(Duration::from_secs(40)).await; // retried every 10 s meanwhile
    /// assert!(root.tree().get("root/healthz").unwrap().exhausted);
    /// assert_eq!(*seen.lock().unwrap(), ["root/healthz"], "told once per episode");
    /// # });
    /// ```
    pub fn on_exhausted(&self, hook: impl Fn(&ChildInfo) + Send + Sync + 'static) {
        let mut slot = self.exhausted_hook.write().unwrap_or_else(|e| e.into_inner());
        *slot = Some(Arc::new(hook));
    }

    /// Marks `path` exhausted; tells the hook when it was not already.
    pub(crate) fn mark_exhausted(&self, path: &str) {
        let mut newly = None;
        self.update(path, |info| {
            if !info.exhausted {
                info.exhausted = true;
                newly = Some(info.clone());
            }
        });
        let hook = self.exhausted_hook.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let (Some(info), Some(hook)) = (newly, hook) {
            hook(&info);
        }
    }

    pub(crate) fn update(&self, path: &str, f: impl FnOnce(&mut ChildInfo)) {
        if let Some(mut entry) = self.entries.get_mut(path) {
            f(entry.value_mut());
            let _ = self.changes.send(entry.value().clone());
        }
    }

    /// Removes `path` and everything below it.
    pub(crate) fn remove_subtree(&self, path: &str) {
        let parent = self
            .entries
            .get(path)
            .and_then(|e| parent_of(e.value()).map(str::to_owned));
        let mut paths = self.descendants(path);
        paths.push(path.to_owned());
        self.forget(&paths);
        if let Some(parent) = parent
            && let Some(mut siblings) = self.kids.get_mut(&parent)
        {
            siblings.remove(path);
        }
    }

    /// Removes everything strictly below `path`.
    pub(crate) fn remove_descendants(&self, path: &str) {
        self.forget(&self.descendants(path));
        self.kids.remove(path);
    }

    /// Marks everything strictly below `path` that still looks alive as stopped.
    pub(crate) fn mark_descendants_stopped(&self, path: &str) {
        for p in self.descendants(path) {
            if let Some(mut entry) = self.entries.get_mut(&p) {
                let info = entry.value_mut();
                if !matches!(info.state, ChildState::Stopped | ChildState::Failed) {
                    info.state = ChildState::Stopped;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(tree: &SupervisionTree, parent: Option<&str>, name: &str) -> String {
        let path = parent.map_or_else(|| name.to_owned(), |p| format!("{p}/{name}"));
        let mut info = ChildInfo::new(path.clone(), name.to_owned(), "actor", RestartPolicy::Permanent);
        info.state = ChildState::Running;
        tree.insert(info);
        path
    }

    fn paths(tree: &SupervisionTree) -> Vec<String> {
        tree.snapshot().into_iter().map(|c| c.path).collect()
    }

    #[test]
    fn subtree_operations_follow_the_parent_links_only() {
        let tree = SupervisionTree::new();
        let root = add(&tree, None, "root");
        let workers = add(&tree, Some(&root), "workers");
        let odd = add(&tree, Some(&workers), "pod-a/b"); // a name may hold a '/'
        let probe = add(&tree, Some(&odd), "probe");
        let other = add(&tree, Some(&root), "workers-2"); // shares a prefix, not a parent
        let sibling = add(&tree, Some(&workers), "pod-c");

        tree.mark_descendants_stopped(&workers);
        let state = |p: &str| tree.get(p).map(|c| c.state);
        assert_eq!(state(&odd), Some(ChildState::Stopped));
        assert_eq!(state(&probe), Some(ChildState::Stopped));
        assert_eq!(state(&sibling), Some(ChildState::Stopped));
        assert_eq!(state(&workers), Some(ChildState::Running));
        assert_eq!(state(&other), Some(ChildState::Running));

        tree.remove_subtree(&odd);
        assert_eq!(
            paths(&tree),
            [root.clone(), workers.clone(), other.clone(), sibling.clone()]
        );
        assert!(
            tree.descendants(&workers) == [sibling.clone()],
            "the parent's list is updated"
        );

        tree.remove_descendants(&root);
        assert_eq!(paths(&tree), vec![root.clone()]);
        assert!(tree.descendants(&root).is_empty());
        assert_eq!(tree.kids.len(), 0, "no child list outlives its entries");
    }
}
