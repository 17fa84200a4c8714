//! httpGet probes and hooks (upstream `pkg/probe/http`).
//!
//! - URL: `scheme` (default `http`) `://` `host` (default: the pod IP) `:`
//!   port (a number or a named container port) `path`.
//! - Headers as given; `User-Agent: kube-probe/1.36` and `Accept: */*` unless
//!   set (an empty `Accept` removes it); a `Host` header sets the host.
//! - HTTPS certificates are not verified; no proxy; no keep-alive.
//! - 200–399 passes. A redirect to the same host is followed (up to 10); a
//!   redirect to another host is not followed and passes with a warning
//!   (`Probe terminated redirects, Response body: …`). Anything else fails
//!   with `HTTP probe failed with statuscode: <code>`; a transport error or
//!   the timeout fails with the error text.
//! - At most 10 KiB of the body is read; the whole exchange is bounded by the
//!   timeout.

use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, HTTPGetAction};
use reqwest::header::{ACCEPT, HOST, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use reqwest::redirect::{Attempt, Policy};

use super::{Answer, MAX_OUTPUT, Raw, join_host_port, resolve_port};

/// Upstream's redirect rule for probes: follow within the same host (10 at
/// most), stop at another host (the redirect response is the answer).
fn same_host_redirects(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let first = attempt.previous().first().and_then(|u| u.host_str().map(str::to_owned));
    if attempt.url().host_str().map(str::to_owned) != first {
        attempt.stop()
    } else if attempt.previous().len() >= 10 {
        attempt.error("stopped after 10 redirects")
    } else {
        attempt.follow()
    }
}

fn build_client(policy: Policy) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(policy)
        .danger_accept_invalid_certs(true)
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot build the probe HTTP client; using the defaults");
            reqwest::Client::new()
        })
}

/// The shared client of HTTP probes (built once).
pub fn probe_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(Policy::custom(same_host_redirects)))
}

/// The shared client of HTTP lifecycle hooks (follows redirects like Go's
/// default client, certificates not verified).
pub fn hook_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(Policy::limited(10)))
}

/// A resolved httpGet request (upstream `NewRequestForHTTPGetAction`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    /// The URL.
    pub url: String,
    /// The headers to send.
    pub headers: HeaderMap,
}

impl HttpRequest {
    /// Resolves `action` for `container` of a pod at `pod_ip`.
    ///
    /// ```
    /// use actlet::prober::handlers::http::HttpRequest;
    /// use k8s_openapi::api::core::v1::{Container, HTTPGetAction};
    /// use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    /// let action = HTTPGetAction { path: Some("/healthz".into()), port: IntOrString::Int(8080), scheme: Some("HTTPS".into()), ..Default::default() };
    /// let r = HttpRequest::new(&action, &Container::default(), "10.0.0.5", "kube-probe/1.36").unwrap();
    /// assert_eq!(r.url, "https://10.0.0.5:8080/healthz");
    /// assert_eq!(r.headers["user-agent"], "kube-probe/1.36");
    /// ```
    ///
    /// # Errors
    /// A port that does not resolve, or a header that is not valid HTTP.
    pub fn new(action: &HTTPGetAction, container: &Container, pod_ip: &str, user_agent: &str) -> Result<Self, String> {
        let scheme = action.scheme.as_deref().unwrap_or("http").to_ascii_lowercase();
        let scheme = if scheme.is_empty() { "http".to_string() } else { scheme };
        let host = action.host.as_deref().filter(|h| !h.is_empty()).unwrap_or(pod_ip);
        let port = resolve_port(&action.port, container)?;
        let path = action.path.as_deref().unwrap_or_default();
        let sep = if path.is_empty() || path.starts_with('/') {
            ""
        } else {
            "/"
        };
        let url = format!("{scheme}://{}{sep}{path}", join_host_port(host, port));
        let mut headers = HeaderMap::new();
        for h in action.http_headers.iter().flatten() {
            let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|e| format!("header {:?}: {e}", h.name))?;
            let value = HeaderValue::from_str(&h.value).map_err(|e| format!("header {:?}: {e}", h.name))?;
            headers.append(name, value);
        }
        if !headers.contains_key(USER_AGENT) {
            headers.insert(
                USER_AGENT,
                HeaderValue::from_str(user_agent).map_err(|e| e.to_string())?,
            );
        }
        match headers.get(ACCEPT) {
            None => {
                headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
            }
            Some(v) if v.is_empty() => {
                headers.remove(ACCEPT);
            }
            Some(_) => {}
        }
        Ok(Self { url, headers })
    }
}

/// Go's text for a failed GET.
fn get_error(url: &str, e: &reqwest::Error) -> String {
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() {
        cause = e.to_string();
    }
    format!("Get {url:?}: {cause}")
}

/// Sends `request` and reads up to 10 KiB of the body, all within `timeout`.
///
/// # Errors
/// The transport error text (Go's `Get "<url>": <cause>`).
pub async fn get(client: &reqwest::Client, request: &HttpRequest, timeout: Duration) -> Result<(u16, String), String> {
    let url = &request.url;
    let exchange = async {
        let mut builder = client.get(url).headers(request.headers.clone());
        if let Some(host) = request.headers.get(HOST) {
            builder = builder.header(HOST, host.clone());
        }
        let mut resp = builder.send().await.map_err(|e| get_error(url, &e))?;
        let code = resp.status().as_u16();
        let mut body = Vec::new();
        while body.len() < MAX_OUTPUT {
            match resp.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => return Err(get_error(url, &e)),
            }
        }
        body.truncate(MAX_OUTPUT);
        Ok((code, String::from_utf8_lossy(&body).into_owned()))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

/// Upstream `DoHTTPProbe`.
pub async fn probe(client: &reqwest::Client, request: &HttpRequest, timeout: Duration) -> Answer {
    match get(client, request, timeout).await {
        Err(e) => Answer::new(Raw::Failure, e),
        Ok((code, body)) if (300..400).contains(&code) => Answer::new(
            Raw::Warning,
            format!("Probe terminated redirects, Response body: {body}"),
        ),
        Ok((code, body)) if (200..300).contains(&code) => Answer::new(Raw::Success, body),
        Ok((code, _)) => Answer::new(Raw::Failure, format!("HTTP probe failed with statuscode: {code}")),
    }
}

/// Resolves and runs an httpGet action as a lifecycle hook: only transport
/// errors fail it (upstream ignores the status code of hooks).
///
/// # Errors
/// The request could not be built or sent.
pub async fn hook(
    action: &HTTPGetAction,
    container: &Container,
    pod_ip: &str,
    timeout: Duration,
) -> Result<(), String> {
    let request = HttpRequest::new(action, container, pod_ip, "kube-lifecycle/1.36")?;
    get(hook_client(), &request, timeout).await.map(|_| ())
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
