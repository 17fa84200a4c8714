//! Assertion helpers: wait (in tokio time, so virtual time under
//! [`run_paused`](super::run_paused)) until something holds, or fail with a
//! message that says what was seen last.

use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
use tokio::time::Instant;

use super::record::{EventLog, RecordedEvent};
use crate::kubelet::Kubelet;
use crate::messages::PodUid;
use crate::messages::pleg::PlegEventType;

/// How often the helpers look again (tokio time).
///
/// ```
/// assert_eq!(actlet::testing::POLL_INTERVAL.as_millis(), 10);
/// ```
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// A wait that did not succeed: it timed out, or what it waited for can no
/// longer happen (e.g. the pod reached another terminal phase).
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{run_paused, wait_until};
///
/// let err = run_paused(wait_until(|| false, Duration::from_secs(5))).unwrap_err();
/// assert!(err.timed_out);
/// assert!(err.to_string().starts_with("timed out after 5"), "{err}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct WaitError {
    /// What was awaited, e.g. `pod default/web to be Running`.
    pub what: String,
    /// How long it waited.
    pub waited: Duration,
    /// Whether it gave up because time ran out (else: it can never happen).
    pub timed_out: bool,
    /// The state seen last, e.g. `phase Pending; c: waiting(ContainerCreating) restarts=0`.
    pub last_seen: String,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.timed_out {
            write!(f, "timed out after {:?} waiting for {}", self.waited, self.what)?;
        } else {
            write!(
                f,
                "gave up after {:?} waiting for {}: it can no longer happen",
                self.waited, self.what
            )?;
        }
        write!(f, "; last seen: {}", self.last_seen)
    }
}

/// One look at the state, for [`wait_for`].
///
/// ```
/// use actlet::testing::Probe;
/// let p: Probe<u32> = Probe::NotYet("3 of 5 ready".into());
/// assert!(matches!(p, Probe::NotYet(_)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe<T> {
    /// It holds: stop waiting with this value.
    Done(T),
    /// Not yet; the text describes what is seen now.
    NotYet(String),
    /// It can never hold; stop waiting with an error describing what is seen.
    Never(String),
}

/// Looks at `probe` every [`POLL_INTERVAL`] until it is
/// [`Done`](Probe::Done), it says [`Never`](Probe::Never), or `timeout`
/// (tokio time) passes. The building block of the other helpers.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{Probe, run_paused, wait_for};
///
/// run_paused(async {
///     let start = tokio::time::Instant::now();
///     let secs = wait_for("two seconds to pass", Duration::from_secs(10), || {
///         let s = start.elapsed().as_secs();
///         if s >= 2 { Probe::Done(s) } else { Probe::NotYet(format!("{s} s")) }
///     })
///     .await
///     .unwrap();
///     assert_eq!(secs, 2);
/// });
/// ```
///
/// # Errors
/// A [`WaitError`] naming `what` and carrying the last description.
pub async fn wait_for<T>(
    what: impl fmt::Display,
    timeout: Duration,
    mut probe: impl FnMut() -> Probe<T>,
) -> Result<T, WaitError> {
    let start = Instant::now();
    loop {
        let last_seen = match probe() {
            Probe::Done(v) => return Ok(v),
            Probe::NotYet(s) => s,
            Probe::Never(last_seen) => {
                return Err(WaitError {
                    what: what.to_string(),
                    waited: start.elapsed(),
                    timed_out: false,
                    last_seen,
                });
            }
        };
        if start.elapsed() >= timeout {
            return Err(WaitError {
                what: what.to_string(),
                waited: start.elapsed(),
                timed_out: true,
                last_seen,
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Waits until `cond` is true; returns how long that took.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Duration;
/// use actlet::testing::{run_paused, wait_until};
///
/// run_paused(async {
///     let flag = Arc::new(AtomicBool::new(false));
///     let f = flag.clone();
///     tokio::spawn(async move {
///         tokio::time::sleep(Duration::from_secs(3)).await;
///         f.store(true, Ordering::SeqCst);
///     });
///     let took = wait_until(|| flag.load(Ordering::SeqCst), Duration::from_secs(10)).await.unwrap();
///     assert!(took >= Duration::from_secs(3));
/// });
/// ```
///
/// # Errors
/// A [`WaitError`] if `timeout` passes first.
pub async fn wait_until(mut cond: impl FnMut() -> bool, timeout: Duration) -> Result<Duration, WaitError> {
    let start = Instant::now();
    wait_for("the condition", timeout, || {
        if cond() {
            Probe::Done(start.elapsed())
        } else {
            Probe::NotYet("false".into())
        }
    })
    .await
}

/// The UID of pod `namespace/name`: a desired pod, or one that still has a status.
///
/// ```
/// actlet::testing::run_paused(async {
///     let node = actlet::testing::TestNode::start();
///     assert!(actlet::testing::uid_of(node.kubelet(), "default", "web").is_none());
/// });
/// ```
pub fn uid_of(kubelet: &Kubelet, namespace: &str, name: &str) -> Option<PodUid> {
    kubelet
        .pods
        .pods()
        .into_iter()
        .find(|d| {
            d.pod.metadata.namespace.as_deref() == Some(namespace) && d.pod.metadata.name.as_deref() == Some(name)
        })
        .map(|d| crate::pod_manager::pod_uid(&d.pod))
        .or_else(|| {
            kubelet
                .statuses
                .snapshot()
                .into_iter()
                .find(|(_, v)| v.pod_namespace == namespace && v.pod_name == name)
                .map(|(uid, _)| uid)
        })
}

/// The API status of pod `namespace/name`, if it has one.
fn status_of(kubelet: &Kubelet, namespace: &str, name: &str) -> Result<std::sync::Arc<PodStatus>, String> {
    let Some(uid) = uid_of(kubelet, namespace, name) else {
        let mut known: Vec<String> = kubelet
            .pods
            .pods()
            .iter()
            .map(|d| crate::pod_manager::format_pod(&d.pod))
            .collect();
        known.sort();
        return Err(format!("the kubelet does not know the pod (desired pods: {known:?})"));
    };
    match kubelet.statuses.get(&uid) {
        Some(v) => Ok(v.status),
        None => Err(format!("pod {uid} has no status yet")),
    }
}

/// A one-line summary of a pod status: phase, then each container's state.
///
/// ```
/// use k8s_openapi::api::core::v1::PodStatus;
/// let s = PodStatus { phase: Some("Pending".into()), ..Default::default() };
/// assert_eq!(actlet::testing::describe_status(&s), "phase Pending");
/// ```
pub fn describe_status(status: &PodStatus) -> String {
    let mut out = format!("phase {}", status.phase.as_deref().unwrap_or("<none>"));
    if let Some(reason) = &status.reason {
        out.push_str(&format!(" ({reason})"));
    }
    let init = status.init_container_statuses.iter().flatten().map(|c| ("init ", c));
    let regular = status.container_statuses.iter().flatten().map(|c| ("", c));
    for (kind, c) in init.chain(regular) {
        out.push_str(&format!("; {kind}{}: {}", c.name, describe_container(c)));
    }
    out
}

fn describe_container(c: &ContainerStatus) -> String {
    let state = c.state.clone().unwrap_or_default();
    let what = if state.running.is_some() {
        "running".to_string()
    } else if let Some(t) = state.terminated {
        format!("terminated({}, {})", t.exit_code, t.reason.unwrap_or_default())
    } else if let Some(w) = state.waiting {
        format!("waiting({})", w.reason.unwrap_or_default())
    } else {
        "unknown".to_string()
    };
    format!("{what} restarts={}", c.restart_count)
}

/// Waits until pod `namespace/name` has phase `phase` (`Pending`, `Running`,
/// `Succeeded`, `Failed`); returns its status then. Gives up early when the
/// pod reached another terminal phase.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{PodBuilder, TestNode, run_paused, wait_for_phase};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("job").restart_policy("Never")
///         .container("c", "busybox:1.36", ["sh", "-c", "exit 3"]).build()]);
///     let err = wait_for_phase(node.kubelet(), "default", "job", "Succeeded", Duration::from_secs(60))
///         .await
///         .unwrap_err();
///     assert!(!err.timed_out, "gave up at once: the pod Failed");
///     assert!(err.last_seen.contains("phase Failed"), "{err}");
///     assert!(err.to_string().contains("pod default/job to be Succeeded"), "{err}");
/// });
/// ```
///
/// # Errors
/// A [`WaitError`] with the pod's last status.
pub async fn wait_for_phase(
    kubelet: &Kubelet,
    namespace: &str,
    name: &str,
    phase: &str,
    timeout: Duration,
) -> Result<PodStatus, WaitError> {
    let what = format!("pod {namespace}/{name} to be {phase}");
    wait_for(what, timeout, || match status_of(kubelet, namespace, name) {
        Err(seen) => Probe::NotYet(seen),
        Ok(s) if s.phase.as_deref() == Some(phase) => Probe::Done((*s).clone()),
        Ok(s) if matches!(s.phase.as_deref(), Some("Succeeded" | "Failed")) => Probe::Never(describe_status(&s)),
        Ok(s) => Probe::NotYet(describe_status(&s)),
    })
    .await
}

/// Waits until container `container` (regular or init) of pod
/// `namespace/name` has restarted at least `n` times; returns its status then.
///
/// ```
/// use std::time::Duration;
/// use actlet::testing::{PodBuilder, TestNode, run_paused, wait_for_restart_count};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("flappy")
///         .container("c", "busybox:1.36", ["sh", "-c", "sleep 1; exit 1"]).build()]);
///     let c = wait_for_restart_count(node.kubelet(), "default", "flappy", "c", 2, Duration::from_secs(300))
///         .await
///         .unwrap();
///     assert!(c.restart_count >= 2);
/// });
/// ```
///
/// # Errors
/// A [`WaitError`] with the pod's last status.
pub async fn wait_for_restart_count(
    kubelet: &Kubelet,
    namespace: &str,
    name: &str,
    container: &str,
    n: i32,
    timeout: Duration,
) -> Result<ContainerStatus, WaitError> {
    let what = format!("container {container} of pod {namespace}/{name} to have restarted {n} times");
    wait_for(what, timeout, || match status_of(kubelet, namespace, name) {
        Err(seen) => Probe::NotYet(seen),
        Ok(s) => {
            let found = s
                .container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
                .find(|c| c.name == container);
            match found {
                Some(c) if c.restart_count >= n => Probe::Done(c.clone()),
                _ if matches!(s.phase.as_deref(), Some("Succeeded" | "Failed")) => Probe::Never(describe_status(&s)),
                _ => Probe::NotYet(describe_status(&s)),
            }
        }
    })
    .await
}

/// Waits until `events` holds a PLEG event of `kind` for pod
/// `namespace/name` (and container `container`, if given) — recorded at any
/// time since the node started; returns the first such event.
///
/// ```
/// use std::time::Duration;
/// use actlet::messages::pleg::PlegEventType;
/// use actlet::testing::{PodBuilder, TestNode, run_paused, wait_for_event};
///
/// run_paused(async {
///     let node = TestNode::start();
///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
///     let e = wait_for_event(node.events(), "default", "web", Some("c"),
///         PlegEventType::ContainerStarted, Duration::from_secs(30)).await.unwrap();
///     assert_eq!(e.container.as_deref(), Some("c"));
/// });
/// ```
///
/// # Errors
/// A [`WaitError`] listing the pod's events so far.
pub async fn wait_for_event(
    events: &EventLog,
    namespace: &str,
    name: &str,
    container: Option<&str>,
    kind: PlegEventType,
    timeout: Duration,
) -> Result<RecordedEvent, WaitError> {
    let what = match container {
        Some(c) => format!("PLEG event {kind:?} of container {c} of pod {namespace}/{name}"),
        None => format!("PLEG event {kind:?} of pod {namespace}/{name}"),
    };
    wait_for(what, timeout, || {
        let seen = events.of_pod(namespace, name);
        let found = seen
            .iter()
            .find(|e| e.kind == kind && container.is_none_or(|c| e.container.as_deref() == Some(c)));
        match found {
            Some(e) => Probe::Done(e.clone()),
            None => {
                let list: Vec<String> = seen
                    .iter()
                    .map(|e| format!("{:?}({})", e.kind, e.container.as_deref().unwrap_or("-")))
                    .collect();
                Probe::NotYet(format!("events of the pod: {list:?}"))
            }
        }
    })
    .await
}
