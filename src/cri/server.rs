//! Serves any [`Runtime`] as a CRI `runtime.v1` gRPC server on a unix socket.
//!
//! `actlet mock-cri --listen unix:///path` uses this to expose the mock
//! runtime, so that the real tonic client (and `crictl`) can be tested
//! against it; an embedder can serve its own runtime the same way. Every
//! connection is read through [`super::authority`], so gRPC clients that send
//! the socket path as `:authority` (grpc-go in Kubernetes < 1.26, grpcio,
//! grpc-java), which h2 alone rejects with `PROTOCOL_ERROR`, are served too.

use std::path::Path;
use std::sync::Arc;

use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

use super::authority::AuthorityFixingStream;
use super::runtime::{Runtime, cri_calls};
use super::v1::image_service_server::{ImageService, ImageServiceServer};
use super::v1::runtime_service_server::{RuntimeService, RuntimeServiceServer};
use super::v1::*;

/// A gRPC front for a [`Runtime`] (what `actlet mock-cri` serves).
///
/// ```
/// use std::sync::Arc;
/// use actlet::cri::{client::CriClient, server::CriServer, v1, Runtime};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let socket = dir.path().join("mock.sock");
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let server = CriServer::new(Arc::new(actlet::cri::mock::MockRuntime::new()));
/// let serving = tokio::spawn({
///     let socket = socket.clone();
///     async move { server.serve(&socket, async { let _ = stopped.await; }).await }
/// });
/// # while !socket.exists() { tokio::time::sleep(std::time::Duration::from_millis(10)).await; }
/// let client = CriClient::new(&format!("unix://{}", socket.display()), std::time::Duration::from_secs(5)).unwrap();
/// let v = client.version(v1::VersionRequest { version: "v1".into() }).await.unwrap();
/// assert_eq!(v.runtime_api_version, "v1");
/// stop.send(()).unwrap();
/// serving.await.unwrap().unwrap();
/// # });
/// ```
pub struct CriServer<R: ?Sized> {
    inner: Arc<R>,
}

impl<R: ?Sized> Clone for CriServer<R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<R: Runtime + ?Sized> CriServer<R> {
    /// Wraps `runtime`.
    ///
    /// ```
    /// let server = actlet::cri::server::CriServer::new(std::sync::Arc::new(actlet::cri::mock::MockRuntime::new()));
    /// let _copy = server.clone(); // cheap: shares the runtime
    /// ```
    pub fn new(runtime: Arc<R>) -> Self {
        Self { inner: runtime }
    }

    /// Serves on the unix socket `path` (an existing socket file is replaced)
    /// until `shutdown` resolves. See [`CriServer`] for a client talking to it.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// let server = actlet::cri::server::CriServer::new(Arc::new(actlet::cri::mock::MockRuntime::new()));
    /// let dir = tempfile::tempdir().unwrap();
    /// // Stops at once: the shutdown future is already complete.
    /// server.serve(&dir.path().join("cri.sock"), async {}).await.unwrap();
    /// # });
    /// ```
    pub async fn serve(
        self,
        path: &Path,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), ServeError> {
        if path.exists() {
            std::fs::remove_file(path).map_err(|source| ServeError::Bind {
                path: path.into(),
                source,
            })?;
        }
        let listener = tokio::net::UnixListener::bind(path).map_err(|source| ServeError::Bind {
            path: path.into(),
            source,
        })?;
        tonic::transport::Server::builder()
            .add_service(RuntimeServiceServer::new(self.clone()))
            .add_service(ImageServiceServer::new(self))
            // Clients that send the socket path as :authority get served too.
            .serve_with_incoming_shutdown(
                UnixListenerStream::new(listener).map(|conn| conn.map(AuthorityFixingStream::new)),
                shutdown,
            )
            .await
            .map_err(ServeError::Transport)
    }
}

/// Serving failed.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// let server = actlet::cri::server::CriServer::new(Arc::new(actlet::cri::mock::MockRuntime::new()));
/// let err = server.serve(std::path::Path::new("/nonexistent/dir/cri.sock"), async {}).await.unwrap_err();
/// assert!(err.to_string().contains("/nonexistent/dir/cri.sock"), "{err}");
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The socket could not be created.
    #[error("cannot listen on {path}: {source}")]
    Bind {
        /// The socket path.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The gRPC server failed.
    #[error("CRI gRPC server failed: {0}")]
    Transport(#[source] tonic::transport::Error),
}

macro_rules! server_impl {
    (runtime { $(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)? }
     image { $(($iname:ident, $igrpc:literal, $ireq:ident, $iresp:ident)),* $(,)? }) => {
        #[tonic::async_trait]
        impl<R: Runtime + ?Sized> RuntimeService for CriServer<R> {
            type GetContainerEventsStream = std::pin::Pin<
                Box<dyn futures::Stream<Item = Result<ContainerEventResponse, Status>> + Send + 'static>,
            >;
            async fn get_container_events(
                &self,
                req: Request<GetEventsRequest>,
            ) -> Result<Response<Self::GetContainerEventsStream>, Status> {
                let events = self.inner.get_container_events(req.into_inner()).await.map_err(|e| e.to_status())?;
                Ok(Response::new(Box::pin(events.map(|item| item.map_err(|e| e.to_status())))))
            }
            $(
                async fn $name(&self, req: Request<$req>) -> Result<Response<$resp>, Status> {
                    self.inner.$name(req.into_inner()).await.map(Response::new).map_err(|e| e.to_status())
                }
            )*
        }
        #[tonic::async_trait]
        impl<R: Runtime + ?Sized> ImageService for CriServer<R> {
            $(
                async fn $iname(&self, req: Request<$ireq>) -> Result<Response<$iresp>, Status> {
                    self.inner.$iname(req.into_inner()).await.map(Response::new).map_err(|e| e.to_status())
                }
            )*
        }
    };
}
cri_calls!(server_impl);
