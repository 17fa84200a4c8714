//! The kubelet's certificates (upstream `pkg/kubelet/certificate` and
//! `client-go/util/certificate`): TLS bootstrap of the client certificate
//! ([`bootstrap`](crate::certificate::bootstrap)), the CSR
//! ([`csr`](crate::certificate::csr), [`request`](crate::certificate::request)),
//! the files in `--cert-dir` ([`store`](crate::certificate::store)), when
//! to renew ([`rotation`](crate::certificate::rotation)), and the 10250
//! server's certificate from the cluster, rotated while serving
//! ([`serving`](crate::certificate::serving),
//! [`serving_manager`](crate::certificate::serving_manager)), and the client
//! certificate renewed while the API clients move onto it
//! ([`client_manager`](crate::certificate::client_manager)).

pub mod bootstrap;
pub mod client_manager;
pub mod csr;
pub mod request;
pub mod rotation;
pub mod serving;
pub mod serving_manager;
pub mod store;

use std::path::PathBuf;
use std::time::Duration;

/// A certificate could not be obtained or stored.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Key or CSR generation failed.
    #[error("cannot build the certificate signing request: {0}")]
    Csr(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A PEM file holds no usable certificate and key.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A kubeconfig is unreadable or unusable.
    #[error("kubeconfig {path}: {reason}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The API server refused to create the CSR.
    #[error("cannot create certificate signing request {name}: {reason}")]
    Create {
        /// The CSR's name.
        name: String,
        /// The API server's message.
        reason: String,
    },
    /// A CSR of that name exists with another request.
    #[error("certificate signing request {name} already exists with a different request")]
    Conflict {
        /// The CSR's name.
        name: String,
    },
    /// The CSR was denied or failed.
    #[error("certificate signing request {name} was {condition}: {reason}")]
    Refused {
        /// The CSR's name.
        name: String,
        /// `Denied`, `Failed` (or `Deleted`).
        condition: String,
        /// The condition's reason and message.
        reason: String,
    },
    /// No certificate within the deadline.
    #[error("certificate signing request {name}: no certificate within {timeout:?} ({last})")]
    Timeout {
        /// The CSR's name.
        name: String,
        /// The deadline.
        timeout: Duration,
        /// The last error or state.
        last: String,
    },
}
