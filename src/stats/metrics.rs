//! `/metrics/resource` (what metrics-server and `kubectl top` read; upstream
//! `pkg/kubelet/metrics/collectors/resource_metrics.go`) and
//! `/metrics/cadvisor` (the `container_*` series dashboards use), built from
//! one stats collection with prometheus-client.
//!
//! Both are served as Prometheus text 0.0.4, as upstream serves them, with
//! each sample's timestamp in milliseconds (metrics-server uses it as the
//! sample time). prometheus-client writes OpenMetrics without sample
//! timestamps, so `encode` converts its text: counter families are named
//! with `_total` in `# HELP`/`# TYPE`, `# EOF` is dropped and the timestamps
//! are appended to the sample lines in the order the samples were encoded.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::provider::Collected;
use super::types::{CpuStats, MemoryStats, Summary};

/// The content type of both endpoints.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One sample: labels, value, timestamp (Unix milliseconds).
#[derive(Clone, Debug)]
struct Sample {
    labels: Vec<(&'static str, String)>,
    value: f64,
    ts_ms: Option<i64>,
}

/// One family; counters are named without `_total` (OpenMetrics).
#[derive(Clone, Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    kind: MetricType,
    samples: Vec<Sample>,
}

impl Family {
    fn new(name: &'static str, help: &'static str, kind: MetricType) -> Self {
        Self {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64, ts_ms: Option<i64>) {
        self.samples.push(Sample { labels, value, ts_ms });
    }
}

#[derive(Debug)]
struct Families(Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.0.iter().filter(|f| !f.samples.is_empty()) {
            let mut family = encoder.encode_descriptor(f.name, f.help, None, f.kind)?;
            for s in &f.samples {
                let labels: Vec<(&str, &str)> = s.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let enc = family.encode_family(&labels)?;
                match f.kind {
                    MetricType::Counter => ConstCounter::new(s.value).encode(enc)?,
                    _ => ConstGauge::new(s.value).encode(enc)?,
                }
            }
        }
        Ok(())
    }
}

/// Prometheus text of `families` (see the module doc).
fn encode(families: Vec<Family>) -> String {
    let counters: Vec<&'static str> = families
        .iter()
        .filter(|f| f.kind == MetricType::Counter)
        .map(|f| f.name)
        .collect();
    let stamps: Vec<Option<i64>> = families
        .iter()
        .flat_map(|f| f.samples.iter().map(|s| s.ts_ms))
        .collect();
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(families)));
    let mut om = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut om, &registry) {
        tracing::warn!(error = %e, "encoding metrics failed");
    }
    let mut stamps = stamps.into_iter();
    let mut out = String::with_capacity(om.len() + om.len() / 4);
    for line in om.lines() {
        if line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ").or_else(|| line.strip_prefix("# TYPE ")) {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let total = if counters.contains(&name) { "_total" } else { "" };
            out.push_str(&format!("{}{name}{total} {tail}\n", &line[..7]));
            continue;
        }
        out.push_str(line);
        if let Some(Some(ts)) = stamps.next() {
            out.push_str(&format!(" {ts}"));
        }
        out.push('\n');
    }
    out
}

fn ms(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> Option<i64> {
    Some(t.0.as_millisecond())
}

fn cpu_seconds(c: &Option<CpuStats>) -> Option<(f64, Option<i64>)> {
    let c = c.as_ref()?;
    Some((c.usage_core_nano_seconds? as f64 / 1e9, ms(&c.time)))
}

fn working_set(m: &Option<MemoryStats>) -> Option<(f64, Option<i64>)> {
    let m = m.as_ref()?;
    Some((m.working_set_bytes? as f64, ms(&m.time)))
}

/// `/metrics/resource` from a summary, or only the scrape error when
/// collecting failed.
pub fn resource(summary: Option<&Summary>) -> String {
    use MetricType::{Counter, Gauge};
    let mut node_cpu = Family::new(
        "node_cpu_usage_seconds",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
        Counter,
    );
    let mut node_mem = Family::new(
        "node_memory_working_set_bytes",
        "[STABLE] Current working set of the node in bytes",
        Gauge,
    );
    let mut start = Family::new(
        "container_start_time_seconds",
        "[STABLE] Start time of the container since unix epoch in seconds",
        Gauge,
    );
    let mut c_cpu = Family::new(
        "container_cpu_usage_seconds",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
        Counter,
    );
    let mut c_mem = Family::new(
        "container_memory_working_set_bytes",
        "[STABLE] Current working set of the container in bytes",
        Gauge,
    );
    let mut p_cpu = Family::new(
        "pod_cpu_usage_seconds",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
        Counter,
    );
    let mut p_mem = Family::new(
        "pod_memory_working_set_bytes",
        "[STABLE] Current working set of the pod in bytes",
        Gauge,
    );
    let error = if summary.is_some() { 0.0 } else { 1.0 };
    let mut scrape = Family::new(
        "scrape_error",
        "[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise",
        Gauge,
    );
    scrape.push(vec![], error, None);
    let mut scrape_stable = Family::new(
        "resource_scrape_error",
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
        Gauge,
    );
    scrape_stable.push(vec![], error, None);
    if let Some(s) = summary {
        if let Some((v, ts)) = cpu_seconds(&s.node.cpu) {
            node_cpu.push(vec![], v, ts);
        }
        if let Some((v, ts)) = working_set(&s.node.memory) {
            node_mem.push(vec![], v, ts);
        }
        for pod in &s.pods {
            let (name, ns) = (&pod.pod_ref.name, &pod.pod_ref.namespace);
            for c in &pod.containers {
                let labels = || {
                    vec![
                        ("container", c.name.clone()),
                        ("pod", name.clone()),
                        ("namespace", ns.clone()),
                    ]
                };
                let started = c.start_time.0.as_nanosecond() as f64 / 1e9;
                if started > 0.0 {
                    start.push(labels(), started, None);
                }
                if let Some((v, ts)) = cpu_seconds(&c.cpu) {
                    c_cpu.push(labels(), v, ts);
                }
                if let Some((v, ts)) = working_set(&c.memory) {
                    c_mem.push(labels(), v, ts);
                }
            }
            let labels = || vec![("pod", name.clone()), ("namespace", ns.clone())];
            if let Some((v, ts)) = cpu_seconds(&pod.cpu) {
                p_cpu.push(labels(), v, ts);
            }
            if let Some((v, ts)) = working_set(&pod.memory) {
                p_mem.push(labels(), v, ts);
            }
        }
    }
    encode(vec![
        node_cpu,
        node_mem,
        start,
        c_cpu,
        c_mem,
        p_cpu,
        p_mem,
        scrape,
        scrape_stable,
    ])
}

/// `/metrics/cadvisor`: cAdvisor's container series (labels `container`,
/// `id`, `image`, `name`, `namespace`, `pod`; network ones per pod with
/// `container="POD"` and `interface`).
pub fn cadvisor(collected: &Collected) -> String {
    use MetricType::{Counter, Gauge};
    let mut cpu = Family::new(
        "container_cpu_usage_seconds",
        "Cumulative cpu time consumed in seconds.",
        Counter,
    );
    let mut ws = Family::new(
        "container_memory_working_set_bytes",
        "Current working set in bytes.",
        Gauge,
    );
    let mut usage = Family::new(
        "container_memory_usage_bytes",
        "Current memory usage in bytes, including all memory regardless of when it was accessed",
        Gauge,
    );
    let mut rss = Family::new("container_memory_rss", "Size of RSS in bytes.", Gauge);
    let mut faults = Family::new(
        "container_memory_failures",
        "Cumulative count of memory allocation failures.",
        Counter,
    );
    let mut fs = Family::new(
        "container_fs_usage_bytes",
        "Number of bytes that are consumed by the container on this filesystem.",
        Gauge,
    );
    let mut fs_inodes = Family::new("container_fs_inodes_total", "Number of Inodes", Gauge);
    let mut rx = Family::new(
        "container_network_receive_bytes",
        "Cumulative count of bytes received",
        Counter,
    );
    let mut tx = Family::new(
        "container_network_transmit_bytes",
        "Cumulative count of bytes transmitted",
        Counter,
    );
    let mut rx_err = Family::new(
        "container_network_receive_errors",
        "Cumulative count of errors encountered while receiving",
        Counter,
    );
    let mut tx_err = Family::new(
        "container_network_transmit_errors",
        "Cumulative count of errors encountered while transmitting",
        Counter,
    );
    let mut limit = Family::new(
        "container_spec_memory_limit_bytes",
        "Memory limit for the container.",
        Gauge,
    );
    let mut start = Family::new(
        "container_start_time_seconds",
        "Start time of the container since unix epoch in seconds.",
        Gauge,
    );
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let mut last_seen = Family::new(
        "container_last_seen",
        "Last time a container was seen by the exporter",
        Gauge,
    );
    let pods = &collected.summary.pods;
    for info in &collected.containers {
        let Some(pod) = pods.iter().find(|p| p.pod_ref == info.pod) else {
            continue;
        };
        let Some(c) = pod.containers.iter().find(|c| c.name == info.name) else {
            continue;
        };
        let labels = || {
            vec![
                ("container", info.name.clone()),
                ("id", format!("/{}", info.id)),
                ("image", info.image.clone()),
                ("name", info.id.clone()),
                ("namespace", info.pod.namespace.clone()),
                ("pod", info.pod.name.clone()),
            ]
        };
        if let Some((v, ts)) = cpu_seconds(&c.cpu) {
            cpu.push(labels(), v, ts);
        }
        if let Some(m) = &c.memory {
            let ts = ms(&m.time);
            for (fam, v) in [
                (&mut ws, m.working_set_bytes),
                (&mut usage, m.usage_bytes),
                (&mut rss, m.rss_bytes),
            ] {
                if let Some(v) = v {
                    fam.push(labels(), v as f64, ts);
                }
            }
            for (kind, v) in [("pgfault", m.page_faults), ("pgmajfault", m.major_page_faults)] {
                if let Some(v) = v {
                    let mut l = labels();
                    l.insert(3, ("failure_type", kind.to_string()));
                    l.push(("scope", "container".to_string()));
                    faults.push(l, v as f64, ts);
                }
            }
        }
        if let Some(r) = &c.rootfs {
            if let Some(v) = r.used_bytes {
                fs.push(labels(), v as f64, ms(&r.time));
            }
            if let Some(v) = r.inodes_used {
                fs_inodes.push(labels(), v as f64, ms(&r.time));
            }
        }
        limit.push(labels(), info.memory_limit as f64, None);
        start.push(labels(), c.start_time.0.as_nanosecond() as f64 / 1e9, None);
        last_seen.push(labels(), now_ms as f64 / 1000.0, None);
    }
    for pod in pods {
        let Some(net) = &pod.network else { continue };
        let ts = ms(&net.time);
        for i in &net.interfaces {
            let labels = || {
                vec![
                    ("container", "POD".to_string()),
                    ("id", String::new()),
                    ("image", String::new()),
                    ("interface", i.name.clone()),
                    ("name", String::new()),
                    ("namespace", pod.pod_ref.namespace.clone()),
                    ("pod", pod.pod_ref.name.clone()),
                ]
            };
            for (fam, v) in [
                (&mut rx, i.rx_bytes),
                (&mut tx, i.tx_bytes),
                (&mut rx_err, i.rx_errors),
                (&mut tx_err, i.tx_errors),
            ] {
                if let Some(v) = v {
                    fam.push(labels(), v as f64, ts);
                }
            }
        }
    }
    encode(vec![
        cpu, faults, ws, usage, rss, fs, fs_inodes, rx, rx_err, tx, tx_err, limit, start, last_seen,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_get_total_and_samples_get_timestamps() {
        let mut f = Family::new("x_seconds", "X.", MetricType::Counter);
        f.push(vec![("pod", "a".into())], 1.5, Some(1_700_000_000_123));
        let mut g = Family::new("y_bytes", "Y.", MetricType::Gauge);
        g.push(vec![], 2.0, None);
        let text = encode(vec![f, g]);
        assert_eq!(
            text,
            "# HELP x_seconds_total X.\n# TYPE x_seconds_total counter\nx_seconds_total{pod=\"a\"} 1.5 1700000000123\n\
             # HELP y_bytes Y.\n# TYPE y_bytes gauge\ny_bytes 2.0\n"
        );
    }

    #[test]
    fn a_failed_scrape_reports_only_the_error() {
        let text = resource(None);
        assert!(text.contains("\nscrape_error 1.0\n"), "{text}");
        assert!(text.contains("\nresource_scrape_error 1.0\n"), "{text}");
        assert!(!text.contains("node_cpu"), "{text}");
    }
}
