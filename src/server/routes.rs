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

/// Registers the read-only routes.
pub fn read_only_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/pods", web::get().to(pods))
        .route("/pods/", web::get().to(pods))
        .route("/healthz", web::get().to(healthz))
        .route("/debug/manifest-errors", web::get().to(manifest_errors));
}

/// Registers the healthz server's routes.
pub fn healthz_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz));
}
