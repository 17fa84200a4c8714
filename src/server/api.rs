//! Handlers of the authenticated API beyond `/pods` and `/healthz`:
//! `/runningpods/`, `/spec/`, `/containerLogs`, `/run`, `/debug/actors`, and
//! the state they read ([`ApiState`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use hyper::StatusCode;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::logs::{LogOptions, LogReader};
use super::routes::ServerState;
use super::secure::{Resp, json_response, stream_response, text};
use crate::actors::supervisor::SupervisionTree;
use crate::cri::SharedRuntime;
use crate::cri::v1::{ContainerStatusRequest, ExecSyncRequest};
use crate::kuberuntime::pod_status::{ContainerState, RuntimePodStatus};
use crate::pleg::PodCache;
use crate::pod_manager::pod_uid;

/// What the authenticated server's handlers read besides [`ServerState`].
#[derive(Clone)]
pub struct ApiState {
    /// The node's name (authorization attributes, `/spec/`).
    pub node_name: String,
    /// The container runtime (log paths, exec, streaming URLs).
    pub runtime: SharedRuntime,
    /// Runtime statuses of the pods (which container instance is which).
    pub cache: PodCache,
    /// `/spec/`: machine facts as upstream's cAdvisor MachineInfo names them.
    pub spec: serde_json::Value,
    /// The live supervision tree (`/debug/actors`).
    pub tree: SupervisionTree,
    /// Where pod log directories are (logs outside it are refused).
    pub pod_logs_dir: PathBuf,
    /// `/configz`: the effective configuration (`{"kubeletconfig": …}`).
    pub configz: serde_json::Value,
    /// `/logs/`: the node's log directory (`/var/log`).
    pub node_logs_dir: PathBuf,
    /// `/metrics` (none: 404).
    pub metrics: Option<Arc<super::metrics::KubeletMetrics>>,
    /// `/stats/summary`, `/metrics/resource`, `/metrics/cadvisor` (none: 404).
    pub stats: Option<crate::stats::StatsProvider>,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState").field("node_name", &self.node_name).finish()
    }
}

/// A refusal: status and plain-text message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError(pub StatusCode, pub String);

impl HttpError {
    /// The response carrying it.
    pub fn response(self) -> Resp {
        text(self.0, self.1)
    }

    /// Its status.
    pub fn status(&self) -> StatusCode {
        self.0
    }
}

/// The desired pod `namespace/name`.
pub fn find_pod(state: &ServerState, namespace: &str, name: &str) -> Option<Arc<Pod>> {
    state
        .pods
        .pods()
        .into_iter()
        .find(|d| {
            d.pod.metadata.namespace.as_deref().unwrap_or("default") == namespace
                && d.pod.metadata.name.as_deref() == Some(name)
        })
        .map(|d| d.pod)
}

/// The runtime status of `pod`, if the PLEG has seen it.
pub fn runtime_status(api: &ApiState, pod: &Pod) -> Option<Arc<RuntimePodStatus>> {
    api.cache.get(&pod_uid(pod)).and_then(|e| e.status)
}

/// The running instance of `container` in `pod`, for exec/attach/run.
pub fn running_container(api: &ApiState, pod: &Pod, container: &str) -> Result<String, HttpError> {
    runtime_status(api, pod)
        .and_then(|s| {
            s.containers
                .iter()
                .find(|c| c.name == container && c.state == ContainerState::Running)
                .map(|c| c.id.clone())
        })
        .ok_or_else(|| {
            HttpError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("container not found ({container:?})"),
            )
        })
}

/// `GET /runningpods/`: pods with running containers or a ready sandbox,
/// as the runtime reports them (name, namespace, UID, containers).
pub fn running_pods(api: &ApiState) -> Resp {
    let mut items: Vec<serde_json::Value> = api
        .cache
        .statuses()
        .into_iter()
        .filter(|s| {
            s.running_containers().next().is_some()
                || s.sandboxes
                    .iter()
                    .any(|b| b.state == crate::kuberuntime::pod_status::SandboxState::Ready)
        })
        .map(|s| {
            let containers: Vec<_> = s
                .running_containers()
                .map(|c| json!({"name": c.name, "image": c.image, "resources": {}}))
                .collect();
            json!({
                "metadata": {"name": s.name, "namespace": s.namespace, "uid": s.uid.to_string(), "creationTimestamp": null},
                "spec": {"containers": containers},
                "status": {},
            })
        })
        .collect();
    items.sort_by_key(|p| {
        (
            p["metadata"]["namespace"].to_string(),
            p["metadata"]["name"].to_string(),
        )
    });
    json_response(&json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}))
}

/// `GET /spec/`: the machine (cAdvisor MachineInfo field names).
pub fn spec(api: &ApiState) -> Resp {
    json_response(&api.spec)
}

/// `GET /debug/actors`: the live supervision tree as JSON.
pub fn debug_actors(api: &ApiState) -> Resp {
    let mut children = api.tree.snapshot();
    children.sort_by(|a, b| a.path.cmp(&b.path));
    let rfc3339 = |t: std::time::SystemTime| jiff::Timestamp::try_from(t).map(|t| t.to_string()).unwrap_or_default();
    let out: Vec<_> = children
        .iter()
        .map(|c| {
            json!({
                "path": c.path,
                "name": c.name,
                "kind": c.kind,
                "policy": format!("{:?}", c.policy),
                "state": format!("{:?}", c.state),
                "generation": c.generation,
                "restarts": c.restarts,
                "critical": c.critical,
                "exhausted": c.exhausted,
                "mailboxDepth": c.mailbox.map(|m| m.queued),
                "mailboxCapacity": c.mailbox.map(|m| m.capacity),
                "startedAt": c.started_at.map(rfc3339),
                "lastFailure": c.last_failure.as_ref().map(|f| json!({"reason": format!("{:?}", f.reason), "at": rfc3339(f.at)})),
            })
        })
        .collect();
    json_response(&serde_json::Value::Array(out))
}

fn bad_query() -> HttpError {
    HttpError(
        StatusCode::BAD_REQUEST,
        r#"{"message": "Unable to decode query."}"#.into(),
    )
}

fn invalid() -> HttpError {
    HttpError(
        StatusCode::UNPROCESSABLE_ENTITY,
        r#"{"message": "Invalid request."}"#.into(),
    )
}

/// Parses `/containerLogs` query parameters into [`LogOptions`] (v1
/// PodLogOptions: `tail` is the legacy spelling of `tailLines`, `all` none).
pub fn log_options(query: &HashMap<String, String>, now: jiff::Timestamp) -> Result<LogOptions, HttpError> {
    let flag = |k: &str| -> Result<bool, HttpError> {
        match query.get(k).map(String::as_str) {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") | Some("") => Ok(true),
            Some(_) => Err(bad_query()),
        }
    };
    let int = |k: &str| -> Result<Option<i64>, HttpError> {
        query
            .get(k)
            .map(|v| v.parse::<i64>().map_err(|_| bad_query()))
            .transpose()
    };
    let tail = match query.get("tail").map(String::as_str) {
        Some("all") => None,
        Some(t) => Some(t.parse::<i64>().map_err(|_| bad_query())?),
        None => int("tailLines")?,
    };
    let since_seconds = int("sinceSeconds")?;
    let since_time = query
        .get("sinceTime")
        .map(|t| t.parse::<jiff::Timestamp>().map_err(|_| bad_query()))
        .transpose()?;
    let limit = int("limitBytes")?;
    if since_seconds.is_some() && since_time.is_some()
        || since_seconds.is_some_and(|s| s < 1)
        || tail.is_some_and(|t| t < 0)
        || limit.is_some_and(|l| l < 1)
    {
        return Err(invalid());
    }
    let since = match (since_seconds, since_time) {
        (Some(s), _) => Some(now - jiff::SignedDuration::from_secs(s)),
        (_, t) => t,
    };
    Ok(LogOptions {
        tail_lines: tail.map(|t| t as u64),
        since,
        limit_bytes: limit.map(|l| l as u64),
        timestamps: flag("timestamps")?,
        follow: flag("follow")?,
        previous: flag("previous")?,
    })
}

/// `GET /containerLogs/{namespace}/{pod}/{container}`.
pub async fn container_logs(
    (namespace, name, container): (&str, &str, &str),
    query: &HashMap<String, String>,
    state: &ServerState,
    api: &ApiState,
) -> Resp {
    let opts = match log_options(query, jiff::Timestamp::now()) {
        Ok(o) => o,
        Err(e) => return e.response(),
    };
    let Some(pod) = find_pod(state, namespace, name) else {
        return text(StatusCode::NOT_FOUND, format!("pod {name:?} does not exist"));
    };
    let in_spec = pod.spec.as_ref().is_some_and(|s| {
        s.containers
            .iter()
            .map(|c| &c.name)
            .chain(s.init_containers.iter().flatten().map(|c| &c.name))
            .chain(s.ephemeral_containers.iter().flatten().map(|c| &c.name))
            .any(|n| *n == container)
    });
    if !in_spec {
        return text(
            StatusCode::NOT_FOUND,
            format!("container {container:?} not found in pod {name:?}"),
        );
    }
    // newest first: the current instance, then the previous one
    let instances: Vec<_> = runtime_status(api, &pod)
        .map(|s| s.containers.iter().filter(|c| c.name == container).cloned().collect())
        .unwrap_or_default();
    let chosen = if opts.previous {
        instances
            .get(1)
            .ok_or_else(|| format!("previous terminated container {container:?} in pod {name:?} not found"))
    } else {
        instances
            .first()
            .ok_or_else(|| format!("container {container:?} in pod {name:?} is waiting to start: ContainerCreating"))
    };
    let chosen = match chosen {
        Ok(c) => c.clone(),
        Err(msg) => return text(StatusCode::BAD_REQUEST, msg),
    };
    let status = api
        .runtime
        .container_status(ContainerStatusRequest {
            container_id: chosen.id.clone(),
            verbose: false,
        })
        .await;
    let log_path = match status.map(|s| s.status.map(|s| s.log_path).unwrap_or_default()) {
        Ok(p) if !p.is_empty() => PathBuf::from(p),
        Ok(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("container {container:?} has no log file"),
            );
        }
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let reader = match LogReader::open(&log_path, opts).await {
        Ok(r) => r,
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let (cache, uid, id) = (api.cache.clone(), pod_uid(&pod), chosen.id.clone());
    let still_running = Arc::new(move || {
        cache.get(&uid).and_then(|e| e.status).is_some_and(|s| {
            s.containers
                .iter()
                .any(|c| c.id == id && c.state == ContainerState::Running)
        })
    });
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(reader.run(tx, still_running));
    stream_response(StatusCode::OK, "text/plain", rx)
}

/// `POST /run/{namespace}/{pod}[/{uid}]/{container}?cmd=…`: ExecSync, stdout
/// then stderr as the body; a failed command is a 500.
pub async fn run(
    (namespace, name, container): (&str, &str, &str),
    query: &HashMap<String, String>,
    state: &ServerState,
    api: &ApiState,
) -> Resp {
    let Some(pod) = find_pod(state, namespace, name) else {
        return text(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let id = match running_container(api, &pod, container) {
        Ok(id) => id,
        Err(e) => return e.response(),
    };
    let cmd: Vec<String> = query
        .get("cmd")
        .map(|c| c.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    match api
        .runtime
        .exec_sync(ExecSyncRequest {
            container_id: id,
            cmd: cmd.clone(),
            timeout: 0,
        })
        .await
    {
        Ok(r) => {
            let mut out = r.stdout;
            out.extend_from_slice(&r.stderr);
            if r.exit_code == 0 {
                super::secure::bytes_response(StatusCode::OK, "application/json", out)
            } else {
                text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!(
                        "command '{}' exited with {}: {}",
                        cmd.join(" "),
                        r.exit_code,
                        String::from_utf8_lossy(&out)
                    ),
                )
            }
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn log_query_follows_pod_log_options() {
        let now: jiff::Timestamp = "2024-01-01T00:01:00Z".parse().unwrap();
        let o = log_options(
            &q(&[("tailLines", "5"), ("follow", "true"), ("sinceSeconds", "60")]),
            now,
        )
        .unwrap();
        assert_eq!(o.tail_lines, Some(5));
        assert!(o.follow && !o.previous && !o.timestamps);
        assert_eq!(o.since, Some("2024-01-01T00:00:00Z".parse().unwrap()));
        assert_eq!(log_options(&q(&[("tail", "all")]), now).unwrap().tail_lines, None);
        assert_eq!(log_options(&q(&[("tail", "3")]), now).unwrap().tail_lines, Some(3));
        let o = log_options(&q(&[("sinceTime", "2023-12-31T23:00:00Z"), ("limitBytes", "10")]), now).unwrap();
        assert_eq!((o.since.unwrap().as_second(), o.limit_bytes), (1_704_063_600, Some(10)));
        for bad in [
            q(&[("sinceSeconds", "0")]),
            q(&[("tailLines", "-1")]),
            q(&[("limitBytes", "0")]),
            q(&[("sinceSeconds", "5"), ("sinceTime", "2023-12-31T23:00:00Z")]),
        ] {
            assert_eq!(
                log_options(&bad, now).unwrap_err().status(),
                StatusCode::UNPROCESSABLE_ENTITY,
                "{bad:?}"
            );
        }
        assert_eq!(
            log_options(&q(&[("tailLines", "x")]), now).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            log_options(&q(&[("follow", "maybe")]), now).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }
}
