//! What tests can observe: the call log, per-method counters, state
//! snapshots and a stream of state-change events.

use std::collections::HashMap;

use tokio::time::Instant;
use tonic::Code;

use crate::cri::v1;

/// How a logged call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// Still running (or hung).
    InFlight,
    /// Answered successfully.
    Ok,
    /// Failed with this code.
    Err(Code),
}

/// One CRI call the mock received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// The gRPC method name, e.g. `"StartContainer"`.
    pub method: &'static str,
    /// The key argument: sandbox or container id, pod or container name,
    /// image name; empty for calls without one.
    pub target: String,
    /// When the call arrived (tokio time).
    pub at: Instant,
    /// How it ended.
    pub outcome: CallOutcome,
}

/// The call log and counters.
#[derive(Debug, Default)]
pub(crate) struct CallLog {
    records: Vec<CallRecord>,
    counts: HashMap<&'static str, u64>,
}

impl CallLog {
    /// Logs a new call; returns its index for [`CallLog::finish`].
    pub(crate) fn start(&mut self, method: &'static str, target: String) -> usize {
        *self.counts.entry(method).or_default() += 1;
        self.records.push(CallRecord {
            method,
            target,
            at: Instant::now(),
            outcome: CallOutcome::InFlight,
        });
        self.records.len() - 1
    }

    /// Records how call `index` ended (ignored if the log was cleared since).
    pub(crate) fn finish(&mut self, index: usize, method: &'static str, outcome: CallOutcome) {
        if let Some(r) = self.records.get_mut(index).filter(|r| r.method == method) {
            r.outcome = outcome;
        }
    }

    pub(crate) fn records(&self) -> Vec<CallRecord> {
        self.records.clone()
    }

    pub(crate) fn count(&self, method: &str) -> u64 {
        self.counts.get(method).copied().unwrap_or(0)
    }

    pub(crate) fn clear(&mut self) {
        self.records.clear();
        self.counts.clear();
    }
}

/// A change of the mock's state, broadcast to [`subscribers`](super::MockRuntime::subscribe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MockEvent {
    /// A sandbox was created and is ready.
    SandboxReady {
        /// Sandbox id.
        id: String,
    },
    /// A sandbox was stopped (or found not ready after a restart).
    SandboxNotReady {
        /// Sandbox id.
        id: String,
    },
    /// A sandbox was removed.
    SandboxRemoved {
        /// Sandbox id.
        id: String,
    },
    /// A container was created.
    ContainerCreated {
        /// Container id.
        id: String,
    },
    /// A container started running.
    ContainerStarted {
        /// Container id.
        id: String,
    },
    /// A container exited (or failed to start).
    ContainerExited {
        /// Container id.
        id: String,
        /// Its exit code.
        exit_code: i32,
        /// Its CRI reason (`Completed`, `Error`, `OOMKilled`, `StartError`, `Unknown`).
        reason: String,
    },
    /// A container was removed.
    ContainerRemoved {
        /// Container id.
        id: String,
    },
}

/// A container as the mock holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSnapshot {
    /// The sandbox it belongs to.
    pub sandbox_id: String,
    /// The pod (sandbox metadata) name.
    pub pod_name: String,
    /// The pod namespace.
    pub pod_namespace: String,
    /// Its CRI status.
    pub status: v1::ContainerStatus,
}

impl ContainerSnapshot {
    /// The container name.
    pub fn name(&self) -> &str {
        self.status.metadata.as_ref().map_or("", |m| m.name.as_str())
    }

    /// The container attempt.
    pub fn attempt(&self) -> u32 {
        self.status.metadata.as_ref().map_or(0, |m| m.attempt)
    }

    /// The container state.
    pub fn state(&self) -> v1::ContainerState {
        self.status.state()
    }
}

/// Every sandbox and container, sorted by creation time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MockSnapshot {
    /// The sandboxes' CRI statuses.
    pub sandboxes: Vec<v1::PodSandboxStatus>,
    /// The containers.
    pub containers: Vec<ContainerSnapshot>,
}
