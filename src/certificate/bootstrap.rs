//! TLS bootstrap (upstream `bootstrap.LoadClientCert`): when the kubeconfig
//! is missing or its client certificate is unusable, obtain a client
//! certificate with the bootstrap credentials through a CSR, store it in
//! `--cert-dir` and write a kubeconfig at `--kubeconfig` that points at
//! `<cert-dir>/kubelet-client-current.pem`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::config::Kubeconfig;

use super::CertError;
use super::csr::{self, CertKind};
use super::request::request_certificate;
use super::store::{CertPair, CertStore, leaf_validity, split_pem};
use crate::cluster::{Qps, client_from_kubeconfig};

/// How long bootstrap waits for the CSR to be approved and issued (upstream: one hour).
pub const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(3600);

/// What [`load_client_cert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bootstrap {
    /// The kubeconfig was usable; nothing changed.
    Valid,
    /// A usable pair was already in the cert dir; only the kubeconfig was written.
    ReusedStore,
    /// A new certificate was requested, issued through this CSR, and stored.
    Issued {
        /// The CSR object's name.
        csr: String,
    },
}

/// Upstream `LoadClientCert`.
pub async fn load_client_cert(
    kubeconfig: &Path,
    bootstrap: &Path,
    cert_dir: &Path,
    node: &str,
    timeout: Duration,
) -> Result<Bootstrap, CertError> {
    let now = chrono::Utc::now().timestamp();
    if kubeconfig_valid(kubeconfig, now) {
        return Ok(Bootstrap::Valid);
    }
    let boot = Kubeconfig::read_from(bootstrap).map_err(|e| CertError::Kubeconfig {
        path: bootstrap.to_path_buf(),
        reason: e.to_string(),
    })?;
    let store = CertStore::new(cert_dir, CertKind::Client.pair_name());
    if let Ok(Some(pair)) = store.load() {
        if pair_valid(&pair, now) {
            write_kubeconfig(kubeconfig, bootstrap, &boot, &store.current_path())?;
            tracing::info!(cert = %store.current_path().display(), "using the current client certificate from the cert dir");
            return Ok(Bootstrap::ReusedStore);
        }
    }
    let client = client_from_kubeconfig(bootstrap, Qps::default())
        .await
        .map_err(|e| CertError::Kubeconfig {
            path: bootstrap.to_path_buf(),
            reason: e.to_string(),
        })?;
    let req = csr::build(node, CertKind::Client, &[])?;
    let cert = request_certificate(client, &req, timeout).await?;
    let current = store.update(&CertPair {
        cert_pem: cert,
        key_pem: req.key_pem.clone(),
    })?;
    write_kubeconfig(kubeconfig, bootstrap, &boot, &current)?;
    tracing::info!(csr = %req.name, cert = %current.display(), kubeconfig = %kubeconfig.display(), "TLS bootstrap: client certificate issued");
    Ok(Bootstrap::Issued { csr: req.name })
}

/// A pair whose leaf certificate is valid at `now`.
fn pair_valid(pair: &CertPair, now: i64) -> bool {
    leaf_validity(&pair.cert_pem).is_ok_and(|v| v.not_before <= now && now < v.not_after)
}

/// Upstream `isClientConfigStillValid`: the kubeconfig exists and its
/// current user's client certificate (if any) is valid now. Token or other
/// credentials count as valid.
pub fn kubeconfig_valid(path: &Path, now: i64) -> bool {
    let Some(auth) = current_auth(path) else {
        return false;
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let cert = if let Some(data) = &auth.client_certificate_data {
        STANDARD.decode(data).ok().and_then(|b| String::from_utf8(b).ok())
    } else if let Some(file) = &auth.client_certificate {
        std::fs::read_to_string(base.join(file)).ok()
    } else {
        return true;
    };
    let Some(cert) = cert else { return false };
    let key_ok = match (&auth.client_key_data, &auth.client_key) {
        (Some(_), _) => true,
        (None, Some(file)) => std::fs::read_to_string(base.join(file)).is_ok_and(|k| k.contains("PRIVATE KEY")),
        (None, None) => false,
    };
    key_ok && leaf_validity(&cert).is_ok_and(|v| v.not_before <= now && now < v.not_after)
}

/// The credentials of the kubeconfig's current context.
fn current_auth(path: &Path) -> Option<kube::config::AuthInfo> {
    let kc = Kubeconfig::read_from(path).ok()?;
    let ctx_name = kc.current_context.clone().unwrap_or_default();
    let user = kc
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone());
    kc.auth_infos
        .into_iter()
        .find(|a| Some(&a.name) == user.as_ref())
        .and_then(|a| a.auth_info)
}

/// Whether the kubeconfig's current user reads its client certificate and
/// key from the file `cert` (what TLS bootstrap writes; a rotated pair is
/// then picked up by rebuilding the client from the kubeconfig).
pub fn kubeconfig_uses_cert_file(path: &Path, cert: &Path) -> bool {
    let Some(auth) = current_auth(path) else {
        return false;
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let is = |f: &Option<String>| f.as_ref().is_some_and(|f| base.join(f) == cert);
    auth.client_certificate_data.is_none() && is(&auth.client_certificate) && is(&auth.client_key)
}

/// Writes the kubelet's kubeconfig: the bootstrap kubeconfig's cluster (its
/// CA embedded) and the client pair at `cert` (upstream
/// `writeKubeconfigFromBootstrapping`).
fn write_kubeconfig(path: &Path, bootstrap_path: &Path, boot: &Kubeconfig, cert: &Path) -> Result<(), CertError> {
    let bad = |reason: String| CertError::Kubeconfig {
        path: bootstrap_path.to_path_buf(),
        reason,
    };
    let ctx_name = boot.current_context.clone().unwrap_or_default();
    let ctx = boot
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| bad(format!("no current context {ctx_name:?}")))?;
    let cluster = boot
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| bad(format!("no cluster {:?}", ctx.cluster)))?;
    let server = cluster
        .server
        .clone()
        .ok_or_else(|| bad("the cluster has no server".into()))?;
    let base = bootstrap_path.parent().unwrap_or(Path::new("."));
    let ca = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(f)) => {
            let p = base.join(f);
            let bytes = std::fs::read(&p).map_err(|e| bad(format!("certificate-authority {}: {e}", p.display())))?;
            Some(STANDARD.encode(bytes))
        }
        (None, None) => None,
    };
    let mut cl = format!("    server: {}\n", yaml_str(&server));
    if let Some(ca) = ca {
        cl.push_str(&format!("    certificate-authority-data: {ca}\n"));
    }
    if cluster.insecure_skip_tls_verify == Some(true) {
        cl.push_str("    insecure-skip-tls-verify: true\n");
    }
    let cert = yaml_str(&cert.display().to_string());
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: default-cluster\n  cluster:\n{cl}contexts:\n- name: default-context\n  context:\n    cluster: default-cluster\n    namespace: default\n    user: default-auth\ncurrent-context: default-context\nusers:\n- name: default-auth\n  user:\n    client-certificate: {cert}\n    client-key: {cert}\n"
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| CertError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    std::fs::write(&tmp, text).map_err(|source| CertError::Io {
        path: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, path).map_err(|source| CertError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The pair a kubeconfig written by bootstrap points at (both files are the combined PEM).
pub fn read_pair(path: &Path) -> Result<CertPair, CertError> {
    let text = std::fs::read_to_string(path).map_err(|source| CertError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    split_pem(&text).map_err(|reason| CertError::Parse {
        path: path.to_path_buf(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(days: i64) -> CertPair {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(vec!["n".to_string()]).unwrap();
        p.not_before = time::OffsetDateTime::now_utc() - time::Duration::days(2);
        p.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(days);
        let cert = p.self_signed(&key).unwrap();
        CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    const BOOT: &str = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://10.0.0.1:6443\", certificate-authority-data: Q0E=}}]\nusers: [{name: b, user: {token: abc.def}}]\ncontexts: [{name: b@c, context: {cluster: c, user: b}}]\ncurrent-context: b@c\n";

    #[test]
    fn kubeconfig_validity_follows_the_client_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let now = chrono::Utc::now().timestamp();
        let kc = dir.path().join("kubelet.conf");
        assert!(!kubeconfig_valid(&kc, now), "missing");
        let boot = dir.path().join("bootstrap.conf");
        std::fs::write(&boot, BOOT).unwrap();
        assert!(kubeconfig_valid(&boot, now), "token credentials count as valid");
        let store = CertStore::new(dir.path().join("pki"), "kubelet-client");
        let current = store.update(&self_signed(1)).unwrap();
        let parsed = Kubeconfig::read_from(&boot).unwrap();
        write_kubeconfig(&kc, &boot, &parsed, &current).unwrap();
        assert!(kubeconfig_valid(&kc, now));
        // the written kubeconfig: server and CA from bootstrap, the pair in the store
        let back = Kubeconfig::read_from(&kc).unwrap();
        let cl = back.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cl.server.as_deref(), Some("https://10.0.0.1:6443"));
        assert_eq!(cl.certificate_authority_data.as_deref(), Some("Q0E="));
        let user = back.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.client_certificate.as_deref(), Some(current.to_str().unwrap()));
        assert_eq!(user.client_key.as_deref(), Some(current.to_str().unwrap()));
        // expired → invalid
        store.update(&self_signed(-1)).unwrap();
        assert!(!kubeconfig_valid(&kc, now));
    }

    #[tokio::test]
    async fn valid_pair_in_the_store_is_reused_without_the_api() {
        let dir = tempfile::tempdir().unwrap();
        let boot = dir.path().join("bootstrap.conf");
        std::fs::write(&boot, BOOT).unwrap();
        let store = CertStore::new(dir.path().join("pki"), "kubelet-client");
        store.update(&self_signed(1)).unwrap();
        let kc = dir.path().join("kubelet.conf");
        let r = load_client_cert(&kc, &boot, &dir.path().join("pki"), "n1", Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(r, Bootstrap::ReusedStore);
        assert!(kubeconfig_valid(&kc, chrono::Utc::now().timestamp()));
        let r = load_client_cert(&kc, &boot, &dir.path().join("pki"), "n1", Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(r, Bootstrap::Valid);
    }
}
