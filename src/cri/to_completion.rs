//! [`ToCompletion`]: a runtime whose mutations run to their end even when
//! the caller stops waiting.
//!
//! The [`Runtime`] contract says a mutation is never cancelled by dropping
//! its future: a `RunPodSandbox` or `StopContainer` dropped half-way leaves
//! the runtime in a state nobody asked for (over gRPC the drop sends
//! `RST_STREAM CANCEL`, and containerd abandons the request's context; the
//! mock stops where it was). Yet a caller's future can be dropped without
//! it meaning to: a supervisor force-stops a pod worker, a worker panics
//! while a step is in flight, an arbiter stops. So the kubelet puts this
//! wrapper in front of its runtime: every mutating call runs as a task of
//! its own, which the caller awaits; dropping the caller's future leaves
//! the task running to the runtime's answer (logged if it was an error),
//! and the next worker reconciles from a relist, as upstream does after a
//! kubelet restart.
//!
//! Mutations: `RunPodSandbox`, `StopPodSandbox`, `RemovePodSandbox`,
//! `CreateContainer`, `StartContainer`, `StopContainer`, `RemoveContainer`,
//! `UpdateContainerResources`, `ReopenContainerLog`, `RemoveImage`. Not
//! `PullImage`: a kill may abandon a pull (issue #10, the per-pod
//! cancellation token); reads and `ExecSync` are plain calls.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tonic::Code;
use tracing::Instrument;

use super::runtime::{ContainerEventStream, Runtime, SharedRuntime, cri_calls};
use super::v1::*;
use super::{CriError, CriResult};

/// The gRPC names of the calls that run as tasks of their own.
pub const MUTATIONS: [&str; 10] = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "StartContainer",
    "StopContainer",
    "RemoveContainer",
    "UpdateContainerResources",
    "ReopenContainerLog",
    "RemoveImage",
];

tokio::task_local! {
    /// The pod (UID) whose worker makes the calls of the current task.
    static CALLER_POD: String;
}

/// Runs `fut` as work for pod `uid`: the mutations it makes through a
/// [`ToCompletion`] runtime are counted in flight for that pod until the
/// runtime answers, whether or not `fut` is still there to hear it.
pub async fn for_pod<F: Future>(uid: String, fut: F) -> F::Output {
    CALLER_POD.scope(uid, fut).await
}

/// The mutations in flight per pod, including those whose caller is gone
/// (a pod worker force-stopped or panicking mid-call). A new worker waits
/// for its pod's to settle before it reads the runtime, so it never acts on
/// a view its predecessor's last call is about to change (a container
/// `CREATED` whose start is still being answered would be created again).
#[derive(Clone, Debug, Default)]
pub struct InFlight(Arc<InFlightInner>);

#[derive(Debug, Default)]
struct InFlightInner {
    counts: Mutex<HashMap<String, usize>>,
    settled: tokio::sync::Notify,
}

/// One mutation in flight; dropped when the runtime answered.
struct InFlightGuard {
    in_flight: InFlight,
    uid: String,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut counts = self.in_flight.counts();
        if let Some(n) = counts.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.uid);
            }
        }
        drop(counts);
        self.in_flight.0.settled.notify_waiters();
    }
}

impl InFlight {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.0.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter(&self, uid: &str) -> InFlightGuard {
        *self.counts().entry(uid.to_owned()).or_default() += 1;
        InFlightGuard {
            in_flight: self.clone(),
            uid: uid.to_owned(),
        }
    }

    /// Mutations of pod `uid` still waiting for the runtime's answer.
    pub fn count(&self, uid: &str) -> usize {
        self.counts().get(uid).copied().unwrap_or(0)
    }

    /// Pods with a mutation in flight (0 when idle: nothing is kept per pod).
    pub fn pods(&self) -> usize {
        self.counts().len()
    }

    /// Waits until pod `uid` has no mutation in flight; true if it had to wait.
    pub async fn settled(&self, uid: &str) -> bool {
        let mut waited = false;
        loop {
            let notified = self.0.settled.notified();
            if self.count(uid) == 0 {
                return waited;
            }
            waited = true;
            notified.await;
        }
    }
}

/// `inner` with every mutation run to completion (see the module doc).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use actlet::cri::{Runtime, to_completion};
/// use actlet::cri::mock::{CallOutcome, Fault, MockRuntime};
/// use actlet::cri::v1::{PodSandboxConfig, PodSandboxMetadata, RunPodSandboxRequest};
///
/// actlet::testing::run_paused(async {
///     let mock = MockRuntime::new();
///     mock.inject("RunPodSandbox", Fault::latency(Duration::from_secs(5)).times(1));
///     let runtime = to_completion(Arc::new(mock.clone()));
///     let req = RunPodSandboxRequest {
///         config: Some(PodSandboxConfig {
///             metadata: Some(PodSandboxMetadata { name: "p".into(), namespace: "ns".into(), uid: "u".into(), attempt: 0 }),
///             ..Default::default()
///         }),
///         ..Default::default()
///     };
///     // The caller gives up after 1 s ...
///     assert!(tokio::time::timeout(Duration::from_secs(1), runtime.run_pod_sandbox(req)).await.is_err());
///     // ... and the sandbox is made all the same.
///     tokio::time::sleep(Duration::from_secs(5)).await;
///     assert_eq!(mock.calls_to("RunPodSandbox")[0].outcome, CallOutcome::Ok);
///     assert_eq!(mock.snapshot().sandboxes.len(), 1);
/// });
/// ```
pub fn to_completion(inner: SharedRuntime) -> SharedRuntime {
    Arc::new(ToCompletion::new(inner, InFlight::default()))
}

/// See [`to_completion`].
pub struct ToCompletion {
    inner: SharedRuntime,
    in_flight: InFlight,
}

impl ToCompletion {
    /// `inner` with its mutations run to completion and counted in
    /// `in_flight` per pod (the calls made within [`for_pod`]).
    pub fn new(inner: SharedRuntime, in_flight: InFlight) -> Self {
        Self { inner, in_flight }
    }

    /// Runs a mutation as a task of its own, counted for the caller's pod.
    async fn mutation<T: Send + 'static>(
        &self,
        method: &'static str,
        call: impl Future<Output = CriResult<T>> + Send + 'static,
    ) -> CriResult<T> {
        let guard = CALLER_POD.try_with(|uid| self.in_flight.enter(uid)).ok();
        complete(method, async move {
            let out = call.await;
            drop(guard);
            out
        })
        .await
    }
}

/// Whether `grpc` (a CRI method name) is one of [`MUTATIONS`].
pub fn is_mutation(grpc: &str) -> bool {
    MUTATIONS.contains(&grpc)
}

/// Runs `call` as a task of its own in the caller's span and waits for it.
/// A runtime that panicked in the call panics the caller that waits, as it
/// would without this wrapper (the supervisor contains it: a pod worker is
/// rebuilt and its panic recorded); a task cancelled by its runtime shutting
/// down is an `INTERNAL` error of `method`.
async fn complete<T: Send + 'static>(
    method: &'static str,
    call: impl Future<Output = CriResult<T>> + Send + 'static,
) -> CriResult<T> {
    let span = tracing::Span::current();
    let task = tokio::spawn(
        async move {
            let out = call.await;
            if let Err(e) = &out {
                // Also seen by the caller, unless it stopped waiting.
                tracing::debug!(error = %e, "CRI mutation finished with an error");
            }
            out
        }
        .instrument(span),
    );
    match task.await {
        Ok(out) => out,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(CriError::new(
            method,
            Code::Internal,
            format!("the call's task failed: {e}"),
        )),
    }
}

macro_rules! to_completion_impl {
    (runtime { $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)? }
     image { $(($iname:ident, $igrpc:literal, $ireq:ident, $iresp:ident)),* $(,)? }) => {
        #[async_trait::async_trait]
        impl Runtime for ToCompletion {
            $(async fn $name(&self, req: $req) -> CriResult<$resp> {
                let inner = self.inner.clone();
                let call = async move { inner.$name(req).await };
                if is_mutation($grpc) { self.mutation($grpc, call).await } else { call.await }
            })*
            $(async fn $iname(&self, req: $ireq) -> CriResult<$iresp> {
                let inner = self.inner.clone();
                let call = async move { inner.$iname(req).await };
                if is_mutation($igrpc) { self.mutation($igrpc, call).await } else { call.await }
            })*
            async fn get_container_events(&self, req: GetEventsRequest) -> CriResult<ContainerEventStream> {
                self.inner.get_container_events(req).await
            }
        }
    };
}
cri_calls!(to_completion_impl);

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cri::mock::{CRI_METHODS, CallOutcome, Fault, MockRuntime};

    #[test]
    fn mutations_are_cri_methods_that_change_the_runtime() {
        let mutations = CRI_METHODS.iter().filter(|m| is_mutation(m)).count();
        assert_eq!(mutations, MUTATIONS.len(), "every mutation is a CRI method");
        for read in [
            "ListPodSandbox",
            "ContainerStatus",
            "ExecSync",
            "PullImage",
            "ImageStatus",
            "Status",
        ] {
            assert!(!is_mutation(read), "{read}");
        }
    }

    #[test]
    fn a_dropped_mutation_runs_to_its_end_a_dropped_read_is_dropped() {
        crate::testing::run_paused(async {
            let mock = MockRuntime::new();
            mock.inject("RemovePodSandbox", Fault::latency(Duration::from_secs(3)).times(1));
            mock.inject("ListContainers", Fault::latency(Duration::from_secs(3)).times(1));
            let runtime = to_completion(Arc::new(mock.clone()));
            let remove = runtime.remove_pod_sandbox(RemovePodSandboxRequest {
                pod_sandbox_id: "gone".into(),
            });
            assert!(tokio::time::timeout(Duration::from_secs(1), remove).await.is_err());
            let list = runtime.list_containers(ListContainersRequest::default());
            assert!(tokio::time::timeout(Duration::from_secs(1), list).await.is_err());
            tokio::time::sleep(Duration::from_secs(5)).await;
            assert_eq!(mock.calls_to("RemovePodSandbox")[0].outcome, CallOutcome::Ok);
            assert_eq!(mock.calls_to("ListContainers")[0].outcome, CallOutcome::InFlight);
        });
    }

    #[test]
    fn a_pods_dropped_mutation_counts_in_flight_until_the_runtime_answers() {
        crate::testing::run_paused(async {
            let mock = MockRuntime::new();
            mock.inject("RemovePodSandbox", Fault::latency(Duration::from_secs(3)).times(1));
            let in_flight = InFlight::default();
            let runtime = ToCompletion::new(Arc::new(mock.clone()), in_flight.clone());
            let remove = for_pod(
                "u1".into(),
                runtime.remove_pod_sandbox(RemovePodSandboxRequest {
                    pod_sandbox_id: "gone".into(),
                }),
            );
            assert!(tokio::time::timeout(Duration::from_secs(1), remove).await.is_err());
            assert_eq!((in_flight.count("u1"), in_flight.count("u2")), (1, 0));
            let started = tokio::time::Instant::now();
            assert!(!in_flight.settled("u2").await);
            assert_eq!(started.elapsed(), Duration::ZERO, "another pod waits for nothing");
            assert!(in_flight.settled("u1").await);
            assert_eq!(started.elapsed(), Duration::from_secs(2), "until the runtime answered");
            assert_eq!(in_flight.pods(), 0, "nothing kept once settled");
            // Outside a pod's work nothing is counted.
            runtime
                .remove_pod_sandbox(RemovePodSandboxRequest {
                    pod_sandbox_id: "x".into(),
                })
                .await
                .expect("removed");
            assert_eq!(in_flight.pods(), 0);
        });
    }

    #[test]
    fn answers_and_errors_reach_the_caller_that_waits() {
        crate::testing::run_paused(async {
            let mock = MockRuntime::new();
            mock.fail_next("StopContainer", 1, Code::Unavailable, "connection refused");
            let runtime = to_completion(Arc::new(mock.clone()));
            let err = runtime
                .stop_container(StopContainerRequest {
                    container_id: "c".into(),
                    timeout: 2,
                })
                .await
                .expect_err("the injected error");
            assert!(err.is_unavailable(), "{err}");
            assert!(runtime.version(VersionRequest::default()).await.is_ok());
        });
    }
}
