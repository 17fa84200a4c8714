//! [`Extensions`]: what an embedder adds to the standard tree (own sources,
//! observers, the API client).

use crate::actors::supervisor::{AnyChildSpec, SupervisedRecipient};
use crate::messages::node::NodeConditionChanged;
use crate::messages::pleg::PlegEvents;
use crate::messages::pod_update::SourceSnapshot;
use crate::messages::status::PodStatusChanged;

/// Builds the supervised child of a caller's own source from PodConfig's
/// input and the node name.
///
/// ```
/// use actlet::actors::supervisor::ChildSpec;
/// use actlet::embed::{PodSource, SourceError, SourceRunner};
/// use actlet::kubelet::{Extensions, SourceSpecFactory};
/// # use k8s_openapi::api::core::v1::Pod;
///
/// struct Nothing; // a source that never has pods
/// #[async_trait::async_trait]
/// impl PodSource for Nothing {
///     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> { std::future::pending().await }
/// }
/// let factory: SourceSpecFactory = Box::new(|out, node| {
///     ChildSpec::new("source-nothing", move || SourceRunner::new("nothing".into(), node.clone(), Nothing, out.clone())).into()
/// });
/// let ext = Extensions { sources: vec![("nothing".into(), factory)], ..Default::default() };
/// assert_eq!(ext.sources.len(), 1);
/// ```
pub type SourceSpecFactory = Box<dyn FnOnce(SupervisedRecipient<SourceSnapshot>, String) -> AnyChildSpec>;

/// What an embedder adds to the standard tree.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use actlet::actors::supervisor::SupervisedRecipient;
/// use actlet::kubelet::{Extensions, start_with};
/// use actlet::messages::node::NodeConditionChanged;
///
/// actlet::testing::run_paused(async {
/// #   let tmp = tempfile::tempdir().unwrap();
///     let seen: Arc<Mutex<Vec<NodeConditionChanged>>> = Arc::default();
///     let log = seen.clone();
///     let ext = Extensions { node_observers: vec![SupervisedRecipient::from_fn(move |c| log.lock().unwrap().push(c))], ..Default::default() };
///     let mut config = actlet::KubeletConfig::new("node-a");
/// #   (config.root_dir, config.pod_logs_dir, config.container_logs_dir) = (tmp.path().join("root"), tmp.path().join("logs"), None);
///     let _kubelet = start_with(config, Arc::new(actlet::cri::mock::MockRuntime::new()), ext).unwrap();
///     let ready = || seen.lock().unwrap().iter().any(|c| c.type_ == "Ready" && c.status == "True");
///     actlet::testing::wait_until(ready, Duration::from_secs(30)).await.unwrap();
/// });
/// ```
#[derive(Default)]
pub struct Extensions {
    /// The caller's own sources, by name (each becomes `PodSource::Custom(name)`
    /// and a supervised child named `source-<name>`).
    ///
    /// ```
    /// use actlet::{ActletBuilder, PodSource, SourceError};
    /// # use k8s_openapi::api::core::v1::Pod;
    /// struct Fixed(Vec<Pod>, bool); // sends its pods once, then nothing changes
    /// #[async_trait::async_trait]
    /// impl PodSource for Fixed {
    ///     async fn next(&mut self) -> Result<Vec<Pod>, SourceError> {
    ///         if std::mem::replace(&mut self.1, true) { std::future::pending::<()>().await }
    ///         Ok(self.0.clone())
    ///     }
    /// }
    /// // ActletBuilder::source adds an entry here (a supervised child `source-fixed`)
    /// let builder = ActletBuilder::new("node-a").source("fixed", || Fixed(vec![], false));
    /// # let _ = builder;
    /// ```
    pub sources: Vec<(String, SourceSpecFactory)>,
    /// Told of every pod status change.
    ///
    /// ```
    /// # use actlet::actors::supervisor::SupervisedRecipient;
    /// # use actlet::kubelet::Extensions;
    /// use actlet::messages::status::PodStatusChanged;
    /// let ext = Extensions {
    ///     status_observers: vec![SupervisedRecipient::from_fn(|c: PodStatusChanged| println!("{} → {:?}", c.uid, c.new_phase))],
    ///     ..Default::default()
    /// };
    /// assert_eq!(ext.status_observers.len(), 1);
    /// ```
    pub status_observers: Vec<SupervisedRecipient<PodStatusChanged>>,
    /// Told of every batch of PLEG events.
    ///
    /// ```
    /// # use actlet::actors::supervisor::SupervisedRecipient;
    /// # use actlet::kubelet::Extensions;
    /// use actlet::messages::pleg::PlegEvents;
    /// let ext = Extensions {
    ///     pleg_observers: vec![SupervisedRecipient::from_fn(|e: PlegEvents| println!("{} events", e.0.len()))],
    ///     ..Default::default()
    /// };
    /// assert_eq!(ext.pleg_observers.len(), 1);
    /// ```
    pub pleg_observers: Vec<SupervisedRecipient<PlegEvents>>,
    /// Told of every node condition change.
    ///
    /// ```
    /// # use actlet::actors::supervisor::SupervisedRecipient;
    /// # use actlet::kubelet::Extensions;
    /// use actlet::messages::node::NodeConditionChanged;
    /// let ext = Extensions {
    ///     node_observers: vec![SupervisedRecipient::from_fn(|c: NodeConditionChanged| println!("{}={} ({})", c.type_, c.status, c.reason))],
    ///     ..Default::default()
    /// };
    /// assert_eq!(ext.node_observers.len(), 1);
    /// ```
    pub node_observers: Vec<SupervisedRecipient<NodeConditionChanged>>,
    /// Standalone mode: where core/v1 Events go (with an API client they go
    /// to the API server instead).
    ///
    /// ```
    /// # use actlet::actors::supervisor::SupervisedRecipient;
    /// # use actlet::kubelet::Extensions;
    /// use actlet::messages::event::RecordEvent;
    /// let ext = Extensions {
    ///     event_sink: Some(SupervisedRecipient::from_fn(|e: RecordEvent| println!("{}: {}", e.reason, e.message))),
    ///     ..Default::default()
    /// };
    /// assert!(ext.event_sink.is_some());
    /// ```
    pub event_sink: Option<SupervisedRecipient<crate::messages::event::RecordEvent>>,
    /// Cluster mode: the API client (node identity `system:node:<name>`).
    /// Adds the `api` pod source and the actors of [`crate::cluster`].
    ///
    /// ```
    /// # use actlet::kubelet::Extensions;
    /// # actlet::testing::run_paused(async {
    /// // normally actlet::cluster::client_from_kubeconfig(..); nothing is contacted until start
    /// let client = kube::Client::try_from(kube::Config::new("https://10.0.0.1:6443".parse().unwrap())).unwrap();
    /// let ext = Extensions { api_client: Some(client), ..Default::default() };
    /// assert!(ext.api_client.is_some());
    /// # });
    /// ```
    pub api_client: Option<kube::Client>,
    /// Cluster mode: the client for heartbeats (Lease renewals and node
    /// status), e.g. from [`crate::cluster::heartbeat_client_from_kubeconfig`]:
    /// not rate limited, with a short timeout. `None`: `api_client` is used.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use actlet::kubelet::Extensions;
    /// # actlet::testing::run_paused(async {
    /// let config = kube::Config::new("https://10.0.0.1:6443".parse().unwrap());
    /// let heartbeat = actlet::cluster::heartbeat_client_from_config(config, Duration::from_secs(10)).unwrap();
    /// let ext = Extensions { heartbeat_client: Some(heartbeat), ..Default::default() };
    /// assert!(ext.heartbeat_client.is_some());
    /// # });
    /// ```
    pub heartbeat_client: Option<kube::Client>,
    /// The RuntimeClasses `spec.runtimeClassName` resolves through. `None`:
    /// in cluster mode a table watched from the API server, standalone an
    /// empty one (every named class is unknown).
    ///
    /// ```
    /// # use actlet::kubelet::Extensions;
    /// let classes = actlet::runtime_class::RuntimeClasses::new();
    /// classes.insert("gvisor", "runsc");
    /// let ext = Extensions { runtime_classes: Some(classes), ..Default::default() };
    /// assert!(ext.runtime_classes.is_some());
    /// ```
    pub runtime_classes: Option<crate::runtime_class::RuntimeClasses>,
    /// Cluster mode with `rotateCertificates`: the client certificate is
    /// renewed before it expires and `api_client`/`heartbeat_client` (built
    /// with [`crate::cluster::rotating_client::rotating`]) move onto it.
    /// `None`: the certificate is used as it is until actlet restarts.
    pub client_rotation: Option<crate::certificate::client_manager::ClientRotation>,
}
