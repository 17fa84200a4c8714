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

use std::future::Future;
use std::sync::Arc;

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
    Arc::new(ToCompletion { inner })
}

/// See [`to_completion`].
pub struct ToCompletion {
    inner: SharedRuntime,
}

/// Whether `grpc` (a CRI method name) is one of [`MUTATIONS`].
pub fn is_mutation(grpc: &str) -> bool {
    MUTATIONS.contains(&grpc)
}

/// Runs `call` as a task of its own in the caller's span and waits for it.
/// A task that panicked is an `INTERNAL` error of `method`.
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
                if is_mutation($grpc) { complete($grpc, call).await } else { call.await }
            })*
            $(async fn $iname(&self, req: $ireq) -> CriResult<$iresp> {
                let inner = self.inner.clone();
                let call = async move { inner.$iname(req).await };
                if is_mutation($igrpc) { complete($igrpc, call).await } else { call.await }
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
