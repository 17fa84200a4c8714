//! Upstream's mapping of a kubelet API request to authorization attributes
//! (`pkg/kubelet/server/auth.go`, v1.36 with fine-grained authorization GA):
//! resource `nodes`, name = the node, verb from the HTTP method, subresource
//! from the path. `/pods`, `/runningpods/`, `/healthz`, `/configz` and
//! `/statusz` are tried as their own subresource first and then as `proxy`;
//! `/stats`, `/metrics`, `/logs` and `/checkpoint` have only their own;
//! everything else (`/exec`, `/containerLogs`, `/spec`, …) is `proxy`.

/// The user a request was authenticated as.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// `system:node:n`, `system:anonymous`, …
    pub name: String,
    /// The user's UID (TokenReview), if any.
    pub uid: String,
    /// Groups (x509 organisations, TokenReview groups, `system:authenticated`).
    pub groups: Vec<String>,
    /// Extra attributes (TokenReview), sorted by key.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// One authorization question, as a SubjectAccessReview asks it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Attributes {
    /// `get`, `create`, `update`, `patch`, `delete`, or empty for other methods.
    pub verb: String,
    /// Always `nodes`.
    pub resource: &'static str,
    /// `proxy`, `stats`, `metrics`, `log`, `checkpoint`, `pods`, `healthz`, `configz`, `statusz`.
    pub subresource: &'static str,
    /// The node's name.
    pub name: String,
}

/// The API verb of an HTTP method (upstream: anything else maps to "").
pub fn api_verb(method: &str) -> &'static str {
    match method {
        "POST" => "create",
        "GET" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    }
}

/// `subpath` is `path` or below it.
pub fn is_subpath(subpath: &str, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    subpath == path || (subpath.starts_with(path) && subpath.as_bytes().get(path.len()) == Some(&b'/'))
}

/// The subresources to try, in order, for `path`.
pub fn subresources(path: &str) -> Vec<&'static str> {
    let mut out = vec![];
    if is_subpath(path, "/pods") || is_subpath(path, "/runningpods/") {
        out.push("pods");
    } else if is_subpath(path, "/healthz") {
        out.push("healthz");
    } else if is_subpath(path, "/configz") {
        out.push("configz");
    } else if is_subpath(path, "/statusz") {
        out.push("statusz");
    }
    let own = if is_subpath(path, "/stats/") {
        "stats"
    } else if is_subpath(path, "/metrics") {
        "metrics"
    } else if is_subpath(path, "/logs/") {
        "log"
    } else if is_subpath(path, "/checkpoint/") {
        "checkpoint"
    } else {
        "proxy"
    };
    out.push(own);
    out
}

/// The attributes to authorize `method path` on node `node` with, in order:
/// the request is allowed when any of them is.
pub fn request_attributes(node: &str, method: &str, path: &str) -> Vec<Attributes> {
    subresources(path)
        .into_iter()
        .map(|subresource| Attributes {
            verb: api_verb(method).to_string(),
            resource: "nodes",
            subresource,
            name: node.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_upstream_subresources() {
        for (path, want) in [
            ("/stats/summary", vec!["stats"]),
            ("/stats", vec!["stats"]),
            ("/metrics", vec!["metrics"]),
            ("/metrics/cadvisor", vec!["metrics"]),
            ("/logs/syslog", vec!["log"]),
            ("/checkpoint/ns/p/c", vec!["checkpoint"]),
            ("/pods", vec!["pods", "proxy"]),
            ("/pods/", vec!["pods", "proxy"]),
            ("/runningpods/", vec!["pods", "proxy"]),
            ("/healthz", vec!["healthz", "proxy"]),
            ("/healthz/syncloop", vec!["healthz", "proxy"]),
            ("/configz", vec!["configz", "proxy"]),
            ("/containerLogs/ns/p/c", vec!["proxy"]),
            ("/exec/ns/p/c", vec!["proxy"]),
            ("/spec/", vec!["proxy"]),
            ("/metricsx", vec!["proxy"]),
            ("/podsx", vec!["proxy"]),
        ] {
            assert_eq!(subresources(path), want, "{path}");
        }
    }

    #[test]
    fn verbs_come_from_methods() {
        let a = request_attributes("n1", "POST", "/exec/ns/p/c");
        assert_eq!(
            a,
            vec![Attributes {
                verb: "create".into(),
                resource: "nodes",
                subresource: "proxy",
                name: "n1".into()
            }]
        );
        assert_eq!(api_verb("GET"), "get");
        assert_eq!(api_verb("PUT"), "update");
        assert_eq!(api_verb("PATCH"), "patch");
        assert_eq!(api_verb("DELETE"), "delete");
        assert_eq!(api_verb("HEAD"), "");
    }
}
