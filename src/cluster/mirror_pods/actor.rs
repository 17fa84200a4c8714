//! [`MirrorPodManager`]: keeps one up-to-date mirror pod on the API server
//! for every static pod, and none for static pods that are gone.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, WrapFuture};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use tokio::time::Instant;

use super::api::{Created, MirrorError, create_mirror, delete_mirror, node_uid};
use super::logic::{MirrorAction, plan, static_pod_hash};
use crate::cluster::mirror_index::{MirrorPods, full_name};
use crate::pleg::PodCache;
use crate::pod_manager::PodManager;

/// What the mirror pod manager needs. Build with [`MirrorPodDeps::new`].
#[derive(Clone)]
pub struct MirrorPodDeps {
    /// The API client (the node's identity).
    pub client: Client,
    /// This node's name (mirror pods are bound to it and owned by its Node).
    pub node_name: String,
    /// Desired pods (the static ones are mirrored).
    pub pods: PodManager,
    /// Mirror pods the API server holds (kept by the API source's watch).
    pub mirrors: MirrorPods,
    /// How often to compare static pods with mirror pods.
    pub interval: Duration,
    /// How long a created mirror pod may take to show up in the watch
    /// before it is created again (a create of one that exists is answered
    /// AlreadyExists and counts as done), and how long a deleted one is
    /// ignored while the watch may still report it.
    pub pending_ttl: Duration,
    /// The runtime's pods: an orphan mirror pod is kept while the static pod
    /// it mirrors may still have running containers.
    pub runtime: PodCache,
    /// How long one action (its API calls together) may take before it is
    /// abandoned and retried at a later comparison (default
    /// [`MIRROR_ACTION_DEADLINE`]).
    pub action_deadline: Duration,
}

impl fmt::Debug for MirrorPodDeps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorPodDeps")
            .field("node_name", &self.node_name)
            .field("interval", &self.interval)
            .field("pending_ttl", &self.pending_ttl)
            .finish_non_exhaustive()
    }
}

impl MirrorPodDeps {
    /// Deps comparing every 2 s (upstream's housekeeping period), waiting up to
    /// 5 s for a created mirror pod to be watched.
    pub fn new(client: Client, node_name: impl Into<String>, pods: PodManager, mirrors: MirrorPods) -> Self {
        Self {
            client,
            node_name: node_name.into(),
            pods,
            mirrors,
            interval: Duration::from_secs(2),
            pending_ttl: Duration::from_secs(5),
            runtime: PodCache::new(),
            action_deadline: MIRROR_ACTION_DEADLINE,
        }
    }
}

pub use crate::messages::status::SyncMirrorPods;

/// What one action did.
#[derive(Debug, Default)]
struct ActionResult {
    node_uid: Option<String>,
    deleted: Option<String>,
    created: bool,
    error: Option<MirrorError>,
}

/// Deadline of one mirror pod action (GET node + DELETE/POST).
pub const MIRROR_ACTION_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

async fn run_action(
    client: Client,
    action: MirrorAction,
    static_pod: Option<Arc<Pod>>,
    node_name: String,
    cached_node_uid: Option<String>,
) -> ActionResult {
    let mut out = ActionResult::default();
    let full = action.full_name().to_string();
    let create = match action {
        MirrorAction::Create { .. } => true,
        MirrorAction::Delete { uid, recreate, .. } => {
            if let Err(e) = delete_mirror(client.clone(), full.clone(), uid.clone()).await {
                out.error = Some(e);
                return out;
            }
            out.deleted = Some(uid);
            recreate
        }
    };
    let Some(static_pod) = static_pod.filter(|_| create) else {
        return out;
    };
    let uid = match cached_node_uid {
        Some(u) => u,
        None => match node_uid(client.clone(), node_name.clone()).await {
            Ok(u) => {
                out.node_uid = Some(u.clone());
                u
            }
            Err(e) => {
                out.error = Some(e);
                return out;
            }
        },
    };
    match create_mirror(client, static_pod, node_name, uid).await {
        Ok(Created::New(_) | Created::Exists) => out.created = true,
        Err(e) => out.error = Some(e),
    }
    out
}

/// The mirror pod manager actor. See the [module docs](super).
pub struct MirrorPodManager {
    deps: MirrorPodDeps,
    node_uid: Option<String>,
    /// Names with an operation in flight (at most one per name).
    in_flight: HashSet<String>,
    /// Mirror pods created and not yet seen by the watch, by name.
    pending: HashMap<String, Instant>,
    /// Mirror pods deleted, by UID (the watch may still report them).
    deleted: HashMap<String, Instant>,
}

impl fmt::Debug for MirrorPodManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorPodManager")
            .field("node", &self.deps.node_name)
            .field("in_flight", &self.in_flight.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl MirrorPodManager {
    /// A manager over `deps`; nothing is sent before it is started.
    pub fn new(deps: MirrorPodDeps) -> Self {
        Self {
            deps,
            node_uid: None,
            in_flight: HashSet::new(),
            pending: HashMap::new(),
            deleted: HashMap::new(),
        }
    }

    fn sync(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let statics: BTreeMap<String, Arc<Pod>> = self
            .deps
            .pods
            .pods()
            .into_iter()
            .filter(|d| d.source.is_static())
            .map(|d| (full_name(&d.pod), d.pod))
            .collect();
        let hashes: BTreeMap<String, String> = statics.iter().map(|(n, p)| (n.clone(), static_pod_hash(p))).collect();
        let mirrors = self.deps.mirrors.all();
        let ttl = self.deps.pending_ttl;
        self.deleted.retain(|_, at| now.duration_since(*at) < ttl);
        let deleted = &self.deleted;
        let seen: HashSet<String> = mirrors
            .iter()
            .filter(|m| !m.metadata.uid.as_ref().is_some_and(|u| deleted.contains_key(u)))
            .map(|m| full_name(m))
            .collect();
        self.pending
            .retain(|name, at| !seen.contains(name) && now.duration_since(*at) < ttl);
        let pending: HashSet<String> = self.pending.keys().cloned().collect();
        let deleted: HashSet<String> = self.deleted.keys().cloned().collect();
        // Pods of these full names may still run (a static pod being killed):
        // their orphaned mirror pods wait (upstream checks by full name too).
        let terminating: HashSet<String> = self
            .deps
            .runtime
            .statuses()
            .iter()
            .filter(|st| {
                let entry = self.deps.runtime.get(&st.uid);
                entry.is_some_and(|e| e.could_have_running_containers())
            })
            .map(|st| format!("{}/{}", st.namespace, st.name))
            .collect();
        for action in plan(&hashes, &mirrors, &pending, &deleted, &terminating) {
            let name = action.full_name().to_string();
            if !self.in_flight.insert(name.clone()) {
                continue;
            }
            tracing::debug!(node = %self.deps.node_name, ?action, "mirror pod action");
            let fut = run_action(
                self.deps.client.clone(),
                action,
                statics.get(&name).cloned(),
                self.deps.node_name.clone(),
                self.node_uid.clone(),
            );
            // Every action has a deadline: a call that hangs (an API server
            // still starting) must not hold the name's slot for minutes.
            let full_name = name.clone();
            let deadline = self.deps.action_deadline;
            let fut = async move {
                tokio::time::timeout(deadline, fut)
                    .await
                    .unwrap_or_else(|_| ActionResult {
                        error: Some(MirrorError::Timeout {
                            full_name,
                            after: deadline,
                        }),
                        ..ActionResult::default()
                    })
            };
            ctx.spawn(fut.into_actor(self).map(move |res, act, _ctx| act.finished(name, res)));
        }
    }

    fn finished(&mut self, name: String, res: ActionResult) {
        self.in_flight.remove(&name);
        if let Some(uid) = res.node_uid {
            self.node_uid = Some(uid);
        }
        if let Some(uid) = res.deleted {
            self.deps.mirrors.remove(&name, Some(&uid));
            self.deleted.insert(uid, Instant::now());
        }
        if res.created {
            self.pending.insert(name.clone(), Instant::now());
        }
        if let Some(e) = res.error {
            if e.node_uid_refused() {
                self.node_uid = None;
            }
            if e.node_missing() {
                tracing::debug!(node = %self.deps.node_name, pod = %name, "node not registered yet: mirror pod waits");
            } else {
                tracing::warn!(node = %self.deps.node_name, pod = %name, error = %e, "mirror pod not synced; retrying");
            }
        }
    }
}

impl Actor for MirrorPodManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(node = %self.deps.node_name, interval = ?self.deps.interval, "mirror pod manager started");
        self.sync(ctx);
        ctx.run_interval(self.deps.interval, |act, ctx| act.sync(ctx));
    }
}

impl Handler<SyncMirrorPods> for MirrorPodManager {
    type Result = ();

    fn handle(&mut self, _msg: SyncMirrorPods, ctx: &mut Self::Context) {
        self.sync(ctx);
    }
}
