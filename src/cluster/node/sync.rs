//! The API side of one node sync: register (POST, or GET + reconcile on
//! 409), then read the Node and patch its status when needed. Plain async
//! functions; the [`NodeActor`](super::NodeActor) runs one at a time.

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{GetParams, Patch, PatchParams, PostParams};
use std::collections::BTreeMap;

use super::NodeError;
use super::conditions::Health;
use super::images::list_node_images;
use super::patch::status_patch;
use super::registration::{initial_node, reconcile_existing};
use super::status::{StatusInputs, apply_status, status_changed};
use crate::cri::SharedRuntime;
use crate::cri::v1::VersionRequest;

/// Upstream `nodeStatusUpdateRetry`.
const STATUS_UPDATE_RETRY: usize = 5;

/// What one sync works from.
pub(super) struct SyncInput {
    pub api: Api<Node>,
    pub inputs: StatusInputs,
    pub health: Health,
    pub now: Timestamp,
    /// `Some((labels, taints))` while the Node is still to be registered.
    pub register: Option<(BTreeMap<String, String>, Vec<Taint>)>,
    /// Write even an unchanged status (the report period has passed).
    pub report_due: bool,
    /// Set while the runtime's version is unknown.
    pub version_from: Option<SharedRuntime>,
    /// Where the node's images are listed from.
    pub images_from: SharedRuntime,
}

/// What a status update did.
#[derive(Debug)]
pub(super) struct StatusOutcome {
    pub uid: Option<String>,
    pub conditions: Vec<NodeCondition>,
    pub events: Vec<&'static str>,
    /// The API server now holds this status (patched, or already equal).
    pub wrote: bool,
    /// The Node's labels and taints as read.
    pub object: super::NodeObject,
}

/// A Node registered (or found): its UID, and the events of its initial
/// status when it was created.
#[derive(Debug)]
pub(super) struct Registered {
    pub uid: Option<String>,
    pub events: Vec<&'static str>,
}

/// What one sync found.
#[derive(Debug)]
pub(super) struct SyncOutput {
    pub runtime_version: Option<String>,
    /// `Some` when registration was attempted: the Node's UID and the events
    /// of a newly created Node's status, or the error.
    pub registration: Option<Result<Registered, NodeError>>,
    /// `None` when registration failed (no status update was tried).
    pub status: Option<Result<StatusOutcome, NodeError>>,
}

fn api_err<'a>(call: &'static str, node: &'a str) -> impl FnOnce(kube::Error) -> NodeError + 'a {
    move |source| NodeError::Api {
        call,
        node: node.to_string(),
        source,
    }
}

fn is_status(e: &kube::Error, f: impl Fn(&kube::core::Status) -> bool) -> bool {
    matches!(e, kube::Error::Api(s) if f(s))
}

/// `<runtimeName>://<runtimeVersion>` from CRI `Version`.
async fn runtime_version(runtime: &SharedRuntime) -> Option<String> {
    match runtime.version(VersionRequest { version: "v1".into() }).await {
        Ok(v) => Some(format!("{}://{}", v.runtime_name, v.runtime_version)),
        Err(e) => {
            tracing::warn!(error = %e, "CRI Version failed; containerRuntimeVersion not known yet");
            None
        }
    }
}

/// POSTs the Node; on AlreadyExists reads it and fixes the labels and
/// annotation the kubelet owns. Returns the Node's UID and whether it was created.
async fn register(api: &Api<Node>, initial: &Node, name: &str) -> Result<(Option<String>, bool), NodeError> {
    match api.create(&PostParams::default(), initial).await {
        Ok(created) => {
            tracing::info!(node = %name, "node registered");
            Ok((created.metadata.uid, true))
        }
        Err(e) if is_status(&e, |s| s.is_already_exists()) => {
            let existing = api.get(name).await.map_err(api_err("GET nodes", name))?;
            tracing::info!(node = %name, "node was previously registered");
            if let Some(patch) = reconcile_existing(initial, &existing) {
                tracing::info!(node = %name, %patch, "reconciling the labels and annotations of the existing node");
                api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
                    .await
                    .map_err(api_err("PATCH nodes", name))?;
            }
            Ok((existing.metadata.uid, false))
        }
        Err(e) => Err(api_err("POST nodes", name)(e)),
    }
}

/// Upstream `tryUpdateNodeStatus`, retried: reads the Node (the first time
/// from the API server's cache), applies the setters and patches the status
/// when it changed or `report_due`.
async fn update_status(
    api: &Api<Node>,
    inputs: &StatusInputs,
    health: &Health,
    now: Timestamp,
    report_due: bool,
) -> Result<StatusOutcome, NodeError> {
    let name = inputs.node_name.as_str();
    let mut last = None;
    for attempt in 0..STATUS_UPDATE_RETRY {
        let params = if attempt == 0 {
            GetParams::any()
        } else {
            GetParams::default()
        };
        let original = match api.get_with(name, &params).await {
            Ok(n) => n,
            Err(e) if is_status(&e, |s| s.is_not_found()) => return Err(NodeError::NotRegistered(name.into())),
            Err(e) => {
                tracing::debug!(node = %name, error = %e, attempt, "GET node failed");
                last = Some(api_err("GET nodes", name)(e));
                continue;
            }
        };
        let mut node = original.clone();
        let events = apply_status(&mut node, inputs, health, now);
        let conditions = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let mut outcome = StatusOutcome {
            uid: original.metadata.uid.clone(),
            conditions,
            events,
            wrote: false,
            object: super::NodeObject {
                labels: original.metadata.labels.clone().unwrap_or_default(),
                taints: original
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.clone())
                    .unwrap_or_default(),
            },
        };
        if !report_due && !status_changed(original.status.as_ref(), node.status.as_ref()) {
            return Ok(outcome);
        }
        let encode = |n: &Node| {
            serde_json::to_value(&n.status).map_err(|source| NodeError::Encode {
                node: name.into(),
                source,
            })
        };
        let Some(patch) = status_patch(&encode(&original)?, &encode(&node)?) else {
            // The API server holds exactly this status (heartbeats included): as good as written.
            outcome.wrote = true;
            return Ok(outcome);
        };
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(_) => {
                outcome.wrote = true;
                return Ok(outcome);
            }
            Err(e) => {
                tracing::debug!(node = %name, error = %e, attempt, "PATCH node status failed");
                last = Some(api_err("PATCH nodes/status", name)(e));
            }
        }
    }
    Err(last.unwrap_or_else(|| NodeError::NotRegistered(name.into())))
}

/// One sync: version (once), registration (until done), status.
pub(super) async fn sync(mut input: SyncInput) -> SyncOutput {
    let mut out = SyncOutput {
        runtime_version: None,
        registration: None,
        status: None,
    };
    if let Some(runtime) = &input.version_from {
        out.runtime_version = runtime_version(runtime).await;
        if out.runtime_version.is_some() {
            input.inputs.runtime_version = out.runtime_version.clone();
        }
    }
    input.inputs.images = list_node_images(&input.images_from).await;
    if let Some((labels, taints)) = &input.register {
        let mut events = vec![];
        let initial = initial_node(&input.inputs, labels, taints, &input.health, input.now, &mut events);
        let result = register(&input.api, &initial, &input.inputs.node_name)
            .await
            .map(|(uid, created)| Registered {
                uid,
                events: if created { events } else { vec![] },
            });
        let failed = result.is_err();
        out.registration = Some(result);
        if failed {
            return out;
        }
    }
    out.status = Some(update_status(&input.api, &input.inputs, &input.health, input.now, input.report_due).await);
    out
}
