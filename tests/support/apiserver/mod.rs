//! A small stateful fake kube-apiserver for actlet's tests, faithful to the recorded
//! kube-apiserver v1.24 exchanges in `tests/fixtures/apiserver/` (checked by
//! `tests/apiserver_fixtures.rs`).
//!
//! Include it with `#[path = "support/apiserver/mod.rs"] mod apiserver;`.
//!
//! # Expected use
//!
//! 1. `let server = TestApiServer::start();` — plain HTTP/1.1 on `127.0.0.1:<random>`, served
//!    by its own thread and tokio runtime (real time, whatever the test's runtime does).
//! 2. Point the kubelet at it: [`TestApiServer::kubeconfig`] for
//!    [`Identity::node`]`("test-node")` gives a kubeconfig with the server URL and the token.
//! 3. Arrange the cluster as admin with [`TestApiServer::store`] (`create`, `patch`,
//!    `delete` go through the same code as HTTP requests, with defaulting and admission), or
//!    over HTTP with `Authorization: Bearer admin`.
//! 4. Assert on the store (`store().pod(..)`, `node(..)`, `lease(..)`, `events()`), on
//!    [`TestApiServer::requests`] (method, path, query, content type, body and status of
//!    every HTTP request) or on [`TestApiServer::subscribe`] (every write, in order).
//! 5. Break things: [`TestApiServer::set_down`], [`TestApiServer::set_unavailable`],
//!    [`TestApiServer::restart`], [`TestApiServer::expire_watch_cache`],
//!    [`TestApiServer::compact`], [`TestApiServer::fail_next`].
//!
//! # Identity
//!
//! TLS and client certificates are out of scope; the caller is named by a bearer token:
//! `Authorization: Bearer node:<name>` is `system:node:<name>` (group `system:nodes`),
//! `Bearer admin` is `system:masters`, no header is `system:anonymous`, any other token is
//! 401 (more tokens: [`Config::tokens`]). A node gets exactly what v1.24's Node authorizer,
//! static node rules and NodeRestriction admission give it, with the same 403 bodies.
//!
//! # Guarantees
//!
//! * One global resourceVersion (etcd's revision) advanced by every write; RVs are decimal
//!   strings; a write that changes nothing does not advance it.
//! * Status codes and `Status` bodies as recorded: 404/409 (AlreadyExists, Conflict)/410/
//!   415/422/403/401, `details` keyed as Go does.
//! * Watches: `200`, headers first, one `{"type","object"}` line per event, chunks cut like
//!   Go's (one event may span chunks), 410 as an `ERROR` event, BOOKMARKs as v1.24's cacher
//!   sends them, clean end at `timeoutSeconds`.
//! * Lists: no `kind`/`apiVersion` on items, `items: []` when empty, `resourceVersion=0` from
//!   the watch cache (its RV may lag), `resourceVersionMatch=Exact`, `limit`/`continue`.
//! * Patches: strategic merge (merge keys and directives of the types the kubelet writes),
//!   JSON merge, JSON patch; 415 for other content types.
//!
//! # Caveats
//!
//! * Only the resources in `resources.rs`; no controllers (a Node keeps its not-ready taint,
//!   nothing garbage-collects), no TLS, no protobuf, no `dryRun`.
//! * JSON object keys come out sorted, not in Go's struct order.
//! * managedFields are plausible, not structured-merge-diff's exact sets; server-side apply
//!   is approximated by a strategic merge of the applied configuration.
//! * `compact()` is etcd compaction: like the real thing it does not expire watches served
//!   by the watch cache (all but events). To make a pod watch get 410, use
//!   [`TestApiServer::expire_watch_cache`] or [`TestApiServer::restart`].
#![allow(dead_code)]

mod admission;
mod api;
mod authz;
mod http;
mod meta;
mod patch;
mod resources;
mod selectors;
mod server;
mod status;
mod store;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::broadcast;

pub use store::{Change, ChangeType, ObjKey};

/// Who makes a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// `system:masters`: anything goes.
    Admin,
    /// `system:node:<name>` in `system:nodes`.
    Node(String),
    /// `system:anonymous`.
    Anonymous,
}

impl Identity {
    pub fn node(name: &str) -> Self {
        Identity::Node(name.to_string())
    }

    /// The bearer token that authenticates as this identity (none for anonymous).
    pub fn token(&self) -> Option<String> {
        match self {
            Identity::Admin => Some("admin".into()),
            Identity::Node(n) => Some(format!("node:{n}")),
            Identity::Anonymous => None,
        }
    }

    /// The `Authorization` header value.
    pub fn authorization(&self) -> Option<String> {
        self.token().map(|t| format!("Bearer {t}"))
    }

    pub fn user_name(&self) -> String {
        match self {
            Identity::Admin => "kubernetes-admin".into(),
            Identity::Node(n) => format!("system:node:{n}"),
            Identity::Anonymous => "system:anonymous".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    /// Extra bearer tokens.
    pub tokens: Vec<(String, Identity)>,
    /// Create what a fresh cluster has: namespaces default, kube-system, kube-public and
    /// kube-node-lease, their `default` ServiceAccount and `kube-root-ca.crt`, and the
    /// `kubernetes` Service.
    pub seed: bool,
    /// Bookmarks besides those before a watch's deadline (v1.24: every minute).
    pub bookmark_interval: Duration,
    /// A watch's length when the client sends no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// Issuer and default audience of TokenRequest tokens.
    pub issuer: String,
    /// `ca.crt` of `kube-root-ca.crt`.
    pub root_ca: String,
    /// The body of `/version`.
    pub version: Value,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tokens: Vec::new(),
            seed: true,
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            issuer: "https://kubernetes.default.svc.cluster.local".into(),
            root_ca: "-----BEGIN CERTIFICATE-----\nMIIBdGVzdC1hcGlzZXJ2ZXItY2E=\n-----END CERTIFICATE-----\n".into(),
            version: json!({
                "major": "1", "minor": "24", "gitVersion": "v1.24.0+0",
                "gitCommit": "2cc6ddc68588debdbb6806e1b57e73207505324f", "gitTreeState": "clean",
                "buildDate": "2022-05-06T09:44:28Z", "goVersion": "go1.19.8", "compiler": "gc",
                "platform": "linux/amd64"
            }),
        }
    }
}

/// One HTTP request as received, with the status it got.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    /// Percent-decoded path.
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// Media type of `Content-Type`, without parameters.
    pub content_type: Option<String>,
    /// `system:node:<name>`, `kubernetes-admin`, `system:anonymous`, or "" when not
    /// authenticated.
    pub user: String,
    pub user_agent: Option<String>,
    /// The body parsed as JSON (or YAML), if it parses.
    pub body: Option<Value>,
    pub raw_body: String,
    pub status: u16,
}

impl RecordedRequest {
    /// A query parameter, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        api::Query::parse(&self.query).get(name).map(str::to_string)
    }

    pub fn is_watch(&self) -> bool {
        matches!(self.query_param("watch").as_deref(), Some("true" | "1"))
    }
}

/// A running fake apiserver. Stopped on drop.
pub struct TestApiServer {
    server: server::Server,
}

impl TestApiServer {
    pub fn start() -> Self {
        Self::start_with(Config::default())
    }

    pub fn start_with(config: Config) -> Self {
        TestApiServer {
            server: server::Server::start(config),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// A kubeconfig (YAML) for `identity` against this server.
    pub fn kubeconfig(&self, identity: &Identity) -> String {
        let user = match identity.token() {
            Some(t) => format!("    token: {t}\n"),
            None => "    {}\n".to_string(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\ncurrent-context: test\nusers:\n- name: test\n  user:\n{user}",
            self.url()
        )
    }

    /// The object store and an in-process admin client.
    pub fn store(&self) -> Store {
        Store {
            shared: self.server.shared.clone(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, store::State> {
        self.server.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// etcd compaction at the current revision (returned): exact-RV lists, continue tokens
    /// and watches of uncached resources (events) from an older RV get 410. Watches served
    /// by the watch cache are unaffected, as in v1.24.
    pub fn compact(&self) -> u64 {
        let mut st = self.state();
        st.compacted = st.rv;
        st.rv
    }

    /// The watch cache starts over at the current revision: open watch streams end cleanly,
    /// and a watch from an older RV gets `ERROR` 410 "too old resource version: R (now)",
    /// so reflectors re-list. Data is kept.
    pub fn expire_watch_cache(&self) {
        self.state().reinit_watch_cache();
    }

    /// An apiserver restart with etcd kept: every connection is reset (watch streams break
    /// mid-stream) and the watch cache starts over at the current revision (fixtures 68/69).
    pub fn restart(&self) {
        self.server.drop_connections();
        self.state().reinit_watch_cache();
    }

    /// Down: connections are refused and open ones reset. Up: served again on the same port.
    /// The store stays usable while down.
    pub fn set_down(&self, down: bool) {
        self.server.set_down(down);
    }

    /// While set, every request gets 503 ServiceUnavailable.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.state().unavailable = unavailable;
    }

    /// The next `times` requests with this method (`*`: any) whose path starts with
    /// `path_prefix` get a `Status` with `code`.
    pub fn fail_next(&self, method: &str, path_prefix: &str, code: u16, times: usize) {
        if times > 0 {
            self.state().failures.push(store::Failure {
                method: method.to_string(),
                path_prefix: path_prefix.to_string(),
                code,
                remaining: times,
            });
        }
    }

    /// Every HTTP request so far (the in-process admin client's are not logged).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().log.clone()
    }

    pub fn clear_requests(&self) {
        self.state().log.clear();
    }

    /// Every write from now on, in resourceVersion order.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.state().changes.subscribe()
    }

    pub fn stop(self) {
        self.server.stop();
    }
}

impl Drop for TestApiServer {
    fn drop(&mut self) {
        self.server.stop();
    }
}

/// The store, plus an in-process admin client running the same code as HTTP requests.
/// Resources are named by plural (`pods`, `nodes`, `leases`, `events`…) or `plural.group`.
#[derive(Clone)]
pub struct Store {
    shared: Arc<server::Shared>,
}

fn rid(resource: &str) -> resources::Rid {
    resources::by_name(resource).unwrap_or_else(|| panic!("the test apiserver does not serve {resource:?}"))
}

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("stored object deserializes")
}

impl Store {
    fn state(&self) -> std::sync::MutexGuard<'_, store::State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state().rv
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        self.state()
            .get(&ObjKey::new(rid(resource), namespace, name))
            .map(|v| (*v).clone())
    }

    /// All objects of a resource (in a namespace, or all with `None`), in key order.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> Vec<Value> {
        let filter = selectors::Filter {
            namespace: namespace.map(str::to_string),
            ..Default::default()
        };
        self.state()
            .list(rid(resource), &filter)
            .into_iter()
            .map(|v| (*v).clone())
            .collect()
    }

    fn request(
        &self,
        method: &str,
        target: &str,
        content_type: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, Value> {
        let req = api::admin_request(method, target, content_type, body);
        let reply = api::handle(&self.shared.state, &req, false);
        let code = reply.status();
        let v = api::reply_json(&reply);
        if code < 300 { Ok(v) } else { Err(v) }
    }

    /// Creates as admin (defaulting and admission applied). `Err` is the Status.
    pub fn create(&self, resource: &str, namespace: &str, obj: &Value) -> Result<Value, Value> {
        let path = api::resource_path(rid(resource), namespace, None);
        self.request("POST", &path, Some("application/json"), Some(obj))
    }

    /// Replaces as admin (PUT).
    pub fn update(&self, resource: &str, namespace: &str, name: &str, obj: &Value) -> Result<Value, Value> {
        let path = api::resource_path(rid(resource), namespace, Some(name));
        self.request("PUT", &path, Some("application/json"), Some(obj))
    }

    /// Patches as admin: `content_type` is one of the patch media types; `subresource`
    /// e.g. `Some("status")`.
    pub fn patch(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        content_type: &str,
        patch: &Value,
    ) -> Result<Value, Value> {
        let mut path = api::resource_path(rid(resource), namespace, Some(name));
        if let Some(s) = subresource {
            path.push('/');
            path.push_str(s);
        }
        self.request("PATCH", &path, Some(content_type), Some(patch))
    }

    /// Deletes as admin; pods are deleted gracefully (`grace_seconds` or the pod's
    /// terminationGracePeriodSeconds) and stay until the kubelet finishes the deletion.
    pub fn delete(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        grace_seconds: Option<i64>,
    ) -> Result<Value, Value> {
        let mut path = api::resource_path(rid(resource), namespace, Some(name));
        if let Some(g) = grace_seconds {
            path.push_str(&format!("?gracePeriodSeconds={g}"));
        }
        self.request("DELETE", &path, None, None)
    }

    /// Writes an object as is (no defaulting, admission or validation): created or replaced,
    /// resourceVersion advanced, watchers notified. Missing uid/creationTimestamp are filled.
    pub fn put(&self, resource: &str, mut obj: Value) -> Value {
        let rid = rid(resource);
        let def = &resources::RESOURCES[rid];
        obj["kind"] = def.kind.into();
        obj["apiVersion"] = def.api_version().into();
        let key = ObjKey::new(rid, meta::meta_str(&obj, "namespace"), meta::meta_str(&obj, "name"));
        let mut st = self.state();
        let old = st.get(&key);
        if meta::meta_str(&obj, "uid").is_empty() {
            let uid = old
                .as_ref()
                .map_or_else(meta::new_uid, |o| meta::meta_str(o, "uid").to_string());
            obj["metadata"]["uid"] = uid.into();
        }
        if meta::meta_str(&obj, "creationTimestamp").is_empty() {
            obj["metadata"]["creationTimestamp"] = meta::time(jiff::Timestamp::now()).into();
        }
        let kind = if old.is_some() {
            ChangeType::Modified
        } else {
            ChangeType::Added
        };
        (*st.commit(key, kind, obj, old)).clone()
    }

    /// Removes an object at once (no graceful deletion): watchers see DELETED.
    pub fn remove(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        self.state()
            .delete(&ObjKey::new(rid(resource), namespace, name))
            .map(|v| (*v).clone())
    }

    pub fn node(&self, name: &str) -> Option<Node> {
        self.get("nodes", "", name).map(typed)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<Pod> {
        self.get("pods", namespace, name).map(typed)
    }

    pub fn pods(&self) -> Vec<Pod> {
        self.list("pods", None).into_iter().map(typed).collect()
    }

    /// The pods with `spec.nodeName` = `node`.
    pub fn pods_on(&self, node: &str) -> Vec<Pod> {
        self.list("pods", None)
            .into_iter()
            .filter(|p| p["spec"]["nodeName"] == node)
            .map(typed)
            .collect()
    }

    /// The node's Lease in kube-node-lease.
    pub fn lease(&self, node: &str) -> Option<Lease> {
        self.get("leases", "kube-node-lease", node).map(typed)
    }

    /// All core/v1 Events.
    pub fn events(&self) -> Vec<Event> {
        self.list("events", None).into_iter().map(typed).collect()
    }

    /// Creates a pod as admin (e.g. one bound to the node with `spec.nodeName`).
    pub fn create_pod(&self, pod: &Pod) -> Result<Pod, Value> {
        let ns = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let v = serde_json::to_value(pod).expect("pod json");
        self.create("pods", &ns, &v).map(typed)
    }
}
