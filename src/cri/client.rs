//! [`CriClient`]: the CRI `runtime.v1` client over a unix socket (tonic).
//!
//! The connection is lazy and self-healing: the first call connects, and a
//! call made after the runtime went away fails with `UNAVAILABLE` while the
//! next one reconnects once the socket is back. Every call carries
//! `runtimeRequestTimeout` as its gRPC deadline, so a stuck runtime gives up on
//! its own side and the caller gets `DEADLINE_EXCEEDED`; the client never
//! abandons a mutation half-way by dropping it on a local timer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint};
use tower::service_fn;

use super::error::{CriError, CriResult};
use super::runtime::{Runtime, cri_calls};
use super::v1::image_service_client::ImageServiceClient;
use super::v1::runtime_service_client::RuntimeServiceClient;
use super::v1::*;

/// Upstream's default `runtimeRequestTimeout`.
///
/// ```
/// use actlet::cri::client::DEFAULT_RUNTIME_REQUEST_TIMEOUT;
/// assert_eq!(DEFAULT_RUNTIME_REQUEST_TIMEOUT.as_secs(), 120); // 2m, as upstream
/// ```
pub const DEFAULT_RUNTIME_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A bad `--container-runtime-endpoint`.
///
/// ```
/// use actlet::cri::client::{EndpointError, parse_endpoint};
/// let err = parse_endpoint("tcp://127.0.0.1:1234").unwrap_err();
/// assert!(matches!(err, EndpointError::Unsupported(_)));
/// assert!(err.to_string().contains("expected unix:///path/to/socket"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// Only `unix://` endpoints (or a bare absolute socket path) are supported.
    #[error("unsupported container runtime endpoint {0:?}: expected unix:///path/to/socket")]
    Unsupported(String),
    /// tonic refused the (internal) endpoint URI.
    #[error("invalid container runtime endpoint {endpoint:?}: {source}")]
    Invalid {
        /// The endpoint given.
        endpoint: String,
        /// The cause.
        #[source]
        source: tonic::transport::Error,
    },
}

/// Parses `unix:///path` (or `/path`) into the socket path.
///
/// ```
/// use std::path::Path;
/// use actlet::cri::client::parse_endpoint;
/// let sock = parse_endpoint("unix:///run/containerd/containerd.sock").unwrap();
/// assert_eq!(sock, Path::new("/run/containerd/containerd.sock"));
/// assert_eq!(parse_endpoint("/run/crio.sock").unwrap(), Path::new("/run/crio.sock"));
/// assert!(parse_endpoint("containerd.sock").is_err());
/// ```
pub fn parse_endpoint(endpoint: &str) -> Result<PathBuf, EndpointError> {
    let path = endpoint.strip_prefix("unix://").unwrap_or(endpoint);
    if path.starts_with('/') {
        Ok(PathBuf::from(path))
    } else {
        Err(EndpointError::Unsupported(endpoint.to_string()))
    }
}

/// A CRI runtime reached over gRPC on a unix socket.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use actlet::cri::mock::{MockRuntime, RUNTIME_NAME};
/// use actlet::cri::server::CriServer;
/// use actlet::cri::{CriClient, Runtime};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let sock = dir.path().join("cri.sock");
/// // a runtime to talk to: the mock served over gRPC, as `actlet mock-cri` does
/// let (server, path) = (CriServer::new(Arc::new(MockRuntime::new())), sock.clone());
/// tokio::spawn(async move { server.serve(&path, std::future::pending()).await });
/// # while !sock.exists() { tokio::time::sleep(Duration::from_millis(5)).await; }
/// let client = CriClient::new(&format!("unix://{}", sock.display()), Duration::from_secs(10)).unwrap();
/// let version = client.version(Default::default()).await.unwrap();
/// assert_eq!(version.runtime_name, RUNTIME_NAME);
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct CriClient {
    socket: PathBuf,
    runtime: RuntimeServiceClient<Channel>,
    image: ImageServiceClient<Channel>,
    timeout: Duration,
}

impl CriClient {
    /// Creates a client for `endpoint` (`unix:///run/containerd/containerd.sock`)
    /// with the given per-call timeout. Does not connect yet.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::CriClient;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// // nothing is dialled yet: the first call connects
    /// let client = CriClient::new("unix:///run/containerd/containerd.sock", Duration::from_secs(120)).unwrap();
    /// assert_eq!(client.socket().to_str(), Some("/run/containerd/containerd.sock"));
    /// assert!(CriClient::new("tcp://10.0.0.1:10010", Duration::from_secs(120)).is_err());
    /// # });
    /// ```
    pub fn new(endpoint: &str, timeout: Duration) -> Result<Self, EndpointError> {
        let socket = parse_endpoint(endpoint)?;
        let path = socket.clone();
        // The URI is a placeholder: the connector below dials the unix socket.
        let channel = Endpoint::try_from("http://[::]:50051")
            .map_err(|source| EndpointError::Invalid {
                endpoint: endpoint.to_string(),
                source,
            })?
            .connect_timeout(Duration::from_secs(5))
            .connect_with_connector_lazy(service_fn(move |_| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
            }));
        Ok(Self {
            socket,
            runtime: RuntimeServiceClient::new(channel.clone()).max_decoding_message_size(16 << 20),
            image: ImageServiceClient::new(channel).max_decoding_message_size(16 << 20),
            timeout,
        })
    }

    /// The socket this client dials.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let client = actlet::cri::CriClient::new("/run/crio/crio.sock", std::time::Duration::from_secs(10)).unwrap();
    /// assert_eq!(client.socket(), std::path::Path::new("/run/crio/crio.sock"));
    /// # });
    /// ```
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The per-call deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let client = actlet::cri::CriClient::new("unix:///run/containerd/containerd.sock", Duration::from_secs(30)).unwrap();
    /// assert_eq!(client.timeout(), Duration::from_secs(30));
    /// # });
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A call's error; one that means the runtime cannot be reached names
    /// the socket, so "runtime down" logs say where actlet looked.
    fn error(&self, method: &'static str, status: tonic::Status) -> CriError {
        let mut err = CriError::from_status(method, status);
        if err.is_unavailable() {
            err.message = format!(
                "container runtime unreachable at unix://{}: {}",
                self.socket.display(),
                err.message
            );
        }
        err
    }

    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        self.request_with(msg, Deadline::Timeout)
    }

    fn request_with<T>(&self, msg: T, deadline: Deadline) -> tonic::Request<T> {
        let mut req = tonic::Request::new(msg);
        if let Some(d) = deadline.resolve(self.timeout) {
            req.set_timeout(d);
        }
        req
    }
}

/// The gRPC deadline of one CRI call, by verb (upstream
/// `remote_runtime.go` / `remote_image.go`).
///
/// | call | deadline |
/// |---|---|
/// | most calls | `runtimeRequestTimeout` |
/// | `StopContainer` | `runtimeRequestTimeout` + the grace period the runtime is asked to wait |
/// | `ExecSync` | `runtimeRequestTimeout` + the command's timeout; none when the command has none |
/// | `PullImage` | none (a big image may take long; the kubelet cancels it only on purpose) |
///
/// ```
/// use std::time::Duration;
/// use actlet::cri::client::Deadline;
/// let t = Duration::from_secs(120);
/// assert_eq!(Deadline::Timeout.resolve(t), Some(t));
/// assert_eq!(Deadline::TimeoutPlus(300).resolve(t), Some(Duration::from_secs(420)));
/// assert_eq!(Deadline::None.resolve(t), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// `runtimeRequestTimeout`.
    Timeout,
    /// `runtimeRequestTimeout` plus this many seconds (negative counts as 0).
    TimeoutPlus(i64),
    /// No deadline.
    None,
}

impl Deadline {
    /// The deadline for a client whose `runtimeRequestTimeout` is `timeout`.
    pub fn resolve(self, timeout: Duration) -> Option<Duration> {
        match self {
            Self::Timeout => Some(timeout),
            Self::TimeoutPlus(secs) => Some(timeout + Duration::from_secs(u64::try_from(secs).unwrap_or(0))),
            Self::None => None,
        }
    }

    /// The deadline of `StopContainer` asked to wait `grace_seconds`.
    pub fn stop_container(grace_seconds: i64) -> Self {
        Self::TimeoutPlus(grace_seconds)
    }

    /// The deadline of `ExecSync` with a command timeout of `timeout_seconds`.
    pub fn exec_sync(timeout_seconds: i64) -> Self {
        if timeout_seconds > 0 {
            Self::TimeoutPlus(timeout_seconds)
        } else {
            Self::None
        }
    }
}

macro_rules! client_impl {
    (runtime { $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)? }
     image { $(($iname:ident, $igrpc:literal, $ireq:ident, $iresp:ident)),* $(,)? }) => {
        #[async_trait::async_trait]
        impl Runtime for CriClient {
            $(
                async fn $name(&self, req: $req) -> CriResult<$resp> {
                    let req = client_impl!(@request self, $name, req);
                    let mut client = self.runtime.clone();
                    client.$name(req).await.map(tonic::Response::into_inner)
                        .map_err(|s| self.error($grpc, s))
                }
            )*
            $(
                async fn $iname(&self, req: $ireq) -> CriResult<$iresp> {
                    let req = client_impl!(@request self, $iname, req);
                    let mut client = self.image.clone();
                    client.$iname(req).await.map(tonic::Response::into_inner)
                        .map_err(|s| self.error($igrpc, s))
                }
            )*
            async fn get_container_events(
                &self,
                req: GetEventsRequest,
            ) -> CriResult<crate::cri::ContainerEventStream> {
                use futures::StreamExt;
                // A subscription: no deadline (it lives as long as the runtime).
                let req = self.request_with(req, Deadline::None);
                let mut client = self.runtime.clone();
                let stream = client
                    .get_container_events(req)
                    .await
                    .map_err(|s| self.error("GetContainerEvents", s))?
                    .into_inner();
                let this = self.clone();
                Ok(stream.map(move |item| item.map_err(|s| this.error("GetContainerEvents", s))).boxed())
            }
        }
    };
    (@request $self:ident, exec_sync, $req:ident) => {{
        let d = Deadline::exec_sync($req.timeout);
        $self.request_with($req, d)
    }};
    (@request $self:ident, stop_container, $req:ident) => {{
        let d = Deadline::stop_container($req.timeout);
        $self.request_with($req, d)
    }};
    (@request $self:ident, pull_image, $req:ident) => { $self.request_with($req, Deadline::None) };
    (@request $self:ident, $other:ident, $req:ident) => { $self.request($req) };
}
cri_calls!(client_impl);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_unix_endpoints_and_bare_paths() {
        assert_eq!(
            parse_endpoint("unix:///run/c.sock").unwrap(),
            PathBuf::from("/run/c.sock")
        );
        assert_eq!(parse_endpoint("/run/c.sock").unwrap(), PathBuf::from("/run/c.sock"));
    }

    #[test]
    fn rejects_tcp_and_relative_endpoints() {
        assert!(matches!(
            parse_endpoint("tcp://1.2.3.4:5"),
            Err(EndpointError::Unsupported(_))
        ));
        assert!(matches!(
            parse_endpoint("unix://rel/c.sock"),
            Err(EndpointError::Unsupported(_))
        ));
    }

    /// The per-verb deadline table (issue #10): Stop waits the timeout plus
    /// the grace the runtime is asked to wait, ExecSync the timeout plus the
    /// command's (none without one), Pull has none, the rest the timeout.
    #[test]
    fn deadline_table_by_verb() {
        let t = Duration::from_secs(120);
        let s = Duration::from_secs;
        assert_eq!(Deadline::stop_container(300).resolve(t), Some(s(420)));
        assert_eq!(Deadline::stop_container(0).resolve(t), Some(t));
        assert_eq!(
            Deadline::stop_container(-5).resolve(t),
            Some(t),
            "a negative grace adds nothing"
        );
        assert_eq!(Deadline::exec_sync(10).resolve(t), Some(s(130)));
        assert_eq!(Deadline::exec_sync(0).resolve(t), None);
        assert_eq!(Deadline::None.resolve(t), None);
        assert_eq!(Deadline::Timeout.resolve(t), Some(t));
    }

    /// What the table resolves to is what goes on the wire (`grpc-timeout`).
    #[tokio::test]
    async fn a_stop_request_carries_the_timeout_plus_its_grace() {
        let client = CriClient::new("unix:///nonexistent/cri.sock", Duration::from_secs(120)).unwrap();
        let header = |req: &tonic::Request<()>| {
            req.metadata()
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let stop = client.request_with((), Deadline::stop_container(300));
        let plain = client.request(());
        let pull = client.request_with((), Deadline::None);
        // tonic writes the deadline in milliseconds.
        assert_eq!(header(&stop).as_deref(), Some("420000m"));
        assert_eq!(header(&plain).as_deref(), Some("120000m"));
        assert_eq!(header(&pull), None);
    }

    #[tokio::test]
    async fn call_to_missing_socket_is_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let ep = format!("unix://{}/none.sock", dir.path().display());
        let client = CriClient::new(&ep, Duration::from_secs(2)).unwrap();
        let err = client
            .version(VersionRequest { version: "v1".into() })
            .await
            .unwrap_err();
        assert_eq!(err.method, "Version");
        assert!(err.is_unavailable(), "{err}");
        assert!(err.message.contains("none.sock"), "names the endpoint: {err}");
    }
}
