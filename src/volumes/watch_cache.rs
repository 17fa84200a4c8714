//! Upstream's watch-based object manager (`watch_based_manager.go`): one
//! watch per referenced object (`fieldSelector=metadata.name=<name>` in its
//! namespace, the only list/watch the Node authorizer allows a node), started
//! on the first read and stopped when no pod of this node references the
//! object any more ([`WatchCache::retain`]).
//!
//! A read waits for the watch's first list (at most [`FIRST_SYNC_TIMEOUT`]);
//! after that it answers from memory. A 403 is kept as the object's error
//! (the pod gets an event naming it); the watcher keeps retrying with
//! backoff, so granting access later heals it.
//!
//! The watches are tokio tasks owned by this cache, which lives outside any
//! actor: a restarted volume manager finds them running.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::objects::{ObjectError, ObjectKey};

/// How long a first read waits for the object's watch to list it.
pub const FIRST_SYNC_TIMEOUT: Duration = Duration::from_secs(10);

/// A watcher whose first list is served from the API server's watch cache
/// (`resourceVersion=0`, what client-go's reflector lists with first)
/// instead of a consistent read, which on an idle API server waits ~100 ms
/// for etcd: these lists are on a pod start's path. The watch that follows
/// brings anything newer. kube leaves `resourceVersion=0` out of a list
/// with a page size, so there is none.
pub(super) fn cache_list_config() -> watcher::Config {
    let mut config = watcher::Config::default().any_semantic();
    config.page_size = None;
    config
}

/// What the watch knows about one object.
#[derive(Clone, Debug)]
enum ItemState<K> {
    Pending,
    Present(Arc<K>),
    Absent,
    Failed(ObjectError),
}

struct Item<K> {
    rx: watch::Receiver<ItemState<K>>,
    task: tokio::task::JoinHandle<()>,
}

impl<K> Drop for Item<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Objects of one kind, each behind its own watch.
pub struct WatchCache<K> {
    client: kube::Client,
    kind: &'static str,
    items: Arc<Mutex<HashMap<ObjectKey, Item<K>>>>,
}

impl<K> Clone for WatchCache<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            kind: self.kind,
            items: self.items.clone(),
        }
    }
}

type Lock<'a, K> = std::sync::MutexGuard<'a, HashMap<ObjectKey, Item<K>>>;

impl<K> WatchCache<K>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default,
{
    /// A cache of `kind` (`configmap`, `secret`: the name errors use).
    pub fn new(client: kube::Client, kind: &'static str) -> Self {
        Self {
            client,
            kind,
            items: Arc::default(),
        }
    }

    fn lock(&self) -> Lock<'_, K> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Objects watched now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Stops the watches of objects not in `keep`.
    pub fn retain(&self, keep: &BTreeSet<ObjectKey>) {
        let dropped: Vec<Item<K>> = {
            let mut items = self.lock();
            let gone: Vec<ObjectKey> = items.keys().filter(|k| !keep.contains(*k)).cloned().collect();
            gone.iter().filter_map(|k| items.remove(k)).collect()
        };
        if !dropped.is_empty() {
            tracing::debug!(
                kind = self.kind,
                count = dropped.len(),
                "stopped watches of unreferenced objects"
            );
        }
    }

    /// The object, waiting for its first list if its watch is new.
    pub async fn get(&self, namespace: &str, name: &str) -> Result<Arc<K>, ObjectError> {
        let key = (namespace.to_string(), name.to_string());
        let mut rx = {
            let mut items = self.lock();
            items
                .entry(key)
                .or_insert_with(|| self.start(namespace, name))
                .rx
                .clone()
        };
        let settled = tokio::time::timeout(FIRST_SYNC_TIMEOUT, rx.wait_for(|s| !matches!(s, ItemState::Pending))).await;
        let state = match settled {
            Ok(Ok(s)) => s.clone(),
            Ok(Err(_)) => ItemState::Failed(ObjectError::Other(format!(
                "watch of {} {namespace}/{name} ended",
                self.kind
            ))),
            Err(_) => ItemState::Failed(ObjectError::Other(format!(
                "failed to sync {} cache: timed out waiting for the condition",
                self.kind
            ))),
        };
        match state {
            ItemState::Present(o) => Ok(o),
            ItemState::Absent => Err(ObjectError::NotFound {
                kind: self.kind,
                name: name.to_string(),
            }),
            ItemState::Failed(e) => Err(e),
            ItemState::Pending => Err(ObjectError::Other("pending".into())),
        }
    }

    fn start(&self, namespace: &str, name: &str) -> Item<K> {
        let (tx, rx) = watch::channel(ItemState::Pending);
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let config = cache_list_config().fields(&format!("metadata.name={name}"));
        let (kind, name) = (self.kind, name.to_string());
        let ns = namespace.to_string();
        let task = tokio::spawn(async move {
            let mut stream =
                crate::cluster::watch_backoff::backoff_watch(watcher::watcher(api, config), Default::default()).boxed();
            let mut listed: Option<K> = None;
            while let Some(event) = stream.next().await {
                match event {
                    Ok(Event::Init) => listed = None,
                    Ok(Event::InitApply(o)) => listed = Some(o),
                    Ok(Event::InitDone) => {
                        let state = listed
                            .take()
                            .map_or(ItemState::Absent, |o| ItemState::Present(Arc::new(o)));
                        let _ = tx.send(state);
                    }
                    Ok(Event::Apply(o)) => {
                        let _ = tx.send(ItemState::Present(Arc::new(o)));
                    }
                    Ok(Event::Delete(_)) => {
                        let _ = tx.send(ItemState::Absent);
                    }
                    Err(e) => {
                        let error = match &e {
                            watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k) => {
                                ObjectError::from_kube(kind, &name, k)
                            }
                            other => ObjectError::Other(format!("watch of {kind} {ns}/{name} failed: {other}")),
                        };
                        tracing::debug!(kind, namespace = %ns, name = %name, error = %error, "object watch failed; retrying");
                        // Keep a good copy over a transient watch failure.
                        tx.send_if_modified(|s| {
                            if matches!(s, ItemState::Present(_) | ItemState::Absent) {
                                return false;
                            }
                            *s = ItemState::Failed(error);
                            true
                        });
                    }
                }
            }
        });
        Item { rx, task }
    }
}
