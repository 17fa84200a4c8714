//! Client-side rate limiting of API requests (upstream `--kube-api-qps`,
//! `--kube-api-burst`): a token bucket in front of kube's HTTP stack.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tower::{Layer, Service};

/// Requests per second and burst, as the upstream flags give them.
///
/// ```
/// use actlet::cluster::Qps;
/// assert_eq!(Qps::default(), Qps { qps: 50, burst: 100 }); // upstream's defaults
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Qps {
    /// Sustained requests per second (`--kube-api-qps`, default 50).
    pub qps: u32,
    /// Requests allowed at once above the sustained rate (`--kube-api-burst`, default 100).
    pub burst: u32,
}

impl Default for Qps {
    fn default() -> Self {
        Self { qps: 50, burst: 100 }
    }
}

/// A [`Layer`] that makes every request wait for a token first.
///
/// ```
/// use std::time::{Duration, Instant};
/// use actlet::cluster::Qps;
/// use actlet::cluster::rate_limit::RateLimitLayer;
/// use tower::{Layer, Service};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let inner = tower::service_fn(|n: u32| async move { Ok::<_, std::convert::Infallible>(n) });
/// let mut svc = RateLimitLayer::new(Qps { qps: 10, burst: 10 }).layer(inner);
/// let start = Instant::now();
/// for n in 0..11 {
///     assert_eq!(svc.call(n).await.unwrap(), n);
/// }
/// // ten requests pass at once (the burst); the eleventh waits for a token (1/10 s)
/// assert!(start.elapsed() >= Duration::from_millis(80));
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct RateLimitLayer {
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl RateLimitLayer {
    /// A bucket of `burst` tokens refilled at `qps` per second (zero means 1).
    ///
    /// ```
    /// use actlet::cluster::{Qps, rate_limit::RateLimitLayer};
    /// use kube::client::ClientBuilder;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// // what `client_from_config` does: the layer in front of kube's HTTP stack
    /// let config = kube::Config::new("http://127.0.0.1:8080".parse().unwrap());
    /// let layer = RateLimitLayer::new(Qps { qps: 5, burst: 10 });
    /// let client: kube::Client = ClientBuilder::try_from(config).unwrap().with_layer(&layer).build();
    /// assert_eq!(client.default_namespace(), "default");
    /// # });
    /// ```
    pub fn new(q: Qps) -> Self {
        let qps = NonZeroU32::new(q.qps).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(q.burst).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: Arc::new(RateLimiter::direct(Quota::per_second(qps).allow_burst(burst))),
        }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            limiter: self.limiter.clone(),
        }
    }
}

/// The service [`RateLimitLayer`] builds.
///
/// ```
/// use actlet::cluster::{Qps, rate_limit::{RateLimitLayer, RateLimited}};
/// use tower::{Layer, Service};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let echo = tower::service_fn(|s: &'static str| async move { Ok::<_, std::convert::Infallible>(s.len()) });
/// let mut svc: RateLimited<_> = RateLimitLayer::new(Qps::default()).layer(echo);
/// assert_eq!(svc.call("pods").await.unwrap(), 4); // within the burst: no wait
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct RateLimited<S> {
    inner: S,
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl<S, R> Service<R> for RateLimited<S>
where
    S: Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        // The inner future does nothing until polled: waiting for a token
        // before polling it delays the request itself.
        let fut = self.inner.call(req);
        let limiter = self.limiter.clone();
        Box::pin(async move {
            limiter.until_ready().await;
            fut.await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::time::Duration;

    #[tokio::test]
    async fn a_burst_passes_at_once_then_requests_are_spaced_by_the_rate() {
        let svc = tower::service_fn(|_: ()| async { Ok::<_, Infallible>(tokio::time::Instant::now()) });
        let mut svc = RateLimitLayer::new(Qps { qps: 20, burst: 3 }).layer(svc);
        let start = tokio::time::Instant::now();
        let mut times = vec![];
        for _ in 0..5 {
            times.push(svc.call(()).await.unwrap_or(start) - start);
        }
        // The first three are the burst; the next two wait ~50 ms each.
        assert!(times[2] < Duration::from_millis(30), "{times:?}");
        assert!(times[4] >= Duration::from_millis(80), "{times:?}");
    }
}
