//! client-go's request metrics for actlet's API clients:
//! `rest_client_requests_total{code,host,method}` and
//! `rest_client_request_duration_seconds{host,verb}`, counted by a tower
//! layer in front of kube's HTTP stack (every client built by
//! [`super::client`] has it). Like client-go's, the metrics are process-wide:
//! [`rest_client_metrics`] is registered by the node's `/metrics` registry.

use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use tower::{Layer, Service};

type Labels = Vec<(String, String)>;

/// client-go's `rest_client_request_duration_seconds` buckets.
fn duration_histogram() -> Histogram {
    Histogram::new([0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0])
}

/// The request counters of every API client of the process.
#[derive(Debug, Clone)]
pub struct RestClientMetrics {
    /// `rest_client_requests_total{code,host,method}`; `code` is
    /// `<error>` when no response came back (client-go's spelling).
    pub requests: Family<Labels, Counter>,
    /// `rest_client_request_duration_seconds{host,verb}`.
    pub durations: Family<Labels, Histogram, fn() -> Histogram>,
}

/// The process-wide request metrics.
///
/// ```
/// let m = actlet::cluster::rest_client_metrics();
/// let labels = vec![("code".to_string(), "200".to_string())];
/// let before = m.requests.get_or_create(&labels).get();
/// m.requests.get_or_create(&labels).inc();
/// assert_eq!(m.requests.get_or_create(&labels).get(), before + 1);
/// ```
pub fn rest_client_metrics() -> &'static RestClientMetrics {
    static METRICS: OnceLock<RestClientMetrics> = OnceLock::new();
    METRICS.get_or_init(|| RestClientMetrics {
        requests: Family::default(),
        durations: Family::new_with_constructor(duration_histogram),
    })
}

/// Counts every request of the service it wraps into
/// [`rest_client_metrics`], labelled with `host` (the API server's
/// `host:port`: inside kube's stack the request URI is still relative).
#[derive(Clone, Debug)]
pub struct RequestMetricsLayer {
    host: String,
}

impl RequestMetricsLayer {
    /// A layer for a client of the API server at `cluster_url`.
    ///
    /// ```
    /// let layer = actlet::cluster::RequestMetricsLayer::new(&"https://10.0.0.1:6443/".parse().unwrap());
    /// # let _ = layer;
    /// ```
    pub fn new(cluster_url: &http::Uri) -> Self {
        let host = cluster_url
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_default();
        Self { host }
    }
}

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetrics {
            inner,
            host: self.host.clone(),
        }
    }
}

/// The service made by [`RequestMetricsLayer`].
#[derive(Clone, Debug)]
pub struct RequestMetrics<S> {
    inner: S,
    host: String,
}

impl<S, B, RB> Service<http::Request<B>> for RequestMetrics<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req.method().as_str().to_string();
        let host = self.host.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let started = Instant::now();
            let out = fut.await;
            let code = match &out {
                Ok(resp) => resp.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            let m = rest_client_metrics();
            m.requests
                .get_or_create(&vec![
                    ("code".to_string(), code),
                    ("host".to_string(), host.clone()),
                    ("method".to_string(), method.clone()),
                ])
                .inc();
            m.durations
                .get_or_create(&vec![("host".to_string(), host), ("verb".to_string(), method)])
                .observe(started.elapsed().as_secs_f64());
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(code: &str, host: &str, method: &str) -> u64 {
        rest_client_metrics()
            .requests
            .get_or_create(&vec![
                ("code".to_string(), code.to_string()),
                ("host".to_string(), host.to_string()),
                ("method".to_string(), method.to_string()),
            ])
            .get()
    }

    #[tokio::test]
    async fn responses_are_counted_by_code_host_and_method_and_failures_as_error() {
        let host = "metrics-test.invalid:6443";
        let layer = RequestMetricsLayer::new(&format!("https://{host}/").parse().unwrap());
        let mut svc = layer.layer(tower::service_fn(|req: http::Request<()>| async move {
            if req.uri().path() == "/fail" {
                return Err("connection refused");
            }
            let status = if req.method() == http::Method::GET { 200 } else { 409 };
            Ok(http::Response::builder().status(status).body(()).unwrap())
        }));
        let req = |m: &str, p: &str| http::Request::builder().method(m).uri(p).body(()).unwrap();
        svc.call(req("GET", "/api/v1/pods")).await.unwrap();
        svc.call(req("GET", "/api/v1/pods")).await.unwrap();
        svc.call(req("POST", "/api/v1/pods")).await.unwrap();
        assert!(svc.call(req("PUT", "/fail")).await.is_err());
        assert_eq!(count("200", host, "GET"), 2);
        assert_eq!(count("409", host, "POST"), 1);
        assert_eq!(count("<error>", host, "PUT"), 1);
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("d", "durations", rest_client_metrics().durations.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let line = format!("d_count{{host=\"{host}\",verb=\"GET\"}} 2");
        assert!(text.lines().any(|l| l == line), "two GETs timed: no {line} in\n{text}");
    }
}
