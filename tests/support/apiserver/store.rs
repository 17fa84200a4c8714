//! The object store: objects by key, one global resourceVersion counter (etcd's revision),
//! the full change history (for watches from an old resourceVersion and exact-RV lists),
//! compaction, the watch cache window and the registered watchers.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use jiff::Timestamp;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::meta;
use super::resources::{CONFIGMAPS, NAMESPACES, RESOURCES, Rid, SERVICEACCOUNTS, SERVICES};
use super::selectors::Filter;
use super::{Config, RecordedRequest};

/// Where an object lives: resource, namespace (`""` when cluster-scoped), name. Ordered like
/// etcd keys, so lists come out in namespace/name order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    pub rid: Rid,
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(rid: Rid, namespace: &str, name: &str) -> Self {
        let namespace = if RESOURCES[rid].namespaced { namespace } else { "" };
        ObjKey {
            rid,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The plural (or `plural.group`) name of the resource.
    pub fn resource(&self) -> String {
        RESOURCES[self.rid].qualified()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One write, as etcd and the watch cache see it. `object` carries the write's
/// resourceVersion (also for a deletion); `prev` is the state before.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub key: ObjKey,
    pub kind: ChangeType,
    pub object: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}

/// An error a test asked for: the next `remaining` requests matching method and path prefix.
#[derive(Clone, Debug)]
pub struct Failure {
    pub method: String,
    pub path_prefix: String,
    pub code: u16,
    pub remaining: usize,
}

pub struct State {
    /// The last revision written (etcd starts at 1).
    pub rv: u64,
    pub objects: BTreeMap<ObjKey, Arc<Value>>,
    pub history: Vec<Arc<Change>>,
    /// etcd compaction: exact-RV lists, continue tokens and uncached watches before it are gone.
    pub compacted: u64,
    /// The watch cache's list RV: cached watches from an older RV get "too old resource version".
    pub cache_start: u64,
    last_event: HashMap<Rid, u64>,
    /// The last event of each resource the watch cache dispatched since it started (bookmarks).
    processed: HashMap<Rid, u64>,
    watchers: Vec<(Rid, mpsc::UnboundedSender<Arc<Change>>)>,
    pub log: Vec<RecordedRequest>,
    pub unavailable: bool,
    pub failures: Vec<Failure>,
    pub changes: broadcast::Sender<Arc<Change>>,
    pub config: Config,
    pub addr: SocketAddr,
    /// The API Priority and Fairness header values (fixed per server).
    pub flow_uids: (String, String),
}

impl State {
    pub fn new(config: Config, addr: SocketAddr) -> Self {
        let seed = config.seed;
        let mut st = State {
            rv: 1,
            objects: BTreeMap::new(),
            history: Vec::new(),
            compacted: 0,
            cache_start: 1,
            last_event: HashMap::new(),
            processed: HashMap::new(),
            watchers: Vec::new(),
            log: Vec::new(),
            unavailable: false,
            failures: Vec::new(),
            changes: broadcast::channel(4096).0,
            config,
            addr,
            flow_uids: (meta::new_uid(), meta::new_uid()),
        };
        if seed {
            st.seed();
        }
        st
    }

    /// What a fresh v1.24 control plane (plus the controllers this fake stands in for) has:
    /// the four system namespaces, a `default` ServiceAccount and `kube-root-ca.crt` in each,
    /// and the `kubernetes` Service.
    fn seed(&mut self) {
        for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
            self.insert_system(
                json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
                NAMESPACES,
                "kube-apiserver",
            );
        }
        self.insert_system(
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}],
                    "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "type": "ClusterIP",
                    "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                    "internalTrafficPolicy": "Cluster"},
                "status": {"loadBalancer": {}}}),
            SERVICES,
            "kube-apiserver",
        );
        for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
            self.seed_namespace_contents(ns);
        }
    }

    /// What kube-controller-manager adds to every namespace.
    pub fn seed_namespace_contents(&mut self, ns: &str) {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}});
        if !self.objects.contains_key(&ObjKey::new(SERVICEACCOUNTS, ns, "default")) {
            self.insert_system(sa, SERVICEACCOUNTS, "kube-controller-manager");
        }
        let ca = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": ns},
            "data": {"ca.crt": self.config.root_ca.clone()}});
        if !self
            .objects
            .contains_key(&ObjKey::new(CONFIGMAPS, ns, "kube-root-ca.crt"))
        {
            self.insert_system(ca, CONFIGMAPS, "kube-controller-manager");
        }
    }

    fn insert_system(&mut self, mut obj: Value, rid: Rid, manager: &str) {
        let now = Timestamp::now();
        let key = ObjKey::new(rid, meta::meta_str(&obj, "namespace"), meta::meta_str(&obj, "name"));
        let fields = meta::intent_fields(&obj, None);
        obj["metadata"]["uid"] = meta::new_uid().into();
        obj["metadata"]["creationTimestamp"] = meta::time(now).into();
        meta::record_managed_fields(&mut obj, manager, &RESOURCES[rid].api_version(), None, fields, now);
        self.commit(key, ChangeType::Added, obj, None);
    }

    /// Writes one change: next revision, stored, recorded, sent to the watchers.
    pub fn commit(&mut self, key: ObjKey, kind: ChangeType, mut obj: Value, prev: Option<Arc<Value>>) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        obj["metadata"]["resourceVersion"] = rv.to_string().into();
        let obj = Arc::new(obj);
        match kind {
            ChangeType::Deleted => {
                self.objects.remove(&key);
            }
            _ => {
                self.objects.insert(key.clone(), obj.clone());
            }
        }
        self.last_event.insert(key.rid, rv);
        self.processed.insert(key.rid, rv);
        let change = Arc::new(Change {
            rv,
            key,
            kind,
            object: obj.clone(),
            prev,
        });
        self.history.push(change.clone());
        let rid = change.key.rid;
        self.watchers
            .retain(|(r, tx)| *r != rid || tx.send(change.clone()).is_ok());
        let _ = self.changes.send(change);
        obj
    }

    pub fn get(&self, key: &ObjKey) -> Option<Arc<Value>> {
        self.objects.get(key).cloned()
    }

    /// Removes an object: returns its last stored state; watchers get DELETED with the
    /// deletion's own resourceVersion.
    pub fn delete(&mut self, key: &ObjKey) -> Option<Arc<Value>> {
        let old = self.objects.get(key).cloned()?;
        self.commit(key.clone(), ChangeType::Deleted, (*old).clone(), Some(old.clone()));
        Some(old)
    }

    /// The current objects of a resource matching `filter`, in key order.
    pub fn list(&self, rid: Rid, filter: &Filter) -> Vec<Arc<Value>> {
        self.objects
            .range(ObjKey::new(rid, "", "")..)
            .take_while(|(k, _)| k.rid == rid)
            .map(|(_, v)| v.clone())
            .filter(|v| filter.matches(v))
            .collect()
    }

    /// The objects of a resource as they were at revision `at` (etcd read at an old revision).
    pub fn snapshot(&self, rid: Rid, at: u64, filter: &Filter) -> Vec<Arc<Value>> {
        let mut objects: BTreeMap<ObjKey, Arc<Value>> = BTreeMap::new();
        for c in self
            .history
            .iter()
            .take_while(|c| c.rv <= at)
            .filter(|c| c.key.rid == rid)
        {
            match c.kind {
                ChangeType::Deleted => {
                    objects.remove(&c.key);
                }
                _ => {
                    objects.insert(c.key.clone(), c.object.clone());
                }
            }
        }
        objects.into_values().filter(|v| filter.matches(v)).collect()
    }

    /// The changes of a resource after revision `rv`.
    pub fn history_since(&self, rid: Rid, rv: u64) -> Vec<Arc<Change>> {
        let start = self.history.partition_point(|c| c.rv <= rv);
        self.history[start..]
            .iter()
            .filter(|c| c.key.rid == rid)
            .cloned()
            .collect()
    }

    /// The watch cache's resourceVersion for a resource (what a `resourceVersion=0` list
    /// reports): its last event, or the cache's list RV if none came since.
    pub fn cache_rv(&self, rid: Rid) -> u64 {
        self.cache_start.max(self.last_event.get(&rid).copied().unwrap_or(0))
    }

    /// The RV a bookmark would carry, 0 when the cache saw no event since it started.
    pub fn processed_rv(&self, rid: Rid) -> u64 {
        self.processed.get(&rid).copied().unwrap_or(0)
    }

    pub fn register_watch(&mut self, rid: Rid) -> mpsc::UnboundedReceiver<Arc<Change>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.watchers.push((rid, tx));
        rx
    }

    /// Ends every watch stream cleanly (their channels close).
    pub fn end_watches(&mut self) {
        self.watchers.clear();
    }

    /// The watch cache starts over at the current revision, as after an apiserver restart.
    pub fn reinit_watch_cache(&mut self) {
        self.end_watches();
        self.cache_start = self.rv;
        self.processed.clear();
    }
}
