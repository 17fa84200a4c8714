//! What tests can observe: the call log, per-method counters, state
//! snapshots and a stream of state-change events.

use std::collections::HashMap;

use tokio::time::Instant;
use tonic::Code;

use crate::cri::v1;

/// How a logged call ended.
///
/// ```
/// use actlet::cri::{Runtime, mock::{CallOutcome, MockRuntime}};
/// # actlet::testing::run_paused(async {
/// let mock = MockRuntime::new();
/// mock.version(Default::default()).await.unwrap();
/// mock.set_down(true);
/// let _ = mock.version(Default::default()).await;
/// let outcomes: Vec<_> = mock.calls_to("Version").iter().map(|c| c.outcome).collect();
/// assert_eq!(outcomes, [CallOutcome::Ok, CallOutcome::Err(tonic::Code::Unavailable)]);
/// # });
/// ```
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
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::testing::{PodBuilder, TestNode};
/// let node = TestNode::start();
/// let mock = node.mock();
/// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
/// let start = mock.calls_to("StartContainer").remove(0);
/// let id = mock.find_container("web", "c").unwrap().status.id;
/// assert_eq!(start.target, id); // the container id
/// assert!(start.at >= mock.calls_to("CreateContainer")[0].at);
/// # });
/// ```
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
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::testing::{PodBuilder, TestNode};
/// let node = TestNode::start();
/// let mock = node.mock();
/// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
/// use actlet::cri::mock::MockEvent;
/// let id = mock.find_container("web", "c").unwrap().status.id;
/// let mut events = mock.subscribe();
/// mock.exit_container(&id, 2);
/// let event = events.recv().await.unwrap();
/// assert_eq!(event, MockEvent::ContainerExited { id, exit_code: 2, reason: "Error".into() });
/// # });
/// ```
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
///
/// ```
/// # use std::time::Duration;
/// # actlet::testing::run_paused(async {
/// use actlet::testing::{PodBuilder, TestNode};
/// let node = TestNode::start();
/// let mock = node.mock();
/// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
/// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
/// let c = mock.find_container("web", "c").unwrap();
/// assert_eq!((c.pod_name.as_str(), c.pod_namespace.as_str()), ("web", "default"));
/// assert_eq!(c.sandbox_id, mock.snapshot().sandboxes[0].id);
/// # });
/// ```
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
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// assert_eq!(mock.snapshot().containers[0].name(), "c");
    /// # });
    /// ```
    pub fn name(&self) -> &str {
        self.status.metadata.as_ref().map_or("", |m| m.name.as_str())
    }

    /// The container attempt.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let first = mock.find_container("web", "c").unwrap();
    /// assert_eq!(first.attempt(), 0);
    /// mock.exit_container(&first.status.id, 1);
    /// node.wait_for_restart_count("default", "web", "c", 1, Duration::from_secs(60)).await.unwrap();
    /// let runs = || mock.find_container("web", "c").is_some_and(|c| c.attempt() == 1);
    /// actlet::testing::wait_until(runs, Duration::from_secs(60)).await.unwrap(); // the kubelet's restart
    /// # });
    /// ```
    pub fn attempt(&self) -> u32 {
        self.status.metadata.as_ref().map_or(0, |m| m.attempt)
    }

    /// The container state.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// use actlet::cri::v1::ContainerState;
    /// let c = mock.find_container("web", "c").unwrap();
    /// assert_eq!(c.state(), ContainerState::ContainerRunning);
    /// mock.oom_kill_container(&c.status.id);
    /// assert_eq!(mock.snapshot().containers[0].state(), ContainerState::ContainerExited);
    /// # });
    /// ```
    pub fn state(&self) -> v1::ContainerState {
        self.status.state()
    }
}

/// Every sandbox and container, sorted by creation time.
///
/// ```
/// use actlet::cri::mock::{MockRuntime, MockSnapshot};
/// assert_eq!(MockRuntime::new().snapshot(), MockSnapshot::default()); // nothing yet
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MockSnapshot {
    /// The sandboxes' CRI statuses.
    pub sandboxes: Vec<v1::PodSandboxStatus>,
    /// The containers.
    pub containers: Vec<ContainerSnapshot>,
}
