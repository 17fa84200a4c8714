//! [`RuntimeManager`]: the runtime side of the kubelet (upstream
//! `kubeGenericRuntimeManager`). It owns the CRI handle, the restart and
//! image pull backoffs and the settings; its verbs live in their own files:
//! [`sync_pod`](super::sync_pod), [`kill`](super::kill), [`image`](super::image).
//!
//! # Sharing
//! One manager serves every pod worker: all methods take `&self`, the
//! backoffs lock internally (never across an await), and image pulls are
//! serialized when `serializeImagePulls` is set. Hold it in an `Arc`.
//!
//! # Clocks
//! Backoff runs on [`tokio::time::Instant`] (so tests pause time), while the
//! runtime reports wall-clock timestamps. A container's finish time is mapped
//! onto the monotonic clock by comparing it with the *runtime's* current wall
//! time ([`RuntimeManager::with_wall_clock`]; default: the system clock).
//!
//! # Events
//! The verbs record upstream's pod events (Pulling, Pulled, Created,
//! Started, Killing, BackOff, Failed…) on the [`EventRecorder`] given with
//! [`RuntimeManager::with_events`] (default: disabled, only logged).

use std::fmt;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::backoff::Backoff;
use super::config::RuntimeManagerConfig;
use super::convert;
use super::pod_status::RuntimePodStatus;
use crate::cri::{CriResult, SharedRuntime};
use crate::events::{EventRecorder, container_field_path};
use crate::messages::PodUid;
use crate::messages::event::EventType;

/// Runs pods on a CRI runtime.
pub struct RuntimeManager {
    pub(crate) runtime: SharedRuntime,
    pub(crate) config: RuntimeManagerConfig,
    pub(crate) backoff: Backoff,
    pub(crate) image_backoff: Backoff,
    /// Pull slots: 1 when `serializeImagePulls`, `maxParallelImagePulls`
    /// otherwise (`None`: unbounded).
    pub(crate) pull_slots: Option<std::sync::Arc<tokio::sync::Semaphore>>,
    pub(crate) events: EventRecorder,
    wall_clock: crate::clock::WallClock,
    /// What actlet applied to running containers (in-place resize).
    pub(crate) actuated: super::resize_apply::Actuated,
    /// The last in-place resize error of each pod.
    pub(crate) resize_errors: super::resize_apply::ResizeErrors,
}

impl fmt::Debug for RuntimeManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeManager")
            .field("config", &self.config)
            .field("backoff_entries", &self.backoff.len())
            .field("image_backoff_entries", &self.image_backoff.len())
            .finish_non_exhaustive()
    }
}

/// Upstream's image puller choice: serial (one slot), parallel bounded by
/// `maxParallelImagePulls`, or parallel unbounded.
fn pull_slots(config: &RuntimeManagerConfig) -> Option<std::sync::Arc<tokio::sync::Semaphore>> {
    let slots = if config.serialize_image_pulls {
        Some(1)
    } else {
        config.max_parallel_image_pulls.filter(|n| *n > 0)
    };
    slots.map(|n| std::sync::Arc::new(tokio::sync::Semaphore::new(n)))
}

impl RuntimeManager {
    /// A manager for `runtime` with upstream's backoffs (10s doubling to 300s).
    pub fn new(runtime: SharedRuntime, config: RuntimeManagerConfig) -> Self {
        let slots = pull_slots(&config);
        Self {
            runtime,
            config,
            backoff: Backoff::default(),
            image_backoff: Backoff::default(),
            pull_slots: slots,
            events: EventRecorder::disabled(),
            wall_clock: crate::clock::WallClock::system(),
            actuated: Default::default(),
            resize_errors: Default::default(),
        }
    }

    /// Records pod events on `events` (default: disabled).
    pub fn with_events(mut self, events: EventRecorder) -> Self {
        self.events = events;
        self
    }

    /// The event recorder the verbs record pod events on.
    pub fn events(&self) -> &EventRecorder {
        &self.events
    }

    /// Records an event about `container` of `pod` (field path
    /// `spec.containers{name}` or `spec.initContainers{name}`).
    pub(crate) fn container_event(
        &self,
        pod: &k8s_openapi::api::core::v1::Pod,
        container: &str,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.events
            .pod_event(pod, container_field_path(pod, container), type_, reason, message)
    }

    /// Reads the runtime's timestamps against `clock` (e.g. the mock
    /// runtime's virtual clock in tests) instead of the system clock.
    pub fn with_wall_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.wall_clock = crate::clock::WallClock::from_fn(clock);
        self
    }

    /// The runtime.
    pub fn runtime(&self) -> &SharedRuntime {
        &self.runtime
    }

    /// The settings.
    pub fn config(&self) -> &RuntimeManagerConfig {
        &self.config
    }

    /// The container restart backoff (`CrashLoopBackOff`).
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// The image pull backoff (`ImagePullBackOff`).
    pub fn image_backoff(&self) -> &Backoff {
        &self.image_backoff
    }

    /// Drops idle backoff entries (housekeeping calls this periodically).
    pub fn gc_backoffs(&self) {
        let now = Instant::now();
        self.backoff.gc(now);
        self.image_backoff.gc(now);
    }

    /// One pod's status as the runtime reports it (see [`convert::get_pod_status`]).
    pub async fn get_pod_status(&self, uid: &PodUid, name: &str, namespace: &str) -> CriResult<RuntimePodStatus> {
        convert::get_pod_status(self.runtime.as_ref(), uid, name, namespace).await
    }

    /// The monotonic instant corresponding to the runtime timestamp `ts`
    /// (clamped to now for timestamps in the future).
    pub(crate) fn instant_of(&self, ts: Timestamp) -> Instant {
        let now = Instant::now();
        let ago = self.wall_clock.now().as_nanosecond() - ts.as_nanosecond();
        let ago = std::time::Duration::from_nanos(u64::try_from(ago.max(0)).unwrap_or(u64::MAX));
        now.checked_sub(ago).unwrap_or(now)
    }
}

/// Upstream `format.Pod`: `name_namespace(uid)`.
pub fn format_pod(name: &str, namespace: &str, uid: &str) -> String {
    format!("{name}_{namespace}({uid})")
}

/// `format_pod` for a pod object.
pub(crate) fn format_pod_of(pod: &k8s_openapi::api::core::v1::Pod) -> String {
    let m = &pod.metadata;
    format_pod(
        m.name.as_deref().unwrap_or_default(),
        m.namespace.as_deref().unwrap_or_default(),
        m.uid.as_deref().unwrap_or_default(),
    )
}

/// Go's `time.Duration.String()` for whole seconds: `10s`, `1m20s`, `5m0s`.
pub(crate) fn go_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, m, sec) => format!("{h}h{m}m{sec}s"),
    }
}

/// Go's `time.Duration.String()`: `0s`, `523.4ms`, `1.5s`, `1m2.25s`.
pub fn go_duration_precise(d: std::time::Duration) -> String {
    fn frac(whole: u128, rest: u128, digits: usize, unit: &str) -> String {
        let rest = format!("{rest:0digits$}");
        let rest = rest.trim_end_matches('0');
        if rest.is_empty() {
            format!("{whole}{unit}")
        } else {
            format!("{whole}.{rest}{unit}")
        }
    }
    let ns = d.as_nanos();
    match ns {
        0 => "0s".into(),
        1..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => frac(ns / 1_000, ns % 1_000, 3, "µs"),
        1_000_000..1_000_000_000 => frac(ns / 1_000_000, ns % 1_000_000, 6, "ms"),
        _ => {
            let secs = ns / 1_000_000_000;
            let (h, m) = (secs / 3600, (secs % 3600) / 60);
            let s = frac(secs % 60, ns % 1_000_000_000, 9, "s");
            match (h, m) {
                (0, 0) => s,
                (0, m) => format!("{m}m{s}"),
                (h, m) => format!("{h}h{m}m{s}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cri::mock::MockRuntime;

    #[test]
    fn go_duration_formats_like_go() {
        let f = |s| go_duration(Duration::from_secs(s));
        assert_eq!(
            [f(0), f(10), f(80), f(160), f(300), f(3725)],
            ["0s", "10s", "1m20s", "2m40s", "5m0s", "1h2m5s"]
        );
    }

    #[test]
    fn precise_durations_format_like_go() {
        let f = |ns| go_duration_precise(Duration::from_nanos(ns));
        assert_eq!(
            [
                f(0),
                f(12),
                f(1_500),
                f(523_400_000),
                f(1_500_000_000),
                f(62_250_000_000),
                f(3_725_000_000_000)
            ],
            ["0s", "12ns", "1.5µs", "523.4ms", "1.5s", "1m2.25s", "1h2m5s"]
        );
    }

    #[test]
    fn pods_format_as_name_namespace_uid() {
        assert_eq!(format_pod("web", "prod", "u1"), "web_prod(u1)");
    }

    #[tokio::test(start_paused = true)]
    async fn runtime_timestamps_map_onto_the_monotonic_clock() {
        let base = convert::system_now();
        let start = Instant::now();
        let m = RuntimeManager::new(std::sync::Arc::new(MockRuntime::new()), RuntimeManagerConfig::default())
            .with_wall_clock(move || base + start.elapsed());
        tokio::time::advance(Duration::from_secs(100)).await;
        let ten_ago = base + Duration::from_secs(90);
        assert_eq!(Instant::now() - m.instant_of(ten_ago), Duration::from_secs(10));
        let future = base + Duration::from_secs(500);
        assert_eq!(m.instant_of(future), Instant::now(), "future timestamps clamp to now");
    }
}
