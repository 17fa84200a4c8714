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
//! whole set after a change, like upstream's undelta store; PodConfig
//! diffs it, so a re-list that finds the same pods changes nothing and
//! running pods are never disturbed by a watch expiry. The first change
//! after a quiet [`PUBLISH_WINDOW`] is sent at once, later ones within it
//! in one snapshot at its end ([`super::coalesce`]): at 10,000 pods a
//! snapshot per watch event (one per status patch) would be quadratic.
//!
//! Mirror pods are split off into [`MirrorPods`]: they describe static pods
//! and are never run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, SpawnHandle, StreamHandler};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};

use super::coalesce::{Coalesce, Publish};
use super::mirror_index::{MirrorPods, is_mirror_pod};
use super::watch_backoff::{ApiReachability, WatchBackoffPolicy, backoff_watch};
use crate::actors::supervisor::SupervisedRecipient;
use crate::config::annotations;
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
                let pod = self.stamped(pod);
                self.relisting.get_or_insert_default().insert(key(&pod), pod);
                false
            }
            Event::InitDone => {
                self.pods = self.relisting.take().unwrap_or_default();
                self.listed = true;
                true
            }
            Event::Apply(pod) => {
                let pod = self.stamped(pod);
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

    /// `pod` with the merge's local annotations as the merge would set them
    /// (`config.source: api`; `config.seen` of the version already held, else
    /// now), so PodConfig stores this allocation as it is: one copy of each
    /// API pod. Mirror pods are left as they are (their annotations are the
    /// static pod's).
    fn stamped(&self, mut pod: Pod) -> Arc<Pod> {
        if !is_mirror_pod(&pod) {
            let k = key(&pod);
            let seen = self.pods.get(&k).and_then(|old| {
                old.metadata
                    .annotations
                    .as_ref()?
                    .get(annotations::CONFIG_SEEN)
                    .cloned()
            });
            let ann = pod.metadata.annotations.get_or_insert_with(Default::default);
            ann.insert(
                annotations::CONFIG_SOURCE.to_owned(),
                PodSource::Api.as_str().to_owned(),
            );
            match seen {
                Some(seen) => {
                    ann.insert(annotations::CONFIG_SEEN.to_owned(), seen);
                }
                None => {
                    ann.remove(annotations::CONFIG_SEEN);
                    annotations::stamp_seen(&mut pod, crate::clock::system_now());
                }
            }
        }
        Arc::new(pod)
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
    /// At most one snapshot per [`PUBLISH_WINDOW`], the first at once.
    coalesce: Coalesce,
    /// The scheduled snapshot, if any.
    scheduled: Option<SpawnHandle>,
}

/// Changes within this window after a snapshot go out together at its end.
pub const PUBLISH_WINDOW: Duration = Duration::from_millis(50);

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
            coalesce: Coalesce::new(PUBLISH_WINDOW),
            scheduled: None,
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

    /// A change: publish now, or once at the end of the window.
    fn changed(&mut self, ctx: &mut Context<Self>) {
        match self.coalesce.change(tokio::time::Instant::now()) {
            Publish::Now => self.publish(),
            Publish::After(delay) => {
                self.scheduled = Some(ctx.run_later(delay, |act, _| {
                    act.scheduled = None;
                    act.coalesce.published(tokio::time::Instant::now());
                    act.publish();
                }));
            }
            Publish::Scheduled => {}
        }
    }

    /// Publishes now, with any scheduled snapshot folded in.
    fn flush(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.scheduled.take() {
            ctx.cancel_future(handle);
        }
        self.coalesce.published(tokio::time::Instant::now());
        self.publish();
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
    fn handle(&mut self, item: Result<Event<Pod>, watcher::Error>, ctx: &mut Self::Context) {
        self.failing = item.is_err();
        match item {
            Ok(Event::Delete(pod)) if self.set.listed() => {
                // A force deletion (grace 0) is seen only as DELETED: send the
                // final object first, so the pod is killed with its deletion
                // grace period rather than the spec's, then the removal
                // (never folded into one snapshot, which would lose the first).
                if pod.metadata.deletion_timestamp.is_some() && self.set.apply(Event::Apply(pod.clone())) {
                    self.flush(ctx);
                }
                if self.set.apply(Event::Delete(pod)) {
                    self.changed(ctx);
                }
            }
            Ok(event) => {
                if self.set.apply(event) {
                    self.changed(ctx);
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

/// A watcher item handed to the actor directly (tests).
#[cfg(test)]
#[derive(actix::Message)]
#[rtype(result = "()")]
struct ApiEvent(Result<Event<Pod>, watcher::Error>);

#[cfg(test)]
impl actix::Handler<ApiEvent> for ApiSource {
    type Result = ();

    fn handle(&mut self, event: ApiEvent, ctx: &mut Self::Context) {
        StreamHandler::handle(self, event.0, ctx);
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
    fn api_pods_carry_the_merges_annotations_and_keep_their_first_seen_time() {
        let seen = |s: &ApiPodSet| {
            let (run, _) = s.split();
            let a = run[0].metadata.annotations.clone().unwrap_or_default();
            (
                a.get(annotations::CONFIG_SOURCE).cloned(),
                a.get(annotations::CONFIG_SEEN).cloned(),
            )
        };
        let mut s = ApiPodSet::default();
        s.apply(Event::InitDone);
        let mut spoofed = pod("a", "1", false);
        spoofed.metadata.annotations = Some(
            [
                (annotations::CONFIG_SOURCE.to_owned(), "file".to_owned()),
                (annotations::CONFIG_SEEN.to_owned(), "1999-01-01T00:00:00Z".to_owned()),
            ]
            .into(),
        );
        s.apply(Event::Apply(spoofed));
        let (source, first) = seen(&s);
        assert_eq!(source.as_deref(), Some("api"), "a user's value is overwritten");
        let first = first.expect("stamped");
        assert_ne!(first, "1999-01-01T00:00:00Z", "a user's value is overwritten");
        s.apply(Event::Apply(pod("a", "2", false)));
        assert_eq!(
            seen(&s),
            (Some("api".into()), Some(first.clone())),
            "kept across versions"
        );
        s.apply(Event::Init);
        s.apply(Event::InitApply(pod("a", "3", false)));
        s.apply(Event::InitDone);
        assert_eq!(seen(&s).1, Some(first), "and across a relist");
        let mut m = ApiPodSet::default();
        m.apply(Event::InitDone);
        m.apply(Event::Apply(pod("m", "1", true)));
        let mirror = m.split().1.remove(0);
        assert_eq!(
            mirror.metadata.annotations.as_ref().map(|a| a.len()),
            Some(1),
            "a mirror pod is left as it came"
        );
    }

    #[test]
    fn a_burst_of_watch_events_is_one_snapshot_now_and_one_after_the_window() {
        crate::testing::run_paused(async {
            use std::sync::Mutex;
            let seen = Arc::new(Mutex::new(Vec::<usize>::new()));
            let record = seen.clone();
            let out = SupervisedRecipient::from_fn(move |s: SourceSnapshot| {
                record.lock().unwrap_or_else(|e| e.into_inner()).push(s.pods.len());
            });
            let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
            let client = kube::Client::try_from(config).expect("client");
            let source = ApiSource::new(client, "node-a".into(), out, MirrorPods::new()).start();
            let send = |e: Event<Pod>| source.do_send(ApiEvent(Ok(e)));
            send(Event::Init);
            send(Event::InitDone);
            tokio::time::sleep(Duration::from_millis(1)).await;
            for i in 0..100 {
                send(Event::Apply(pod(&format!("p{i}"), "1", false)));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            let early = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            assert_eq!(early, [0], "the list at once; the burst waits for the window");
            tokio::time::sleep(PUBLISH_WINDOW).await;
            let all = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
            assert_eq!(all, [0, 100], "the 100 changes in one snapshot");
        });
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
