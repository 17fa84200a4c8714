//! The certificate store on disk, laid out as upstream's
//! `client-go/util/certificate` file store: each issued pair is written to
//! `<dir>/<pair>-<YYYY-MM-DD-HH-MM-SS>.pem` (certificate then key, mode 0600)
//! and `<dir>/<pair>-current.pem` is a symlink to it, replaced atomically
//! (a new symlink renamed over the old), so a reader sees the old or the new
//! pair, never a mix. The files are the state: a restarted kubelet (or
//! actor) picks up the current pair from here.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use x509_parser::prelude::{FromDer, X509Certificate};

use super::CertError;

/// A certificate chain and its key, PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPair {
    /// The certificate(s), leaf first.
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

/// Validity of a certificate, Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// NotBefore.
    pub not_before: i64,
    /// NotAfter.
    pub not_after: i64,
}

/// One pair of files in a directory (`kubelet-client`, `kubelet-server`).
#[derive(Debug, Clone)]
pub struct CertStore {
    dir: PathBuf,
    pair: String,
}

impl CertStore {
    /// The store for `pair` in `dir` (`--cert-dir`).
    pub fn new(dir: impl Into<PathBuf>, pair: &str) -> CertStore {
        CertStore {
            dir: dir.into(),
            pair: pair.to_string(),
        }
    }

    /// `<dir>/<pair>-current.pem`.
    pub fn current_path(&self) -> PathBuf {
        self.dir.join(format!("{}-current.pem", self.pair))
    }

    /// Writes `pair` to a new timestamped file and points the current link at it.
    /// Returns the path of the current link.
    pub fn update(&self, pair: &CertPair) -> Result<PathBuf, CertError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CertError::Io { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let stamp = chrono::Utc::now().format("%Y-%m-%d-%H-%M-%S").to_string();
        let mut file_name = format!("{}-{stamp}.pem", self.pair);
        let mut n = 1;
        while self.dir.join(&file_name).exists() {
            file_name = format!("{}-{stamp}-{n}.pem", self.pair);
            n += 1;
        }
        let path = self.dir.join(&file_name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io(&path))?;
        let mut body = pair.cert_pem.trim_end().to_string();
        body.push('\n');
        body.push_str(pair.key_pem.trim_end());
        body.push('\n');
        f.write_all(body.as_bytes()).map_err(io(&path))?;
        f.sync_all().map_err(io(&path))?;
        let current = self.current_path();
        let tmp = self.dir.join(format!(".{}-current.pem.tmp", self.pair));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&file_name, &tmp).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &current).map_err(io(&current))?;
        Ok(current)
    }

    /// The current pair, `None` when there is none yet.
    pub fn load(&self) -> Result<Option<CertPair>, CertError> {
        let path = self.current_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => split_pem(&text)
                .map(Some)
                .map_err(|e| CertError::Parse { path, reason: e }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(CertError::Io { path, source }),
        }
    }
}

/// Splits a combined PEM file into its certificates and its key.
pub fn split_pem(text: &str) -> Result<CertPair, String> {
    let mut certs = String::new();
    let mut key = String::new();
    for pem in x509_parser::pem::Pem::iter_from_buffer(text.as_bytes()) {
        let pem = pem.map_err(|e| e.to_string())?;
        let block = pem_block(&pem.label, &pem.contents);
        if pem.label == "CERTIFICATE" {
            certs.push_str(&block);
        } else if pem.label.ends_with("PRIVATE KEY") && key.is_empty() {
            key = block;
        }
    }
    if certs.is_empty() {
        return Err("no CERTIFICATE block".into());
    }
    if key.is_empty() {
        return Err("no PRIVATE KEY block".into());
    }
    Ok(CertPair {
        cert_pem: certs,
        key_pem: key,
    })
}

fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut s = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

/// Validity of the first (leaf) certificate in `cert_pem`.
pub fn leaf_validity(cert_pem: &str) -> Result<Validity, String> {
    let pem = x509_parser::pem::Pem::iter_from_buffer(cert_pem.as_bytes())
        .next()
        .ok_or("no certificate")?
        .map_err(|e| e.to_string())?;
    let (_, cert) = X509Certificate::from_der(&pem.contents).map_err(|e| e.to_string())?;
    Ok(Validity {
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn pair(days: i64) -> CertPair {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(vec!["n".to_string()]).unwrap();
        p.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(days);
        let cert = p.self_signed(&key).unwrap();
        CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    #[test]
    fn update_writes_timestamped_file_0600_and_current_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let store = CertStore::new(dir.path().join("pki"), "kubelet-client");
        assert_eq!(store.load().unwrap(), None);
        let first = pair(1);
        let current = store.update(&first).unwrap();
        assert_eq!(current, dir.path().join("pki/kubelet-client-current.pem"));
        let target = std::fs::read_link(&current).unwrap();
        let name = target.to_str().unwrap();
        assert!(target.is_relative(), "{name}");
        assert!(
            name.starts_with("kubelet-client-20") && name.ends_with(".pem"),
            "{name}"
        );
        let meta = std::fs::metadata(dir.path().join("pki").join(&target)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            store.load().unwrap(),
            Some(split_pem(&std::fs::read_to_string(&current).unwrap()).unwrap())
        );
        assert_eq!(store.load().unwrap().unwrap().key_pem.trim(), first.key_pem.trim());

        // a second pair (same second): a new file, the link moves, the old file stays
        let second = pair(2);
        store.update(&second).unwrap();
        let target2 = std::fs::read_link(&current).unwrap();
        assert_ne!(target, target2);
        assert!(dir.path().join("pki").join(&target).exists());
        assert_eq!(store.load().unwrap().unwrap().key_pem.trim(), second.key_pem.trim());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("pki"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains("tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn split_and_validity() {
        let p = pair(3);
        let joined = format!("{}{}", p.cert_pem, p.key_pem);
        let back = split_pem(&joined).unwrap();
        let v = leaf_validity(&back.cert_pem).unwrap();
        let now = chrono::Utc::now().timestamp();
        assert!(v.not_after > now + 2 * 86400 && v.not_after <= now + 3 * 86400 + 5);
        assert!(split_pem(&p.cert_pem).unwrap_err().contains("PRIVATE KEY"));
        assert!(split_pem(&p.key_pem).unwrap_err().contains("CERTIFICATE"));
    }
}
