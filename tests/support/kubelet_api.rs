//! Clients for the kubelet API in tests: a PKI (rcgen) for client
//! certificates, an HTTPS client (reqwest) that trusts the kubelet's
//! self-signed certificate, and a WebSocket remotecommand client (the
//! `v4/v5.channel.k8s.io` protocols kubectl speaks) over TLS.
//!
//! Included by the test files with `#[path]`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// A certificate authority that signs client certificates.
pub struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// The CA certificate (PEM), for `--client-ca-file`.
    pub pem: String,
}

/// A client certificate and key (PEM).
#[derive(Clone)]
pub struct ClientCert {
    /// Certificate.
    pub cert: String,
    /// Key.
    pub key: String,
}

impl Ca {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Self {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A client certificate for user `cn` in groups `orgs`, valid for `days` (negative: expired).
    pub fn client(&self, cn: &str, orgs: &[&str], days: i64) -> ClientCert {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        for o in orgs {
            params.distinguished_name.push(rcgen::DnType::OrganizationName, *o);
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let now = time::OffsetDateTime::now_utc();
        if days < 0 {
            params.not_before = now - time::Duration::days(10);
            params.not_after = now + time::Duration::days(days);
        } else {
            params.not_before = now - time::Duration::days(1);
            params.not_after = now + time::Duration::days(days);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        ClientCert {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// An HTTPS client that accepts any server certificate, presenting `cert` if given.
pub fn https(cert: Option<&ClientCert>) -> reqwest::Client {
    let mut b = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .http1_only()
        .timeout(std::time::Duration::from_secs(30));
    if let Some(c) = cert {
        let pem = format!("{}{}", c.cert, c.key);
        b = b.identity(reqwest::Identity::from_pem(pem.as_bytes()).unwrap());
    }
    b.build().unwrap()
}

#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What a remotecommand session produced.
#[derive(Debug, Default)]
pub struct Session {
    /// Bytes on channel 1.
    pub stdout: Vec<u8>,
    /// Bytes on channel 2.
    pub stderr: Vec<u8>,
    /// The metav1.Status on channel 3.
    pub status: String,
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// A WebSocket to `addr` `path_and_query` over TLS, speaking `protocol`.
pub async fn ws_connect(
    addr: SocketAddr,
    path_and_query: &str,
    protocol: &str,
    cert: Option<&ClientCert>,
) -> Result<Ws, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider)));
    let config = match cert {
        Some(c) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(c.cert.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap(),
                PrivateKeyDer::from_pem_slice(c.key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let mut req = format!("wss://{addr}{path_and_query}").into_client_request().unwrap();
    req.headers_mut()
        .insert("sec-websocket-protocol", protocol.parse().unwrap());
    let (ws, resp) = tokio_tungstenite::client_async(req, tls)
        .await
        .map_err(|e| e.to_string())?;
    let chosen = resp
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok());
    if chosen != Some(protocol) {
        return Err(format!("protocol {chosen:?} chosen, wanted {protocol}"));
    }
    Ok(ws)
}

/// Port-forwards one port over WebSocket (`v4.channel.k8s.io`): checks the
/// two port headers, sends `data` on the data channel, returns what comes back on it.
pub async fn ws_port_forward(
    addr: SocketAddr,
    path_and_query: &str,
    port: u16,
    data: &[u8],
) -> Result<Vec<u8>, String> {
    let ws = ws_connect(addr, path_and_query, "v4.channel.k8s.io", None).await?;
    let (mut tx, mut rx) = ws.split();
    let mut headers = vec![];
    while headers.len() < 2 {
        match rx
            .next()
            .await
            .ok_or("closed before the port headers")?
            .map_err(|e| e.to_string())?
        {
            Message::Binary(b) => headers.push(b.to_vec()),
            other => return Err(format!("unexpected {other:?}")),
        }
    }
    let [lo, hi] = port.to_le_bytes();
    if headers != [vec![0, lo, hi], vec![1, lo, hi]] {
        return Err(format!("port headers {headers:?}"));
    }
    let mut m = vec![0u8];
    m.extend_from_slice(data);
    tx.send(Message::Binary(m.into())).await.map_err(|e| e.to_string())?;
    match rx
        .next()
        .await
        .ok_or("closed before the echo")?
        .map_err(|e| e.to_string())?
    {
        Message::Binary(b) if b.first() == Some(&0) => Ok(b[1..].to_vec()),
        other => Err(format!("unexpected {other:?}")),
    }
}

/// Runs a WebSocket remotecommand session against `addr` `path_and_query`
/// with `protocol`, sending `stdin` (then closing it, v5) if given.
pub async fn ws_session(
    addr: SocketAddr,
    path_and_query: &str,
    protocol: &str,
    cert: Option<&ClientCert>,
    stdin: Option<&[u8]>,
) -> Result<Session, String> {
    let ws = ws_connect(addr, path_and_query, protocol, cert).await?;
    let (mut tx, mut rx) = ws.split();
    if let Some(input) = stdin {
        let mut m = vec![0u8];
        m.extend_from_slice(input);
        tx.send(Message::Binary(m.into())).await.map_err(|e| e.to_string())?;
        if protocol.starts_with("v5") {
            tx.send(Message::Binary(vec![255u8, 0].into()))
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    let mut out = Session::default();
    while let Some(msg) = rx.next().await {
        match msg.map_err(|e| e.to_string())? {
            Message::Binary(data) => match data.first() {
                Some(1) => out.stdout.extend_from_slice(&data[1..]),
                Some(2) => out.stderr.extend_from_slice(&data[1..]),
                Some(3) => out.status.push_str(&String::from_utf8_lossy(&data[1..])),
                _ => {}
            },
            Message::Close(_) => break,
            _ => {}
        }
    }
    Ok(out)
}
