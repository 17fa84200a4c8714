//! [`HookedRuntime`]: a [`Runtime`] wrapper that runs a hook before every
//! call, to make a runtime misbehave in ways the mock's faults cannot
//! (panics, or checks on what the kubelet asks).

use std::any::Any;
use std::sync::Arc;

use crate::cri::v1::*;
use crate::cri::{CriResult, Runtime};

/// One call about to be forwarded by a [`HookedRuntime`].
///
/// ```
/// use actlet::cri::v1::{ContainerConfig, ContainerMetadata, CreateContainerRequest};
/// use actlet::testing::Call;
///
/// let req = CreateContainerRequest {
///     config: Some(ContainerConfig {
///         metadata: Some(ContainerMetadata { name: "app".into(), attempt: 0 }),
///         ..Default::default()
///     }),
///     ..Default::default()
/// };
/// let call = Call::new("CreateContainer", &req);
/// assert_eq!(call.container_name(), Some("app"));
/// assert!(call.request::<CreateContainerRequest>().is_some());
/// ```
pub struct Call<'a> {
    /// The CRI method, e.g. `"CreateContainer"`.
    pub method: &'static str,
    request: &'a (dyn Any + Send + Sync),
}

impl<'a> Call<'a> {
    /// A call of `method` with `request`.
    ///
    /// ```
    /// let req = actlet::cri::v1::VersionRequest::default();
    /// assert_eq!(actlet::testing::Call::new("Version", &req).method, "Version");
    /// ```
    pub fn new<T: Any + Send + Sync>(method: &'static str, request: &'a T) -> Self {
        Self { method, request }
    }

    /// The request, if it is a `T` (e.g. [`CreateContainerRequest`]).
    ///
    /// ```
    /// use actlet::cri::v1::{StatusRequest, VersionRequest};
    /// let req = VersionRequest::default();
    /// let call = actlet::testing::Call::new("Version", &req);
    /// assert!(call.request::<StatusRequest>().is_none());
    /// ```
    pub fn request<T: Any>(&self) -> Option<&'a T> {
        self.request.downcast_ref()
    }

    /// The container's name, for `CreateContainer`.
    ///
    /// ```
    /// let req = actlet::cri::v1::VersionRequest::default();
    /// assert_eq!(actlet::testing::Call::new("Version", &req).container_name(), None);
    /// ```
    pub fn container_name(&self) -> Option<&'a str> {
        let req = self.request::<CreateContainerRequest>()?;
        Some(req.config.as_ref()?.metadata.as_ref()?.name.as_str())
    }

    /// The pod's name, for `RunPodSandbox` and `CreateContainer`.
    ///
    /// ```
    /// use actlet::cri::v1::{PodSandboxConfig, PodSandboxMetadata, RunPodSandboxRequest};
    /// let req = RunPodSandboxRequest {
    ///     config: Some(PodSandboxConfig {
    ///         metadata: Some(PodSandboxMetadata { name: "web".into(), ..Default::default() }),
    ///         ..Default::default()
    ///     }),
    ///     ..Default::default()
    /// };
    /// assert_eq!(actlet::testing::Call::new("RunPodSandbox", &req).pod_name(), Some("web"));
    /// ```
    pub fn pod_name(&self) -> Option<&'a str> {
        let config = match (
            self.request::<RunPodSandboxRequest>(),
            self.request::<CreateContainerRequest>(),
        ) {
            (Some(r), _) => r.config.as_ref(),
            (_, Some(r)) => r.sandbox_config.as_ref(),
            _ => None,
        }?;
        Some(config.metadata.as_ref()?.name.as_str())
    }
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

type Hook = Arc<dyn Fn(&Call<'_>) + Send + Sync>;

/// Forwards every call to `inner` after running a hook, which may panic
/// (to test that a panicking runtime is contained) or record what it sees.
///
/// ```
/// use std::time::Duration;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use actlet::cri::mock::MockRuntime;
/// use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused};
///
/// run_paused(async {
///     let mock = MockRuntime::new();
///     let armed = AtomicBool::new(true);
///     let runtime = HookedRuntime::new(mock.clone(), move |call| {
///         if call.container_name() == Some("app") && armed.swap(false, Ordering::SeqCst) {
///             panic!("injected panic in {}", call.method);
///         }
///     });
///     let node = TestNode::builder().mock(mock).runtime(runtime).start();
///     node.set_pods(vec![PodBuilder::new("web").container("app", "busybox:1.36", ["sleep", "3600"]).build()]);
///     // the pod worker panicked once, was restarted, and finished the pod
///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
///     assert_eq!(node.mock().call_count("CreateContainer"), 1);
/// });
/// ```
pub struct HookedRuntime<R> {
    inner: R,
    hook: Hook,
}

impl<R: Runtime> HookedRuntime<R> {
    /// Wraps `inner`; `hook` runs (on the caller's task) before each call.
    ///
    /// ```
    /// let rt = actlet::testing::HookedRuntime::new(actlet::cri::mock::MockRuntime::new(), |call| {
    ///     println!("{}", call.method);
    /// });
    /// # let _ = rt;
    /// ```
    pub fn new(inner: R, hook: impl Fn(&Call<'_>) + Send + Sync + 'static) -> Self {
        Self {
            inner,
            hook: Arc::new(hook),
        }
    }

    /// The wrapped runtime.
    ///
    /// ```
    /// let rt = actlet::testing::HookedRuntime::new(actlet::cri::mock::MockRuntime::new(), |_| {});
    /// assert!(!rt.inner().is_down());
    /// ```
    pub fn inner(&self) -> &R {
        &self.inner
    }
}

macro_rules! hooked {
    (runtime { $($runtime:tt)* } image { $($image:tt)* }) => {
        hooked!(@impl $($runtime)* $($image)*);
    };
    (@impl $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)?) => {
        #[async_trait::async_trait]
        impl<R: Runtime> Runtime for HookedRuntime<R> {
            $(
                async fn $name(&self, req: $req) -> CriResult<$resp> {
                    (self.hook)(&Call::new($grpc, &req));
                    self.inner.$name(req).await
                }
            )*
            async fn get_container_events(
                &self,
                req: crate::cri::v1::GetEventsRequest,
            ) -> CriResult<crate::cri::ContainerEventStream> {
                (self.hook)(&Call::new("GetContainerEvents", &req));
                self.inner.get_container_events(req).await
            }
        }
    };
}

// Every call of the one CRI table in `cri::runtime`.
crate::cri::runtime::cri_calls!(hooked);
