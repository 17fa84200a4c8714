//! The Container Runtime Interface (CRI) as actlet uses it.
//!
//! - [`v1`]: the generated `runtime.v1` messages and gRPC stubs (from `proto/`).
//! - [`Runtime`]: the one interface the rest of actlet talks to; it mirrors the
//!   CRI RuntimeService and ImageService calls one to one.
//! - [`client::CriClient`]: the tonic client for a CRI runtime on a unix socket
//!   (containerd).
//! - [`server`]: serves any [`Runtime`] over gRPC on a unix socket (this is how
//!   `actlet mock-cri` exposes the mock).
//! - [`mock::MockRuntime`]: an in-process runtime faithful to containerd's
//!   observable behaviour, scriptable and with fault injection.

#[doc(hidden)]
pub mod authority;
pub mod client;
pub mod conformance;
mod error;
pub mod mock;
pub(crate) mod runtime;
pub mod server;
pub mod to_completion;

pub use client::CriClient;
pub use error::{CriError, CriResult};
pub use runtime::{ContainerEventStream, Runtime, SharedRuntime};
pub use to_completion::to_completion;

/// Generated CRI `runtime.v1` types and gRPC client/server stubs.
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls
)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}
