//! Serves any [`Runtime`] as a CRI `runtime.v1` gRPC server on a unix socket.
//!
//! `actlet mock-cri --listen unix:///path` uses this to expose the mock
//! runtime, so that the real tonic client (and `crictl`) can be tested
//! against it; an embedder can serve its own runtime the same way.

use std::path::Path;
use std::sync::Arc;

use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

use super::runtime::{Runtime, cri_calls};
use super::v1::image_service_server::{ImageService, ImageServiceServer};
use super::v1::runtime_service_server::{RuntimeService, RuntimeServiceServer};
use super::v1::*;

/// A gRPC front for a [`Runtime`].
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
    pub fn new(runtime: Arc<R>) -> Self {
        Self { inner: runtime }
    }

    /// Serves on the unix socket `path` (an existing socket file is replaced)
    /// until `shutdown` resolves.
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
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown)
            .await
            .map_err(ServeError::Transport)
    }
}

/// Serving failed.
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
