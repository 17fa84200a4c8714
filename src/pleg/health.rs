//! [`PlegHealthHandle`]: the PLEG's health and metrics, readable without a
//! message (the health server and the benchmark read it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use tokio::time::Instant;

use super::actor::{EVENTED_RELIST_THRESHOLD, RELIST_THRESHOLD};

/// Shared view of the PLEG's health.
#[derive(Clone, Debug)]
pub struct PlegHealthHandle {
    last: Arc<Mutex<Option<(Instant, Duration)>>>,
    /// `kubelet_pleg_relist_duration_seconds`.
    relist_seconds: prometheus_client::metrics::histogram::Histogram,
    /// `kubelet_pleg_relist_interval_seconds`: from one relist's start to the next's.
    relist_interval: prometheus_client::metrics::histogram::Histogram,
    /// The container event stream is up (the global relist is then slower).
    evented: Arc<AtomicBool>,
    stream: EventedPlegMetrics,
}

/// The metrics of the container event stream (upstream names).
#[derive(Clone, Debug)]
pub struct EventedPlegMetrics {
    /// `kubelet_evented_pleg_connection_success_count`.
    pub successes: Gauge,
    /// `kubelet_evented_pleg_connection_error_count`.
    pub errors: Gauge,
    /// `kubelet_evented_pleg_connection_latency_seconds`: from an event's
    /// creation in the runtime to its receipt.
    pub latency: Histogram,
    /// `kubelet_pleg_pod_relist_duration_seconds`: one targeted relist.
    pub pod_relist: Histogram,
}

impl Default for EventedPlegMetrics {
    fn default() -> Self {
        Self {
            successes: Gauge::default(),
            errors: Gauge::default(),
            latency: crate::server::metrics::default_buckets(),
            pod_relist: crate::server::metrics::default_buckets(),
        }
    }
}

impl Default for PlegHealthHandle {
    fn default() -> Self {
        Self {
            last: Arc::default(),
            relist_seconds: crate::server::metrics::default_buckets(),
            relist_interval: crate::server::metrics::default_buckets(),
            evented: Arc::default(),
            stream: EventedPlegMetrics::default(),
        }
    }
}

impl PlegHealthHandle {
    /// Observes relist durations into `histogram` (the metrics registry's).
    pub fn with_relist_histogram(mut self, histogram: prometheus_client::metrics::histogram::Histogram) -> Self {
        self.relist_seconds = histogram;
        self
    }

    /// Observes the intervals between relist starts into `histogram`.
    pub fn with_relist_interval_histogram(
        mut self,
        histogram: prometheus_client::metrics::histogram::Histogram,
    ) -> Self {
        self.relist_interval = histogram;
        self
    }

    /// Counts and times the container event stream into `metrics` (the registry's).
    pub fn with_evented_metrics(mut self, metrics: EventedPlegMetrics) -> Self {
        self.stream = metrics;
        self
    }

    /// Whether the runtime's container event stream is up (the global
    /// relist then runs every [`EVENTED_RELIST_PERIOD`]).
    pub fn is_evented(&self) -> bool {
        self.evented.load(Ordering::Relaxed)
    }

    pub(super) fn stream_connected(&self) {
        self.stream.successes.inc();
        self.evented.store(true, Ordering::Relaxed);
    }

    pub(super) fn stream_failed(&self) {
        self.stream.errors.inc();
    }

    pub(super) fn stream_disconnected(&self) {
        self.stream.errors.inc();
        self.evented.store(false, Ordering::Relaxed);
    }

    pub(super) fn observe_event_latency(&self, created_at_nanos: i64) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        let ago = now.saturating_sub(created_at_nanos).max(0);
        #[allow(clippy::cast_precision_loss)]
        self.stream.latency.observe(ago as f64 / 1e9);
    }

    pub(super) fn observe_pod_relist(&self, took: Duration) {
        self.stream.pod_relist.observe(took.as_secs_f64());
    }

    /// When the last relist finished and how long it took.
    pub fn last_relist(&self) -> Option<(Instant, Duration)> {
        *self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn record(&self, finished: Instant, took: Duration) {
        self.relist_seconds.observe(took.as_secs_f64());
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((prev_finished, prev_took)) = *last {
            let started = finished.checked_sub(took).unwrap_or(finished);
            let prev_started = prev_finished.checked_sub(prev_took).unwrap_or(prev_finished);
            let interval = started.saturating_duration_since(prev_started);
            self.relist_interval.observe(interval.as_secs_f64());
        }
        *last = Some((finished, took));
    }

    /// `Ok` while a relist finished within [`RELIST_THRESHOLD`] of `now`
    /// (or none has run yet but the PLEG started recently); otherwise the
    /// upstream message "PLEG is not healthy: pleg was last seen active …".
    pub fn check(&self, now: Instant, started: Instant) -> Result<(), String> {
        let last = self.last_relist().map_or(started, |(t, _)| t);
        let since = now.saturating_duration_since(last);
        let threshold = if self.is_evented() {
            EVENTED_RELIST_THRESHOLD
        } else {
            RELIST_THRESHOLD
        };
        if since > threshold {
            Err(format!(
                "PLEG is not healthy: pleg was last seen active {since:?} ago; threshold is {threshold:?}"
            ))
        } else {
            Ok(())
        }
    }
}
