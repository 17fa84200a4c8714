//! Small helpers shared by the cluster actors' API calls.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Preconditions};

/// The HTTP status of an API error (`None` for transport errors).
pub fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Deletes pod `name` at once (grace 0) if it still has `uid` (fixture 41).
/// A pod already gone (404) or replaced by another of the same name (409,
/// precondition failed) counts as done: `Ok(false)`; `Ok(true)` when this
/// call deleted it.
pub async fn delete_pod_now(api: &Api<Pod>, name: &str, uid: &str) -> Result<bool, kube::Error> {
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(true),
        Err(e) if matches!(api_code(&e), Some(404 | 409)) => Ok(false),
        Err(e) => Err(e),
    }
}
