//! Route handlers and the state they read.

use std::time::Duration;

use actix_web::{HttpResponse, web};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tokio::time::Instant;

use crate::pleg::PlegHealthHandle;
use crate::pod_manager::{PodManager, pod_uid};
use crate::status::StatusCache;
use crate::sync_loop::SyncLoopHeartbeat;

/// What `/healthz` checks.
#[derive(Clone, Debug)]
pub struct HealthState {
    /// The sync loop's heartbeat.
    pub sync_loop: SyncLoopHeartbeat,
    /// The PLEG's health.
    pub pleg: PlegHealthHandle,
    /// When the system started (grace before the first heartbeat/relist).
    pub started: Instant,
    /// The sync loop must have turned within this (upstream: 2 × syncFrequency, at least 5 min).
    pub sync_loop_threshold: Duration,
}

impl HealthState {
    /// `Ok` when healthy, otherwise the failing check's message.
    pub fn check(&self) -> Result<(), String> {
        let now = Instant::now();
        let last = self.sync_loop.last().unwrap_or(self.started);
        let since = now.saturating_duration_since(last);
        if since > self.sync_loop_threshold {
            return Err(format!("syncloop: sync loop was last seen active {since:?} ago"));
        }
        self.pleg.check(now, self.started)
    }
}

/// Upstream's sync loop health threshold for a given `syncFrequency`.
pub fn sync_loop_threshold(sync_frequency: Duration) -> Duration {
    (sync_frequency * 2).max(Duration::from_secs(300))
}

/// Everything the handlers read.
#[derive(Clone, Debug)]
pub struct ServerState {
    /// Desired pods.
    pub pods: PodManager,
    /// Their API statuses.
    pub statuses: StatusCache,
    /// Health checks.
    pub health: HealthState,
    /// Manifests the sources rejected.
    pub manifest_errors: crate::config::ManifestErrors,
}

/// The pods with their latest generated status, as a v1 PodList (upstream
/// `/pods`), sorted by namespace and name.
pub fn pod_list(state: &ServerState) -> serde_json::Value {
    let mut pods: Vec<Pod> = state
        .pods
        .pods()
        .into_iter()
        .map(|d| {
            let mut pod = (*d.pod).clone();
            if let Some(s) = state.statuses.get(&pod_uid(&pod)) {
                pod.status = Some((*s.status).clone());
            }
            pod
        })
        .collect();
    pods.sort_by(|a, b| (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name)));
    json!({ "kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": pods })
}

/// `GET /pods`.
pub async fn pods(state: web::Data<ServerState>) -> HttpResponse {
    HttpResponse::Ok().json(pod_list(&state))
}

/// `GET /debug/manifest-errors`: the manifests the sources rejected, as
/// `[{"origin": file or URL, "reason": …}]`.
pub async fn manifest_errors(state: web::Data<ServerState>) -> HttpResponse {
    let errors: Vec<_> = state
        .manifest_errors
        .get()
        .into_iter()
        .map(|e| json!({ "origin": e.origin, "reason": e.reason }))
        .collect();
    HttpResponse::Ok().json(errors)
}

/// `GET /healthz`: `ok`, or 500 with the failed check.
pub async fn healthz(state: web::Data<ServerState>) -> HttpResponse {
    match state.health.check() {
        Ok(()) => HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("ok"),
        Err(e) => HttpResponse::InternalServerError()
            .content_type("text/plain; charset=utf-8")
            .body(format!("[-]{e}\nhealthz check failed")),
    }
}

/// What the read-only port serves besides pods and health: the Summary API
/// and the Prometheus endpoints (upstream's `InstallDefaultHandlers`).
#[derive(Clone, Debug)]
pub struct ReadOnlyStats {
    /// `/stats/summary`, `/metrics/resource`, `/metrics/cadvisor`.
    pub stats: crate::stats::StatsProvider,
    /// `/metrics`.
    pub metrics: std::sync::Arc<super::metrics::KubeletMetrics>,
}

/// A hyper response of the 10250 server's handlers as an actix one.
async fn from_hyper(resp: super::secure::Resp) -> HttpResponse {
    use http_body_util::BodyExt;
    let (parts, body) = resp.into_parts();
    let status = actix_web::http::StatusCode::from_u16(parts.status.as_u16())
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut out = HttpResponse::build(status);
    if let Some(ct) = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        out.content_type(ct);
    }
    match body.collect().await {
        Ok(b) => out.body(b.to_bytes()),
        Err(e) => HttpResponse::InternalServerError().body(format!("Internal Error: {e}")),
    }
}

/// `GET /stats/summary` on the read-only port.
async fn ro_summary(
    stats: Option<web::Data<ReadOnlyStats>>,
    query: web::Query<std::collections::HashMap<String, String>>,
) -> HttpResponse {
    from_hyper(super::stats::summary(stats.as_ref().map(|s| &s.stats), &query).await).await
}

/// `GET /metrics/resource` on the read-only port.
async fn ro_resource(stats: Option<web::Data<ReadOnlyStats>>) -> HttpResponse {
    from_hyper(super::stats::resource(stats.as_ref().map(|s| &s.stats)).await).await
}

/// `GET /metrics/cadvisor` on the read-only port.
async fn ro_cadvisor(stats: Option<web::Data<ReadOnlyStats>>) -> HttpResponse {
    from_hyper(super::stats::cadvisor(stats.as_ref().map(|s| &s.stats)).await).await
}

/// `GET /metrics` on the read-only port.
async fn ro_metrics(stats: Option<web::Data<ReadOnlyStats>>) -> HttpResponse {
    match stats {
        Some(s) => HttpResponse::Ok()
            .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
            .body(s.metrics.encode()),
        None => HttpResponse::NotFound().body("404 page not found"),
    }
}

/// Registers the read-only routes.
pub fn read_only_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/pods", web::get().to(pods))
        .route("/pods/", web::get().to(pods))
        .route("/stats/summary", web::get().to(ro_summary))
        .route("/stats/summary/", web::get().to(ro_summary))
        .route("/metrics", web::get().to(ro_metrics))
        .route("/metrics/resource", web::get().to(ro_resource))
        .route("/metrics/cadvisor", web::get().to(ro_cadvisor))
        .route("/healthz", web::get().to(healthz))
        .route("/debug/manifest-errors", web::get().to(manifest_errors));
}

/// Registers the healthz server's routes.
pub fn healthz_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz));
}
