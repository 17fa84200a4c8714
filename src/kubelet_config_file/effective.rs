//! The effective configuration once resolved: what the binary runs with, the
//! masked form it logs once, and the `/configz` registry (upstream
//! `configz.New("kubeletconfig")`) that the servers read.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

use super::Origin;
use super::types::KubeletConfiguration;
use crate::cli::KubeletFlags;
use crate::kubelet::KubeletConfig;

/// The merged, defaulted and validated configuration.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The flags with the configuration's values (what `main` runs with).
    pub flags: KubeletFlags,
    /// The effective v1beta1 configuration (every field defaulted).
    pub effective: KubeletConfiguration,
    /// Field path → the source that set it (absent: the default).
    pub origins: BTreeMap<String, Origin>,
    /// Warnings to log once (unknown fields, unhonoured fields, gates).
    pub warnings: Vec<String>,
}

impl Resolved {
    /// Sets the [`KubeletConfig`] fields that have no flag.
    pub fn apply_to(&self, config: &mut KubeletConfig) {
        if let Some(d) = self.effective.node_status_report_frequency.and_then(|d| d.to_std()) {
            config.node_status_report_frequency = d;
        }
        if let Some(dir) = self.effective.pod_logs_dir.as_deref().filter(|d| !d.is_empty()) {
            config.pod_logs_dir = dir.into();
        }
        let kc = &self.effective;
        if let Some(p) = kc.image_gc_high_threshold_percent {
            config.image_gc_high_threshold_percent = p;
        }
        if let Some(p) = kc.image_gc_low_threshold_percent {
            config.image_gc_low_threshold_percent = p;
        }
        if let Some(d) = kc.image_minimum_gc_age.and_then(|d| d.to_std()) {
            config.image_minimum_gc_age = d;
        }
        if let Some(d) = kc.image_maximum_gc_age.and_then(|d| d.to_std()) {
            config.image_maximum_gc_age = d;
        }
        if let Some(n) = kc.container_log_max_workers.and_then(|n| usize::try_from(n).ok()) {
            config.container_log_policy.max_workers = n;
        }
        if let Some(d) = kc.container_log_monitor_interval.and_then(|d| d.to_std()) {
            config.container_log_policy.monitor_interval = d;
        }
        config.evented_pleg = super::defaults::gate_enabled(kc, "EventedPLEG");
        if let Some(on) = kc.kernel_memcg_notification {
            config.eviction.kernel_memcg_notification = on;
        }
        if let Some(on) = kc.local_storage_capacity_isolation {
            config.eviction.local_storage_capacity_isolation = on;
        }
        let d = |v: Option<super::GoDuration>| v.and_then(|d| d.to_std()).unwrap_or_default();
        let by_priority = kc
            .shutdown_grace_period_by_pod_priority
            .iter()
            .flatten()
            .map(|p| crate::nodeshutdown::PriorityPeriod {
                priority: p.priority,
                grace_period: std::time::Duration::from_secs(
                    u64::try_from(p.shutdown_grace_period_seconds).unwrap_or(0),
                ),
            })
            .collect();
        config.shutdown = crate::nodeshutdown::ShutdownConfig::new(
            d(kc.shutdown_grace_period),
            d(kc.shutdown_grace_period_critical_pods),
            by_priority,
        );
    }

    /// The effective configuration as JSON with secrets masked
    /// (`staticPodURLHeader` values, as upstream masks them before logging).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use actlet::kubelet_config_file::{KubeletConfiguration, Resolved};
    /// let kc = KubeletConfiguration {
    ///     static_pod_url_header: Some(BTreeMap::from([("Authorization".into(), vec!["Bearer s3cret".into()])])),
    ///     ..Default::default()
    /// };
    /// let flags = <actlet::cli::Cli as clap::Parser>::parse_from(["actlet"]).flags;
    /// let r = Resolved { flags, effective: kc, origins: Default::default(), warnings: vec![] };
    /// let masked = r.masked_json().to_string();
    /// assert!(masked.contains("<masked>") && !masked.contains("s3cret"));
    /// ```
    pub fn masked_json(&self) -> Value {
        let mut kc = self.effective.clone();
        kc.api_version = Some(super::types::API_VERSION.into());
        kc.kind = Some(super::types::KIND.into());
        if let Some(headers) = kc.static_pod_url_header.as_mut() {
            for v in headers.values_mut() {
                *v = vec!["<masked>".into()];
            }
        }
        serde_json::to_value(&kc).unwrap_or(Value::Null)
    }

    /// The `/configz` document: `{"kubeletconfig": …}`.
    pub fn configz(&self) -> Value {
        json!({ "kubeletconfig": self.masked_json() })
    }
}

/// A shared slot for the `/configz` document.
///
/// ```
/// let slot = actlet::kubelet_config_file::effective::Configz::default();
/// assert!(slot.get().is_none());
/// slot.set(serde_json::json!({"kubeletconfig": {"maxPods": 110}}));
/// assert_eq!(slot.get().unwrap()["kubeletconfig"]["maxPods"], 110);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Configz(Arc<RwLock<Option<Arc<Value>>>>);

impl Configz {
    /// Publishes the document.
    pub fn set(&self, doc: Value) {
        if let Ok(mut slot) = self.0.write() {
            *slot = Some(Arc::new(doc));
        }
    }

    /// The published document, if any.
    pub fn get(&self) -> Option<Arc<Value>> {
        self.0.read().ok().and_then(|s| s.clone())
    }
}

/// The process's registry, which the binary fills once at start (as
/// upstream's global `configz` registry) and `/configz` serves.
pub fn global() -> &'static Configz {
    static GLOBAL: std::sync::OnceLock<Configz> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(Configz::default)
}

/// `GET /configz` (upstream serves it on the authenticated 10250 server):
/// the [`global`] document, 404 until the binary has published one. The
/// server that registers it: `cfg.route("/configz", web::get().to(configz_handler))`.
pub async fn configz_handler() -> actix_web::HttpResponse {
    match global().get() {
        Some(doc) => actix_web::HttpResponse::Ok().json(&*doc),
        None => actix_web::HttpResponse::NotFound().body("no configz registered"),
    }
}
