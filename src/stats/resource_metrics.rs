//! `/metrics/resource`: the resource metrics metrics-server (and so
//! `kubectl top` and the HPA) scrape, with upstream's names, labels and
//! millisecond sample timestamps (upstream `resource_metrics.go`). Written
//! by hand rather than through `prometheus-client`, whose text encoder has
//! no per-sample timestamps; the output is checked with a Prometheus text
//! parser in the tests.

use std::fmt::Write;

use super::types::Summary;

fn ms(rfc3339: &str) -> Option<i64> {
    rfc3339.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond())
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} [STABLE] {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64, time: Option<i64>) {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        let labels = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", labels.join(","))
        };
        let _ = match time {
            Some(t) => writeln!(self.out, "{name}{labels} {value} {t}"),
            None => writeln!(self.out, "{name}{labels} {value}"),
        };
    }
}

/// The text of `/metrics/resource` for `summary` (`scrape_error`: the
/// runtime's stats could not be read).
///
/// ```
/// let s = actlet::stats::Summary::default();
/// let text = actlet::stats::resource_metrics::render(&s, false);
/// assert!(text.contains("resource_scrape_error 0"));
/// ```
pub fn render(summary: &Summary, scrape_error: bool) -> String {
    let mut out = String::new();
    let mut f = Family { out: &mut out };
    let node = &summary.node;
    f.header(
        "node_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the node in core-seconds",
    );
    if let Some(c) = &node.cpu
        && let Some(total) = c.usage_core_nano_seconds
    {
        f.sample("node_cpu_usage_seconds_total", &[], total as f64 / 1e9, ms(&c.time));
    }
    f.header(
        "node_memory_working_set_bytes",
        "gauge",
        "Current working set of the node in bytes",
    );
    if let Some(m) = &node.memory
        && let Some(ws) = m.working_set_bytes
    {
        f.sample("node_memory_working_set_bytes", &[], ws as f64, ms(&m.time));
    }
    f.header(
        "pod_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the pod in core-seconds",
    );
    for p in &summary.pods {
        let labels = [
            ("namespace", p.pod_ref.namespace.as_str()),
            ("pod", p.pod_ref.name.as_str()),
        ];
        if let Some(c) = &p.cpu
            && let Some(total) = c.usage_core_nano_seconds
        {
            f.sample("pod_cpu_usage_seconds_total", &labels, total as f64 / 1e9, ms(&c.time));
        }
    }
    f.header(
        "pod_memory_working_set_bytes",
        "gauge",
        "Current working set of the pod in bytes",
    );
    for p in &summary.pods {
        let labels = [
            ("namespace", p.pod_ref.namespace.as_str()),
            ("pod", p.pod_ref.name.as_str()),
        ];
        if let Some(m) = &p.memory
            && let Some(ws) = m.working_set_bytes
        {
            f.sample("pod_memory_working_set_bytes", &labels, ws as f64, ms(&m.time));
        }
    }
    let containers = || {
        summary.pods.iter().flat_map(|p| {
            p.containers.iter().map(move |c| {
                let labels = [
                    ("container", c.name.as_str()),
                    ("namespace", p.pod_ref.namespace.as_str()),
                    ("pod", p.pod_ref.name.as_str()),
                ];
                (labels, c)
            })
        })
    };
    f.header(
        "container_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the container in core-seconds",
    );
    for (labels, c) in containers() {
        if let Some(cpu) = &c.cpu
            && let Some(total) = cpu.usage_core_nano_seconds
        {
            f.sample(
                "container_cpu_usage_seconds_total",
                &labels,
                total as f64 / 1e9,
                ms(&cpu.time),
            );
        }
    }
    f.header(
        "container_memory_working_set_bytes",
        "gauge",
        "Current working set of the container in bytes",
    );
    for (labels, c) in containers() {
        if let Some(m) = &c.memory
            && let Some(ws) = m.working_set_bytes
        {
            f.sample("container_memory_working_set_bytes", &labels, ws as f64, ms(&m.time));
        }
    }
    f.header(
        "container_start_time_seconds",
        "gauge",
        "Start time of the container since unix epoch in seconds",
    );
    for (labels, c) in containers() {
        if let Some(start) = ms(&c.start_time) {
            f.sample("container_start_time_seconds", &labels, start as f64 / 1e3, None);
        }
    }
    f.header(
        "resource_scrape_error",
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    );
    f.sample("resource_scrape_error", &[], if scrape_error { 1.0 } else { 0.0 }, None);
    out
}
