//! The async core of a supervisor: starts children, watches their exits,
//! applies the strategy and the intensity limit, and stops children in
//! reverse start order. It runs as one future inside the [`Supervisor`]
//! actor's context, so every step is a plain `.await` and a panic in it is
//! the supervisor's own (contained) panic.
//!
//! [`Supervisor`]: super::Supervisor

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, timeout_at};

use super::backoff::{Criticality, Verdict, verdict};
use super::exit::ExitReason;
use super::instance::{ExitNotifier, InstanceControl};
use super::messages::{ShutdownReport, SupervisorError};
use super::spec::{ChildContext, ErasedSpec};
use super::strategy::{Intensity, RestartPolicy, RestartWindow, Strategy};
use super::tree::{ChildInfo, ChildState, Failure, SupervisionTree};

/// How long a killed instance gets to report its exit.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// The farthest deadline used ("no deadline").
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// `now + d`, capped at [`FOREVER`].
pub(crate) fn deadline_in(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d.min(FOREVER)).unwrap_or(now)
}

/// Requests forwarded by the supervisor actor's handlers.
pub(crate) enum Command {
    Start(Arc<dyn ErasedSpec>, oneshot::Sender<Result<String, SupervisorError>>),
    Stop(String, oneshot::Sender<Result<ExitReason, SupervisorError>>),
    Kill(String, oneshot::Sender<Result<(), SupervisorError>>),
    Shutdown {
        deadline: Instant,
        reply: Option<oneshot::Sender<Result<ShutdownReport, SupervisorError>>>,
    },
}

/// An instance ended.
struct Exit {
    id: u64,
    generation: u64,
    reason: ExitReason,
}

struct Child {
    id: u64,
    spec: Arc<dyn ErasedSpec>,
    path: String,
    dynamic: bool,
    generation: u64,
    /// `Some` while an instance runs (or its failed start is being reported).
    control: Option<InstanceControl>,
    restarts: u64,
    window: RestartWindow,
    /// Failures in a row (reset once an instance ran for the backoff's `reset_after`).
    consecutive: u32,
    /// When the current instance started.
    started_at: Option<Instant>,
    /// A restart is scheduled (backoff); cleared when it runs or the child is stopped.
    pending_restart: bool,
}

/// Work the engine scheduled for later.
enum Pending {
    /// Restart these children (ids); `counts`: the failure counts toward
    /// the supervisor's intensity.
    Restart { ids: Vec<u64>, counts: bool },
    /// If this instance is still running, its failure series is over.
    Healthy { id: u64, generation: u64 },
}

/// Static configuration of a supervisor.
pub(crate) struct EngineConfig {
    pub(crate) strategy: Strategy,
    pub(crate) intensity: Intensity,
    pub(crate) children: Vec<Arc<dyn ErasedSpec>>,
}

pub(crate) struct Engine {
    path: String,
    tree: SupervisionTree,
    config: Arc<EngineConfig>,
    /// In start order; ids grow with each `add` and removal keeps the order,
    /// so the vector is sorted by id ([`Engine::index_of`] binary-searches it).
    children: Vec<Child>,
    /// Child name → id (a supervisor may hold 10,000 pod workers: no scans).
    names: HashMap<String, u64>,
    next_id: u64,
    window: RestartWindow,
    exits_tx: mpsc::UnboundedSender<Exit>,
    exits_rx: mpsc::UnboundedReceiver<Exit>,
    deferred: VecDeque<Exit>,
    commands: mpsc::UnboundedReceiver<Command>,
    pending: Vec<(Instant, Pending)>,
}

enum Event {
    Exit(Exit),
    Command(Option<Command>),
    Due,
}

impl Engine {
    pub(crate) fn new(
        path: String,
        tree: SupervisionTree,
        config: Arc<EngineConfig>,
        commands: mpsc::UnboundedReceiver<Command>,
    ) -> Self {
        let (exits_tx, exits_rx) = mpsc::unbounded_channel();
        Self {
            path,
            tree,
            config,
            children: Vec::new(),
            names: HashMap::new(),
            next_id: 0,
            window: RestartWindow::default(),
            exits_tx,
            exits_rx,
            deferred: VecDeque::new(),
            commands,
            pending: Vec::new(),
        }
    }

    /// Runs until a shutdown (`Ok`) or an escalation (`Err(reason)`).
    pub(crate) async fn run(mut self) -> Result<(), String> {
        self.tree.remove_descendants(&self.path);
        for spec in self.config.children.clone() {
            let idx = self.add(spec, false);
            self.start_or_report(idx);
        }
        loop {
            let next_due = self.pending.iter().map(|(at, _)| *at).min();
            let event = match self.deferred.pop_front() {
                Some(exit) => Event::Exit(exit),
                None => tokio::select! {
                    biased;
                    Some(exit) = self.exits_rx.recv() => Event::Exit(exit),
                    command = self.commands.recv() => Event::Command(command),
                    _ = tokio::time::sleep_until(next_due.unwrap_or_else(|| deadline_in(FOREVER))), if next_due.is_some() => Event::Due,
                },
            };
            match event {
                Event::Exit(exit) => self.on_exit(exit).await?,
                Event::Due => self.run_due(),
                Event::Command(Some(Command::Start(spec, reply))) => {
                    let _ = reply.send(self.start_dynamic(spec));
                }
                Event::Command(Some(Command::Stop(name, reply))) => {
                    let _ = reply.send(self.stop_by_name(&name).await);
                }
                Event::Command(Some(Command::Kill(name, reply))) => {
                    let _ = reply.send(self.kill_by_name(&name));
                }
                Event::Command(Some(Command::Shutdown { deadline, reply })) => {
                    let report = self.terminate_all(deadline).await;
                    if let Some(reply) = reply {
                        let _ = reply.send(Ok(report));
                    }
                    return Ok(());
                }
                Event::Command(None) => {
                    self.terminate_all(deadline_in(FOREVER)).await;
                    return Ok(());
                }
            }
        }
    }

    fn add(&mut self, spec: Arc<dyn ErasedSpec>, dynamic: bool) -> usize {
        let id = self.next_id;
        self.next_id += 1;
        let path = format!("{}/{}", self.path, spec.name());
        self.tree.insert(ChildInfo::new(
            path.clone(),
            spec.name().to_owned(),
            spec.kind(),
            spec.policy(),
        ));
        self.tree.watch_mailbox(&path, spec.mailbox_gauge());
        let critical = spec.criticality() == Criticality::Critical;
        self.tree.update(&path, |info| info.critical = critical);
        self.names.entry(spec.name().to_owned()).or_insert(id);
        self.children.push(Child {
            id,
            spec,
            path,
            dynamic,
            generation: 0,
            control: None,
            restarts: 0,
            window: RestartWindow::default(),
            consecutive: 0,
            started_at: None,
            pending_restart: false,
        });
        self.children.len() - 1
    }

    /// The position of child `id` in `children`.
    fn index_of(&self, id: u64) -> Option<usize> {
        self.children.binary_search_by_key(&id, |c| c.id).ok()
    }

    /// The position of the child named `name`.
    fn index_by_name(&self, name: &str) -> Result<usize, SupervisorError> {
        self.names
            .get(name)
            .and_then(|id| self.index_of(*id))
            .ok_or_else(|| SupervisorError::NotFound(name.to_owned()))
    }

    /// Builds and spawns a fresh instance of child `idx`.
    fn start_instance(&mut self, idx: usize) -> Result<(), ExitReason> {
        let child = &mut self.children[idx];
        child.generation += 1;
        let (id, generation) = (child.id, child.generation);
        let cx = ChildContext {
            path: child.path.clone(),
            name: child.spec.name().to_owned(),
            generation,
            tree: self.tree.clone(),
        };
        let exits = self.exits_tx.clone();
        let notify: ExitNotifier = Box::new(move |reason| {
            let _ = exits.send(Exit { id, generation, reason });
        });
        self.tree.update(&child.path, |info| {
            info.state = ChildState::Starting;
            info.generation = generation;
        });
        child.started_at = Some(Instant::now());
        let control = child.spec.start(cx, notify)?;
        child.control = Some(control);
        self.tree.update(&child.path, |info| {
            info.state = ChildState::Running;
            info.started_at = Some(SystemTime::now());
        });
        tracing::debug!(child = %child.path, generation, "child started");
        Ok(())
    }

    /// Starts child `idx`; a failed start is handled like an exit.
    fn start_or_report(&mut self, idx: usize) {
        if let Err(reason) = self.start_instance(idx) {
            let child = &mut self.children[idx];
            child.control = Some(InstanceControl::default());
            self.deferred.push_back(Exit {
                id: child.id,
                generation: child.generation,
                reason,
            });
        }
    }

    async fn on_exit(&mut self, exit: Exit) -> Result<(), String> {
        let Some(idx) = self.index_of(exit.id) else {
            return Ok(());
        };
        let child = &mut self.children[idx];
        if child.generation != exit.generation || child.control.take().is_none() {
            return Ok(()); // a stale report from an instance already dealt with
        }
        let path = child.path.clone();
        let policy = child.spec.policy();
        let abnormal = exit.reason.is_abnormal();
        self.tree.mark_descendants_stopped(&path);
        // The failure and the state it leads to are written in one update,
        // so tree watchers never see a dead instance reported as running.
        let failure = if abnormal {
            tracing::warn!(supervisor = %self.path, child = %path, reason = %exit.reason, "child exited abnormally");
            Some(Failure {
                reason: exit.reason.clone(),
                at: SystemTime::now(),
            })
        } else {
            tracing::info!(supervisor = %self.path, child = %path, "child stopped");
            None
        };
        let record = |tree: &SupervisionTree, state: ChildState| {
            tree.update(&path, |info| {
                if let Some(f) = failure.clone() {
                    info.last_failure = Some(f);
                }
                info.state = state;
            })
        };
        if !policy.should_restart(&exit.reason) {
            let state = if abnormal {
                ChildState::Failed
            } else {
                ChildState::Stopped
            };
            record(&self.tree, state);
            self.retire(idx);
            return Ok(());
        }
        let intensity = self.config.intensity;
        let now = Instant::now();
        let child = &mut self.children[idx];
        let (backoff, criticality) = (child.spec.backoff(), child.spec.criticality());
        if child
            .started_at
            .is_some_and(|t| now.duration_since(t) >= backoff.reset_after)
        {
            child.consecutive = 0; // it ran long enough: a new series
        }
        child.consecutive = child.consecutive.saturating_add(1);
        // Intensity counts restarts that actually ran, plus the one to come.
        let in_window = 1 + match criticality {
            Criticality::Critical => self.window.count(now, intensity.within),
            Criticality::NonCritical => child.window.count(now, intensity.within),
        };
        match verdict(
            criticality,
            in_window,
            intensity.max_restarts,
            &backoff,
            child.consecutive,
        ) {
            Verdict::Escalate => {
                record(&self.tree, ChildState::Failed);
                let reason = format!(
                    "supervisor {}: restart intensity exceeded ({in_window} restarts within {:?}, limit {}); last failure: {path} {}",
                    self.path, intensity.within, intensity.max_restarts, exit.reason
                );
                tracing::error!(supervisor = %self.path, child = %path, last_failure = %exit.reason, "restart intensity exceeded; escalating");
                self.terminate_all(deadline_in(FOREVER)).await;
                Err(reason)
            }
            Verdict::Restart { delay } => {
                record(&self.tree, ChildState::Restarting);
                if !delay.is_zero() {
                    tracing::info!(supervisor = %self.path, child = %path, ?delay, "restart backoff");
                }
                self.restart_with_strategy(idx, delay, criticality == Criticality::Critical)
                    .await;
                Ok(())
            }
            Verdict::Exhausted { delay } => {
                tracing::error!(
                    supervisor = %self.path, child = %path, restarts = in_window - 1, within = ?intensity.within,
                    last_failure = %exit.reason, retry_in = ?delay,
                    "non-critical child exceeded its restart intensity; retrying later, the rest keeps running"
                );
                record(&self.tree, ChildState::Restarting);
                self.tree.mark_exhausted(&path);
                self.restart_with_strategy(idx, delay, false).await;
                Ok(())
            }
        }
    }

    /// Runs the scheduled work that is due.
    fn run_due(&mut self) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.pending = later;
        for (_, work) in due {
            match work {
                Pending::Restart { ids, counts } => {
                    let idxs: Vec<usize> = ids
                        .iter()
                        .filter_map(|id| self.index_of(*id))
                        .filter(|&j| self.children[j].pending_restart)
                        .collect();
                    self.restart_now(&idxs, counts);
                }
                Pending::Healthy { id, generation } => {
                    if let Some(child) = self
                        .index_of(id)
                        .map(|j| &mut self.children[j])
                        .filter(|c| c.generation == generation && c.control.is_some())
                    {
                        child.consecutive = 0;
                        self.tree.update(&child.path, |info| info.exhausted = false);
                    }
                }
            }
        }
    }

    /// Starts the children at `idxs` (in start order) as restarts.
    fn restart_now(&mut self, idxs: &[usize], counts: bool) {
        let now = Instant::now();
        if counts && !idxs.is_empty() {
            self.window.record(now, self.config.intensity.within);
        }
        for &j in idxs {
            let child = &mut self.children[j];
            child.pending_restart = false;
            child.restarts += 1;
            let (restarts, in_window) = (child.restarts, child.window.record(now, self.config.intensity.within));
            self.tree.update(&child.path, |info| {
                info.restarts = restarts;
                info.restarts_in_window = in_window;
            });
            tracing::info!(supervisor = %self.path, child = %child.path, restarts, "restarting child");
            self.start_or_report(j);
            let child = &self.children[j];
            let reset_after = child.spec.backoff().reset_after;
            if child.control.is_some() && child.consecutive > 0 && !reset_after.is_zero() {
                self.pending.push((
                    now + reset_after,
                    Pending::Healthy {
                        id: child.id,
                        generation: child.generation,
                    },
                ));
            }
        }
    }

    /// Restarts child `failed` and, per the strategy, its siblings.
    async fn restart_with_strategy(&mut self, failed: usize, delay: Duration, counts: bool) {
        let running = |c: &Child| c.control.is_some();
        let siblings: Vec<usize> = match self.config.strategy {
            Strategy::OneForOne => Vec::new(),
            Strategy::OneForAll => (0..self.children.len())
                .filter(|&j| j != failed && running(&self.children[j]))
                .collect(),
            Strategy::RestForOne => (failed + 1..self.children.len())
                .filter(|&j| running(&self.children[j]))
                .collect(),
        };
        for &j in siblings.iter().rev() {
            self.stop_child(j, deadline_in(FOREVER)).await;
            self.tree
                .update(&self.children[j].path, |info| info.state = ChildState::Restarting);
        }
        let mut restart = siblings;
        restart.push(failed);
        restart.sort_unstable();
        let mut retire = Vec::new();
        let mut group = Vec::new();
        for j in restart {
            let child = &mut self.children[j];
            if j != failed && child.spec.policy() == RestartPolicy::Temporary {
                retire.push(j); // OTP: temporary children are never restarted
                continue;
            }
            child.pending_restart = true;
            group.push(j);
        }
        if delay.is_zero() {
            self.restart_now(&group, counts);
        } else {
            let ids = group.iter().map(|&j| self.children[j].id).collect();
            self.pending
                .push((Instant::now() + delay, Pending::Restart { ids, counts }));
        }
        for j in retire.into_iter().rev() {
            self.tree
                .update(&self.children[j].path, |info| info.state = ChildState::Stopped);
            self.retire(j);
        }
    }

    /// Orderly stop of child `j`, dropped if still alive at `deadline` or
    /// after its shutdown timeout. `None` if it was not running; else how it
    /// ended and whether it had to be killed.
    async fn stop_child(&mut self, j: usize, deadline: Instant) -> Option<(ExitReason, bool)> {
        let child = &mut self.children[j];
        let until = deadline.min(deadline_in(child.spec.shutdown_timeout()));
        let (id, generation, path) = (child.id, child.generation, child.path.clone());
        child.control.as_mut()?.request_stop(until);
        self.tree.update(&path, |info| info.state = ChildState::Stopping);
        let (reason, killed) = match self.await_exit(id, generation, until).await {
            Some(reason) => (reason, false),
            None => {
                tracing::warn!(supervisor = %self.path, child = %path, "child did not stop in time; dropping it");
                if let Some(control) = self.children[j].control.as_mut() {
                    control.kill();
                }
                let reason = self.await_exit(id, generation, deadline_in(KILL_GRACE)).await;
                (reason.unwrap_or(ExitReason::Killed), true)
            }
        };
        self.children[j].control = None;
        self.tree.update(&path, |info| info.state = ChildState::Stopped);
        self.tree.mark_descendants_stopped(&path);
        Some((reason, killed))
    }

    /// Waits for the exit of instance `generation` of child `id` until `until`,
    /// keeping other exits for later.
    async fn await_exit(&mut self, id: u64, generation: u64, until: Instant) -> Option<ExitReason> {
        let matches = |e: &Exit| e.id == id && e.generation == generation;
        if let Some(pos) = self.deferred.iter().position(matches) {
            return self.deferred.remove(pos).map(|e| e.reason);
        }
        loop {
            match timeout_at(until, self.exits_rx.recv()).await {
                Ok(Some(exit)) if matches(&exit) => return Some(exit.reason),
                Ok(Some(exit)) => self.deferred.push_back(exit),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Stops every running child in reverse start order within `deadline`;
    /// dynamic children are then forgotten.
    async fn terminate_all(&mut self, deadline: Instant) -> ShutdownReport {
        let mut report = ShutdownReport::default();
        for j in (0..self.children.len()).rev() {
            if let Some((_, killed)) = self.stop_child(j, deadline).await {
                let path = self.children[j].path.clone();
                if killed {
                    report.killed.push(path);
                } else {
                    report.stopped.push(path);
                }
            }
        }
        for j in (0..self.children.len()).rev() {
            if self.children[j].dynamic {
                self.retire(j);
            }
        }
        report
    }

    /// Closes the child's mailbox; a dynamic child is also forgotten.
    fn retire(&mut self, idx: usize) {
        self.children[idx].spec.close();
        if self.children[idx].dynamic {
            let child = self.children.remove(idx);
            self.names.remove(child.spec.name());
            self.tree.remove_subtree(&child.path);
        }
    }

    fn start_dynamic(&mut self, spec: Arc<dyn ErasedSpec>) -> Result<String, SupervisorError> {
        let name = spec.name().to_owned();
        if self.names.contains_key(&name) {
            return Err(SupervisorError::AlreadyExists(name));
        }
        let idx = self.add(spec, true);
        match self.start_instance(idx) {
            Ok(()) => Ok(self.children[idx].path.clone()),
            Err(reason) => {
                self.retire(idx);
                Err(SupervisorError::StartFailed { name, reason })
            }
        }
    }

    /// Drops the running instance of `name`; its exit is handled as any failure.
    fn kill_by_name(&mut self, name: &str) -> Result<(), SupervisorError> {
        let idx = self.index_by_name(name)?;
        let child = &mut self.children[idx];
        let control = child
            .control
            .as_mut()
            .ok_or_else(|| SupervisorError::NotRunning(name.to_owned()))?;
        tracing::warn!(supervisor = %self.path, child = %child.path, "killing child (fault injection)");
        control.kill();
        Ok(())
    }

    async fn stop_by_name(&mut self, name: &str) -> Result<ExitReason, SupervisorError> {
        let idx = self.index_by_name(name)?;
        let timeout = self.children[idx].spec.shutdown_timeout();
        if std::mem::take(&mut self.children[idx].pending_restart) {
            // Waiting out a restart backoff: stopping it means not restarting it.
            self.tree
                .update(&self.children[idx].path, |info| info.state = ChildState::Stopped);
            self.retire(idx);
            return Ok(ExitReason::Normal);
        }
        let (reason, _) = self
            .stop_child(idx, deadline_in(timeout))
            .await
            .ok_or_else(|| SupervisorError::NotRunning(name.to_owned()))?;
        self.retire(idx);
        Ok(reason)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Killed mid-flight: dynamic children will never come back.
        for child in self.children.iter().filter(|c| c.dynamic) {
            child.spec.close();
        }
    }
}
