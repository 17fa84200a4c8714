//! [`GcError`]: why a GC round failed (its message is the event's).

use std::path::PathBuf;

use crate::cri::CriError;

/// A GC round failed, wholly or partly.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// A CRI call failed.
    #[error("{call} failed: {source}")]
    Cri {
        /// The CRI method.
        call: &'static str,
        /// The cause.
        #[source]
        source: CriError,
    },
    /// The runtime reported no image filesystem.
    #[error("the runtime reported no image filesystem")]
    NoImageFs,
    /// `statvfs` of the image filesystem failed.
    #[error("cannot stat the image filesystem at {path}: {reason}")]
    Statfs {
        /// Its mountpoint.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The image filesystem reports a zero capacity (upstream message).
    #[error("invalid capacity 0 on image filesystem")]
    InvalidCapacity,
    /// Not enough images could be removed (upstream message).
    #[error(
        "Failed to garbage collect required amount of images. Attempted to free {wanted} bytes, but only found {freed} bytes eligible to free."
    )]
    FreeSpace {
        /// Bytes to free.
        wanted: u64,
        /// Bytes freed.
        freed: u64,
    },
    /// Some removals failed.
    #[error("{what}: {}", errors.join("; "))]
    Removals {
        /// What was being removed.
        what: &'static str,
        /// One message per failed removal.
        errors: Vec<String>,
    },
}
