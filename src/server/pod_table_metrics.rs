//! `actlet_pod_table_entries{table}` on `/metrics`: how many pods each
//! per-pod table of the kubelet holds ([`PodTableSizes`], read at scrape
//! time), so that a leak — a table still holding pods the node no longer
//! knows — shows on a running node, not only in tests.
//!
//! ```text
//! # HELP actlet_pod_table_entries Pods each per-pod table of the kubelet holds ...
//! # TYPE actlet_pod_table_entries gauge
//! actlet_pod_table_entries{table="desired"} 20
//! actlet_pod_table_entries{table="statuses"} 20
//! ...
//! ```

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::kubelet::PodTableSizes;

/// The metric's name.
pub const POD_TABLE_ENTRIES: &str = "actlet_pod_table_entries";

/// What the collector reads at each scrape.
pub type SizesFn = Box<dyn Fn() -> PodTableSizes + Send + Sync>;

/// The scrape-time collector of [`POD_TABLE_ENTRIES`].
pub struct PodTableCollector {
    sizes: SizesFn,
}

impl PodTableCollector {
    /// A collector reporting what `sizes` returns at each scrape.
    pub fn new(sizes: SizesFn) -> Self {
        Self { sizes }
    }
}

impl std::fmt::Debug for PodTableCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PodTableCollector")
    }
}

impl Collector for PodTableCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sizes = (self.sizes)();
        let mut family = encoder.encode_descriptor(
            POD_TABLE_ENTRIES,
            "Pods each per-pod table of the kubelet holds (once pods are gone, at most the pods the node knows).",
            None,
            MetricType::Gauge,
        )?;
        for (table, n) in sizes.entries() {
            let labels = [("table", table)];
            ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX)).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::server::metrics::{KubeletMetrics, default_buckets};

    fn sample(text: &str, table: &str) -> Option<String> {
        let prefix = format!("{POD_TABLE_ENTRIES}{{table=\"{table}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .map(str::to_owned)
    }

    #[test]
    fn every_table_is_a_gauge_read_at_scrape_time() {
        let m = KubeletMetrics::new(default_buckets());
        let statuses = Arc::new(AtomicUsize::new(3));
        let read = statuses.clone();
        m.attach_pod_tables(move || PodTableSizes {
            desired: 2,
            statuses: read.load(Ordering::SeqCst),
            pod_workers: 2,
            restart_backoffs: 1,
            ..Default::default()
        });
        let text = m.encode();
        assert!(text.contains(&format!("# TYPE {POD_TABLE_ENTRIES} gauge")), "{text}");
        let want = [
            ("desired", "2"),
            ("statuses", "3"),
            ("lifecycle", "0"),
            ("runtime_cache", "0"),
            ("probes", "0"),
            ("volumes", "0"),
            ("admitted", "0"),
            ("rejected", "0"),
            ("pending_resizes", "0"),
            ("restart_backoffs", "1"),
            ("image_backoffs", "0"),
            ("pod_workers", "2"),
        ];
        for (table, n) in want {
            assert_eq!(sample(&text, table).as_deref(), Some(n), "{table}\n{text}");
        }
        let lines = text.lines().filter(|l| l.starts_with(POD_TABLE_ENTRIES)).count();
        assert_eq!(lines, want.len(), "one sample per table\n{text}");

        // A leak shows at the next scrape.
        statuses.store(7, Ordering::SeqCst);
        assert_eq!(sample(&m.encode(), "statuses").as_deref(), Some("7"));
    }

    #[test]
    fn nothing_attached_nothing_reported() {
        let text = KubeletMetrics::new(default_buckets()).encode();
        assert!(!text.contains(POD_TABLE_ENTRIES), "{text}");
    }
}
