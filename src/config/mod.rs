//! Pod sources and their merge (upstream `pkg/kubelet/config`).
//!
//! ```text
//!  FileSource (staticPodPath) ─┐
//!  HttpSource (staticPodURL) ──┼─SourceSnapshot─▶ PodConfig ──PodUpdate / SourcesReady──▶ SyncLoop
//!  ApiSource, custom sources ──┘                    (PodStorage)
//! ```
//!
//! - [`manifest`] parses a manifest body (one Pod, a PodList or a List of pods,
//!   YAML or JSON); [`validate`] runs upstream's basic checks for static pods.
//! - [`pod_defaults`] applies what the API server's defaulting would, and
//!   [`static_pod`] applies upstream `applyDefaults` (name suffix, UID hash,
//!   config annotations) and chains parse → default → validate.
//! - [`last_good`] turns one read of a source into a [`SourceSnapshot`], keeping
//!   the last good pods of a manifest that became invalid.
//! - [`merge`] is the pure [`PodStorage`] (upstream `podStorage.merge`).
//! - [`file_source`], [`http_source`] and [`pod_config`] are the thin actors;
//!   [`file_scan`] and [`file_watch`] are the file source's blocking parts,
//!   [`error_log`] logs manifest errors once per change; [`delivered`] lets
//!   the file source skip a re-read that changed nothing.
//!
//! [`SourceSnapshot`]: crate::messages::pod_update::SourceSnapshot

pub mod annotations;
pub mod delivered;
pub mod error_log;
pub mod file_scan;
pub mod file_source;
pub mod file_watch;
pub mod http_source;
pub mod last_good;
pub mod manifest;
pub mod merge;
pub mod pod_config;
pub mod pod_defaults;
pub mod static_pod;
pub mod validate;
pub mod validate_probes;
pub mod validate_restart;

pub use file_source::{FileSource, FileSourceConfig};
pub use http_source::{HttpSource, HttpSourceConfig, HttpSourceError};
pub use last_good::{LastGoodManifests, ManifestRead, SharedLastGood};
pub use merge::{MergeResult, PodStorage};
pub use pod_config::{GetManifestErrors, ManifestErrors, PodConfig, PodConfigState};
pub use static_pod::{ManifestOrigin, load_static_pods};
