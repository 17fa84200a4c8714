//! Writing one Event to the API server (upstream `recordEvent`): a repeat is
//! a strategic merge PATCH of `count`, `lastTimestamp` and `message`; a patch
//! that finds the Event gone (expired, 404) creates it anew; a first event is
//! a POST to core/v1 (`events.k8s.io` is forbidden to nodes, fixture 48).

use k8s_openapi::api::core::v1::Event;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

use super::event_object::repeat_patch;
use super::outbox::{Write, WriteMode};

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The API server could not be reached or is overloaded (transport
    /// error, 429, 5xx): worth retrying.
    #[error("cannot {verb} event {namespace}/{name}: {source}")]
    Unreachable {
        /// `create` or `patch`.
        verb: &'static str,
        /// The Event's namespace.
        namespace: String,
        /// The Event's name.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The API server refused it (4xx): retrying would not help.
    #[error("API server rejected {verb} of event {namespace}/{name}: {source}")]
    Rejected {
        /// `create` or `patch`.
        verb: &'static str,
        /// The Event's namespace.
        namespace: String,
        /// The Event's name.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

impl SendError {
    fn new(verb: &'static str, namespace: &str, name: &str, source: kube::Error) -> Self {
        let (namespace, name) = (namespace.to_string(), name.to_string());
        if is_retryable(&source) {
            SendError::Unreachable {
                verb,
                namespace,
                name,
                source,
            }
        } else {
            SendError::Rejected {
                verb,
                namespace,
                name,
                source,
            }
        }
    }

    /// The write could be retried.
    pub fn is_retryable(&self) -> bool {
        matches!(self, SendError::Unreachable { .. })
    }

    /// The Event exists already (a create whose first answer was lost).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, SendError::Rejected { source: kube::Error::Api(s), .. } if s.is_already_exists())
    }
}

/// Transport errors, 429 and 5xx are worth retrying; other API answers and
/// local errors (building the request, decoding the answer) are not.
pub fn is_retryable(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::SerdeError(_) | kube::Error::BuildRequest(_) | kube::Error::FromUtf8(_) => false,
        _ => true,
    }
}

/// Sends `write`; returns the Event as stored.
pub async fn send(client: Client, write: &Write) -> Result<Event, SendError> {
    let (namespace, name) = write.key();
    let api: Api<Event> = Api::namespaced(client, &namespace);
    if write.mode == WriteMode::Patch {
        let patch = Patch::Strategic(repeat_patch(&write.event));
        match api.patch(&name, &PatchParams::default(), &patch).await {
            Ok(stored) => return Ok(stored),
            Err(kube::Error::Api(s)) if s.is_not_found() => {
                tracing::debug!(event = %name, %namespace, "event expired; creating it anew");
            }
            Err(e) => return Err(SendError::new("patch", &namespace, &name, e)),
        }
    }
    let mut event = write.event.clone();
    event.metadata.resource_version = None;
    api.create(&PostParams::default(), &event)
        .await
        .map_err(|e| SendError::new("create", &namespace, &name, e))
}
