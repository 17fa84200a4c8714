//! TLS for the kubelet's authenticated server (10250): the serving
//! certificate (`--tls-cert-file`/`--tls-private-key-file`, else a
//! self-signed one kept in `<root-dir>/pki` as upstream does), the protocol
//! and cipher-suite choice (`--tls-min-version`, `--tls-cipher-suites`), and
//! client certificates that are *requested* at the handshake but verified by
//! the x509 authenticator, so a certificate from another CA is an HTTP 401 as
//! upstream answers, not a failed handshake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme};

/// A TLS setting or file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or parsed.
    #[error("cannot load {what} from {path}: {reason}")]
    Load {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The self-signed certificate could not be generated or written.
    #[error("cannot create the self-signed serving certificate in {dir}: {reason}")]
    SelfSigned {
        /// `<root-dir>/pki`.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// `--tls-min-version` or `--tls-cipher-suites` names something unknown.
    #[error("invalid {field}: {reason}")]
    Setting {
        /// The flag.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The TLS settings of the authenticated server (upstream field names).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// `tlsCertFile`; with `tls_private_key_file`, replaces the self-signed certificate.
    pub tls_cert_file: Option<PathBuf>,
    /// `tlsPrivateKeyFile`.
    pub tls_private_key_file: Option<PathBuf>,
    /// `tlsMinVersion` (`VersionTLS12`, `VersionTLS13`; empty: TLS 1.2).
    pub tls_min_version: Option<String>,
    /// `tlsCipherSuites` (Go/IANA names); empty: rustls' defaults.
    pub tls_cipher_suites: Vec<String>,
    /// `authentication.x509.clientCAFile`: client certificates are requested when set.
    pub client_ca_file: Option<PathBuf>,
}

/// The serving certificate and key in `<root-dir>/pki` (upstream names).
pub fn self_signed_paths(root_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = root_dir.join("pki");
    (dir.join("kubelet.crt"), dir.join("kubelet.key"))
}

/// Reuses `<root-dir>/pki/kubelet.{crt,key}` when both are readable, else
/// generates a self-signed certificate for `host` (and `localhost`, the
/// loopback and `ips`) and writes it there, the key mode 0600.
pub fn ensure_self_signed(root_dir: &Path, host: &str, ips: &[String]) -> Result<(PathBuf, PathBuf), TlsError> {
    let (crt, key) = self_signed_paths(root_dir);
    if load_certs(&crt).is_ok() && load_key(&key).is_ok() {
        return Ok((crt, key));
    }
    let dir = root_dir.join("pki");
    let fail = |reason: String| TlsError::SelfSigned {
        dir: dir.clone(),
        reason,
    };
    let mut sans = vec![host.to_string(), "localhost".to_string(), "127.0.0.1".to_string()];
    sans.extend(ips.iter().filter(|ip| !sans.contains(ip)).cloned().collect::<Vec<_>>());
    let mut params = rcgen::CertificateParams::new(sans).map_err(|e| fail(e.to_string()))?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{host}@{secs}"));
    let signing_key = rcgen::KeyPair::generate().map_err(|e| fail(e.to_string()))?;
    let cert = params.self_signed(&signing_key).map_err(|e| fail(e.to_string()))?;
    std::fs::create_dir_all(&dir).map_err(|e| fail(e.to_string()))?;
    std::fs::write(&crt, cert.pem()).map_err(|e| fail(format!("{}: {e}", crt.display())))?;
    write_private(&key, signing_key.serialize_pem().as_bytes()).map_err(|e| fail(format!("{}: {e}", key.display())))?;
    tracing::info!(cert = %crt.display(), "generated a self-signed serving certificate");
    Ok((crt, key))
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(data)
}

/// Every certificate of a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let fail = |reason: String| TlsError::Load {
        what: "certificates",
        path: path.into(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| fail(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(e.to_string()))?;
    if certs.is_empty() {
        return Err(fail("no certificate in the file".into()));
    }
    Ok(certs)
}

/// The private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Load {
        what: "a private key",
        path: path.into(),
        reason: e.to_string(),
    })
}

/// The crypto provider (ring), restricted to `tls_cipher_suites` when given.
fn provider(settings: &TlsSettings) -> Result<CryptoProvider, TlsError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if settings.tls_cipher_suites.is_empty() {
        return Ok(provider);
    }
    let mut chosen = vec![];
    for name in &settings.tls_cipher_suites {
        // Go spells TLS 1.3 suites TLS_AES_…, rustls TLS13_AES_…; both accept
        // the CHACHA20 names with or without the _SHA256 suffix.
        let wanted = name
            .trim()
            .replace("TLS_AES_", "TLS13_AES_")
            .replace("TLS_CHACHA20", "TLS13_CHACHA20");
        let found = provider.cipher_suites.iter().find(|s| {
            let have = format!("{:?}", s.suite());
            have == wanted || have.trim_end_matches("_SHA256") == wanted.trim_end_matches("_SHA256")
        });
        match found {
            Some(s) => chosen.push(*s),
            None if name.starts_with("TLS_") => {
                tracing::warn!(suite = %name, "cipher suite not offered by this build; ignored")
            }
            None => {
                return Err(TlsError::Setting {
                    field: "--tls-cipher-suites",
                    reason: format!("unknown cipher suite {name:?}"),
                });
            }
        }
    }
    // TLS 1.3 suites are not configurable (as in Go): keep them all.
    for s in rustls::crypto::ring::default_provider().cipher_suites {
        if s.tls13().is_some() && !chosen.iter().any(|c| c.suite() == s.suite()) {
            chosen.push(s);
        }
    }
    provider.cipher_suites = chosen;
    Ok(provider)
}

static TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

fn versions(settings: &TlsSettings) -> Result<&'static [&'static rustls::SupportedProtocolVersion], TlsError> {
    match settings.tls_min_version.as_deref().unwrap_or("") {
        "" | "VersionTLS10" | "VersionTLS11" | "VersionTLS12" => Ok(rustls::ALL_VERSIONS),
        "VersionTLS13" => Ok(TLS13_ONLY),
        other => Err(TlsError::Setting {
            field: "--tls-min-version",
            reason: format!("unknown TLS version {other:?} (VersionTLS12 or VersionTLS13)"),
        }),
    }
}

/// The roots of `--client-ca-file`.
pub fn client_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots.add(cert).map_err(|e| TlsError::Load {
            what: "client CA certificates",
            path: path.into(),
            reason: e.to_string(),
        })?;
    }
    Ok(roots)
}

/// A chain verifier for client certificates against `roots` (used by the
/// x509 authenticator after the handshake).
pub fn client_chain_verifier(roots: RootCertStore) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| TlsError::Setting {
            field: "--client-ca-file",
            reason: e.to_string(),
        })
}

/// Requests a client certificate (naming the CA's subjects), checks the
/// handshake signature (proof of the key), and leaves the chain to the x509
/// authenticator.
#[derive(Debug)]
struct RequestClientCert {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The rustls server configuration for the serving certificate `cert`/`key`.
pub fn server_config(settings: &TlsSettings, cert: &Path, key: &Path) -> Result<ServerConfig, TlsError> {
    let (certs, key) = (load_certs(cert)?, load_key(key)?);
    let mut config = config_builder(settings)?.with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The rustls server configuration whose certificate `resolver` picks at
/// every handshake (a certificate issued by the cluster and rotated while
/// the server runs: `serverTLSBootstrap`).
pub fn server_config_resolving(
    settings: &TlsSettings,
    resolver: Arc<dyn rustls::server::ResolvesServerCert>,
) -> Result<ServerConfig, TlsError> {
    let mut config = config_builder(settings)?.with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn config_builder(
    settings: &TlsSettings,
) -> Result<rustls::ConfigBuilder<ServerConfig, rustls::server::WantsServerCert>, TlsError> {
    let provider = Arc::new(provider(settings)?);
    let builder = ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(versions(settings)?)?;
    let builder = match &settings.client_ca_file {
        Some(ca) => {
            let hints = client_roots(ca)?.subjects();
            builder.with_client_cert_verifier(Arc::new(RequestClientCert {
                hints,
                algorithms: provider.signature_verification_algorithms,
            }))
        }
        None => builder.with_no_client_auth(),
    };
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_is_generated_once_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (crt, key) = ensure_self_signed(dir.path(), "node-a", &["10.0.0.7".into()]).unwrap();
        assert_eq!(crt, dir.path().join("pki/kubelet.crt"));
        let first = std::fs::read(&crt).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        ensure_self_signed(dir.path(), "node-a", &[]).unwrap();
        assert_eq!(std::fs::read(&crt).unwrap(), first, "an existing pair is reused");
        let der = load_certs(&crt).unwrap().remove(0);
        let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
        let sans = format!("{:?}", parsed.subject_alternative_name().unwrap().unwrap().value);
        assert!(sans.contains("node-a") && sans.contains("localhost"), "{sans}");
        assert!(server_config(&TlsSettings::default(), &crt, &key).is_ok());
    }

    #[test]
    fn bad_settings_name_their_flag() {
        let dir = tempfile::tempdir().unwrap();
        let (crt, key) = ensure_self_signed(dir.path(), "n", &[]).unwrap();
        let s = TlsSettings {
            tls_min_version: Some("VersionSSL3".into()),
            ..Default::default()
        };
        let e = server_config(&s, &crt, &key).unwrap_err();
        assert!(e.to_string().contains("--tls-min-version"), "{e}");
        let s = TlsSettings {
            tls_cipher_suites: vec!["NOT_A_SUITE".into()],
            ..Default::default()
        };
        assert!(
            server_config(&s, &crt, &key)
                .unwrap_err()
                .to_string()
                .contains("--tls-cipher-suites")
        );
        let s = TlsSettings {
            tls_cipher_suites: vec![
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(),
                "TLS_AES_128_GCM_SHA256".into(),
            ],
            tls_min_version: Some("VersionTLS13".into()),
            ..Default::default()
        };
        assert!(server_config(&s, &crt, &key).is_ok());
        let missing = dir.path().join("none.crt");
        let e = server_config(&TlsSettings::default(), &missing, &key).unwrap_err();
        assert!(e.to_string().contains("none.crt"), "{e}");
    }
}
