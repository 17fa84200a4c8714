//! Request handling: routing like Go's `RequestInfoFactory`, authentication, authorization,
//! admission and the REST verbs over the store. Everything runs under the state lock, so
//! requests are serialised (a watch only registers here; its stream runs outside).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::admission;
use super::authz::{self, Attrs};
use super::http::{HttpRequest, HttpResponse, percent_decode};
use super::meta;
use super::patch::{self, JsonPatchError};
use super::resources::{
    self, EVENTS, EVENTS_V1, LEASES, NAMESPACES, NODES, PODS, PVCS, RESOURCES, ResourceDef, Rid, SERVICEACCOUNTS,
    SERVICES,
};
use super::selectors::{FieldSelector, Filter, LabelSelector};
use super::status::{ApiError, ApiResult};
use super::store::{ChangeType, ObjKey, State};
use super::watch::{self, WatchPlan};
use super::{Identity, RecordedRequest};

pub enum Reply {
    Full(HttpResponse),
    Watch(Box<WatchPlan>),
}

impl Reply {
    pub fn status(&self) -> u16 {
        match self {
            Reply::Full(r) => r.status,
            Reply::Watch(_) => 200,
        }
    }
}

/// Query parameters, percent-decoded, in order.
#[derive(Clone, Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(raw: &str) -> Self {
        Query(
            raw.split('&')
                .filter(|kv| !kv.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (percent_decode(k, true), percent_decode(v, true))
                })
                .collect(),
        )
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str())
    }

    pub fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

struct Ctx<'a> {
    st: &'a mut State,
    req: &'a HttpRequest,
    user: Identity,
    q: Query,
    now: Timestamp,
    pretty: bool,
}

impl Ctx<'_> {
    fn manager(&self) -> String {
        meta::manager(self.q.get("fieldManager"), self.req.header("user-agent"))
    }
}

/// A resource request, as Go's `RequestInfo`.
struct Info {
    rid: Rid,
    ns: String,
    name: Option<String>,
    sub: Option<String>,
    verb: &'static str,
    /// The name authorization sees: the URL's, or `metadata.name=` of a list/watch selector.
    authz_name: Option<String>,
}

impl Info {
    fn def(&self) -> &'static ResourceDef {
        &RESOURCES[self.rid]
    }

    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    fn key(&self) -> ObjKey {
        ObjKey::new(self.rid, &self.ns, self.name())
    }

    fn attrs(&self) -> Attrs<'_> {
        Attrs {
            verb: self.verb,
            rid: self.rid,
            subresource: self.sub.as_deref(),
            namespace: Some(self.ns.as_str()).filter(|n| !n.is_empty()),
            name: self.authz_name.as_deref(),
        }
    }
}

fn headers(st: &State, content_type: &str, flow: bool) -> Vec<(String, String)> {
    let mut h = vec![
        ("Audit-Id".to_string(), meta::new_uid()),
        ("Cache-Control".to_string(), "no-cache, private".to_string()),
        ("Content-Type".to_string(), content_type.to_string()),
    ];
    if flow {
        h.push(("X-Kubernetes-Pf-Flowschema-Uid".into(), st.flow_uids.0.clone()));
        h.push(("X-Kubernetes-Pf-Prioritylevel-Uid".into(), st.flow_uids.1.clone()));
    }
    h.push(("Date".into(), meta::http_date(Timestamp::now())));
    h
}

fn encode(v: &Value, pretty: bool) -> Vec<u8> {
    let mut b = if pretty {
        serde_json::to_vec_pretty(v)
    } else {
        serde_json::to_vec(v)
    }
    .expect("json");
    b.push(b'\n');
    b
}

fn json_reply(st: &State, code: u16, v: &Value, pretty: bool) -> Reply {
    Reply::Full(HttpResponse {
        status: code,
        headers: headers(st, "application/json", true),
        body: encode(v, pretty),
    })
}

fn error_reply(st: &State, e: &ApiError, pretty: bool) -> Reply {
    let mut h = headers(st, "application/json", e.code != 401);
    if e.nosniff {
        h.insert(3, ("X-Content-Type-Options".into(), "nosniff".into()));
    }
    Reply::Full(HttpResponse {
        status: e.code,
        headers: h,
        body: encode(&e.body, pretty),
    })
}

fn take_failure(st: &mut State, req: &HttpRequest) -> Option<u16> {
    let path = req.path();
    let i = st.failures.iter().position(|f| {
        (f.method == "*" || f.method.eq_ignore_ascii_case(&req.method)) && path.starts_with(&f.path_prefix)
    })?;
    let f = &mut st.failures[i];
    let code = f.code;
    f.remaining -= 1;
    if f.remaining == 0 {
        st.failures.remove(i);
    }
    Some(code)
}

/// Serves one request. `log` records it in the request log.
pub fn handle(state: &Mutex<State>, req: &HttpRequest, log: bool) -> Reply {
    let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
    let st = &mut *guard;
    let q = Query::parse(req.raw_query());
    let ua = req.header("user-agent").unwrap_or("");
    let pretty = ["curl", "Wget", "Mozilla/5.0"].iter().any(|p| ua.starts_with(p)) || q.flag("pretty");
    let mut user_name = String::new();
    let reply = if st.unavailable {
        error_reply(st, &ApiError::unavailable(), pretty)
    } else if let Some(code) = take_failure(st, req) {
        error_reply(st, &ApiError::injected(code), pretty)
    } else {
        match authz::authenticate(st, req) {
            Err(e) => error_reply(st, &e, pretty),
            Ok(user) => {
                user_name = user.user_name();
                let mut ctx = Ctx {
                    st,
                    req,
                    user,
                    q,
                    now: Timestamp::now(),
                    pretty,
                };
                match route(&mut ctx) {
                    Ok(r) => r,
                    Err(e) => error_reply(ctx.st, &e, pretty),
                }
            }
        }
    };
    if log {
        let raw_body = String::from_utf8_lossy(&req.body).into_owned();
        let body = serde_json::from_slice(&req.body).ok().or_else(|| {
            serde_yaml_ng::from_slice(&req.body)
                .ok()
                .filter(|v: &Value| !v.is_null())
        });
        st.log.push(RecordedRequest {
            method: req.method.clone(),
            path: req.path(),
            query: req.raw_query().to_string(),
            content_type: req.content_type(),
            user: user_name,
            user_agent: req.header("user-agent").map(str::to_string),
            body,
            raw_body,
            status: reply.status(),
        });
    }
    reply
}

fn text_reply(st: &State, body: &str) -> Reply {
    let mut h = headers(st, "text/plain; charset=utf-8", true);
    h.insert(3, ("X-Content-Type-Options".into(), "nosniff".into()));
    Reply::Full(HttpResponse {
        status: 200,
        headers: h,
        body: body.as_bytes().to_vec(),
    })
}

fn route(ctx: &mut Ctx) -> ApiResult<Reply> {
    let path = ctx.req.path();
    let method = ctx.req.method.to_ascii_uppercase();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let verb = method.to_ascii_lowercase();
    let norm = format!("/{}", segs.join("/"));
    let discovery = match segs.as_slice() {
        ["healthz" | "livez" | "readyz", ..] => {
            authz::authorize_path(&ctx.user, &verb, &norm)?;
            return Ok(text_reply(ctx.st, "ok"));
        }
        ["version"] => {
            authz::authorize_path(&ctx.user, &verb, &norm)?;
            return Ok(json_reply(ctx.st, 200, &ctx.st.config.version.clone(), true));
        }
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ctx.st.addr.to_string()}]})),
        ["apis"] => Some(resources::api_group_list()),
        ["api", "v1"] => Some(serde_json::from_str(include_str!("discovery_v1.json")).expect("discovery json")),
        ["apis", g, v] => Some(resources::api_resource_list(g, v).ok_or_else(ApiError::not_found_path)?),
        ["apis", g] => {
            let groups = resources::api_group_list();
            let group = groups["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| x["name"] == *g)
                .cloned()
                .ok_or_else(ApiError::not_found_path)?;
            let mut group = group;
            group["kind"] = "APIGroup".into();
            group["apiVersion"] = "v1".into();
            Some(group)
        }
        _ => None,
    };
    if let Some(body) = discovery {
        authz::authorize_path(&ctx.user, &verb, &norm)?;
        return Ok(json_reply(ctx.st, 200, &body, ctx.pretty));
    }
    let info = parse_info(ctx, &segs, &method)?;
    authz::authorize(ctx.st, &ctx.user, &info.attrs())?;
    match info.verb {
        "get" => get(ctx, &info),
        "list" => list(ctx, &info),
        "watch" => watch(ctx, &info),
        "create" => create(ctx, &info),
        "update" => update(ctx, &info),
        "patch" => patch(ctx, &info),
        "delete" => delete(ctx, &info),
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn parse_info(ctx: &Ctx, segs: &[&str], method: &str) -> ApiResult<Info> {
    let (group, version, rest) = match segs {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::not_found_path()),
    };
    let mut rest: Vec<&str> = rest.to_vec();
    let mut ns = String::new();
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        ns = rest[1].to_string();
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest.drain(..2);
        }
    }
    if rest.is_empty() || rest.len() > 3 {
        return Err(ApiError::not_found_path());
    }
    let rid = resources::find(group, version, rest[0]).ok_or_else(ApiError::not_found_path)?;
    let def = &RESOURCES[rid];
    let name = rest.get(1).map(|s| s.to_string());
    let sub = rest.get(2).map(|s| s.to_string());
    if sub.as_deref().is_some_and(|s| !def.subresources.contains(&s)) {
        return Err(ApiError::not_found_path());
    }
    if rid != NAMESPACES && ((!def.namespaced && !ns.is_empty()) || (def.namespaced && ns.is_empty() && name.is_some()))
    {
        return Err(ApiError::not_found_path());
    }
    let watch = ctx.q.flag("watch");
    let verb = match (method, name.is_some()) {
        ("GET" | "HEAD", true) if watch => "watch",
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) if watch => "watch",
        ("GET" | "HEAD", false) => "list",
        ("POST", false) => "create",
        ("POST", true) if sub.is_some() => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return Err(ApiError::method_not_allowed()),
    };
    let mut authz_name = name.clone();
    if authz_name.is_none() && matches!(verb, "list" | "watch") {
        if let Ok(fs) = FieldSelector::parse(rid, ctx.q.get("fieldSelector").unwrap_or("")) {
            authz_name = fs.name().map(str::to_string);
        }
    }
    Ok(Info {
        rid,
        ns,
        name,
        sub,
        verb,
        authz_name,
    })
}

fn parse_rv(ctx: &Ctx) -> ApiResult<Option<u64>> {
    match ctx.q.get("resourceVersion") {
        None | Some("") => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resource version: strconv.ParseUint: parsing {s:?}: invalid syntax"
            ))
        }),
    }
}

fn filter(ctx: &Ctx, info: &Info) -> ApiResult<Filter> {
    let mut fields =
        FieldSelector::parse(info.rid, ctx.q.get("fieldSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    if let Some(name) = &info.name {
        fields = fields.with_name(name);
    }
    let labels = LabelSelector::parse(ctx.q.get("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    Ok(Filter {
        namespace: Some(info.ns.clone()).filter(|n| !n.is_empty() && info.def().namespaced),
        fields,
        labels,
    })
}

fn get(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    if let Some(rv) = parse_rv(ctx)? {
        if rv > ctx.st.rv {
            return Err(ApiError::too_large_resource_version(rv, ctx.st.rv));
        }
    }
    let obj = ctx
        .st
        .get(&info.key())
        .ok_or_else(|| ApiError::not_found(info.def(), info.name()))?;
    Ok(json_reply(ctx.st, 200, &obj, ctx.pretty))
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    String::from_utf8(bytes?).ok()
}

fn key_of(rid: Rid, obj: &Value) -> ObjKey {
    ObjKey::new(rid, meta::meta_str(obj, "namespace"), meta::meta_str(obj, "name"))
}

fn list(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    let def = info.def();
    let filter = filter(ctx, info)?;
    let rv = parse_rv(ctx)?;
    let exact = ctx.q.get("resourceVersionMatch") == Some("Exact");
    let mut limit: Option<usize> = ctx.q.get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0);
    let st = &*ctx.st;
    let (items, list_rv, after) = if let Some(token) = ctx.q.get("continue").filter(|c| !c.is_empty()) {
        let decoded = unhex(token).ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
        let (trv, after) = decoded
            .split_once('|')
            .and_then(|(r, k)| Some((r.parse::<u64>().ok()?, k.to_string())))
            .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
        if trv < st.compacted {
            return Err(ApiError::expired(CONTINUE_EXPIRED));
        }
        (st.snapshot(info.rid, trv, &filter), trv, Some(after))
    } else if exact {
        let n = rv
            .filter(|n| *n > 0)
            .ok_or_else(|| ApiError::bad_request("resourceVersionMatch=Exact requires a non-zero resourceVersion"))?;
        if n > st.rv {
            return Err(ApiError::too_large_resource_version(n, st.rv));
        }
        if n < st.compacted {
            return Err(ApiError::expired(
                "The resourceVersion for the provided list is too old.",
            ));
        }
        (st.snapshot(info.rid, n, &filter), n, None)
    } else if rv == Some(0) && def.cached {
        // Served from the watch cache: any RV is fine, limit is ignored.
        limit = None;
        (st.list(info.rid, &filter), st.cache_rv(info.rid), None)
    } else {
        if let Some(n) = rv.filter(|n| *n > st.rv) {
            return Err(ApiError::too_large_resource_version(n, st.rv));
        }
        (st.list(info.rid, &filter), st.rv, None)
    };
    let mut items: Vec<Arc<Value>> = match &after {
        Some(after) => items
            .into_iter()
            .filter(|o| {
                let k = key_of(info.rid, o);
                format!("{}/{}", k.namespace, k.name) > *after
            })
            .collect(),
        None => items,
    };
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    if let Some(l) = limit.filter(|l| items.len() > *l) {
        let remaining = items.len() - l;
        items.truncate(l);
        let last = key_of(info.rid, items.last().expect("item"));
        metadata["continue"] = hex(&format!("{list_rv}|{}/{}", last.namespace, last.name)).into();
        if filter.fields.is_empty() && filter.labels.is_empty() {
            metadata["remainingItemCount"] = remaining.into();
        }
    }
    let items: Vec<Value> = items
        .iter()
        .map(|o| {
            let mut o = (**o).clone();
            if let Some(m) = o.as_object_mut() {
                m.remove("kind");
                m.remove("apiVersion");
            }
            o
        })
        .collect();
    let body = json!({"kind": def.list_kind(), "apiVersion": def.api_version(), "metadata": metadata, "items": items});
    Ok(json_reply(ctx.st, 200, &body, ctx.pretty))
}

fn watch(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    let def = info.def();
    let filter = filter(ctx, info)?;
    let rv = parse_rv(ctx)?;
    let timeout = ctx
        .q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(ctx.st.config.default_watch_timeout);
    // An unset resourceVersion goes to etcd, not the watch cache (no bookmarks there).
    let cached = def.cached && rv.is_some();
    let st = &mut *ctx.st;
    let mut plan = WatchPlan {
        rid: info.rid,
        filter: filter.clone(),
        init: Vec::new(),
        error: None,
        rx: None,
        timeout,
        bookmarks: cached && ctx.q.flag("allowWatchBookmarks"),
        bookmark_interval: st.config.bookmark_interval,
        threshold: 0,
        headers: headers(st, "application/json", true),
    };
    match rv {
        None | Some(0) => {
            plan.init = st
                .list(info.rid, &filter)
                .into_iter()
                .map(|o| watch::event("ADDED", (*o).clone()))
                .collect();
            plan.threshold = if cached { st.cache_rv(info.rid) } else { st.rv };
        }
        Some(r) if cached && r < st.cache_start => {
            let msg = format!("too old resource version: {r} ({})", st.cache_start);
            plan.error = Some(watch::event("ERROR", ApiError::expired(&msg).body));
        }
        Some(r) if !cached && r < st.compacted => {
            let msg = "The resourceVersion for the provided watch is too old.";
            plan.error = Some(watch::event("ERROR", ApiError::expired(msg).body));
        }
        Some(r) => {
            let changes = st.history_since(info.rid, r);
            plan.threshold = changes.last().map_or(r, |c| c.rv.max(r));
            plan.init = changes.iter().filter_map(|c| watch::convert(c, &filter)).collect();
        }
    }
    if plan.error.is_none() {
        plan.rx = Some(st.register_watch(info.rid));
    }
    Ok(Reply::Watch(Box::new(plan)))
}

fn parse_body(ctx: &Ctx) -> ApiResult<Value> {
    let ct = ctx.req.content_type().unwrap_or_default();
    let v: Value = match ct.as_str() {
        "" | "application/json" => serde_json::from_slice(&ctx.req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?,
        "application/yaml" => serde_yaml_ng::from_slice(&ctx.req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding yaml request body: {e}")))?,
        _ => return Err(ApiError::unsupported_media_type()),
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("the request body is not a JSON object"));
    }
    Ok(v)
}

fn create(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    if info.rid == SERVICEACCOUNTS && info.sub.as_deref() == Some("token") {
        return token_request(ctx, info);
    }
    if info.name.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let body = parse_body(ctx)?;
    let stored = create_object(ctx, info.rid, &info.ns, body)?;
    Ok(json_reply(ctx.st, 201, &stored, ctx.pretty))
}

/// Create: metadata checks, NodeRestriction, defaulting and admission, then the write.
fn create_object(ctx: &mut Ctx, rid: Rid, ns: &str, mut obj: Value) -> ApiResult<Arc<Value>> {
    let def = &RESOURCES[rid];
    let intent = obj.clone();
    obj["kind"] = def.kind.into();
    obj["apiVersion"] = def.api_version().into();
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    let m = obj["metadata"].as_object_mut().expect("object");
    let ns = if def.namespaced {
        match m.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            Some(body_ns) if body_ns != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                m.insert("namespace".into(), ns.into());
                ns.to_string()
            }
        }
    } else {
        m.remove("namespace");
        String::new()
    };
    if m.get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.is_empty())
    {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut name = m.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    if name.is_empty() {
        match m.get("generateName").and_then(Value::as_str).filter(|g| !g.is_empty()) {
            Some(g) => name = format!("{g}{}", meta::rand_suffix(5)),
            None => {
                return Err(ApiError::invalid(
                    def,
                    "",
                    &[(
                        "FieldValueRequired",
                        "metadata.name",
                        "Required value: name or generateName is required".into(),
                    )],
                ));
            }
        }
    }
    m.insert("name".into(), name.clone().into());
    for f in [
        "uid",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
        "resourceVersion",
    ] {
        m.remove(f);
    }
    if def.namespaced && !ctx.st.objects.contains_key(&ObjKey::new(NAMESPACES, "", &ns)) {
        return Err(ApiError::namespace_not_found(&ns));
    }
    if let Identity::Node(node) = &ctx.user {
        authz::admit_create(ctx.st, node, rid, &ns, &obj)?;
    }
    match rid {
        PODS => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                admission::default_pod_spec(spec);
            }
            admission::admit_pod(ctx.st, &ns, &name, &mut obj)?;
            obj["status"] = json!({"phase": "Pending", "qosClass": admission::qos_class(&obj["spec"])});
        }
        NODES => admission::default_node(&mut obj),
        _ => admission::default_other(rid, &mut obj),
    }
    let key = ObjKey::new(rid, &ns, &name);
    if ctx.st.objects.contains_key(&key) {
        return Err(ApiError::already_exists(def, &name));
    }
    obj["metadata"]["uid"] = meta::new_uid().into();
    obj["metadata"]["creationTimestamp"] = meta::time(ctx.now).into();
    admission::normalize(rid, &mut obj);
    let manager = ctx.manager();
    meta::record_managed_fields(
        &mut obj,
        &manager,
        &def.api_version(),
        None,
        meta::intent_fields(&intent, None),
        ctx.now,
    );
    let stored = ctx.st.commit(key, ChangeType::Added, obj, None);
    if rid == NAMESPACES {
        ctx.st.seed_namespace_contents(&name);
    }
    Ok(stored)
}

fn update(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    let body = parse_body(ctx)?;
    let body_name = meta::meta_str(&body, "name");
    if !body_name.is_empty() && body_name != info.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            info.name()
        )));
    }
    match ctx.st.get(&info.key()) {
        None if info.sub.is_none() && matches!(info.rid, LEASES | EVENTS | EVENTS_V1) => {
            let mut body = body;
            body["metadata"]["name"] = info.name().into();
            if let Some(m) = body["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
            let stored = create_object(ctx, info.rid, &info.ns, body)?;
            Ok(json_reply(ctx.st, 201, &stored, ctx.pretty))
        }
        None => Err(ApiError::not_found(info.def(), info.name())),
        Some(old) => {
            let stored = write_update(ctx, info, &old, body.clone(), &body, true)?;
            Ok(json_reply(ctx.st, 200, &stored, ctx.pretty))
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

fn patch(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    let kind = match ctx.req.content_type().unwrap_or_default().as_str() {
        "application/json-patch+json" => PatchType::Json,
        "application/merge-patch+json" => PatchType::Merge,
        "application/strategic-merge-patch+json" => PatchType::Strategic,
        "application/apply-patch+yaml" => PatchType::Apply,
        _ => return Err(ApiError::unsupported_media_type()),
    };
    let body: Value = if kind == PatchType::Apply {
        serde_yaml_ng::from_slice(&ctx.req.body).map_err(|e| ApiError::bad_request(e.to_string()))?
    } else {
        serde_json::from_slice(&ctx.req.body).map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    let def = info.def();
    if kind == PatchType::Apply && ctx.q.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::new(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            Some(
                json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch", "field": "fieldManager"}]}),
            ),
        ));
    }
    let Some(old) = ctx.st.get(&info.key()) else {
        if kind == PatchType::Apply && info.sub.is_none() {
            let stored = create_object(ctx, info.rid, &info.ns, body)?;
            return Ok(json_reply(ctx.st, 201, &stored, ctx.pretty));
        }
        return Err(ApiError::not_found(def, info.name()));
    };
    let patched = match kind {
        PatchType::Json => patch::json_patch(&old, &body).map_err(|e| match e {
            JsonPatchError::Decode(m) => ApiError::bad_request(m),
            JsonPatchError::Apply(_) => ApiError::invalid_generic(),
        })?,
        PatchType::Merge => {
            let mut t = (*old).clone();
            patch::merge_patch(&mut t, &body);
            t
        }
        // Server-side apply is approximated by a strategic merge of the applied configuration.
        PatchType::Strategic | PatchType::Apply => {
            if !body.is_object() {
                return Err(ApiError::bad_request("patch body must be a JSON object"));
            }
            patch::strategic_merge(def.kind, &old, &body).map_err(ApiError::bad_request)?
        }
    };
    let intent = if body.is_object() {
        body.clone()
    } else {
        patched.clone()
    };
    let stored = write_update(ctx, info, &old, patched, &intent, false)?;
    Ok(json_reply(ctx.st, 200, &stored, ctx.pretty))
}

fn without_volatile(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v["metadata"].as_object_mut() {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    v
}

/// Update (PUT or PATCH result): preconditions, the stored system metadata, subresource
/// semantics (`status` writes keep the spec, main writes keep the status), NodeRestriction,
/// validation, then the write. A write that changes nothing is not stored again.
fn write_update(
    ctx: &mut Ctx,
    info: &Info,
    old: &Arc<Value>,
    mut new: Value,
    intent: &Value,
    put: bool,
) -> ApiResult<Arc<Value>> {
    let def = info.def();
    let name = info.name().to_string();
    let rid = info.rid;
    let sub = info.sub.as_deref();
    if !new.is_object() {
        return Err(ApiError::bad_request("the object is not a JSON object"));
    }
    new["kind"] = def.kind.into();
    new["apiVersion"] = def.api_version().into();
    if !new["metadata"].is_object() {
        new["metadata"] = json!({});
    }
    let old_rv = meta::meta_str(old, "resourceVersion").to_string();
    let new_rv = meta::meta_str(&new, "resourceVersion").to_string();
    if !new_rv.is_empty() && new_rv != old_rv {
        return Err(ApiError::conflict_modified(def, &name));
    }
    let old_uid = meta::meta_str(old, "uid").to_string();
    let new_uid = meta::meta_str(&new, "uid").to_string();
    if put && !new_uid.is_empty() && new_uid != old_uid {
        return Err(ApiError::conflict(
            def.plural,
            def.group,
            &name,
            &format!("Precondition failed: UID in precondition: {new_uid}, UID in object meta: {old_uid}"),
        ));
    }
    {
        let m = new["metadata"].as_object_mut().expect("object");
        for f in [
            "name",
            "namespace",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            match old["metadata"].get(f) {
                Some(v) => {
                    m.insert(f.into(), v.clone());
                }
                None => {
                    m.remove(f);
                }
            }
        }
        if new_uid.is_empty() {
            m.insert("uid".into(), old_uid.clone().into());
        }
    }
    if matches!(rid, PODS | NODES | SERVICES | NAMESPACES | PVCS) {
        let keep = if sub == Some("status") { "spec" } else { "status" };
        match old.get(keep) {
            Some(v) => new[keep] = v.clone(),
            None => {
                new.as_object_mut().expect("object").remove(keep);
            }
        }
        if rid == PODS && sub == Some("status") {
            match old["metadata"].get("ownerReferences") {
                Some(v) => new["metadata"]["ownerReferences"] = v.clone(),
                None => {
                    new["metadata"]
                        .as_object_mut()
                        .expect("object")
                        .remove("ownerReferences");
                }
            }
        }
    }
    if let Identity::Node(node) = &ctx.user {
        authz::admit_update(node, rid, sub, &name, old, &new)?;
    }
    if !new_uid.is_empty() && new_uid != old_uid {
        let cause = (
            "FieldValueInvalid",
            "metadata.uid",
            format!("Invalid value: \"{new_uid}\": field is immutable"),
        );
        let causes = if rid == PODS {
            vec![cause.clone(), cause]
        } else {
            vec![cause]
        };
        return Err(ApiError::invalid(def, &name, &causes));
    }
    if rid == PODS && sub.is_none() && !admission::pod_spec_update_allowed(&old["spec"], &new["spec"]) {
        return Err(ApiError::invalid(
            def,
            &name,
            &[("FieldValueForbidden", "spec", admission::POD_UPDATE_FORBIDDEN.into())],
        ));
    }
    if rid == PODS && sub == Some("status") {
        if let Some(cause) = admission::pod_status_invalid(&new) {
            return Err(ApiError::invalid(def, &name, &[cause]));
        }
    }
    admission::normalize(rid, &mut new);
    if without_volatile(old) == without_volatile(&new) {
        return Ok(old.clone());
    }
    let manager = ctx.manager();
    meta::record_managed_fields(
        &mut new,
        &manager,
        &def.api_version(),
        sub,
        meta::intent_fields(intent, sub),
        ctx.now,
    );
    let key = info.key();
    let stored = ctx.st.commit(key.clone(), ChangeType::Modified, new, Some(old.clone()));
    // The last finalizer removed from an object being deleted: it goes now.
    let deleting = stored["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|d| !d.is_null());
    let finalizers = stored["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    let grace = stored["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
    if deleting && !finalizers && (rid != PODS || grace == 0) {
        ctx.st.delete(&key);
    }
    Ok(stored)
}

fn delete(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    let def = info.def();
    let name = info.name().to_string();
    let key = info.key();
    let opts: Value = if ctx.req.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&ctx.req.body).map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    let grace = opts["gracePeriodSeconds"]
        .as_i64()
        .or_else(|| ctx.q.get("gracePeriodSeconds").and_then(|g| g.parse().ok()));
    let old = ctx.st.get(&key).ok_or_else(|| ApiError::not_found(def, &name))?;
    if let Identity::Node(node) = &ctx.user {
        authz::admit_delete(node, info.rid, &name, &old)?;
    }
    let uid = meta::meta_str(&old, "uid");
    if let Some(p) = opts["preconditions"]["uid"]
        .as_str()
        .filter(|p| !p.is_empty() && *p != uid)
    {
        return Err(ApiError::conflict(
            def.kind,
            def.group,
            &name,
            &format!(
                "the UID in the precondition ({p}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ),
        ));
    }
    let rv = meta::meta_str(&old, "resourceVersion");
    if let Some(p) = opts["preconditions"]["resourceVersion"]
        .as_str()
        .filter(|p| !p.is_empty() && *p != rv)
    {
        return Err(ApiError::conflict(
            def.kind,
            def.group,
            &name,
            &format!(
                "the ResourceVersion in the precondition ({p}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
            ),
        ));
    }
    if info.rid == PODS {
        let out = delete_pod(ctx, &key, &old, grace);
        return Ok(json_reply(ctx.st, 200, &out, ctx.pretty));
    }
    if old["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
        if old["metadata"].get("deletionTimestamp").is_some_and(|d| !d.is_null()) {
            return Ok(json_reply(ctx.st, 200, &old, ctx.pretty));
        }
        let mut obj = (*old).clone();
        obj["metadata"]["deletionTimestamp"] = meta::time(ctx.now).into();
        obj["metadata"]["deletionGracePeriodSeconds"] = 0.into();
        let stored = ctx.st.commit(key, ChangeType::Modified, obj, Some(old.clone()));
        return Ok(json_reply(ctx.st, 200, &stored, ctx.pretty));
    }
    ctx.st.delete(&key);
    let mut details = super::status::details(&name, def.group, def.plural);
    details["uid"] = uid.into();
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
    Ok(json_reply(ctx.st, 200, &body, ctx.pretty))
}

/// Graceful pod deletion (Go's `BeforeDelete` + pod `CheckGracefulDelete`): the first delete
/// sets deletionTimestamp = now + grace and deletionGracePeriodSeconds (MODIFIED); a shorter
/// grace moves them; grace 0 (or an unscheduled or terminal pod) also removes the object
/// (MODIFIED then DELETED). Returns the pod's last stored state.
fn delete_pod(ctx: &mut Ctx, key: &ObjKey, old: &Arc<Value>, grace: Option<i64>) -> Value {
    let grace = grace.map(|g| if g < 0 { 1 } else { g });
    let m = &old["metadata"];
    let finalizers = m["finalizers"].as_array().is_some_and(|f| !f.is_empty());
    let existing = m
        .get("deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(meta::parse_time);
    let (deadline, period) = match existing {
        Some(dt) => {
            let current = m["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
            if current == 0 {
                if !finalizers {
                    ctx.st.delete(key);
                }
                return (**old).clone();
            }
            match grace {
                Some(g) if g < current => (
                    dt - SignedDuration::from_secs(current) + SignedDuration::from_secs(g),
                    g,
                ),
                _ => return (**old).clone(),
            }
        }
        None => {
            let mut period =
                grace.unwrap_or_else(|| old["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(0));
            let phase = old["status"]["phase"].as_str().unwrap_or("");
            if old["spec"]["nodeName"].as_str().unwrap_or("").is_empty() || matches!(phase, "Failed" | "Succeeded") {
                period = 0;
            }
            if period < 0 {
                period = 1;
            }
            (ctx.now + SignedDuration::from_secs(period), period)
        }
    };
    let mut obj = (**old).clone();
    obj["metadata"]["deletionTimestamp"] = meta::time(deadline).into();
    obj["metadata"]["deletionGracePeriodSeconds"] = period.into();
    let stored = ctx.st.commit(key.clone(), ChangeType::Modified, obj, Some(old.clone()));
    if period == 0 && !finalizers {
        ctx.st.delete(key);
    }
    (*stored).clone()
}

/// `POST serviceaccounts/<name>/token` (TokenRequest).
fn token_request(ctx: &mut Ctx, info: &Info) -> ApiResult<Reply> {
    let body = parse_body(ctx)?;
    let sa_name = info.name().to_string();
    let ns = info.ns.clone();
    if let Identity::Node(node) = &ctx.user {
        authz::admit_token(ctx.st, node, &ns, &sa_name, &body)?;
    }
    let sa = ctx
        .st
        .get(&ObjKey::new(SERVICEACCOUNTS, &ns, &sa_name))
        .ok_or_else(|| ApiError::not_found(&RESOURCES[SERVICEACCOUNTS], &sa_name))?;
    let mut spec = body["spec"].as_object().cloned().unwrap_or_default();
    if spec
        .get("audiences")
        .and_then(Value::as_array)
        .is_none_or(|a| a.is_empty())
    {
        spec.insert("audiences".into(), json!([ctx.st.config.issuer]));
    }
    let expiration = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
    if expiration < 600 {
        return Err(ApiError::invalid(
            &RESOURCES[SERVICEACCOUNTS],
            &sa_name,
            &[(
                "FieldValueInvalid",
                "spec.expirationSeconds",
                format!("Invalid value: {expiration}: may not specify a duration less than 10 minutes"),
            )],
        ));
    }
    spec.insert("expirationSeconds".into(), expiration.into());
    let mut pod_claim = Value::Null;
    if let Some(r) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        if r["kind"] != "Pod" {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {}",
                r["kind"].as_str().unwrap_or("")
            )));
        }
        let pod_name = r["name"].as_str().unwrap_or("");
        let pod = ctx
            .st
            .get(&ObjKey::new(PODS, &ns, pod_name))
            .ok_or_else(|| ApiError::not_found(&RESOURCES[PODS], pod_name))?;
        if pod["spec"]["serviceAccountName"] != sa_name.as_str() {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount \"{sa_name}\" to pod running with different serviceaccount name."
            )));
        }
        let uid = r["uid"].as_str().unwrap_or("");
        if !uid.is_empty() && pod["metadata"]["uid"] != uid {
            return Err(ApiError::conflict(
                "Pod",
                "",
                pod_name,
                &format!(
                    "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        pod_claim = json!({"name": pod_name, "uid": pod["metadata"]["uid"]});
    }
    let now = ctx.now;
    let exp = now + SignedDuration::from_secs(expiration);
    let mut claims = json!({
        "aud": spec["audiences"], "exp": exp.as_second(), "iat": now.as_second(), "iss": ctx.st.config.issuer,
        "nbf": now.as_second(), "sub": format!("system:serviceaccount:{ns}:{sa_name}"),
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": sa_name, "uid": sa["metadata"]["uid"]}}
    });
    if !pod_claim.is_null() {
        claims["kubernetes.io"]["pod"] = pod_claim;
    }
    let token = format!(
        "{}.{}.{}",
        meta::base64url(br#"{"alg":"RS256","kid":"actlet-test-apiserver"}"#),
        meta::base64url(claims.to_string().as_bytes()),
        meta::base64url(b"not-a-real-signature")
    );
    let mut out = json!({
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": sa_name, "namespace": ns, "creationTimestamp": meta::time(now)},
        "spec": Value::Object(spec), "status": {"token": token, "expirationTimestamp": meta::time(exp)}
    });
    let manager = ctx.manager();
    let fields = meta::intent_fields(&json!({"spec": body["spec"]}), None);
    meta::record_managed_fields(
        &mut out,
        &manager,
        "authentication.k8s.io/v1",
        Some("token"),
        fields,
        now,
    );
    Ok(json_reply(ctx.st, 201, &out, ctx.pretty))
}

/// For the in-process admin client: a request as if sent over HTTP.
pub fn admin_request(method: &str, target: &str, content_type: Option<&str>, body: Option<&Value>) -> HttpRequest {
    let mut headers = vec![
        ("authorization".to_string(), "Bearer admin".to_string()),
        ("user-agent".to_string(), "test-admin/v0.0.0".to_string()),
    ];
    if let Some(ct) = content_type {
        headers.push(("content-type".into(), ct.into()));
    }
    HttpRequest {
        method: method.into(),
        target: target.into(),
        headers,
        body: body.map(|b| serde_json::to_vec(b).expect("json")).unwrap_or_default(),
    }
}

/// The URL path of a resource collection or object.
pub fn resource_path(rid: Rid, ns: &str, name: Option<&str>) -> String {
    let def = &RESOURCES[rid];
    let mut p = if def.group.is_empty() {
        format!("/api/{}", def.version)
    } else {
        format!("/apis/{}/{}", def.group, def.version)
    };
    if def.namespaced {
        p.push_str(&format!("/namespaces/{ns}"));
    }
    p.push('/');
    p.push_str(def.plural);
    if let Some(n) = name {
        p.push('/');
        p.push_str(n);
    }
    p
}

/// The body of a non-watch reply, parsed.
pub fn reply_json(reply: &Reply) -> Value {
    match reply {
        Reply::Full(r) => serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        Reply::Watch(_) => Value::Null,
    }
}
