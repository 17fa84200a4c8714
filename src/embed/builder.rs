//! [`ActletBuilder`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::actors::supervisor::{ChildSpec, SupervisedRecipient};
use crate::cri::{Runtime, SharedRuntime};
use crate::kubelet::{Extensions, Kubelet, KubeletConfig, StartError, start_with};
use crate::messages::node::NodeConditionChanged;
use crate::messages::pleg::PlegEvents;
use crate::messages::status::PodStatusChanged;

use super::source::{PodSource, SourceRunner};

/// Why the system could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No runtime was given.
    #[error("no container runtime: call ActletBuilder::runtime (the CRI client, the mock, or your own)")]
    NoRuntime,
    /// Starting failed.
    #[error(transparent)]
    Start(#[from] StartError),
}

/// Assembles and starts an actlet system. See the [module docs](super).
pub struct ActletBuilder {
    config: KubeletConfig,
    runtime: Option<SharedRuntime>,
    ext: Extensions,
}

impl ActletBuilder {
    /// A builder for node `node_name` with upstream defaults and no sources.
    pub fn new(node_name: impl Into<String>) -> Self {
        Self {
            config: KubeletConfig::new(node_name),
            runtime: None,
            ext: Extensions::default(),
        }
    }

    /// Starts from a complete configuration (e.g. built from flags).
    pub fn from_config(config: KubeletConfig) -> Self {
        Self {
            config,
            runtime: None,
            ext: Extensions::default(),
        }
    }

    /// Adjusts any setting.
    pub fn configure(mut self, f: impl FnOnce(&mut KubeletConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The container runtime: [`CriClient`](crate::cri::CriClient),
    /// [`MockRuntime`](crate::cri::mock::MockRuntime) or your own [`Runtime`].
    pub fn runtime(self, runtime: impl Runtime) -> Self {
        self.shared_runtime(Arc::new(runtime))
    }

    /// The container runtime, already shared.
    pub fn shared_runtime(mut self, runtime: SharedRuntime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Static pods from a directory (`staticPodPath`).
    pub fn static_pod_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.static_pod_path = Some(path.into());
        self
    }

    /// Static pods from a URL (`staticPodURL`, `http://` only).
    pub fn manifest_url(mut self, url: impl Into<String>) -> Self {
        self.config.static_pod_url = Some(url.into());
        self
    }

    /// Your own pod source, named `name` (annotation `kubernetes.io/config.source`).
    /// It runs as the supervised child `source-<name>`: `factory` builds a
    /// fresh source for every (re)start, so a panicking source is rebuilt.
    pub fn source<S: PodSource>(
        mut self,
        name: impl Into<String>,
        factory: impl Fn() -> S + Send + Sync + 'static,
    ) -> Self {
        let name = name.into();
        let n = name.clone();
        let factory = Arc::new(factory);
        self.ext.sources.push((
            name,
            Box::new(move |out, node| {
                ChildSpec::new(format!("source-{n}"), move || {
                    SourceRunner::new(n.clone(), node.clone(), factory(), out.clone())
                })
                .into()
            }),
        ));
        self
    }

    /// Calls `f` on every pod status change (on the status manager's
    /// thread: keep it quick and non-blocking).
    pub fn on_pod_status(mut self, f: impl Fn(PodStatusChanged) + Send + Sync + 'static) -> Self {
        self.ext.status_observers.push(SupervisedRecipient::from_fn(f));
        self
    }

    /// Sends every pod status change to `recipient` (an actor of yours).
    pub fn pod_status_to(mut self, recipient: impl Into<SupervisedRecipient<PodStatusChanged>>) -> Self {
        self.ext.status_observers.push(recipient.into());
        self
    }

    /// Calls `f` with every batch of PLEG events (container started, died, …).
    pub fn on_pleg_events(mut self, f: impl Fn(PlegEvents) + Send + Sync + 'static) -> Self {
        self.ext.pleg_observers.push(SupervisedRecipient::from_fn(f));
        self
    }

    /// Calls `f` whenever a node condition changes (Ready, MemoryPressure,
    /// DiskPressure, PIDPressure), as the node actor computes them every
    /// node-status period. The first report names every condition.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(actlet::cri::mock::MockRuntime::new())
    ///     .on_node_condition(|c| println!("{} is {} ({})", c.type_, c.status, c.reason));
    /// # let _ = kubelet;
    /// # });
    /// ```
    pub fn on_node_condition(mut self, f: impl Fn(NodeConditionChanged) + Send + Sync + 'static) -> Self {
        self.ext.node_observers.push(SupervisedRecipient::from_fn(f));
        self
    }

    /// Cluster mode: talk to the API server with `client` (whose identity
    /// should be `system:node:<node name>`). Adds the `api` pod source and
    /// the node, lease, status, mirror-pod and event actors.
    pub fn api_client(mut self, client: kube::Client) -> Self {
        self.ext.api_client = Some(client);
        self
    }

    /// Builds and starts the system inside the current actix `System`.
    /// Runtime health is on [`Kubelet::runtime_health`]; supervisor restarts
    /// on [`Kubelet::tree`]`().subscribe()`.
    pub fn start(self) -> Result<Kubelet, BuildError> {
        let runtime = self.runtime.ok_or(BuildError::NoRuntime)?;
        Ok(start_with(self.config, runtime, self.ext)?)
    }
}
