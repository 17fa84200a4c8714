//! imagePullSecrets (upstream `credentialprovider`): `kubernetes.io/dockerconfigjson`
//! (`.dockerconfigjson`) and `kubernetes.io/dockercfg` (`.dockercfg`) secrets
//! parsed into registry credentials, and the credentials for an image as
//! upstream's `BasicDockerKeyring.Lookup` picks them: keys matching the
//! image's registry host (`*` globs per label, same port) and path prefix,
//! longest key first; else, for Docker Hub images, the `index.docker.io` key.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;

use crate::cri::v1::AuthConfig;

/// Credentials for one registry key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistryCredential {
    /// The key, schemeless (`registry.example.com/team`), `/v1/` and `/v2/` dropped.
    pub key: String,
    /// What `PullImage` gets.
    pub auth: AuthConfig,
}

#[derive(Deserialize, Default)]
struct Entry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
}

#[derive(Deserialize)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

/// Upstream's key normalisation: no scheme, `/v1/` `/v2/` prefixes dropped, no trailing `/`.
fn normalize_key(registry: &str) -> String {
    let rest = registry
        .strip_prefix("https://")
        .or_else(|| registry.strip_prefix("http://"))
        .unwrap_or(registry);
    let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
    let path = path
        .strip_prefix("v1/")
        .or_else(|| path.strip_prefix("v2/"))
        .unwrap_or(path)
        .trim_matches('/');
    if path.is_empty() || path == "v1" || path == "v2" {
        host.to_string()
    } else {
        format!("{host}/{path}")
    }
}

/// The credentials in a pull secret (empty for other secret types or bad data).
///
/// ```
/// use std::collections::BTreeMap;
/// use k8s_openapi::ByteString;
/// let secret = k8s_openapi::api::core::v1::Secret {
///     type_: Some("kubernetes.io/dockerconfigjson".into()),
///     data: Some(BTreeMap::from([(".dockerconfigjson".to_string(), ByteString(
///         br#"{"auths": {"https://registry.example.com/v2/": {"auth": "dTpw"}}}"#.to_vec()))])),
///     ..Default::default()
/// };
/// let creds = actlet::volumes::pull_secrets::parse_secret(&secret);
/// assert_eq!(creds[0].key, "registry.example.com");
/// assert_eq!((creds[0].auth.username.as_str(), creds[0].auth.password.as_str()), ("u", "p"));
/// ```
pub fn parse_secret(secret: &Secret) -> Vec<RegistryCredential> {
    let data = secret.data.as_ref();
    let entries: BTreeMap<String, Entry> = if let Some(json) = data.and_then(|d| d.get(".dockerconfigjson")) {
        serde_json::from_slice::<DockerConfigJson>(&json.0)
            .map(|c| c.auths)
            .unwrap_or_default()
    } else if let Some(cfg) = data.and_then(|d| d.get(".dockercfg")) {
        serde_json::from_slice(&cfg.0).unwrap_or_default()
    } else {
        BTreeMap::new()
    };
    entries
        .into_iter()
        .map(|(registry, e)| {
            let (mut username, mut password) = (e.username, e.password);
            if !e.auth.is_empty()
                && let Ok(decoded) = STANDARD.decode(e.auth.as_bytes())
                && let Some((u, p)) = String::from_utf8_lossy(&decoded).split_once(':')
            {
                (username, password) = (u.to_string(), p.to_string());
            }
            RegistryCredential {
                key: normalize_key(&registry),
                auth: AuthConfig {
                    username,
                    password,
                    server_address: registry,
                    ..Default::default()
                },
            }
        })
        .collect()
}

/// `image` without tag or digest, normalised like a docker reference
/// (`busybox` → `docker.io/library/busybox`).
pub fn repository(image: &str) -> String {
    let no_digest = image.split_once('@').map_or(image, |(r, _)| r);
    let last_slash = no_digest.rfind('/').map_or(0, |i| i + 1);
    let repo = match no_digest[last_slash..].rfind(':') {
        Some(i) => &no_digest[..last_slash + i],
        None => no_digest,
    };
    let first = repo.split('/').next().unwrap_or_default();
    let has_domain = repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    match (has_domain, repo.contains('/')) {
        (true, _) => repo.to_string(),
        (false, true) => format!("docker.io/{repo}"),
        (false, false) => format!("docker.io/library/{repo}"),
    }
}

/// `filepath.Match` for one label with `*` and `?` wildcards.
fn glob(pattern: &str, text: &str) -> bool {
    fn rec(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) => rec(&p[1..], t) || (!t.is_empty() && rec(p, &t[1..])),
            (Some(b'?'), Some(_)) => rec(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => rec(&p[1..], &t[1..]),
            _ => false,
        }
    }
    rec(pattern.as_bytes(), text.as_bytes())
}

/// Upstream `URLsMatchStr` for schemeless `key` and `repo`.
fn key_matches(key: &str, repo: &str) -> bool {
    let split = |s: &str| -> (String, String) {
        let (host, path) = s.split_once('/').map_or((s, ""), |(h, p)| (h, p));
        (host.to_string(), path.to_string())
    };
    let ((kh, kp), (rh, rp)) = (split(key), split(repo));
    let port = |h: &str| h.split_once(':').map(|(a, p)| (a.to_string(), p.to_string()));
    let ((kh, kport), (rh, rport)) = (
        port(&kh).unwrap_or((kh.clone(), String::new())),
        port(&rh).unwrap_or((rh.clone(), String::new())),
    );
    let (kl, rl): (Vec<&str>, Vec<&str>) = (kh.split('.').collect(), rh.split('.').collect());
    kport == rport && kl.len() == rl.len() && rp.starts_with(&kp) && kl.iter().zip(&rl).all(|(k, r)| glob(k, r))
}

/// The credentials to try for `image`, in order (empty: pull anonymously).
///
/// ```
/// use actlet::volumes::pull_secrets::{RegistryCredential, lookup};
/// let cred = |key: &str| RegistryCredential { key: key.into(), ..Default::default() };
/// let creds = [cred("registry.example.com"), cred("registry.example.com/team"), cred("index.docker.io")];
/// assert_eq!(lookup(&creds, "registry.example.com/team/app:1").len(), 2);
/// assert_eq!(lookup(&creds, "busybox:1.36").len(), 1); // Docker Hub: the index.docker.io key
/// assert!(lookup(&creds, "quay.io/x/y").is_empty());
/// ```
pub fn lookup(creds: &[RegistryCredential], image: &str) -> Vec<AuthConfig> {
    let repo = repository(image);
    let mut keyed: Vec<&RegistryCredential> = creds.iter().filter(|c| key_matches(&c.key, &repo)).collect();
    keyed.sort_by(|a, b| b.key.cmp(&a.key));
    if keyed.is_empty() && repo.starts_with("docker.io/") {
        keyed = creds.iter().filter(|c| c.key == "index.docker.io").collect();
    }
    keyed.into_iter().map(|c| c.auth.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_normalise_like_docker_references() {
        assert_eq!(repository("busybox:1.36"), "docker.io/library/busybox");
        assert_eq!(repository("team/app"), "docker.io/team/app");
        assert_eq!(repository("localhost:5000/app:v1"), "localhost:5000/app");
        assert_eq!(repository("r.example.com/a/b@sha256:abc"), "r.example.com/a/b");
    }

    #[test]
    fn keys_match_by_host_glob_port_and_path_prefix() {
        assert!(key_matches("r.example.com", "r.example.com/a/b"));
        assert!(key_matches("*.example.com", "r.example.com/a"));
        assert!(!key_matches("*.example.com", "a.r.example.com/a"), "one label per *");
        assert!(key_matches("r.example.com/a", "r.example.com/a/b"));
        assert!(!key_matches("r.example.com/b", "r.example.com/a/b"));
        assert!(!key_matches("r.example.com:5000", "r.example.com/a"));
        assert!(key_matches("r.example.com:5000", "r.example.com:5000/a"));
    }

    #[test]
    fn keys_drop_scheme_and_api_version() {
        assert_eq!(normalize_key("https://index.docker.io/v1/"), "index.docker.io");
        assert_eq!(normalize_key("http://r.example.com/v2/team/"), "r.example.com/team");
        assert_eq!(normalize_key("r.example.com"), "r.example.com");
    }

    #[test]
    fn longest_key_first() {
        let cred = |key: &str, user: &str| RegistryCredential {
            key: key.into(),
            auth: AuthConfig {
                username: user.into(),
                ..Default::default()
            },
        };
        let creds = [cred("r.example.com", "host"), cred("r.example.com/team", "team")];
        let users: Vec<String> = lookup(&creds, "r.example.com/team/app:1")
            .into_iter()
            .map(|a| a.username)
            .collect();
        assert_eq!(users, ["team", "host"]);
    }
}
