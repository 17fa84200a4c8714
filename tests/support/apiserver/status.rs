//! `Status` error bodies exactly as kube-apiserver v1.24 writes them.
//!
//! Shape: `{kind: Status, apiVersion: v1, metadata: {}, status: Failure, message, reason,
//! details?, code}`. `details` keys are `name`, `group` (left out for the core group), `kind`,
//! `causes`; some errors have no details (410, 401, 400) and some have `{}` (415, the generic
//! 422, non-resource 403s).

use serde_json::{Map, Value, json};

use super::resources::ResourceDef;

/// An error answer: HTTP code, the Status body and whether it came from the authorizer
/// (those carry `X-Content-Type-Options: nosniff`).
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: u16,
    pub body: Value,
    pub nosniff: bool,
}

pub type ApiResult<T> = Result<T, ApiError>;

/// `details` with the empty fields left out, in Go's key order.
pub fn details(name: &str, group: &str, kind: &str) -> Value {
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), name.into());
    }
    if !group.is_empty() {
        d.insert("group".into(), group.into());
    }
    if !kind.is_empty() {
        d.insert("kind".into(), kind.into());
    }
    Value::Object(d)
}

/// `resource` or `resource.group`, as Go's `GroupResource.String()`.
pub fn qualify(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>, details: Option<Value>) -> Self {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message.into(),
            "reason": reason,
            "code": code,
        });
        if let Some(d) = details {
            body["details"] = d;
        }
        ApiError {
            code,
            body,
            nosniff: false,
        }
    }

    /// `nodes "x" not found`, details.kind is the resource.
    pub fn not_found(def: &ResourceDef, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", def.qualified()),
            Some(details(name, def.group, def.plural)),
        )
    }

    /// A namespace that does not exist (NamespaceLifecycle admission).
    pub fn namespace_not_found(ns: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("namespaces \"{ns}\" not found"),
            Some(details(ns, "", "namespaces")),
        )
    }

    pub fn already_exists(def: &ResourceDef, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", def.qualified()),
            Some(details(name, def.group, def.plural)),
        )
    }

    /// Go's `NewConflict(groupResource, name, err)`.
    pub fn conflict(resource: &str, group: &str, name: &str, err: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {err}",
                qualify(resource, group)
            ),
            Some(details(name, group, resource)),
        )
    }

    /// Optimistic-lock failure of an update with a stale resourceVersion.
    pub fn conflict_modified(def: &ResourceDef, name: &str) -> Self {
        Self::conflict(
            def.plural,
            def.group,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// Go's `NewInvalid(groupKind, name, errs)`: `causes` is `(reason, field, body)`.
    pub fn invalid(def: &ResourceDef, name: &str, causes: &[(&str, &str, String)]) -> Self {
        let mut unique: Vec<String> = Vec::new();
        for (_, field, body) in causes {
            let full = format!("{field}: {body}");
            if !unique.contains(&full) {
                unique.push(full);
            }
        }
        let aggregate = if unique.len() == 1 {
            unique[0].clone()
        } else {
            format!("[{}]", unique.join(", "))
        };
        let mut d = details(name, def.group, def.kind);
        d["causes"] = causes
            .iter()
            .map(|(reason, field, body)| json!({"reason": reason, "message": body, "field": field}))
            .collect();
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {aggregate}", def.qualified_kind()),
            Some(d),
        )
    }

    /// The 422 of a failed JSON patch: generic message, empty details.
    pub fn invalid_generic() -> Self {
        Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            Some(json!({})),
        )
    }

    /// Go's `NewForbidden(groupResource, name, err)`.
    pub fn forbidden(group: &str, resource: &str, name: &str, err: &str) -> Self {
        let message = if resource.is_empty() {
            format!("forbidden: {err}")
        } else if name.is_empty() {
            format!("{} is forbidden: {err}", qualify(resource, group))
        } else {
            format!("{} \"{name}\" is forbidden: {err}", qualify(resource, group))
        };
        Self::new(403, "Forbidden", message, Some(details(name, group, resource)))
    }

    pub fn expired(message: &str) -> Self {
        Self::new(410, "Expired", message, None)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized", None)
    }

    pub fn unsupported_media_type() -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "415: Unsupported Media Type",
            Some(json!({})),
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message, None)
    }

    pub fn not_found_path() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(json!({})),
        )
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            Some(json!({})),
        )
    }

    pub fn unavailable() -> Self {
        Self::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
            Some(json!({})),
        )
    }

    /// A resourceVersion newer than the server's (the watch cache gives up after 3 s).
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
            Some(json!({
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1
            })),
        )
    }

    /// An error injected by a test (`TestApiServer::fail_next`).
    pub fn injected(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        };
        Self::new(code, reason, format!("injected failure ({code})"), Some(json!({})))
    }

    /// Marks an authorizer denial (adds `X-Content-Type-Options: nosniff`).
    pub fn by_authorizer(mut self) -> Self {
        self.nosniff = true;
        self
    }
}
