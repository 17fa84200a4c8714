//! What a running actlet's `/metrics` says about leaks and supervision, for
//! the chaos scenarios on the real binary (tests/support/chaos_node.rs),
//! which cannot call `Kubelet::pod_table_sizes` or read the tree in process:
//! - **no leak**: `actlet_pod_table_entries{table}` — each per-pod table
//!   holds only the pods the node knows ([`Known`], [`table_violations`]);
//! - **supervision intensity**: `actlet_actor_restarts_total{actor}` and
//!   `actlet_actor_exhausted{actor}` — no actor exhausted, none restarted
//!   beyond what the scenario explains ([`supervision_violations`]).
//!
//! Included with `#[path]`.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// The metric of the per-pod tables (src/server/pod_table_metrics.rs).
pub const POD_TABLE_ENTRIES: &str = "actlet_pod_table_entries";
/// The restart counter of each supervised actor.
pub const ACTOR_RESTARTS: &str = "actlet_actor_restarts_total";
/// 1 while an actor is past its restart intensity.
pub const ACTOR_EXHAUSTED: &str = "actlet_actor_exhausted";

/// A parsed `/metrics` (text exposition / OpenMetrics, by `prometheus-parse`).
#[derive(Debug)]
pub struct Scrape(prometheus_parse::Scrape);

impl Scrape {
    /// Parses the exposition text.
    pub fn parse(text: &str) -> Result<Scrape, String> {
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
            .map(Scrape)
            .map_err(|e| format!("/metrics does not parse: {e}"))
    }

    /// `label value → sample value` of the metric `name`.
    pub fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        use prometheus_parse::Value;
        (self.0.samples.iter())
            .filter(|s| s.metric == name)
            .filter_map(|s| {
                let value = match s.value {
                    Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
                    _ => return None,
                };
                Some((s.labels.get(label)?.to_string(), value))
            })
            .collect()
    }

    /// `actlet_pod_table_entries`: table → entries.
    pub fn pod_tables(&self) -> BTreeMap<String, f64> {
        self.by_label(POD_TABLE_ENTRIES, "table")
    }

    /// `actlet_actor_restarts_total`: actor path → restarts.
    pub fn restarts(&self) -> BTreeMap<String, f64> {
        self.by_label(ACTOR_RESTARTS, "actor")
    }

    /// `actlet_actor_exhausted`: actor path → 0 or 1.
    pub fn exhausted(&self) -> BTreeMap<String, f64> {
        self.by_label(ACTOR_EXHAUSTED, "actor")
    }
}

/// How many pods the node should know at a convergence point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Known {
    /// The pods it runs (the scenario's live pods; a static pod counts once).
    pub live: usize,
    /// The live pods and every pod with a sandbox (in any state) still in the
    /// runtime: the PLEG's cache keeps a pod until the container GC removes
    /// its last sandbox.
    pub in_runtime: usize,
    /// Every pod the scenario created so far: a restart or image pull
    /// backoff entry outlives its pod by up to 10 min (twice the longest delay).
    pub ever: usize,
}

/// The bound each table must keep, by the `table` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    /// Exactly the live pods.
    Live,
    /// At most the live pods (not every pod has probes, volumes, a resize…).
    AtMostLive,
    /// At most [`Known::in_runtime`].
    AtMostInRuntime,
    /// At most [`Known::ever`].
    AtMostEver,
}

fn bound(table: &str) -> Option<Bound> {
    Some(match table {
        "desired" | "statuses" | "lifecycle" | "admitted" | "pod_workers" => Bound::Live,
        "probes" | "volumes" | "rejected" | "pending_resizes" => Bound::AtMostLive,
        "runtime_cache" => Bound::AtMostInRuntime,
        "restart_backoffs" | "image_backoffs" => Bound::AtMostEver,
        _ => return None,
    })
}

/// The tables every actlet reports.
pub const TABLES: [&str; 12] = [
    "desired",
    "statuses",
    "lifecycle",
    "runtime_cache",
    "probes",
    "volumes",
    "admitted",
    "rejected",
    "pending_resizes",
    "restart_backoffs",
    "image_backoffs",
    "pod_workers",
];

/// Every table holding more (or, for the exact ones, other) than the pods
/// the node knows; a table missing from the scrape, or one this check has
/// no bound for, is a violation too.
pub fn table_violations(tables: &BTreeMap<String, f64>, known: &Known) -> Vec<String> {
    let mut v = Vec::new();
    for table in TABLES {
        if !tables.contains_key(table) {
            v.push(format!("table {table}: not on /metrics"));
        }
    }
    for (table, &n) in tables {
        let n = n as usize;
        let ok = match bound(table) {
            None => {
                v.push(format!(
                    "table {table}: {n} entries, and no bound for it here (add one)"
                ));
                continue;
            }
            Some(Bound::Live) => n == known.live,
            Some(Bound::AtMostLive) => n <= known.live,
            Some(Bound::AtMostInRuntime) => n <= known.in_runtime,
            Some(Bound::AtMostEver) => n <= known.ever,
        };
        if !ok {
            let want = match bound(table) {
                Some(Bound::Live) => format!("exactly the {} live pods", known.live),
                Some(Bound::AtMostLive) => format!("at most the {} live pods", known.live),
                Some(Bound::AtMostInRuntime) => {
                    format!("at most the {} pods live or in the runtime", known.in_runtime)
                }
                _ => format!("at most the {} pods ever created", known.ever),
            };
            v.push(format!("table {table}: {n} entries, want {want} (leak)"));
        }
    }
    v
}

/// Restarts a scenario explains: `(actor path, at most)`; a path ending in
/// `/` stands for every actor under it.
pub type Allowed<'a> = &'a [(&'a str, u64)];

fn allowance(allowed: Allowed<'_>, actor: &str) -> u64 {
    allowed
        .iter()
        .filter(|(path, _)| *path == actor || (path.ends_with('/') && actor.starts_with(path)))
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
}

/// Every exhausted actor and every actor restarted more than `allowed` says;
/// no restart counter on the scrape at all is a violation too (the root is
/// always there).
pub fn supervision_violations(scrape: &Scrape, allowed: Allowed<'_>) -> Vec<String> {
    let mut v = Vec::new();
    let restarts = scrape.restarts();
    if !restarts.contains_key("root") {
        v.push(format!("no {ACTOR_RESTARTS}{{actor=\"root\"}} on /metrics"));
    }
    for (actor, &n) in &restarts {
        let max = allowance(allowed, actor);
        if n as u64 > max {
            v.push(format!("actor {actor}: restarted {n} times, at most {max} expected"));
        }
    }
    for (actor, &x) in &scrape.exhausted() {
        if x != 0.0 {
            v.push(format!("actor {actor}: exhausted (past its restart intensity)"));
        }
    }
    v
}

/// The tables and the restarted actors in one line, for progress notes.
pub fn summary(scrape: &Scrape) -> String {
    let tables: Vec<String> = scrape.pod_tables().iter().map(|(t, n)| format!("{t}={n}")).collect();
    let restarted: Vec<String> = (scrape.restarts().iter())
        .filter(|(_, n)| **n > 0.0)
        .map(|(a, n)| format!("{a}={n}"))
        .collect();
    format!("tables {}; restarts {restarted:?}", tables.join(" "))
}
