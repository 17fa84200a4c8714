//! The authenticated kubelet API server (`--address`:`--port`, HTTPS).
//!
//! It runs on hyper rather than actix-web: exec/attach/port-forward arrive
//! as HTTP/1.1 upgrades to `SPDY/3.1` (what the API server speaks to
//! kubelets) or WebSocket, and the connection must be handed over raw to the
//! runtime's streaming server; actix-http only lets WebSocket upgrades
//! through. Every request is authenticated and authorized ([`super::auth`])
//! before routing. The accept loop runs on a thread of its own, so TLS
//! handshakes and log streaming never share the actors' thread.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::api::{self, ApiState};
use super::auth::{Auth, Denial, PeerCerts};
use super::routes::ServerState;

/// Response bodies of this server.
pub type Body = BoxBody<Bytes, std::io::Error>;
/// Responses of this server.
pub type Resp = Response<Body>;

/// Threads serving the API (TLS and log streaming off the actors' thread).
const SERVER_THREADS: usize = 2;

/// A TLS handshake must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A response with `body`.
pub fn bytes_response(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Resp {
    let mut r = Response::new(Full::new(body.into()).map_err(|never| match never {}).boxed());
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// A plain-text response.
pub fn text(status: StatusCode, body: impl Into<String>) -> Resp {
    bytes_response(status, "text/plain; charset=utf-8", body.into())
}

/// A JSON 200 response.
pub fn json_response(value: &serde_json::Value) -> Resp {
    bytes_response(StatusCode::OK, "application/json", value.to_string())
}

/// A response streaming what `rx` receives.
pub fn stream_response(
    status: StatusCode,
    content_type: &str,
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> Resp {
    let stream = ReceiverStream::new(rx).map(|r| r.map(Frame::data));
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// Everything the server needs.
#[derive(Clone, Debug)]
pub struct SecureServer {
    /// TLS (serving certificate, client certificate requests).
    pub tls: Arc<rustls::ServerConfig>,
    /// Authentication and authorization.
    pub auth: Arc<Auth>,
    /// Pods, statuses, health.
    pub state: ServerState,
    /// Runtime, cache, tree.
    pub api: ApiState,
}

fn query_map(query: Option<&str>) -> HashMap<String, String> {
    form_pairs(query).into_iter().collect()
}

/// The query's `key=value` pairs, decoded, in order (repeated keys kept).
pub fn form_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).unwrap_or_default())
        .unwrap_or_default()
}

impl SecureServer {
    /// Answers one request (after authentication and authorization).
    pub async fn handle(self: Arc<Self>, req: Request<Incoming>, certs: Option<Arc<PeerCerts>>) -> Resp {
        let path = req.uri().path().to_string();
        let authorization = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let user = match self
            .auth
            .check(certs.as_deref(), authorization.as_deref(), req.method().as_str(), &path)
            .await
        {
            Ok(user) => user,
            Err(Denial::Unauthorized) => return text(StatusCode::UNAUTHORIZED, "Unauthorized"),
            Err(Denial::Forbidden(msg)) => return text(StatusCode::FORBIDDEN, msg),
            Err(Denial::Error(msg)) => return text(StatusCode::INTERNAL_SERVER_ERROR, msg),
        };
        tracing::debug!(user = %user.name, method = %req.method(), %path, "kubelet API request");
        self.route(req, &path).await
    }

    async fn route(&self, req: Request<Incoming>, path: &str) -> Resp {
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let get = req.method() == Method::GET;
        let query = req.uri().query().map(str::to_string);
        match (segs.as_slice(), req.method()) {
            (["pods"] | ["pods", ""], _) if get => json_response(&super::routes::pod_list(&self.state)),
            (["healthz"], _) | (["healthz", "syncloop"], _) if get => match self.state.health.check() {
                Ok(()) => text(StatusCode::OK, "ok"),
                Err(e) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("[-]{e}\nhealthz check failed"),
                ),
            },
            (["healthz", "ping" | "log"], _) if get => text(StatusCode::OK, "ok"),
            (["spec"] | ["spec", ""], _) if get => api::spec(&self.api),
            (["runningpods", ""] | ["runningpods"], _) if get => api::running_pods(&self.api),
            (["debug", "actors"], _) if get => api::debug_actors(&self.api),
            (["configz"], _) if get => json_response(&self.api.configz),
            (["logs", ..], _) if get => {
                let rest = path.trim_start_matches("/logs");
                super::node_logs::serve(&self.api.node_logs_dir, rest).await
            }
            (["metrics"], _) if get => match &self.api.metrics {
                Some(m) => bytes_response(
                    StatusCode::OK,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    m.encode(),
                ),
                None => text(StatusCode::NOT_FOUND, "404 page not found"),
            },
            (["stats", "summary"] | ["stats", "summary", ""], _) if get => {
                super::stats::summary(self.api.stats.as_ref(), &query_map(query.as_deref())).await
            }
            (["metrics", "resource"], _) if get => super::stats::resource(self.api.stats.as_ref()).await,
            (["metrics", "cadvisor"], _) if get => super::stats::cadvisor(self.api.stats.as_ref()).await,
            (["containerLogs", ns, pod, container], _) if get => {
                api::container_logs(
                    (ns, pod, container),
                    &query_map(query.as_deref()),
                    &self.state,
                    &self.api,
                )
                .await
            }
            (["run", ns, pod, container] | ["run", ns, pod, _, container], &Method::POST) => {
                api::run(
                    (ns, pod, container),
                    &query_map(query.as_deref()),
                    &self.state,
                    &self.api,
                )
                .await
            }
            (
                ["exec" | "attach", ns, pod, container] | ["exec" | "attach", ns, pod, _, container],
                &Method::GET | &Method::POST,
            ) => {
                let kind = if segs[0] == "exec" {
                    super::streaming::Kind::Exec
                } else {
                    super::streaming::Kind::Attach
                };
                let (ns, pod, container) = (ns.to_string(), pod.to_string(), container.to_string());
                super::streaming::container_stream(kind, req, (&ns, &pod, &container), &self.state, &self.api).await
            }
            (["portForward", ns, pod] | ["portForward", ns, pod, _], &Method::GET | &Method::POST) => {
                let (ns, pod) = (ns.to_string(), pod.to_string());
                super::streaming::port_forward(req, (&ns, &pod), &self.state, &self.api).await
            }
            _ => text(StatusCode::NOT_FOUND, "404 page not found"),
        }
    }
}

/// Serves `server` on `listener` until `stop` fires.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Arc<SecureServer>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(server.tls.clone());
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => return,
        };
        let (acceptor, server) = (acceptor.clone(), server.clone());
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let certs = tls
                .get_ref()
                .1
                .peer_certificates()
                .map(|c| Arc::new(PeerCerts(c.iter().map(|c| c.clone().into_owned()).collect())));
            let service = hyper::service::service_fn(move |req| {
                let (server, certs) = (server.clone(), certs.clone());
                async move { Ok::<_, std::convert::Infallible>(server.handle(req, certs).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .with_upgrades();
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}

/// Binds `addr` and serves on threads of its own; dropping the returned
/// handle (or sending on it) stops the server.
pub fn spawn(
    addr: SocketAddr,
    server: SecureServer,
) -> std::io::Result<(SocketAddr, tokio::sync::oneshot::Sender<()>)> {
    spawn_released(addr, server).map(|(bound, stop, _released)| (bound, stop))
}

/// [`spawn`], and a receiver that fires (or whose sender is dropped) once
/// the stopped server has closed its listener.
fn spawn_released(
    addr: SocketAddr,
    server: SecureServer,
) -> std::io::Result<(
    SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::sync::oneshot::Receiver<()>,
)> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (released_tx, released_rx) = tokio::sync::oneshot::channel::<()>();
    let server = Arc::new(server);
    std::thread::Builder::new().name("kubelet-api".into()).spawn(move || {
        // Dropped (or sent) when this thread ends: the listener is closed by then.
        let _released = released_tx;
        let rt = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(SERVER_THREADS)
            .thread_name("kubelet-api")
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "cannot start the kubelet API server's runtime");
                return;
            }
        };
        rt.block_on(async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => serve(l, server, rx).await,
                Err(e) => tracing::error!(error = %e, "cannot serve the kubelet API"),
            }
        });
    })?;
    Ok((bound, tx, released_rx))
}

/// The authenticated server cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum ApiServerError {
    /// Certificates, keys, TLS settings.
    #[error(transparent)]
    Tls(#[from] super::tls::TlsError),
    /// Authentication/authorization settings.
    #[error(transparent)]
    Auth(#[from] super::auth::AuthError),
    /// `serverTLSBootstrap` without an API server to issue the certificate.
    #[error(
        "serverTLSBootstrap (--rotate-server-certificates) needs an API server (--kubeconfig) to issue the serving certificate"
    )]
    NoApiServer,
}

/// What the server is built from (the KubeletConfig's upstream-named fields).
#[derive(Clone, Debug)]
pub struct ApiServerSettings {
    /// `tlsCertFile`, `tlsPrivateKeyFile`, `tlsMinVersion`, `tlsCipherSuites`.
    pub tls: super::tls::TlsSettings,
    /// `authentication`.
    pub authentication: super::auth::KubeletAuthentication,
    /// `authorization`.
    pub authorization: super::auth::KubeletAuthorization,
    /// `--root-dir` (the self-signed pair goes to `<root-dir>/pki`).
    pub root_dir: std::path::PathBuf,
    /// The node's IP (a SAN of the self-signed certificate).
    pub node_ip: Option<String>,
    /// `serverTLSBootstrap`: the certificate the cluster issued, swapped in
    /// while the server runs (replaces the files and the self-signed pair).
    pub serving_cert: Option<crate::certificate::serving::ServingCert>,
}

impl SecureServer {
    /// Loads or generates the serving certificate and sets up authn/authz.
    pub fn build(
        settings: &ApiServerSettings,
        state: ServerState,
        api: ApiState,
        reviews: Option<Arc<dyn super::auth::ReviewApi>>,
    ) -> Result<Self, ApiServerError> {
        let mut tls = settings.tls.clone();
        tls.client_ca_file = settings.authentication.x509.client_ca_file.clone();
        let tls = match &settings.serving_cert {
            Some(cert) => Arc::new(super::tls::server_config_resolving(&tls, Arc::new(cert.clone()))?),
            None => {
                let (cert, key) = match (&tls.tls_cert_file, &tls.tls_private_key_file) {
                    (Some(c), Some(k)) => (c.clone(), k.clone()),
                    _ => super::tls::ensure_self_signed(
                        &settings.root_dir,
                        &api.node_name,
                        &settings.node_ip.iter().cloned().collect::<Vec<_>>(),
                    )?,
                };
                Arc::new(super::tls::server_config(&tls, &cert, &key)?)
            }
        };
        let auth = Arc::new(Auth::new(
            &api.node_name,
            &settings.authentication,
            &settings.authorization,
            reviews,
        )?);
        Ok(Self { tls, auth, state, api })
    }
}

/// The actor owning the authenticated server: binds on start (a bind
/// failure fails it, naming the address), stops the server when stopped.
pub struct ApiServer {
    addr: SocketAddr,
    server: SecureServer,
    bound: super::ServerAddrs,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// Fires once this instance's server closed its listener.
    released: Option<tokio::sync::oneshot::Receiver<()>>,
    /// Owned: the stop of the previous instance's server.
    previous: super::actor::PreviousStop,
}

impl ApiServer {
    /// A server for `addr`; `bound` receives the address actually bound.
    pub fn new(addr: SocketAddr, server: SecureServer, bound: super::ServerAddrs) -> Self {
        Self {
            addr,
            server,
            bound,
            stop: None,
            released: None,
            previous: super::actor::PreviousStop::default(),
        }
    }

    /// Shares the stop of each instance's server with the next instance
    /// (which binds once the listener is closed); give every instance of
    /// one child the same `previous`.
    pub fn with_previous_stop(mut self, previous: super::actor::PreviousStop) -> Self {
        self.previous = previous;
        self
    }

    fn serve(&mut self, ctx: &mut actix::Context<Self>) {
        match spawn_released(self.addr, self.server.clone()) {
            Ok((bound, stop, released)) => {
                tracing::info!(addr = %bound, "serving the kubelet API (HTTPS)");
                self.bound.set(vec![bound]);
                self.stop = Some(stop);
                self.released = Some(released);
            }
            Err(e) => {
                let reason = format!("kubelet API server cannot listen on {}: {e}", self.addr);
                tracing::error!("{reason}");
                crate::actors::supervisor::fail(ctx, reason);
            }
        }
    }
}

impl actix::Actor for ApiServer {
    type Context = actix::Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        use actix::{ActorFutureExt, AsyncContext, WrapFuture};
        if self.previous.is_pending() {
            let wait = self.previous.wait(super::actor::PREVIOUS_STOP_LIMIT);
            ctx.wait(wait.into_actor(self).map(|(), act, ctx| act.serve(ctx)));
        } else {
            self.serve(ctx);
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if let Some(released) = self.released.take() {
            self.previous.set(released);
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
