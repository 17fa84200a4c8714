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
///
/// ```
/// let err = actlet::ActletBuilder::new("node-a").start().err();
/// assert!(matches!(err, Some(actlet::BuildError::NoRuntime)));
/// ```
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
///
/// ```
/// use std::time::Duration;
/// use actlet::ActletBuilder;
/// use actlet::cri::mock::MockRuntime;
///
/// actlet::testing::run_paused(async {
/// #   let tmp = tempfile::tempdir().unwrap();
///     let kubelet = ActletBuilder::new("node-a")
///         .runtime(MockRuntime::new())
///     #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
///         .configure(|c| c.max_pods = 20)
///         .start()
///         .unwrap();
///     assert!(kubelet.pods.is_empty());
///     kubelet.shutdown(Duration::from_secs(5)).await.unwrap();
/// });
/// ```
pub struct ActletBuilder {
    config: KubeletConfig,
    runtime: Option<SharedRuntime>,
    ext: Extensions,
}

impl ActletBuilder {
    /// A builder for node `node_name` with upstream defaults and no sources.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// use actlet::testing::wait_until;
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(actlet::cri::mock::MockRuntime::new())
    /// #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///     .start()
    ///     .unwrap();
    /// // the core actors run under the root supervisor
    /// let tree = kubelet.tree();
    /// wait_until(|| tree.get("root/pleg").is_some(), Duration::from_secs(1)).await.unwrap();
    /// # });
    /// ```
    pub fn new(node_name: impl Into<String>) -> Self {
        Self {
            config: KubeletConfig::new(node_name),
            runtime: None,
            ext: Extensions::default(),
        }
    }

    /// Starts from a complete configuration (e.g. built from flags).
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let mut config = actlet::KubeletConfig::new("node-a");
    /// config.max_pods = 10;
    /// config.root_dir = tmp.path().join("root");
    /// config.pod_logs_dir = tmp.path().join("logs");
    /// config.container_logs_dir = None;
    /// let kubelet = actlet::ActletBuilder::from_config(config)
    ///     .runtime(actlet::cri::mock::MockRuntime::new())
    ///     .start()
    ///     .unwrap();
    /// assert!(kubelet.pods.is_empty());
    /// # });
    /// ```
    pub fn from_config(config: KubeletConfig) -> Self {
        Self {
            config,
            runtime: None,
            ext: Extensions::default(),
        }
    }

    /// Adjusts any setting.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// let tmp = tempfile::tempdir().unwrap();
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(actlet::cri::mock::MockRuntime::new())
    ///     .configure(|c| {
    ///         c.root_dir = tmp.path().join("root"); // instead of /var/lib/kubelet
    ///         c.pod_logs_dir = tmp.path().join("logs"); // instead of /var/log/pods
    ///         c.container_logs_dir = None; // no /var/log/containers symlinks
    ///         c.max_pods = 5;
    ///     })
    ///     .start()
    ///     .unwrap();
    /// assert!(tmp.path().join("root").is_dir()); // created at start
    /// # let _ = kubelet;
    /// # });
    /// ```
    pub fn configure(mut self, f: impl FnOnce(&mut KubeletConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The container runtime: [`CriClient`](crate::cri::CriClient),
    /// [`MockRuntime`](crate::cri::mock::MockRuntime) or your own [`Runtime`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// use actlet::cri::mock::MockRuntime;
    /// let mock = MockRuntime::new(); // clones share the runtime
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(mock.clone())
    /// #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///     .start()
    ///     .unwrap();
    /// // the PLEG relists containers and sandboxes from the runtime
    /// actlet::testing::wait_until(|| mock.call_count("ListPodSandbox") > 0, Duration::from_secs(5)).await.unwrap();
    /// # let _ = kubelet;
    /// # });
    /// ```
    pub fn runtime(self, runtime: impl Runtime) -> Self {
        self.shared_runtime(Arc::new(runtime))
    }

    /// The container runtime, already shared.
    ///
    /// ```
    /// # actlet::testing::run_paused(async {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// use std::sync::Arc;
    /// use actlet::cri::SharedRuntime;
    /// let runtime: SharedRuntime = Arc::new(actlet::cri::mock::MockRuntime::new());
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .shared_runtime(runtime.clone())
    /// #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///     .start()
    ///     .unwrap();
    /// assert!(Arc::strong_count(&runtime) > 1); // the system holds it too
    /// # let _ = kubelet;
    /// # });
    /// ```
    pub fn shared_runtime(mut self, runtime: SharedRuntime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Static pods from a directory (`staticPodPath`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let manifests = tempfile::tempdir().unwrap();
    /// std::fs::write(manifests.path().join("web.yaml"), r#"
    /// apiVersion: v1
    /// kind: Pod
    /// metadata: {name: web}
    /// spec: {containers: [{name: c, image: "busybox:1.36", command: [sleep, "3600"]}]}
    /// "#).unwrap();
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(actlet::cri::mock::MockRuntime::new())
    ///     .static_pod_path(manifests.path())
    /// #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///     .start()
    ///     .unwrap();
    /// // static pods are named `<name>-<node name>`
    /// let running = || kubelet.phase_of_named("default", "web-node-a").as_deref() == Some("Running");
    /// actlet::testing::wait_until(running, Duration::from_secs(60)).await.unwrap();
    /// # });
    /// ```
    pub fn static_pod_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.static_pod_path = Some(path.into());
        self
    }

    /// Static pods from a URL (`staticPodURL`, `http://` only).
    ///
    /// ```
    /// # use std::time::Duration;
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    /// // real time: the HTTP source talks to a real socket
    /// actlet::testing::TestSystem::real_time().block_on(async {
    /// #   let tmp = tempfile::tempdir().unwrap();
    ///     let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    ///     let url = format!("http://{}/pods.yaml", server.local_addr().unwrap());
    ///     let body = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
    ///       "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}"#;
    ///     tokio::spawn(async move {
    ///         while let Ok((mut conn, _)) = server.accept().await {
    ///             let _ = conn.read(&mut [0; 4096]).await; // the request
    ///             let reply = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
    ///             let _ = conn.write_all(reply.as_bytes()).await;
    ///         }
    ///     });
    ///     let kubelet = actlet::ActletBuilder::new("node-a")
    ///         .runtime(actlet::cri::mock::MockRuntime::new())
    ///         .manifest_url(url)
    ///     #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///         .start()
    ///         .unwrap();
    ///     let seen = || kubelet.phase_of_named("default", "web-node-a").is_some();
    ///     actlet::testing::wait_until(seen, Duration::from_secs(10)).await.unwrap();
    /// });
    /// ```
    pub fn manifest_url(mut self, url: impl Into<String>) -> Self {
        self.config.static_pod_url = Some(url.into());
        self
    }

    /// Your own pod source, named `name` (annotation `kubernetes.io/config.source`).
    /// It runs as the supervised child `source-<name>`: `factory` builds a
    /// fresh source for every (re)start, so a panicking source is rebuilt.
    ///
    /// ```
    /// # use std::time::Duration;
    /// use actlet::{PodSource, SourceError};
    /// use actlet::testing::PodBuilder;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// /// One pod, then nothing new.
    /// struct Fixed(Option<Vec<Pod>>);
    ///
    /// #[async_trait::async_trait]
    /// impl PodSource for Fixed {
    ///     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
    ///         match self.0.take() {
    ///             Some(pods) => Ok(pods),
    ///             None => std::future::pending().await,
    ///         }
    ///     }
    /// }
    ///
    /// actlet::testing::run_paused(async {
    /// #   let tmp = tempfile::tempdir().unwrap();
    ///     let kubelet = actlet::ActletBuilder::new("node-a")
    ///         .runtime(actlet::cri::mock::MockRuntime::new())
    ///         .source("mine", || Fixed(Some(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()])))
    ///     #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///         .start()
    ///         .unwrap();
    ///     let running = || kubelet.phase_of_named("default", "web").as_deref() == Some("Running");
    ///     actlet::testing::wait_until(running, Duration::from_secs(60)).await.unwrap();
    ///     assert!(kubelet.tree().get("root/source-mine").is_some());
    /// });
    /// ```
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
    ///
    /// ```
    /// # use std::time::Duration;
    /// use std::sync::{Arc, Mutex};
    /// use actlet::testing::{PodBuilder, TestNode, run_paused};
    ///
    /// run_paused(async {
    ///     let phases = Arc::new(Mutex::new(Vec::new()));
    ///     let seen = phases.clone();
    ///     // TestNode runs an ActletBuilder; `customize` adds to it
    ///     let node = TestNode::builder()
    ///         .customize(move |b| b.on_pod_status(move |c| seen.lock().unwrap().push(c.new_phase)))
    ///         .start();
    ///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    ///     assert!(!phases.lock().unwrap().is_empty());
    /// });
    /// ```
    pub fn on_pod_status(mut self, f: impl Fn(PodStatusChanged) + Send + Sync + 'static) -> Self {
        self.ext.status_observers.push(SupervisedRecipient::from_fn(f));
        self
    }

    /// Standalone mode: calls `f` with every core/v1 Event the kubelet
    /// records (`Created`, `Started`, `Killing`, `Unhealthy`, …).
    ///
    /// ```
    /// # use std::sync::{Arc, Mutex};
    /// # use std::time::Duration;
    /// use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
    ///
    /// run_paused(async {
    ///     let reasons: Arc<Mutex<Vec<String>>> = Arc::default();
    ///     let seen = reasons.clone();
    ///     let node = TestNode::builder()
    ///         .customize(move |b| b.on_event(move |e| seen.lock().unwrap().push(e.reason)))
    ///         .start();
    ///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     wait_until(|| reasons.lock().unwrap().iter().any(|r| r == "Started"), Duration::from_secs(60)).await.unwrap();
    /// });
    /// ```
    pub fn on_event(mut self, f: impl Fn(crate::messages::event::RecordEvent) + Send + Sync + 'static) -> Self {
        self.ext.event_sink = Some(SupervisedRecipient::from_fn(f));
        self
    }

    /// Sends every pod status change to `recipient` (an actor of yours).
    ///
    /// ```
    /// # use std::time::Duration;
    /// use actlet::actors::supervisor::SupervisedRecipient;
    /// use actlet::messages::status::PodStatusChanged;
    /// use actlet::testing::{PodBuilder, TestNode, run_paused};
    ///
    /// run_paused(async {
    ///     let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    ///     // any `SupervisedRecipient`: a supervised actor's `recipient()`, or a closure
    ///     let to: SupervisedRecipient<PodStatusChanged> = SupervisedRecipient::from_fn(move |c| { let _ = tx.send(c); });
    ///     let node = TestNode::builder().customize(move |b| b.pod_status_to(to)).start();
    ///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     let first = rx.recv().await.unwrap();
    ///     assert_eq!(first.old_phase, None); // a new pod
    /// });
    /// ```
    pub fn pod_status_to(mut self, recipient: impl Into<SupervisedRecipient<PodStatusChanged>>) -> Self {
        self.ext.status_observers.push(recipient.into());
        self
    }

    /// Calls `f` with every batch of PLEG events (container started, died, …).
    ///
    /// ```
    /// # use std::time::Duration;
    /// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
    /// use actlet::messages::pleg::PlegEventType;
    /// use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
    ///
    /// run_paused(async {
    ///     let started = Arc::new(AtomicUsize::new(0));
    ///     let n = started.clone();
    ///     let node = TestNode::builder()
    ///         .customize(move |b| b.on_pleg_events(move |batch| {
    ///             let k = batch.0.iter().filter(|e| e.kind == PlegEventType::ContainerStarted).count();
    ///             n.fetch_add(k, Ordering::SeqCst);
    ///         }))
    ///         .start();
    ///     node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "60"]).build()]);
    ///     wait_until(|| started.load(Ordering::SeqCst) > 0, Duration::from_secs(60)).await.unwrap();
    /// });
    /// ```
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
    ///
    /// ```
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// use actlet::cluster::{Qps, client_from_kubeconfig};
    /// let client = client_from_kubeconfig("/var/lib/kubelet/kubeconfig".as_ref(), Qps::default()).await?;
    /// let cri = actlet::cri::CriClient::new("unix:///run/containerd/containerd.sock", std::time::Duration::from_secs(120))?;
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(cri)
    ///     .api_client(client)
    ///     .start()?;
    /// # let _ = kubelet; Ok(()) }
    /// ```
    pub fn api_client(mut self, client: kube::Client) -> Self {
        self.ext.api_client = Some(client);
        self
    }

    /// Cluster mode: the client for heartbeats (Lease and node status), e.g.
    /// from [`heartbeat_client_from_kubeconfig`](crate::cluster::heartbeat_client_from_kubeconfig)
    /// (no rate limit, short timeouts); without it the API client is used.
    pub fn heartbeat_client(mut self, client: kube::Client) -> Self {
        self.ext.heartbeat_client = Some(client);
        self
    }

    /// Renews the client certificate before it expires and moves the clients
    /// onto it (`rotateCertificates`): `rotation` comes from
    /// [`RotationTarget::wrap`](crate::certificate::client_manager::RotationTarget::wrap),
    /// whose wrapped bulk client is the one given to [`api_client`](Self::api_client).
    pub fn client_rotation(mut self, rotation: crate::certificate::client_manager::ClientRotation) -> Self {
        self.ext.client_rotation = Some(rotation);
        self
    }

    /// Resolves `spec.runtimeClassName` through `classes` (name → CRI
    /// handler) instead of the cluster's RuntimeClasses (cluster mode) or
    /// none (standalone: every named class is unknown).
    ///
    /// ```
    /// use actlet::runtime_class::RuntimeClasses;
    /// let classes = RuntimeClasses::new();
    /// classes.insert("gvisor", "runsc");
    /// let builder = actlet::ActletBuilder::new("node-a").runtime_classes(classes);
    /// # let _ = builder;
    /// ```
    pub fn runtime_classes(mut self, classes: crate::runtime_class::RuntimeClasses) -> Self {
        self.ext.runtime_classes = Some(classes);
        self
    }

    /// Builds and starts the system inside the current actix `System`.
    /// Runtime health is on [`Kubelet::runtime_health`]; supervisor restarts
    /// on [`Kubelet::tree`]`().subscribe()`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let kubelet = actlet::ActletBuilder::new("node-a")
    ///     .runtime(actlet::cri::mock::MockRuntime::new())
    /// #     .configure(|c| { c.root_dir = tmp.path().join("root"); c.pod_logs_dir = tmp.path().join("logs"); c.container_logs_dir = None; })
    ///     .start()
    ///     .unwrap();
    /// let health = kubelet.runtime_health.clone();
    /// let report = kubelet.shutdown(Duration::from_secs(5)).await.unwrap();
    /// println!("{report:?} (runtime health: {:?})", *health.borrow());
    /// # });
    /// ```
    pub fn start(self) -> Result<Kubelet, BuildError> {
        let runtime = self.runtime.ok_or(BuildError::NoRuntime)?;
        Ok(start_with(self.config, runtime, self.ext)?)
    }
}
