//! A container's simulated process: a tokio task that walks the behaviour's
//! steps on tokio time and reacts to signals from `StopContainer` & co.
//!
//! Steps that take no time (output, an immediate exit) run synchronously
//! inside `StartContainer`, so a container that crashes on start is already
//! `EXITED` when `StartContainer` returns; the task only exists while the
//! process waits (a `Sleep` or `Block` step).

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

use super::logs::LogWriter;
use super::script::{OnTerm, Step};
use super::state::{Shared, exit_reason};

/// What the runtime can do to a running process.
#[derive(Debug)]
pub(crate) enum Signal {
    /// SIGTERM: handled as the behaviour's [`OnTerm`] says.
    Term,
    /// SIGKILL: exit 137 at once.
    Kill,
    /// Reopen the log file (after rotation); the result is sent back.
    ReopenLog(oneshot::Sender<std::io::Result<()>>),
}

/// A process between `StartContainer` and its exit.
pub(crate) struct Process {
    shared: Weak<Shared>,
    id: String,
    steps: VecDeque<Step>,
    on_term: OnTerm,
    log: Option<LogWriter>,
}

/// How a process ended.
type Exit = (i32, &'static str);

impl Process {
    pub(crate) fn new(
        shared: &Arc<Shared>,
        id: &str,
        steps: Vec<Step>,
        on_term: OnTerm,
        log: Option<LogWriter>,
    ) -> Self {
        Self {
            shared: Arc::downgrade(shared),
            id: id.to_string(),
            steps: steps.into(),
            on_term,
            log,
        }
    }

    /// Runs the steps that take no time. If the process exited, records the
    /// exit and returns `None`; otherwise returns the process to be spawned.
    pub(crate) fn start(mut self) -> Option<Self> {
        match self.run_instant() {
            Some(exit) => {
                self.exit(exit);
                None
            }
            None => Some(self),
        }
    }

    fn run_instant(&mut self) -> Option<Exit> {
        while let Some(step) = self.steps.front() {
            match step {
                Step::Output(stream, text) => {
                    if let Some(log) = self.log.as_mut() {
                        let _ = log.write(*stream, text);
                    }
                }
                Step::Exit(code) => return Some((*code, exit_reason(*code))),
                Step::OomKill => return Some((137, "OOMKilled")),
                Step::Sleep(d) if d.is_zero() => {}
                Step::Sleep(_) | Step::Block => return None,
            }
            self.steps.pop_front();
        }
        Some((0, "Completed"))
    }

    /// Walks the remaining steps until the process exits or is removed.
    pub(crate) async fn run(mut self, mut signals: mpsc::UnboundedReceiver<Signal>) {
        let mut step_end: Option<Instant> = None;
        let mut trap_exit: Option<i32> = None;
        let mut graceful: Option<(Instant, i32)> = None;
        loop {
            if step_end.is_none() {
                if let Some(exit) = self.run_instant() {
                    return self.exit(exit);
                }
                if let Some(Step::Sleep(d)) = self.steps.front() {
                    step_end = Some(Instant::now() + *d);
                }
            }
            let wake = [step_end, graceful.map(|g| g.0)].into_iter().flatten().min();
            tokio::select! {
                () = maybe_sleep_until(wake) => {
                    let now = Instant::now();
                    if let Some((_, code)) = graceful.filter(|(at, _)| *at <= now) {
                        return self.exit((code, exit_reason(code)));
                    }
                    if step_end.is_some_and(|end| end <= now) {
                        step_end = None;
                        self.steps.pop_front();
                        if let Some(code) = trap_exit {
                            return self.exit((code, exit_reason(code)));
                        }
                    }
                }
                signal = signals.recv() => match signal {
                    // Removed, or exited from outside: nothing more to record.
                    None => return self.close_log(),
                    Some(Signal::Kill) => return self.exit((137, "Error")),
                    Some(Signal::ReopenLog(ack)) => {
                        let result = self.log.as_mut().map_or(Ok(()), LogWriter::reopen);
                        let _ = ack.send(result);
                    }
                    Some(Signal::Term) => match self.on_term {
                        OnTerm::Exit(code) => return self.exit((code, exit_reason(code))),
                        OnTerm::ExitAfter(delay, code) => {
                            graceful.get_or_insert((Instant::now() + delay, code));
                        }
                        OnTerm::Ignore => {}
                        OnTerm::ExitAfterCurrentStep(code) => trap_exit = Some(code),
                    },
                },
            }
        }
    }

    fn close_log(&mut self) {
        if let Some(mut log) = self.log.take() {
            let _ = log.close();
        }
    }

    fn exit(mut self, (code, reason): Exit) {
        self.close_log();
        if let Some(shared) = self.shared.upgrade() {
            shared.finish_container(&self.id, code, reason, "");
        }
    }
}

async fn maybe_sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}
