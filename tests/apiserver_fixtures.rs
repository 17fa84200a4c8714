//! The test API server checked against the recorded kube-apiserver v1.24 exchanges in
//! `tests/fixtures/apiserver/` (vendored from `../shared/fixtures/apiserver/`; override the directory with
//! `ACTLET_APISERVER_FIXTURES`).
//!
//! Every fixture request is replayed once, in file order, on one fresh server, as the
//! recorded identity (node → `Bearer node:test-node`, admin → `Bearer admin`, 65 a bogus
//! token, 66 none), with the recorded Accept/User-Agent/Content-Type. Values that differ per
//! run are threaded through: uids and resourceVersions learnt from earlier answers (same JSON
//! position in the recorded and the actual answer) are substituted into later requests
//! (paths, bodies) and into the expected answers. Then, per fixture:
//!
//! * status code exactly; `Content-Type`, `Cache-Control` exactly; whether
//!   `X-Content-Type-Options` and the APF headers are present; chunked framing for watches;
//! * bodies as JSON, whole: Status bodies exactly; objects exactly except what the server
//!   makes up (uid and resourceVersion must be well-formed and consistent with the mapping,
//!   timestamps well-formed — deletionTimestamp/expirationTimestamp also near now + grace —,
//!   managedFields well-formed, the random `kube-api-access-xxxxx` suffix, the redacted token
//!   and CA, the server address of `/api`);
//! * compact JSON + `\n` (pretty for `/version` and curl's User-Agent);
//! * watches as the ordered list of events with their objects, each line `\n`-terminated.
//!   Consecutive BOOKMARKs count as one: how many arrive depends on timer buckets (16 got 2,
//!   31 got 1, both one second apart near the deadline); their presence and RV are compared.
//!   Chunk timing and sizes are not compared (they depend on byte sizes; the server cuts
//!   chunks like Go's 2048-byte buffer).
//! * all learnt resourceVersions keep the recorded order.
//!
//! Steps of the recording that are not fixtures are done here at the same point: the Node
//! `other-node` exists (so 49 is NodeRestriction's 403, not a 404), `unrelated-secret` and
//! `unrelated-config` are created after 21, `other-node-pod-2` during the watch of 31, etcd
//! is compacted before 34 and the apiserver restarted before 68. The watches 16 and 31 are
//! started before the writes recorded "during" them (15, and 27–30) and collected at their
//! own turn, as recorded.

#[path = "support/apiserver/mod.rs"]
mod apiserver;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use apiserver::{Identity, TestApiServer};
use serde_json::{Map, Value, json};

struct Fixture {
    file: String,
    number: u32,
    identity: String,
    method: String,
    path: String,
    headers: Map<String, Value>,
    body: Value,
    status: u16,
    resp_headers: Map<String, Value>,
    resp_body: Value,
}

fn fixture_dir() -> PathBuf {
    std::env::var_os("ACTLET_APISERVER_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apiserver"))
}

fn load() -> Result<Vec<Fixture>, String> {
    let dir = fixture_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot read fixtures in {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            Ok(Fixture {
                number: file[..2].parse().map_err(|_| format!("{file}: no number"))?,
                file,
                identity: v["identity"].as_str().unwrap_or("").into(),
                method: v["request"]["method"].as_str().unwrap_or("").into(),
                path: v["request"]["path"].as_str().unwrap_or("").into(),
                headers: v["request"]["headers"].as_object().cloned().unwrap_or_default(),
                body: v["request"]["body"].clone(),
                status: v["response"]["status"].as_u64().unwrap_or(0) as u16,
                resp_headers: v["response"]["headers"].as_object().cloned().unwrap_or_default(),
                resp_body: v["response"]["body"].clone(),
            })
        })
        .collect()
}

/// What came back: status, headers (lowercase names), body.
struct Got {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// Mismatches per fixture file ("00-replay" for the replay itself).
type Report = BTreeMap<String, Vec<String>>;

struct Replayer {
    server: TestApiServer,
    client: reqwest::Client,
    uids: BTreeMap<String, String>,
    rvs: BTreeMap<u64, u64>,
    /// The fixture each resourceVersion was first seen in.
    rv_origin: BTreeMap<u64, String>,
    report: Report,
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 160 { format!("{}…", &s[..160]) } else { s }
}

fn is_uid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))
}

fn is_time(s: &str) -> bool {
    s.len() == 20 && s.ends_with('Z') && s.parse::<jiff::Timestamp>().is_ok()
}

fn secs(s: &str) -> i64 {
    s.parse::<jiff::Timestamp>().map(|t| t.as_second()).unwrap_or(0)
}

impl Replayer {
    fn new() -> Self {
        Replayer {
            server: TestApiServer::start(),
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client"),
            uids: BTreeMap::new(),
            rvs: BTreeMap::new(),
            rv_origin: BTreeMap::new(),
            report: Report::new(),
        }
    }

    fn problem(&mut self, file: &str, msg: String) {
        self.report.entry(file.to_string()).or_default().push(msg);
    }

    /// Recorded uids and resourceVersions replaced by the ones this server gave.
    fn substitute(&self, v: &Value, key: Option<&str>) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (k.clone(), self.substitute(x, Some(k))))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.substitute(x, key)).collect()),
            Value::String(s) => {
                if let Some(u) = self.uids.get(s) {
                    return u.clone().into();
                }
                if let Some((from, to)) = self.uids.iter().find(|(from, _)| s.contains(from.as_str())) {
                    return s.replace(from.as_str(), to).into();
                }
                if key == Some("resourceVersion") {
                    if let Some(r) = s.parse().ok().and_then(|r: u64| self.rvs.get(&r)) {
                        return r.to_string().into();
                    }
                }
                if key == Some("message") {
                    if let Some(rest) = s.strip_prefix("too old resource version: ") {
                        let nums: Vec<u64> = rest
                            .split(|c: char| !c.is_ascii_digit())
                            .filter_map(|n| n.parse().ok())
                            .collect();
                        if let [a, b] = nums[..] {
                            let m = |x: u64| self.rvs.get(&x).copied().unwrap_or(x);
                            return format!("too old resource version: {} ({})", m(a), m(b)).into();
                        }
                    }
                }
                v.clone()
            }
            _ => v.clone(),
        }
    }

    fn substitute_path(&self, path: &str) -> String {
        let Some((p, q)) = path.split_once('?') else {
            return path.to_string();
        };
        let q: Vec<String> = q
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some(("resourceVersion", r)) => match r.parse().ok().and_then(|r: u64| self.rvs.get(&r)) {
                    Some(actual) => format!("resourceVersion={actual}"),
                    None => kv.to_string(),
                },
                _ => kv.to_string(),
            })
            .collect();
        format!("{p}?{}", q.join("&"))
    }

    /// Learns uid and resourceVersion pairs at the same JSON position.
    fn learn(&mut self, file: &str, fx: &Value, act: &Value) {
        match (fx, act) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in a {
                    let Some(w) = b.get(k) else { continue };
                    match (k.as_str(), v, w) {
                        ("resourceVersion", Value::String(x), Value::String(y)) => {
                            if let (Ok(x), Ok(y)) = (x.parse::<u64>(), y.parse::<u64>()) {
                                match self.rvs.get(&x) {
                                    Some(prev) if *prev != y => {
                                        self.problem(file, format!("resourceVersion {x} was {prev} before, now {y}"))
                                    }
                                    _ => {
                                        self.rvs.insert(x, y);
                                        self.rv_origin.entry(x).or_insert_with(|| file.to_string());
                                    }
                                }
                            }
                        }
                        ("uid", Value::String(x), Value::String(y)) if is_uid(x) => match self.uids.get(x) {
                            Some(prev) if prev != y => {
                                self.problem(file, format!("uid {x} was {prev} before, now {y}"))
                            }
                            _ => {
                                self.uids.insert(x.clone(), y.clone());
                            }
                        },
                        _ => self.learn(file, v, w),
                    }
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                for (v, w) in a.iter().zip(b) {
                    self.learn(file, v, w);
                }
            }
            _ => {}
        }
    }

    async fn send(&self, f: &Fixture) -> Result<reqwest::Response, String> {
        let url = format!("{}{}", self.server.url(), self.substitute_path(&f.path));
        let method = reqwest::Method::from_bytes(f.method.as_bytes()).map_err(|e| e.to_string())?;
        let mut req = self.client.request(method, url);
        for (k, v) in &f.headers {
            if k != "Authorization" {
                req = req.header(k.as_str(), v.as_str().unwrap_or(""));
            }
        }
        let auth = match (f.number, f.identity.as_str()) {
            (65, _) => Some("Bearer not-a-valid-token".to_string()),
            (66, _) => None,
            (_, "admin") => Identity::Admin.authorization(),
            _ => Identity::node("test-node").authorization(),
        };
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        if !f.body.is_null() {
            req = req.body(serde_json::to_vec(&self.substitute(&f.body, None)).unwrap());
        }
        req.send().await.map_err(|e| format!("request failed: {e}"))
    }

    async fn read(resp: reqwest::Response) -> Result<Got, String> {
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let body = resp
            .bytes()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
            .to_vec();
        Ok(Got { status, headers, body })
    }

    fn check(&mut self, f: &Fixture, got: Got) {
        let file = f.file.clone();
        if got.status != f.status {
            self.problem(&file, format!("status: expected {}, got {}", f.status, got.status));
        }
        self.check_headers(f, &got);
        let watch = f.path.contains("watch=true");
        let actual: Value = if let Value::String(expected) = &f.resp_body {
            let text = String::from_utf8_lossy(&got.body);
            if text != *expected {
                self.problem(&file, format!("body: expected {expected:?}, got {text:?}"));
            }
            return;
        } else if watch {
            let text = String::from_utf8_lossy(&got.body).into_owned();
            if !text.is_empty() && !text.ends_with('\n') {
                self.problem(&file, "watch stream does not end with a newline".into());
            }
            let mut events = Vec::new();
            for line in text.split('\n').filter(|l| !l.is_empty()) {
                match serde_json::from_str::<Value>(line) {
                    Ok(v) => events.push(v),
                    Err(e) => self.problem(&file, format!("watch line is not JSON ({e}): {line}")),
                }
            }
            Value::Array(collapse_bookmarks(events))
        } else {
            match serde_json::from_slice::<Value>(&got.body) {
                Ok(v) => {
                    let text = String::from_utf8_lossy(&got.body);
                    let pretty = f.path == "/version"
                        || f.headers
                            .get("User-Agent")
                            .and_then(Value::as_str)
                            .is_some_and(|u| u.starts_with("curl"));
                    if pretty && !text.contains("\n  \"") {
                        self.problem(&file, "body should be pretty-printed".into());
                    }
                    if !pretty && text != format!("{v}\n") {
                        self.problem(&file, "body is not compact JSON plus one newline".into());
                    }
                    v
                }
                Err(e) => {
                    self.problem(&file, format!("body is not JSON: {e}"));
                    return;
                }
            }
        };
        let expected_raw = if watch {
            let events = f.resp_body.as_array().cloned().unwrap_or_default();
            Value::Array(collapse_bookmarks(events))
        } else {
            f.resp_body.clone()
        };
        self.learn(&file, &expected_raw, &actual);
        let mut expected = self.substitute(&expected_raw, None);
        let mut actual = actual;
        let mut problems = Vec::new();
        normalize(&mut expected, "$", &mut Vec::new());
        if !watch {
            check_deletion_times(&actual, &mut problems);
        }
        normalize(&mut actual, "$", &mut problems);
        if watch {
            let types = |v: &Value| -> Vec<String> {
                v.as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| e["type"].as_str().unwrap_or("?").to_string())
                    .collect()
            };
            if types(&expected) != types(&actual) {
                problems.push(format!(
                    "watch events: expected {:?}, got {:?}",
                    types(&expected),
                    types(&actual)
                ));
            }
        }
        diff("$", &expected, &actual, &mut problems);
        for p in problems {
            self.problem(&file, p);
        }
    }

    fn check_headers(&mut self, f: &Fixture, got: &Got) {
        let want = |k: &str| f.resp_headers.get(k).and_then(Value::as_str).map(str::to_string);
        let have = |k: &str| got.headers.get(&k.to_ascii_lowercase()).cloned();
        for k in ["Content-Type", "Cache-Control"] {
            if want(k) != have(k) {
                self.problem(
                    &f.file,
                    format!("header {k}: expected {:?}, got {:?}", want(k), have(k)),
                );
            }
        }
        for k in [
            "X-Content-Type-Options",
            "X-Kubernetes-Pf-Flowschema-Uid",
            "X-Kubernetes-Pf-Prioritylevel-Uid",
            "Audit-Id",
        ] {
            if want(k).is_some() != have(k).is_some() {
                self.problem(
                    &f.file,
                    format!(
                        "header {k}: expected {}, got {:?}",
                        if want(k).is_some() { "present" } else { "absent" },
                        have(k)
                    ),
                );
            }
        }
        if f.path.contains("watch=true") && have("Transfer-Encoding").as_deref() != Some("chunked") {
            self.problem(&f.file, "a watch must be Transfer-Encoding: chunked".into());
        }
    }

    /// Admin steps of the recording that are not fixtures.
    fn setup(&mut self, before: u32) {
        let store = self.server.store();
        let result = match before {
            1 => store
                .create(
                    "nodes",
                    "",
                    &json!({"metadata": {"name": "other-node"}, "status": {"capacity": {"pods": "110"}}}),
                )
                .map(drop),
            22 => store
                .create(
                    "secrets",
                    "default",
                    &json!({"metadata": {"name": "unrelated-secret"}, "data": {"k": "dW5yZWxhdGVk"}}),
                )
                .and_then(|_| {
                    store.create(
                        "configmaps",
                        "default",
                        &json!({"metadata": {"name": "unrelated-config"}, "data": {"k": "v"}}),
                    )
                })
                .map(drop),
            29 => store
                .create(
                    "pods",
                    "default",
                    &json!({"metadata": {"name": "other-node-pod-2"},
                        "spec": {"nodeName": "other-node", "containers": [{"name": "c", "image": "busybox:1.36"}]}}),
                )
                .map(drop),
            34 => {
                self.server.compact();
                Ok(())
            }
            68 => {
                self.server.restart();
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(status) = result {
            self.problem("00-replay", format!("setup before {before:02} failed: {status}"));
        }
    }

    /// The learnt resourceVersions must keep the recorded order.
    fn check_rv_order(&mut self) {
        let pairs: Vec<(u64, u64)> = self
            .rvs
            .iter()
            .filter(|(a, _)| {
                let origin = self.rv_origin.get(a).map_or("", String::as_str);
                !SEEDED_AT_START.iter().any(|f| origin.starts_with(f))
            })
            .map(|(a, b)| (*a, *b))
            .collect();
        for w in pairs.windows(2) {
            let ((a, x), (b, y)) = (w[0], w[1]);
            if x >= y {
                self.problem(
                    "00-replay",
                    format!("resourceVersion order: recorded {a} < {b}, but got {x} >= {y}"),
                );
            }
        }
    }
}

/// Fixtures showing an object the recording's admin created at a point the fake cannot
/// follow, left out of the resourceVersion order check: `kube-root-ca.crt` (57) was created
/// after `app-secret` there, while the fake seeds it at start as kube-controller-manager does.
const SEEDED_AT_START: &[&str] = &["57-"];

/// Keeps the first of consecutive BOOKMARK events.
fn collapse_bookmarks(events: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for e in events {
        let bookmark = e["type"] == "BOOKMARK";
        if bookmark && out.last().is_some_and(|l| l["type"] == "BOOKMARK") {
            continue;
        }
        out.push(e);
    }
    out
}

/// Replaces what the server makes up by placeholders, checking on the way (into `problems`)
/// that it is well-formed.
fn normalize(v: &mut Value, path: &str, problems: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let p = format!("{path}.{k}");
                match (k.as_str(), &*x) {
                    ("managedFields", Value::Array(entries)) => {
                        for e in entries {
                            let ok = e["manager"].is_string()
                                && e["operation"].is_string()
                                && e["apiVersion"].is_string()
                                && e["time"].as_str().is_some_and(is_time)
                                && e["fieldsType"] == "FieldsV1"
                                && e["fieldsV1"].is_object();
                            if !ok {
                                problems.push(format!("{p}: malformed entry {}", short(e)));
                            }
                        }
                        *x = "<managedFields>".into();
                    }
                    ("creationTimestamp" | "deletionTimestamp" | "expirationTimestamp", Value::String(s)) => {
                        if !is_time(s) {
                            problems.push(format!("{p}: not an RFC 3339 time: {s:?}"));
                        }
                        *x = "<time>".into();
                    }
                    ("uid", Value::String(s)) if !is_uid(s) => problems.push(format!("{p}: not a uid: {s:?}")),
                    ("resourceVersion", Value::String(s)) if s.parse::<u64>().is_err() => {
                        problems.push(format!("{p}: not a resourceVersion: {s:?}"))
                    }
                    ("name", Value::String(s)) if s.starts_with("kube-api-access-") && s.len() == 21 => {
                        *x = "kube-api-access-<random>".into();
                    }
                    ("serverAddress", Value::String(_)) => *x = "<address>".into(),
                    _ => normalize(x, &p, problems),
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter_mut().enumerate() {
                normalize(x, &format!("{path}[{i}]"), problems);
            }
        }
        _ => {}
    }
}

/// deletionTimestamp is now + deletionGracePeriodSeconds (within the replay's slack);
/// a TokenRequest expires expirationSeconds from now.
fn check_deletion_times(v: &Value, problems: &mut Vec<String>) {
    let now = jiff::Timestamp::now().as_second();
    let meta = &v["metadata"];
    if let (Some(dt), Some(grace)) = (
        meta["deletionTimestamp"].as_str(),
        meta["deletionGracePeriodSeconds"].as_i64(),
    ) {
        let off = secs(dt) - now - grace;
        if !(-30..=5).contains(&off) {
            problems.push(format!("deletionTimestamp {dt} is not about now + {grace}s"));
        }
    }
    if let (Some(exp), Some(s)) = (
        v["status"]["expirationTimestamp"].as_str(),
        v["spec"]["expirationSeconds"].as_i64(),
    ) {
        if (secs(exp) - now - s).abs() > 5 {
            problems.push(format!("expirationTimestamp {exp} is not about now + {s}s"));
        }
    }
}

fn diff(path: &str, fx: &Value, act: &Value, out: &mut Vec<String>) {
    if out.len() >= 30 {
        return;
    }
    match (fx, act) {
        (Value::String(s), Value::String(a)) if s == "<redacted>" && !a.is_empty() => {}
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => diff(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k}: missing (expected {})", short(v))),
                }
            }
            for (k, w) in b {
                if !a.contains_key(k) {
                    out.push(format!("{path}.{k}: unexpected {}", short(w)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!("{path}: expected {} items, got {}", a.len(), b.len()));
            }
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if fx != act => out.push(format!("{path}: expected {}, got {}", short(fx), short(act))),
        _ => {}
    }
}

async fn replay_all() -> Report {
    let fixtures = match load() {
        Ok(f) => f,
        Err(e) => return Report::from([("00-replay".to_string(), vec![e])]),
    };
    let mut r = Replayer::new();
    let mut report_files: Vec<String> = Vec::new();
    // Watches recorded while later fixtures ran: started before those, read at their turn.
    let early: HashMap<u32, u32> = HashMap::from([(15, 16), (27, 31)]);
    let mut pending: HashMap<u32, tokio::task::JoinHandle<Result<Got, String>>> = HashMap::new();
    for f in &fixtures {
        r.setup(f.number);
        if let Some(w) = early.get(&f.number) {
            if let Some(wf) = fixtures.iter().find(|x| x.number == *w) {
                match r.send(wf).await {
                    Ok(resp) => {
                        pending.insert(*w, tokio::spawn(Replayer::read(resp)));
                    }
                    Err(e) => r.problem(&wf.file, e),
                }
            }
        }
        let got = match pending.remove(&f.number) {
            Some(task) => task.await.map_err(|e| e.to_string()).and_then(|g| g),
            None => match r.send(f).await {
                Ok(resp) => Replayer::read(resp).await,
                Err(e) => Err(e),
            },
        };
        match got {
            Ok(got) => r.check(f, got),
            Err(e) => r.problem(&f.file, e),
        }
        report_files.push(f.file.clone());
    }
    r.check_rv_order();
    let mut report = std::mem::take(&mut r.report);
    for f in report_files {
        report.entry(f).or_default();
    }
    report.entry("00-replay".into()).or_default();
    report
}

fn replay() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(replay_all())
    })
}

/// Fails with every mismatch of the fixtures numbered `numbers`, by file.
fn check_group(numbers: &[u32]) {
    let report = replay();
    let mut failures = Vec::new();
    let mut seen = 0;
    for (file, problems) in report {
        let n: u32 = file[..2].parse().unwrap_or(0);
        if !numbers.contains(&n) {
            continue;
        }
        seen += 1;
        if !problems.is_empty() {
            failures.push(format!("{file}:\n    {}", problems.join("\n    ")));
        }
    }
    assert!(
        failures.is_empty(),
        "mismatches against the recorded exchanges:\n{}",
        failures.join("\n")
    );
    assert_eq!(seen, numbers.len(), "fixtures missing from {}", fixture_dir().display());
}

const GROUPS: &[&[u32]] = &[
    NODE_REGISTRATION_AND_STATUS,
    NODE_LEASE,
    INFORMER_LISTS,
    ADMIN_SETUP,
    POD_LIST_AND_WATCH,
    WATCH_EXPIRY_AND_COMPACTION,
    POD_STATUS_AND_DELETION,
    MIRROR_PODS,
    EVENTS,
    SECRETS_CONFIGMAPS_TOKENS,
    DISCOVERY_AND_AUTHENTICATION,
];
const NODE_REGISTRATION_AND_STATUS: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 49, 64];
const NODE_LEASE: &[u32] = &[10, 11, 12, 13, 52];
const INFORMER_LISTS: &[u32] = &[17, 18, 19];
const ADMIN_SETUP: &[u32] = &[20, 21, 22, 23, 24];
const POD_LIST_AND_WATCH: &[u32] = &[25, 26, 27, 28, 29, 30, 31, 32, 33, 67];
const WATCH_EXPIRY_AND_COMPACTION: &[u32] = &[34, 35, 36, 68, 69];
const POD_STATUS_AND_DELETION: &[u32] = &[37, 38, 39, 40, 41, 42, 50, 51];
const MIRROR_PODS: &[u32] = &[43, 44, 45];
const EVENTS: &[u32] = &[46, 47, 48];
const SECRETS_CONFIGMAPS_TOKENS: &[u32] = &[53, 54, 55, 56, 57, 58, 59];
const DISCOVERY_AND_AUTHENTICATION: &[u32] = &[60, 61, 62, 63, 65, 66];

#[test]
fn replay_keeps_resource_versions_consistent() {
    check_group(&[0]);
}

#[test]
fn every_fixture_is_checked_by_a_group() {
    let report = replay();
    let unchecked: Vec<&String> = report
        .keys()
        .filter(|f| {
            let n: u32 = f[..2].parse().unwrap_or(0);
            n != 0 && !GROUPS.iter().any(|g| g.contains(&n))
        })
        .collect();
    assert!(unchecked.is_empty(), "fixtures in no group: {unchecked:?}");
}

#[test]
fn node_registration_and_status_match_the_recording() {
    check_group(NODE_REGISTRATION_AND_STATUS);
}

#[test]
fn node_lease_matches_the_recording() {
    check_group(NODE_LEASE);
}

#[test]
fn informer_lists_match_the_recording() {
    check_group(INFORMER_LISTS);
}

#[test]
fn admin_setup_matches_the_recording() {
    check_group(ADMIN_SETUP);
}

#[test]
fn pod_list_and_watch_match_the_recording() {
    check_group(POD_LIST_AND_WATCH);
}

#[test]
fn watch_expiry_and_compaction_match_the_recording() {
    check_group(WATCH_EXPIRY_AND_COMPACTION);
}

#[test]
fn pod_status_and_deletion_match_the_recording() {
    check_group(POD_STATUS_AND_DELETION);
}

#[test]
fn mirror_pods_match_the_recording() {
    check_group(MIRROR_PODS);
}

#[test]
fn events_match_the_recording() {
    check_group(EVENTS);
}

#[test]
fn secrets_configmaps_and_tokens_match_the_recording() {
    check_group(SECRETS_CONFIGMAPS_TOKENS);
}

#[test]
fn discovery_and_authentication_match_the_recording() {
    check_group(DISCOVERY_AND_AUTHENTICATION);
}

// Behaviours beyond the recording that the kubelet's tests rely on.

fn pod(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}})
}

async fn get_json(client: &reqwest::Client, server: &TestApiServer, who: &Identity, path: &str) -> (u16, Value) {
    let mut req = client.get(format!("{}{path}", server.url()));
    if let Some(a) = who.authorization() {
        req = req.header("Authorization", a);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_slice(&resp.bytes().await.expect("body")).unwrap_or(Value::Null),
    )
}

fn watch_lines(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("watch line"))
        .collect()
}

#[tokio::test]
async fn restart_breaks_watches_and_expires_their_resource_versions() {
    let server = TestApiServer::start();
    let client = reqwest::Client::new();
    let node = Identity::node("n1");
    server.store().create("pods", "default", &pod("a", "n1")).unwrap();
    let (_, list) = get_json(&client, &server, &node, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").await;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let watch = client
        .get(format!(
            "{}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=30",
            server.url()
        ))
        .header("Authorization", node.authorization().unwrap())
        .send()
        .await
        .unwrap();
    // Written while the watch runs: the restarted cache starts after the watcher's RV.
    server.store().create("pods", "default", &pod("b", "n1")).unwrap();
    server.restart();
    let broken = tokio::time::timeout(Duration::from_secs(5), watch.bytes())
        .await
        .expect("watch ends at once");
    assert!(broken.is_err(), "a restart breaks the stream (no terminating chunk)");
    let (status, body) = get_json(
        &client,
        &server,
        &node,
        &format!("/api/v1/pods?watch=true&resourceVersion={rv}"),
    )
    .await;
    assert_eq!(status, 200);
    let current = server.store().resource_version();
    assert_eq!(body["type"], "ERROR");
    assert_eq!(body["object"]["code"], 410);
    assert_eq!(
        body["object"]["message"],
        format!("too old resource version: {rv} ({current})")
    );
    let (_, list) = get_json(&client, &server, &node, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").await;
    assert_eq!(list["items"][0]["metadata"]["name"], "a", "data survives the restart");
}

#[tokio::test]
async fn expire_watch_cache_ends_watches_cleanly_then_410() {
    let server = TestApiServer::start();
    let client = reqwest::Client::new();
    let node = Identity::node("n1");
    let rv = server.store().resource_version();
    let watch = client
        .get(format!(
            "{}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=30",
            server.url()
        ))
        .header("Authorization", node.authorization().unwrap())
        .send()
        .await
        .unwrap();
    server.store().create("pods", "default", &pod("a", "n1")).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.expire_watch_cache();
    let body = tokio::time::timeout(Duration::from_secs(5), watch.bytes())
        .await
        .unwrap()
        .expect("clean end");
    let events = watch_lines(&body);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "ADDED");
    let (_, again) = get_json(
        &client,
        &server,
        &node,
        &format!("/api/v1/pods?watch=true&resourceVersion={rv}"),
    )
    .await;
    assert_eq!(again["object"]["reason"], "Expired");
}

#[tokio::test]
async fn set_down_refuses_connections_until_up_again() {
    let server = TestApiServer::start();
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let node = Identity::node("n1");
    server.set_down(true);
    let refused = client.get(format!("{}/healthz", server.url())).send().await;
    assert!(refused.is_err(), "connections are refused while down");
    server
        .store()
        .create("pods", "default", &pod("while-down", "n1"))
        .unwrap();
    server.set_down(false);
    let (status, body) = get_json(&client, &server, &node, "/api/v1/namespaces/default/pods/while-down").await;
    assert_eq!((status, body["metadata"]["name"].as_str()), (200, Some("while-down")));
    server.set_unavailable(true);
    let (status, body) = get_json(&client, &server, &node, "/api/v1/nodes").await;
    assert_eq!((status, body["reason"].as_str()), (503, Some("ServiceUnavailable")));
    server.set_unavailable(false);
    server.fail_next("GET", "/api/v1/nodes", 500, 1);
    assert_eq!(get_json(&client, &server, &node, "/api/v1/nodes").await.0, 500);
    assert_eq!(get_json(&client, &server, &node, "/api/v1/nodes").await.0, 200);
}

#[test]
fn strategic_merge_patch_directives_of_node_status() {
    let server = TestApiServer::start();
    let store = server.store();
    store
        .create(
            "nodes",
            "",
            &json!({"metadata": {"name": "n1"}, "status": {
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}],
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}]}}),
        )
        .unwrap();
    let smp = "application/strategic-merge-patch+json";
    // The kubelet's address fix-up: `$patch: replace` as the first list item.
    let patched = store
        .patch(
            "nodes",
            "",
            "n1",
            Some("status"),
            smp,
            &json!({"status": {"addresses": [{"$patch": "replace"}, {"type": "InternalIP", "address": "10.0.0.2"}]}}),
        )
        .unwrap();
    assert_eq!(
        patched["status"]["addresses"],
        json!([{"type": "InternalIP", "address": "10.0.0.2"}])
    );
    // New conditions go where $setElementOrder puts them; untouched fields stay.
    let patched = store
        .patch(
            "nodes",
            "",
            "n1",
            Some("status"),
            smp,
            &json!({"status": {
                "$setElementOrder/conditions": [{"type": "DiskPressure"}, {"type": "MemoryPressure"}, {"type": "Ready"}],
                "conditions": [{"type": "DiskPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}}),
        )
        .unwrap();
    let types: Vec<&str> = patched["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["DiskPressure", "MemoryPressure", "Ready"]);
    assert_eq!(patched["status"]["conditions"][2]["status"], "True");
    // `$patch: delete` removes one item; a status patch leaves the spec alone.
    let patched = store
        .patch(
            "nodes",
            "",
            "n1",
            Some("status"),
            smp,
            &json!({"spec": {"unschedulable": true},
                "status": {"conditions": [{"type": "DiskPressure", "$patch": "delete"}]}}),
        )
        .unwrap();
    assert_eq!(patched["status"]["conditions"].as_array().unwrap().len(), 2);
    assert!(patched["spec"].get("unschedulable").is_none());
    // Nothing changed: no new resourceVersion.
    let rv = store.resource_version();
    store
        .patch("nodes", "", "n1", Some("status"), smp, &json!({"status": {}}))
        .unwrap();
    assert_eq!(store.resource_version(), rv);
}

#[tokio::test]
async fn lists_page_with_limit_and_continue() {
    let server = TestApiServer::start();
    let client = reqwest::Client::new();
    for name in ["a", "b", "c"] {
        server.store().create("pods", "default", &pod(name, "n1")).unwrap();
    }
    let admin = Identity::Admin;
    let (_, first) = get_json(&client, &server, &admin, "/api/v1/namespaces/default/pods?limit=2").await;
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    server.store().create("pods", "default", &pod("d", "n1")).unwrap();
    let path = format!("/api/v1/namespaces/default/pods?limit=2&continue={token}");
    let (_, second) = get_json(&client, &server, &admin, &path).await;
    let names: Vec<&str> = second["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c"], "the continuation reads the first page's snapshot");
    assert_eq!(
        second["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    server.compact();
    let (status, expired) = get_json(&client, &server, &admin, &path).await;
    assert_eq!((status, expired["reason"].as_str()), (410, Some("Expired")));
}

#[tokio::test]
async fn node_reads_secrets_its_pods_reference_by_name_selector() {
    let server = TestApiServer::start();
    let client = reqwest::Client::new();
    let store = server.store();
    store
        .create("secrets", "default", &json!({"metadata": {"name": "s1"}}))
        .unwrap();
    store
        .create("secrets", "default", &json!({"metadata": {"name": "s2"}}))
        .unwrap();
    let mut p = pod("uses-s1", "n1");
    p["spec"]["volumes"] = json!([{"name": "v", "secret": {"secretName": "s1"}}]);
    store.create("pods", "default", &p).unwrap();
    let node = Identity::node("n1");
    let selector = |name: &str| format!("/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3D{name}");
    let (status, list) = get_json(&client, &server, &node, &selector("s1")).await;
    assert_eq!((status, list["items"].as_array().map(Vec::len)), (200, Some(1)));
    let (status, denied) = get_json(&client, &server, &node, &selector("s2")).await;
    assert_eq!(status, 403);
    assert_eq!(
        denied["message"],
        "secrets \"s2\" is forbidden: User \"system:node:n1\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );
    let (status, _) = get_json(&client, &server, &node, "/api/v1/namespaces/default/secrets").await;
    assert_eq!(status, 403, "a node may not list all secrets");
    let log = server.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].user, "system:node:n1");
    assert_eq!(log[0].query_param("fieldSelector").as_deref(), Some("metadata.name=s1"));
    assert_eq!(log[1].status, 403);
}

/// Queued watch events are written through a 2048-byte buffer as Go does, so a chunk can end
/// inside an event: clients must split the byte stream on newlines.
#[test]
fn queued_watch_events_are_cut_into_chunks_like_go() {
    use std::io::{Read, Write};
    let server = TestApiServer::start();
    for i in 0..3 {
        // About 1 KiB per event: two fill more than the buffer.
        let mut p = pod(&format!("p{i}"), "n1");
        p["spec"]["automountServiceAccountToken"] = false.into();
        server.store().create("pods", "default", &p).unwrap();
    }
    let mut tcp = std::net::TcpStream::connect(server.addr()).unwrap();
    write!(
        tcp,
        "GET /api/v1/pods?watch=true&resourceVersion=1&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer admin\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).unwrap();
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"));
    assert!(head.contains("transfer-encoding: chunked"));
    let (mut rest, mut chunks, mut data) = (&raw[head_end..], Vec::new(), Vec::new());
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
        rest = &rest[line_end + 2..];
        if size == 0 {
            break;
        }
        chunks.push(rest[..size].to_vec());
        data.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
    let events = watch_lines(&data);
    assert_eq!(events.iter().filter(|e| e["type"] == "ADDED").count(), 3);
    assert!(
        chunks.iter().any(|c| c.len() == 2048 && !c.ends_with(b"\n")),
        "an event spans two chunks"
    );
}
