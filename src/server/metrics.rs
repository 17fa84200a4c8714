//! `/metrics`: Prometheus metrics with upstream's names (prometheus-client).
//!
//! - `kubelet_runtime_operations_total`, `kubelet_runtime_operations_errors_total`
//!   and `kubelet_runtime_operations_duration_seconds` (label
//!   `operation_type`, upstream's spelling: `run_podsandbox`,
//!   `update_container`, …) from [`InstrumentedRuntime`], which every CRI
//!   call of the node goes through;
//! - `kubelet_pleg_relist_duration_seconds` and
//!   `kubelet_pleg_relist_interval_seconds`, observed by the PLEG;
//! - the pod start and pod worker histograms ([`super::pod_metrics`]);
//! - client-go's `rest_client_requests_total` and
//!   `rest_client_request_duration_seconds` of the API clients
//!   ([`crate::cluster::client_metrics`]);
//! - at scrape time, from the PLEG cache and the supervision tree:
//!   `kubelet_running_pods`, `kubelet_running_containers{container_state}`,
//!   `kubelet_node_name{node}`, and actlet's `actlet_actor_restarts_total{actor}`,
//!   `actlet_actor_exhausted{actor}`, `actlet_actor_mailbox_depth{actor}` and
//!   `actlet_actor_mailbox_capacity{actor}`;
//! - at scrape time, from the per-pod tables: actlet's
//!   `actlet_pod_table_entries{table}` ([`super::pod_table_metrics`]).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::actors::supervisor::{MailboxDepth, SupervisionTree};
use crate::cri::runtime::cri_calls;
use crate::cri::v1::*;
use crate::cri::{CriResult, Runtime, SharedRuntime};
use crate::kuberuntime::pod_status::{ContainerState, SandboxState};
use crate::pleg::PodCache;

type Labels = Vec<(String, String)>;

/// A per-actor mailbox gauge: name, help, and what it reads.
type MailboxGauge = (&'static str, &'static str, fn(MailboxDepth) -> usize);

fn operation_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.5, 14))
}

/// Upstream's default buckets (`prometheus.DefBuckets`).
pub fn default_buckets() -> Histogram {
    Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
}

/// Upstream's `operation_type` for a CRI gRPC method name.
pub fn operation_type(grpc: &str) -> String {
    let mut snake = String::new();
    for (i, ch) in grpc.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                snake.push('_');
            }
            snake.push(ch.to_ascii_lowercase());
        } else {
            snake.push(ch);
        }
    }
    match snake.as_str() {
        "update_container_resources" => "update_container".into(),
        _ => snake.replace("pod_sandbox", "podsandbox"),
    }
}

/// The node's metrics registry and the runtime-operation metrics.
pub struct KubeletMetrics {
    registry: Mutex<Registry>,
    operations: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    pleg_relist: Histogram,
    pleg_interval: Histogram,
    evented_pleg: crate::pleg::actor::EventedPlegMetrics,
    pods: Arc<super::pod_metrics::PodMetrics>,
    evictions: Family<Labels, prometheus_client::metrics::gauge::Gauge>,
    shutdown: crate::nodeshutdown::ShutdownGauges,
}

impl std::fmt::Debug for KubeletMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KubeletMetrics")
    }
}

impl KubeletMetrics {
    /// A registry with the runtime-operation metrics and `pleg_relist` (the
    /// PLEG's relist histogram).
    pub fn new(pleg_relist: Histogram) -> Arc<Self> {
        let operations = Family::<Labels, Counter>::default();
        let errors = Family::<Labels, Counter>::default();
        let durations = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(operation_histogram);
        let mut registry = Registry::default();
        registry.register(
            "kubelet_runtime_operations",
            "Cumulative number of runtime operations by operation type.",
            operations.clone(),
        );
        registry.register(
            "kubelet_runtime_operations_errors",
            "Cumulative number of runtime operation errors by operation type.",
            errors.clone(),
        );
        registry.register(
            "kubelet_runtime_operations_duration_seconds",
            "Duration in seconds of runtime operations. Broken down by operation type.",
            durations.clone(),
        );
        registry.register(
            "kubelet_pleg_relist_duration_seconds",
            "Duration in seconds for relisting pods in PLEG.",
            pleg_relist.clone(),
        );
        let pleg_interval = default_buckets();
        registry.register(
            "kubelet_pleg_relist_interval_seconds",
            "Interval in seconds between relisting in PLEG.",
            pleg_interval.clone(),
        );
        let evented_pleg = crate::pleg::actor::EventedPlegMetrics::default();
        // Upstream's `_count` counters, exposed as gauges that only go up
        // (a counter here would get a `_total` suffix).
        registry.register(
            "kubelet_evented_pleg_connection_success_count",
            "The number of times a CRI container event stream was opened.",
            evented_pleg.successes.clone(),
        );
        registry.register(
            "kubelet_evented_pleg_connection_error_count",
            "The number of errors encountered opening or reading the CRI container event stream.",
            evented_pleg.errors.clone(),
        );
        registry.register(
            "kubelet_evented_pleg_connection_latency_seconds",
            "The latency of a container event from the runtime to the kubelet.",
            evented_pleg.latency.clone(),
        );
        registry.register(
            "kubelet_pleg_pod_relist_duration_seconds",
            "Duration in seconds of a targeted relist of pods in PLEG.",
            evented_pleg.pod_relist.clone(),
        );
        let pods = super::pod_metrics::PodMetrics::register(&mut registry);
        // Upstream's counter is named without `_total`; a counter here would
        // get the suffix, so it is exposed as a gauge that only goes up.
        let evictions = Family::<Labels, prometheus_client::metrics::gauge::Gauge>::default();
        registry.register(
            "kubelet_evictions",
            "Cumulative number of pod evictions by eviction signal",
            evictions.clone(),
        );
        let shutdown = crate::nodeshutdown::ShutdownGauges::default();
        registry.register(
            "kubelet_graceful_shutdown_start_time_seconds",
            "Last graceful shutdown start time since unix epoch in seconds",
            shutdown.start.clone(),
        );
        registry.register(
            "kubelet_graceful_shutdown_end_time_seconds",
            "Last graceful shutdown end time since unix epoch in seconds",
            shutdown.end.clone(),
        );
        let rest = crate::cluster::rest_client_metrics();
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            rest.requests.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            rest.durations.clone(),
        );
        Arc::new(Self {
            registry: Mutex::new(registry),
            operations,
            errors,
            durations,
            pleg_relist,
            pleg_interval,
            evented_pleg,
            pods,
            evictions,
            shutdown,
        })
    }

    /// The pod start and pod worker histograms.
    pub fn pods(&self) -> &Arc<super::pod_metrics::PodMetrics> {
        &self.pods
    }

    /// `kubelet_evictions{eviction_signal}` (give it to the eviction manager).
    pub fn evictions(&self) -> Family<Labels, prometheus_client::metrics::gauge::Gauge> {
        self.evictions.clone()
    }

    /// `kubelet_graceful_shutdown_{start,end}_time_seconds` (give them to
    /// the node shutdown manager).
    pub fn shutdown(&self) -> crate::nodeshutdown::ShutdownGauges {
        self.shutdown.clone()
    }

    /// The PLEG's relist histogram (give it to the PLEG's health handle).
    pub fn pleg_relist(&self) -> Histogram {
        self.pleg_relist.clone()
    }

    /// The PLEG's relist interval histogram (give it to the PLEG's health handle).
    pub fn pleg_relist_interval(&self) -> Histogram {
        self.pleg_interval.clone()
    }

    /// The container event stream's metrics (give them to the PLEG's health handle).
    pub fn evented_pleg(&self) -> crate::pleg::actor::EventedPlegMetrics {
        self.evented_pleg.clone()
    }

    /// Adds the scrape-time metrics read from `cache` and the tree.
    pub fn attach(&self, node_name: &str, cache: PodCache, tree: SupervisionTree) {
        let mut registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        registry.register_collector(Box::new(ScrapeTime {
            node_name: node_name.to_string(),
            cache,
            tree,
        }));
    }

    /// Adds `actlet_pod_table_entries{table}`, what `sizes` returns at each
    /// scrape ([`super::pod_table_metrics`]).
    pub fn attach_pod_tables(&self, sizes: impl Fn() -> crate::kubelet::PodTableSizes + Send + Sync + 'static) {
        let mut registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        registry.register_collector(Box::new(super::pod_table_metrics::PodTableCollector::new(Box::new(
            sizes,
        ))));
    }

    /// Counts one runtime operation.
    pub fn observe(&self, grpc: &str, started: Instant, ok: bool) {
        let labels = vec![("operation_type".to_string(), operation_type(grpc))];
        self.operations.get_or_create(&labels).inc();
        if !ok {
            self.errors.get_or_create(&labels).inc();
        }
        self.durations
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
    }

    /// The exposition text (OpenMetrics).
    pub fn encode(&self) -> String {
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &registry) {
            tracing::warn!(error = %e, "encoding metrics failed");
        }
        out
    }

    /// `runtime` with every call counted and timed here.
    pub fn instrument(self: &Arc<Self>, runtime: SharedRuntime) -> SharedRuntime {
        Arc::new(InstrumentedRuntime {
            inner: runtime,
            metrics: self.clone(),
        })
    }
}

/// A runtime whose calls are counted and timed in [`KubeletMetrics`].
pub struct InstrumentedRuntime {
    inner: SharedRuntime,
    metrics: Arc<KubeletMetrics>,
}

macro_rules! instrumented_impl {
    (runtime { $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)? }
     image { $(($iname:ident, $igrpc:literal, $ireq:ident, $iresp:ident)),* $(,)? }) => {
        #[async_trait::async_trait]
        impl Runtime for InstrumentedRuntime {
            $(async fn $name(&self, req: $req) -> CriResult<$resp> {
                let started = Instant::now();
                let out = self.inner.$name(req).await;
                self.metrics.observe($grpc, started, out.is_ok());
                out
            })*
            $(async fn $iname(&self, req: $ireq) -> CriResult<$iresp> {
                let started = Instant::now();
                let out = self.inner.$iname(req).await;
                self.metrics.observe($igrpc, started, out.is_ok());
                out
            })*
            async fn get_container_events(
                &self,
                req: crate::cri::v1::GetEventsRequest,
            ) -> CriResult<crate::cri::ContainerEventStream> {
                let started = Instant::now();
                let out = self.inner.get_container_events(req).await;
                self.metrics.observe("GetContainerEvents", started, out.is_ok());
                out
            }
        }
    };
}
cri_calls!(instrumented_impl);

/// Metrics computed when scraped.
#[derive(Debug)]
struct ScrapeTime {
    node_name: String,
    cache: PodCache,
    tree: SupervisionTree,
}

impl Collector for ScrapeTime {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let statuses = self.cache.statuses();
        let running_pods = statuses
            .iter()
            .filter(|s| s.sandboxes.iter().any(|b| b.state == SandboxState::Ready))
            .count();
        let gauge = ConstGauge::new(running_pods as i64);
        gauge.encode(encoder.encode_descriptor(
            "kubelet_running_pods",
            "Number of pods that have a running pod sandbox",
            None,
            gauge.metric_type(),
        )?)?;

        let mut by_state = std::collections::BTreeMap::<&str, i64>::new();
        for c in statuses.iter().flat_map(|s| s.containers.iter()) {
            let state = match c.state {
                ContainerState::Running => "running",
                ContainerState::Exited => "exited",
                ContainerState::Created => "created",
                _ => "unknown",
            };
            *by_state.entry(state).or_default() += 1;
        }
        let mut family = encoder.encode_descriptor(
            "kubelet_running_containers",
            "Number of containers currently running",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (state, n) in by_state {
            let labels = [("container_state", state)];
            ConstGauge::new(n).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "kubelet_node_name",
            "The node's name. The count is always 1.",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        let labels = [("node", self.node_name.as_str())];
        ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;

        {
            let children = self.tree.snapshot(); // sorted by path
            let mut family = encoder.encode_descriptor(
                "actlet_actor_restarts",
                "Restarts of each supervised actor (under its current supervisor instance).",
                None,
                prometheus_client::metrics::MetricType::Counter,
            )?;
            for c in &children {
                let labels = [("actor", c.path.as_str())];
                ConstCounter::new(c.restarts).encode(family.encode_family(&labels)?)?;
            }
            let mut family = encoder.encode_descriptor(
                "actlet_actor_exhausted",
                "1 while a non-critical actor is past its restart intensity (retried later, the rest keeps running).",
                None,
                prometheus_client::metrics::MetricType::Gauge,
            )?;
            for c in &children {
                let labels = [("actor", c.path.as_str())];
                ConstGauge::new(i64::from(c.exhausted)).encode(family.encode_family(&labels)?)?;
            }
            let mailbox: [MailboxGauge; 2] = [
                (
                    "actlet_actor_mailbox_depth",
                    "Messages waiting in each supervised actor's mailbox.",
                    |m| m.queued,
                ),
                (
                    "actlet_actor_mailbox_capacity",
                    "Capacity of each supervised actor's mailbox.",
                    |m| m.capacity,
                ),
            ];
            for (name, help, value) in mailbox {
                let gauge = prometheus_client::metrics::MetricType::Gauge;
                let mut family = encoder.encode_descriptor(name, help, None, gauge)?;
                for c in &children {
                    if let Some(m) = c.mailbox {
                        let labels = [("actor", c.path.as_str())];
                        ConstGauge::new(value(m) as i64).encode(family.encode_family(&labels)?)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_types_are_upstreams() {
        assert_eq!(operation_type("RunPodSandbox"), "run_podsandbox");
        assert_eq!(operation_type("PodSandboxStatus"), "podsandbox_status");
        assert_eq!(operation_type("ListPodSandbox"), "list_podsandbox");
        assert_eq!(operation_type("UpdateContainerResources"), "update_container");
        assert_eq!(operation_type("ExecSync"), "exec_sync");
        assert_eq!(operation_type("ImageFsInfo"), "image_fs_info");
        assert_eq!(operation_type("Version"), "version");
    }

    #[tokio::test]
    async fn runtime_calls_are_counted_with_errors() {
        let m = KubeletMetrics::new(default_buckets());
        let rt = m.instrument(Arc::new(crate::cri::mock::MockRuntime::new()));
        rt.version(VersionRequest::default()).await.unwrap();
        rt.version(VersionRequest::default()).await.unwrap();
        let missing = ContainerStatusRequest {
            container_id: "nope".into(),
            verbose: false,
        };
        assert!(rt.container_status(missing).await.is_err());
        let text = m.encode();
        assert!(
            text.contains("kubelet_runtime_operations_total{operation_type=\"version\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("kubelet_runtime_operations_errors_total{operation_type=\"container_status\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kubelet_runtime_operations_duration_seconds_count{operation_type=\"version\"} 2"),
            "{text}"
        );
        assert!(!text.contains("errors_total{operation_type=\"version\"}"), "{text}");
    }
}
