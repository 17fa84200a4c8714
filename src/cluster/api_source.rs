//! [`ApiSource`]: the `api` pod source — list+watch of the pods bound to this
//! node (`fieldSelector=spec.nodeName=<node>`), upstream `NewSourceApiserver`.
//!
//! kube-runtime's watcher does the protocol: it lists, watches from the
//! list's resourceVersion with bookmarks, resumes from the last seen
//! resourceVersion when a watch ends and re-lists on 410 Gone. While the API
//! server is away it backs off (exponential, 0.8 s → 30 s with jitter), but
//! the re-list after a 410 is immediate and a failing watch restarts at once
//! when the node's heartbeat gets through again ([`crate::cluster::watch_backoff`]).
//! The actor keeps the set of pods ([`ApiPodSet`]) and sends PodConfig the
//! whole set after each change, like upstream's undelta store; PodConfig
//! diffs it, so a re-list that finds the same pods changes nothing and
//! running pods are never disturbed by a watch expiry.
//!
//! Mirror pods are split off into [`MirrorPods`]: they describe static pods
//! and are never run.

use std::collections::BTreeMap;
use std::sync::Arc;

use actix::{Actor, AsyncContext, Context, SpawnHandle, StreamHandler};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};

use super::mirror_index::{MirrorPods, is_mirror_pod};
use super::watch_backoff::{ApiReachability, WatchBackoffPolicy, backoff_watch};
use crate::actors::supervisor::SupervisedRecipient;
use crate::messages::pod_update::{PodSource, SourceSnapshot};

/// The pods the API server binds to this node, as the watcher reports them.
///
/// ```
/// # use k8s_openapi::api::core::v1::Pod;
/// # let pod = |name: &str, rv: &str, mirror: bool| -> Pod {
/// #     let mut v = serde_json::json!({"metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": rv}});
/// #     if mirror { v["metadata"]["annotations"] = serde_json::json!({"kubernetes.io/config.mirror": "h"}); }
/// #     serde_json::from_value(v).unwrap()
/// # };
/// use actlet::cluster::api_source::ApiPodSet;
/// use kube::runtime::watcher::Event;
/// let mut set = ApiPodSet::default();
/// // a list: nothing is published until it is complete
/// assert!(!set.apply(Event::Init));
/// assert!(!set.apply(Event::InitApply(pod("web", "1", false))));
/// assert!(!set.apply(Event::InitApply(pod("web-node-a", "2", true))));
/// assert!(set.apply(Event::InitDone));
/// let (run, mirrors) = set.split();
/// assert_eq!((run.len(), mirrors.len()), (1, 1));
/// ```
#[derive(Debug, Default)]
pub struct ApiPodSet {
    pods: BTreeMap<String, Arc<Pod>>,
    relisting: Option<BTreeMap<String, Arc<Pod>>>,
    listed: bool,
}

fn key(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_else(|| {
        format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        )
    })
}

impl ApiPodSet {
    /// Applies one watcher event; true when the set changed in a way worth
    /// publishing (a completed list always is: it makes the source ready).
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let pod = |name: &str, rv: &str, mirror: bool| -> Pod {
    /// #     let mut v = serde_json::json!({"metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": rv}});
    /// #     if mirror { v["metadata"]["annotations"] = serde_json::json!({"kubernetes.io/config.mirror": "h"}); }
    /// #     serde_json::from_value(v).unwrap()
    /// # };
    /// use actlet::cluster::api_source::ApiPodSet;
    /// use kube::runtime::watcher::Event;
    /// let mut set = ApiPodSet::default();
    /// set.apply(Event::Init);
    /// set.apply(Event::InitDone); // an empty list
    /// assert!(set.apply(Event::Apply(pod("web", "5", false)))); // added
    /// assert!(!set.apply(Event::Apply(pod("web", "5", false)))); // the same version again: nothing new
    /// assert!(set.apply(Event::Apply(pod("web", "6", false)))); // updated
    /// assert!(set.apply(Event::Delete(pod("web", "7", false))));
    /// assert!(set.split().0.is_empty());
    /// ```
    pub fn apply(&mut self, event: Event<Pod>) -> bool {
        match event {
            Event::Init => {
                self.relisting = Some(BTreeMap::new());
                false
            }
            Event::InitApply(pod) => {
                let pod = Arc::new(pod);
                self.relisting.get_or_insert_default().insert(key(&pod), pod);
                false
            }
            Event::InitDone => {
                self.pods = self.relisting.take().unwrap_or_default();
                self.listed = true;
                true
            }
            Event::Apply(pod) => {
                let pod = Arc::new(pod);
                let k = key(&pod);
                let same = self.pods.get(&k).is_some_and(|old| {
                    old.metadata.resource_version.is_some()
                        && old.metadata.resource_version == pod.metadata.resource_version
                });
                self.pods.insert(k, pod);
                self.listed && !same
            }
            Event::Delete(pod) => self.pods.remove(&key(&pod)).is_some() && self.listed,
        }
    }

    /// Whether a complete list has been seen.
    ///
    /// ```
    /// use actlet::cluster::api_source::ApiPodSet;
    /// use kube::runtime::watcher::Event;
    /// let mut set = ApiPodSet::default();
    /// set.apply(Event::Init);
    /// assert!(!set.listed());
    /// set.apply(Event::InitDone);
    /// assert!(set.listed()); // the source is ready
    /// ```
    pub fn listed(&self) -> bool {
        self.listed
    }

    /// Pods to run (mirror pods excluded) and mirror pods.
    ///
    /// ```
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let pod = |name: &str, rv: &str, mirror: bool| -> Pod {
    /// #     let mut v = serde_json::json!({"metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": rv}});
    /// #     if mirror { v["metadata"]["annotations"] = serde_json::json!({"kubernetes.io/config.mirror": "h"}); }
    /// #     serde_json::from_value(v).unwrap()
    /// # };
    /// use actlet::cluster::api_source::ApiPodSet;
    /// use kube::runtime::watcher::Event;
    /// let mut set = ApiPodSet::default();
    /// for e in [Event::Init, Event::InitApply(pod("web", "1", false)), Event::InitApply(pod("web-node-a", "2", true)), Event::InitDone] {
    ///     set.apply(e);
    /// }
    /// let (run, mirrors) = set.split();
    /// assert_eq!(run[0].metadata.name.as_deref(), Some("web"));
    /// assert_eq!(mirrors[0].metadata.name.as_deref(), Some("web-node-a")); // never run
    /// ```
    pub fn split(&self) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
        self.pods.values().cloned().partition(|p| !is_mirror_pod(p))
    }
}

/// The API source actor. See the [module docs](self).
///
/// ```
/// use actlet::actors::supervisor::{ChildSpec, SupervisedRecipient};
/// use actlet::cluster::{ApiSource, MirrorPods};
/// use actlet::messages::pod_update::SourceSnapshot;
///
/// /// The supervised child spec of the API source, as the kubelet builds it.
/// fn api_source(client: kube::Client, out: SupervisedRecipient<SourceSnapshot>, mirrors: MirrorPods) -> ChildSpec<ApiSource> {
///     ChildSpec::new("api-source", move || ApiSource::new(client.clone(), "node-a".into(), out.clone(), mirrors.clone()))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let config = kube::Config::new("http://127.0.0.1:8080".parse().unwrap());
/// let client = actlet::cluster::client_from_config(config, Default::default()).unwrap();
/// let spec = api_source(client, SupervisedRecipient::from_fn(|_: SourceSnapshot| {}), MirrorPods::new());
/// assert!(format!("{spec:?}").contains("\"api-source\"")); // nothing runs until a supervisor starts it
/// # });
/// ```
pub struct ApiSource {
    client: Client,
    node_name: String,
    out: SupervisedRecipient<SourceSnapshot>,
    mirrors: MirrorPods,
    set: ApiPodSet,
    backoff: WatchBackoffPolicy,
    reachability: Option<ApiReachability>,
    /// The running watch stream.
    watch: Option<SpawnHandle>,
    /// The last thing the watch yielded was an error (it is backing off).
    failing: bool,
}

/// The heartbeat got through to the API server again (a new generation of
/// [`ApiReachability`]).
struct ApiReached;

impl ApiSource {
    /// Watches the pods of `node_name` and sends snapshots to `out`.
    ///
    /// ```
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// use actix::Actor;
    /// use actlet::actors::supervisor::SupervisedRecipient;
    /// use actlet::cluster::{ApiSource, MirrorPods, Qps, client_from_kubeconfig};
    ///
    /// let client = client_from_kubeconfig("/var/lib/kubelet/kubeconfig".as_ref(), Qps::default()).await?;
    /// let out = SupervisedRecipient::from_fn(|s: actlet::messages::pod_update::SourceSnapshot| println!("{} pods", s.pods.len()));
    /// let mirrors = MirrorPods::new(); // filled with the mirror pods it sees
    /// ApiSource::new(client, "node-a".into(), out, mirrors.clone()).start();
    /// # Ok(()) }
    /// ```
    pub fn new(
        client: Client,
        node_name: String,
        out: SupervisedRecipient<SourceSnapshot>,
        mirrors: MirrorPods,
    ) -> Self {
        Self {
            client,
            node_name,
            out,
            mirrors,
            set: ApiPodSet::default(),
            backoff: WatchBackoffPolicy::default(),
            reachability: None,
            watch: None,
            failing: false,
        }
    }

    /// Retries a failed watch after `policy` (default: client-go's 0.8 s … 30 s).
    pub fn with_watch_backoff(mut self, policy: WatchBackoffPolicy) -> Self {
        self.backoff = policy;
        self
    }

    /// Restarts a failing watch at once whenever `reachability` says the API
    /// server answers again (the node Lease raises it).
    pub fn with_reachability(mut self, reachability: ApiReachability) -> Self {
        self.reachability = Some(reachability);
        self
    }

    fn start_watch(&mut self, ctx: &mut Context<Self>) {
        if let Some(old) = self.watch.take() {
            ctx.cancel_future(old);
        }
        let api: Api<Pod> = Api::all(self.client.clone());
        let config = watcher::Config::default().fields(&format!("spec.nodeName={}", self.node_name));
        self.failing = false;
        self.watch = Some(ctx.add_stream(backoff_watch(watcher::watcher(api, config), self.backoff).boxed()));
    }

    fn publish(&self) {
        let (pods, mirrors) = self.set.split();
        tracing::debug!(pods = pods.len(), mirror_pods = mirrors.len(), "api source snapshot");
        self.mirrors.replace_all(mirrors);
        let snapshot = SourceSnapshot {
            source: PodSource::Api,
            pods,
            errors: vec![],
        };
        if let Err(e) = self.out.do_send(snapshot) {
            tracing::warn!(error = %e, "pod-config unreachable: api snapshot dropped (next change resends the whole set)");
        }
    }
}

impl Actor for ApiSource {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(node = %self.node_name, "watching pods bound to this node");
        self.start_watch(ctx);
        if let Some(reachability) = &self.reachability {
            let mut rx = reachability.subscribe();
            rx.mark_unchanged();
            let reached = futures::stream::unfold(rx, |mut rx| async move {
                rx.changed().await.ok()?;
                Some((ApiReached, rx))
            });
            ctx.add_stream(reached);
        }
    }
}

impl StreamHandler<ApiReached> for ApiSource {
    fn handle(&mut self, _: ApiReached, ctx: &mut Self::Context) {
        if self.failing {
            tracing::info!(node = %self.node_name, "API server reachable again: restarting the pod watch now");
            self.start_watch(ctx);
        }
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        // The reachability signal outlives this actor; nothing to do if it ends.
    }
}

impl StreamHandler<Result<Event<Pod>, watcher::Error>> for ApiSource {
    fn handle(&mut self, item: Result<Event<Pod>, watcher::Error>, _ctx: &mut Self::Context) {
        self.failing = item.is_err();
        match item {
            Ok(Event::Delete(pod)) if self.set.listed() => {
                // A force deletion (grace 0) is seen only as DELETED: send the
                // final object first, so the pod is killed with its deletion
                // grace period rather than the spec's, then the removal.
                if pod.metadata.deletion_timestamp.is_some() && self.set.apply(Event::Apply(pod.clone())) {
                    self.publish();
                }
                if self.set.apply(Event::Delete(pod)) {
                    self.publish();
                }
            }
            Ok(event) => {
                if self.set.apply(event) {
                    self.publish();
                }
            }
            Err(e) => tracing::warn!(node = %self.node_name, error = %e, "pod watch failed; retrying with backoff"),
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        // The backoff stream never ends; if it does, restart it.
        tracing::warn!("pod watch stream ended; starting over");
        self.watch = None;
        self.start_watch(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str, rv: &str, mirror: bool) -> Pod {
        let mut v = json!({"metadata": {"name": uid, "namespace": "default", "uid": uid, "resourceVersion": rv}});
        if mirror {
            v["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "h"});
        }
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn nothing_is_published_before_the_first_list_completes() {
        let mut s = ApiPodSet::default();
        assert!(!s.apply(Event::Init));
        assert!(!s.apply(Event::InitApply(pod("a", "1", false))));
        assert!(!s.listed());
        assert!(s.apply(Event::InitDone));
        assert_eq!(s.split().0.len(), 1);
    }

    #[test]
    fn a_relist_replaces_the_set_only_when_done() {
        let mut s = ApiPodSet::default();
        for e in [Event::Init, Event::InitApply(pod("a", "1", false)), Event::InitDone] {
            s.apply(e);
        }
        s.apply(Event::Init);
        s.apply(Event::InitApply(pod("b", "2", false)));
        assert_eq!(
            s.split().0[0].metadata.uid.as_deref(),
            Some("a"),
            "old set kept while relisting"
        );
        assert!(s.apply(Event::InitDone));
        let uids: Vec<_> = s.split().0.iter().map(|p| p.metadata.uid.clone()).collect();
        assert_eq!(uids, vec![Some("b".to_string())]);
    }

    #[test]
    fn changes_and_deletes_publish_and_repeats_do_not() {
        let mut s = ApiPodSet::default();
        s.apply(Event::InitDone);
        assert!(s.apply(Event::Apply(pod("a", "1", false))));
        assert!(!s.apply(Event::Apply(pod("a", "1", false))), "same resourceVersion");
        assert!(s.apply(Event::Apply(pod("a", "2", false))));
        assert!(s.apply(Event::Delete(pod("a", "3", false))));
        assert!(!s.apply(Event::Delete(pod("a", "3", false))));
    }

    #[test]
    fn mirror_pods_are_split_off() {
        let mut s = ApiPodSet::default();
        for e in [
            Event::Init,
            Event::InitApply(pod("a", "1", false)),
            Event::InitApply(pod("m", "1", true)),
            Event::InitDone,
        ] {
            s.apply(e);
        }
        let (run, mirrors) = s.split();
        assert_eq!(run.len(), 1);
        assert_eq!(mirrors.len(), 1);
        assert_eq!(mirrors[0].metadata.uid.as_deref(), Some("m"));
    }
}
