//! `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor` (authorized
//! as `nodes/stats` and `nodes/metrics`): one collection from
//! [`crate::stats::StatsProvider`] each, rendered as the Summary JSON or
//! Prometheus text.

use std::collections::HashMap;

use hyper::StatusCode;

use super::secure::{Resp, bytes_response, text};
use crate::stats::StatsProvider;
use crate::stats::metrics;
use crate::stats::types::Summary;

fn not_found() -> Resp {
    text(StatusCode::NOT_FOUND, "404 page not found")
}

/// Keeps what `only_cpu_and_memory=true` asks for (upstream
/// `GetCPUAndMemoryStats`): node and pod CPU, memory and start times, the
/// containers' CPU and memory.
pub fn only_cpu_and_memory(mut s: Summary) -> Summary {
    let n = &mut s.node;
    (n.network, n.fs, n.runtime, n.rlimit) = (None, None, None, None);
    n.system_containers.clear();
    for p in &mut s.pods {
        (p.network, p.ephemeral_storage, p.process_stats) = (None, None, None);
        p.volume_stats.clear();
        for c in &mut p.containers {
            (c.rootfs, c.logs) = (None, None);
        }
    }
    s
}

/// `GET /stats/summary[?only_cpu_and_memory=true]`.
pub async fn summary(stats: Option<&StatsProvider>, query: &HashMap<String, String>) -> Resp {
    let Some(provider) = stats else {
        return not_found();
    };
    let only = match query.get("only_cpu_and_memory").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Error: invalid only_cpu_and_memory",
            );
        }
    };
    match provider.collect().await {
        Ok(c) => {
            let s = if only {
                only_cpu_and_memory(c.summary)
            } else {
                c.summary
            };
            match serde_json::to_vec(&s) {
                Ok(body) => bytes_response(StatusCode::OK, "application/json", body),
                Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("Internal Error: {e}")),
            }
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("Internal Error: {e}")),
    }
}

/// `GET /metrics/resource`: always 200; a failed collection is `scrape_error 1`.
pub async fn resource(stats: Option<&StatsProvider>) -> Resp {
    let Some(provider) = stats else {
        return not_found();
    };
    let collected = provider.collect().await;
    if let Err(e) = &collected {
        tracing::warn!(error = %e, "error getting summary for the resource metrics endpoint");
    }
    let body = metrics::resource(collected.as_ref().ok().map(|c| &c.summary));
    bytes_response(StatusCode::OK, metrics::CONTENT_TYPE, body)
}

/// `GET /metrics/cadvisor`.
pub async fn cadvisor(stats: Option<&StatsProvider>) -> Resp {
    let Some(provider) = stats else {
        return not_found();
    };
    match provider.collect().await {
        Ok(c) => bytes_response(StatusCode::OK, metrics::CONTENT_TYPE, metrics::cadvisor(&c)),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("Internal Error: {e}")),
    }
}
