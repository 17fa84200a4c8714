//! Probe metrics, ready for the metrics endpoint: upstream
//! `prober_probe_total` (counter by probe type, result, container, pod,
//! namespace, pod UID) and `prober_probe_duration_seconds` (histogram by
//! probe type, container, pod, namespace; successful and unknown results
//! only, as upstream). A worker's series go when the worker goes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Histogram bucket bounds in seconds (Prometheus' default buckets).
pub const BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Who a series is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Labels {
    /// `Liveness`, `Readiness` or `Startup`.
    pub probe_type: String,
    /// The container.
    pub container: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's UID.
    pub pod_uid: String,
}

/// A probe result as the metric labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResultLabel {
    /// `successful`.
    Successful,
    /// `failed`.
    Failed,
    /// `unknown`.
    Unknown,
}

impl ResultLabel {
    fn as_str(self) -> &'static str {
        match self {
            ResultLabel::Successful => "successful",
            ResultLabel::Failed => "failed",
            ResultLabel::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Inner {
    totals: BTreeMap<(Labels, ResultLabel), u64>,
    durations: BTreeMap<Labels, Histogram>,
}

/// The probe metrics; cheap to clone, shared by every probe worker.
///
/// ```
/// use std::time::Duration;
/// use actlet::prober::metrics::{Labels, ProbeMetrics, ResultLabel};
/// let m = ProbeMetrics::default();
/// let l = Labels { probe_type: "Readiness".into(), container: "app".into(), pod: "web".into(), namespace: "default".into(), pod_uid: "u1".into() };
/// m.observe(&l, ResultLabel::Successful, Duration::from_millis(3));
/// assert_eq!(m.total(&l, ResultLabel::Successful), 1);
/// assert!(m.render().contains("prober_probe_duration_seconds_bucket{"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ProbeMetrics(Arc<Mutex<Inner>>);

impl ProbeMetrics {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one probe run and, unless it failed, its duration.
    pub fn observe(&self, labels: &Labels, result: ResultLabel, took: Duration) {
        let mut m = self.lock();
        *m.totals.entry((labels.clone(), result)).or_default() += 1;
        if result != ResultLabel::Failed {
            let h = m.durations.entry(labels.clone()).or_default();
            let secs = took.as_secs_f64();
            for (i, bound) in BUCKETS.iter().enumerate() {
                if secs <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.count += 1;
            h.sum += secs;
        }
    }

    /// `prober_probe_total` of a series.
    pub fn total(&self, labels: &Labels, result: ResultLabel) -> u64 {
        self.lock().totals.get(&(labels.clone(), result)).copied().unwrap_or(0)
    }

    /// Drops the series of a worker that stopped.
    pub fn forget(&self, pod_uid: &str, container: &str, probe_type: &str) {
        let gone = |l: &Labels| l.pod_uid == pod_uid && l.container == container && l.probe_type == probe_type;
        let mut m = self.lock();
        m.totals.retain(|(l, _), _| !gone(l));
        m.durations.retain(|l, _| !gone(l));
    }

    /// The Prometheus text exposition of both metrics.
    pub fn render(&self) -> String {
        let m = self.lock();
        let mut out = String::new();
        out.push_str("# HELP prober_probe_total [ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.\n# TYPE prober_probe_total counter\n");
        for ((l, r), n) in &m.totals {
            let _ = writeln!(
                out,
                "prober_probe_total{{container={:?},namespace={:?},pod={:?},pod_uid={:?},probe_type={:?},result={:?}}} {n}",
                l.container,
                l.namespace,
                l.pod,
                l.pod_uid,
                l.probe_type,
                r.as_str()
            );
        }
        out.push_str("# HELP prober_probe_duration_seconds [ALPHA] Duration in seconds for a probe response.\n# TYPE prober_probe_duration_seconds histogram\n");
        // (the histogram has no pod_uid label)
        for (l, h) in &m.durations {
            let base = format!(
                "container={:?},namespace={:?},pod={:?},probe_type={:?}",
                l.container, l.namespace, l.pod, l.probe_type
            );
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "prober_probe_duration_seconds_bucket{{{base},le=\"{bound}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "prober_probe_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(out, "prober_probe_duration_seconds_sum{{{base}}} {}", h.sum);
            let _ = writeln!(out, "prober_probe_duration_seconds_count{{{base}}} {}", h.count);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Labels {
        Labels {
            probe_type: "Liveness".into(),
            container: "app".into(),
            pod: "web".into(),
            namespace: "default".into(),
            pod_uid: "u1".into(),
        }
    }

    #[test]
    fn failures_are_counted_but_not_timed() {
        let m = ProbeMetrics::default();
        m.observe(&labels(), ResultLabel::Failed, Duration::from_secs(1));
        m.observe(&labels(), ResultLabel::Successful, Duration::from_millis(20));
        m.observe(&labels(), ResultLabel::Successful, Duration::from_secs(3));
        assert_eq!(m.total(&labels(), ResultLabel::Failed), 1);
        assert_eq!(m.total(&labels(), ResultLabel::Successful), 2);
        let text = m.render();
        assert!(text.contains(r#"result="failed"} 1"#), "{text}");
        assert!(text.contains(r#"le="0.025"} 1"#), "{text}");
        assert!(text.contains(r#"le="5"} 2"#), "{text}");
        assert!(text.contains(r#"prober_probe_duration_seconds_count{container="app",namespace="default",pod="web",probe_type="Liveness"} 2"#), "{text}");
        m.forget("u1", "app", "Liveness");
        assert_eq!(m.total(&labels(), ResultLabel::Successful), 0);
        assert!(!m.render().contains("app"));
    }
}
