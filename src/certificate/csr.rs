//! Building a node's certificate signing request, as upstream's
//! `pkg/kubelet/certificate` does: a fresh ECDSA P-256 key, subject
//! `CN=system:node:<node>, O=system:nodes`, the signer and the usages of the
//! kind of certificate (client or serving), and the CSR object's name derived
//! from the public key, the subject and the usages (`node-csr-<digest>`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PublicKeyData, SanType};

use super::CertError;

/// Signer of the kubelet's client certificate.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of the kubelet's serving certificate.
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The group every node identity belongs to.
pub const NODES_GROUP: &str = "system:nodes";

/// Which certificate of the kubelet a CSR asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertKind {
    /// The client certificate (authenticates the kubelet to the API server).
    Client,
    /// The serving certificate of the 10250 server.
    Serving,
}

impl CertKind {
    /// The `spec.signerName` of the CSR.
    pub fn signer(self) -> &'static str {
        match self {
            CertKind::Client => CLIENT_SIGNER,
            CertKind::Serving => SERVING_SIGNER,
        }
    }

    /// The `spec.usages` of the CSR for an ECDSA key (upstream adds
    /// "key encipherment" only for RSA keys; actlet's keys are ECDSA).
    pub fn usages(self) -> Vec<String> {
        let last = match self {
            CertKind::Client => "client auth",
            CertKind::Serving => "server auth",
        };
        vec!["digital signature".to_string(), last.to_string()]
    }

    /// The store's pair name: files `<pair>-current.pem`, `<pair>-<timestamp>.pem`.
    pub fn pair_name(self) -> &'static str {
        match self {
            CertKind::Client => "kubelet-client",
            CertKind::Serving => "kubelet-server",
        }
    }
}

/// A new key with its certificate signing request.
#[derive(Debug, Clone)]
pub struct NodeCsr {
    /// The private key, PEM (PKCS#8).
    pub key_pem: String,
    /// The PKCS#10 request, PEM.
    pub csr_pem: String,
    /// The name of the `CertificateSigningRequest` object (`node-csr-<digest>`).
    pub name: String,
    /// `spec.signerName`.
    pub signer: &'static str,
    /// `spec.usages`.
    pub usages: Vec<String>,
}

/// Generates an ECDSA P-256 key and the CSR for `node`'s certificate of
/// `kind`. `sans` (serving only; hostnames and IPs) become DNS or IP SANs.
pub fn build(node: &str, kind: CertKind, sans: &[String]) -> Result<NodeCsr, CertError> {
    let fail = |e: rcgen::Error| CertError::Csr(e.to_string());
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(fail)?;
    let mut params = CertificateParams::default();
    let cn = format!("system:node:{node}");
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn.clone());
    dn.push(DnType::OrganizationName, NODES_GROUP);
    params.distinguished_name = dn;
    if kind == CertKind::Serving {
        for s in sans {
            let san = match s.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(s.clone().try_into().map_err(fail)?),
            };
            if !params.subject_alt_names.contains(&san) {
                params.subject_alt_names.push(san);
            }
        }
    }
    let csr = params.serialize_request(&key).map_err(fail)?;
    let usages = kind.usages();
    let name = digested_name(&key.subject_public_key_info(), &cn, &[NODES_GROUP], &usages);
    Ok(NodeCsr {
        key_pem: key.serialize_pem(),
        csr_pem: csr.pem().map_err(fail)?,
        name,
        signer: kind.signer(),
        usages,
    })
}

/// Upstream's `digestedName`: SHA-512/256 over the base64url of the public
/// key (SPKI DER), the CN, each O and each usage, each followed by `|`.
fn digested_name(spki_der: &[u8], cn: &str, orgs: &[&str], usages: &[String]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA512_256);
    let mut write = |data: &[u8]| {
        ctx.update(URL_SAFE_NO_PAD.encode(data).as_bytes());
        ctx.update(b"|");
    };
    write(spki_der);
    write(cn.as_bytes());
    for o in orgs {
        write(o.as_bytes());
    }
    for u in usages {
        write(u.as_bytes());
    }
    format!("node-csr-{}", URL_SAFE_NO_PAD.encode(ctx.finish().as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::certification_request::X509CertificationRequest;
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    use x509_parser::prelude::FromDer;

    fn parse(pem: &str) -> Vec<u8> {
        let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        assert_eq!(p.label, "CERTIFICATE REQUEST");
        p.contents
    }

    #[test]
    fn client_csr_has_node_subject_signer_and_usages() {
        let c = build("node-a", CertKind::Client, &["ignored.example".into()]).unwrap();
        assert_eq!(c.signer, "kubernetes.io/kube-apiserver-client-kubelet");
        assert_eq!(c.usages, ["digital signature", "client auth"]);
        assert!(c.name.starts_with("node-csr-"), "{}", c.name);
        let der = parse(&c.csr_pem);
        let (_, req) = X509CertificationRequest::from_der(&der).unwrap();
        req.verify_signature().unwrap();
        let info = &req.certification_request_info;
        let cn: Vec<_> = info.subject.iter_common_name().map(|a| a.as_str().unwrap()).collect();
        let o: Vec<_> = info.subject.iter_organization().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(cn, ["system:node:node-a"]);
        assert_eq!(o, ["system:nodes"]);
        // ECDSA P-256 key; no SANs on a client certificate
        assert_eq!(info.subject_pki.algorithm.algorithm.to_id_string(), "1.2.840.10045.2.1");
        let has_san = req
            .requested_extensions()
            .into_iter()
            .flatten()
            .any(|e| matches!(e, ParsedExtension::SubjectAlternativeName(_)));
        assert!(!has_san);
        assert!(c.key_pem.contains("PRIVATE KEY"));
    }

    #[test]
    fn serving_csr_carries_hostname_and_ips_as_sans() {
        let sans = [
            "node-a".to_string(),
            "10.0.0.5".into(),
            "fd00::5".into(),
            "node-a".into(),
        ];
        let c = build("node-a", CertKind::Serving, &sans).unwrap();
        assert_eq!(c.signer, "kubernetes.io/kubelet-serving");
        assert_eq!(c.usages, ["digital signature", "server auth"]);
        let der = parse(&c.csr_pem);
        let (_, req) = X509CertificationRequest::from_der(&der).unwrap();
        let mut dns = vec![];
        let mut ips = vec![];
        for ext in req.requested_extensions().into_iter().flatten() {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for n in &san.general_names {
                    match n {
                        GeneralName::DNSName(d) => dns.push(d.to_string()),
                        GeneralName::IPAddress(b) => ips.push(b.len()),
                        _ => {}
                    }
                }
            }
        }
        assert_eq!(dns, ["node-a"]);
        assert_eq!(ips, [4, 16]);
    }

    #[test]
    fn name_depends_on_key_subject_and_usages() {
        let a = digested_name(b"key", "system:node:a", &["system:nodes"], &["client auth".into()]);
        assert_eq!(
            a,
            digested_name(b"key", "system:node:a", &["system:nodes"], &["client auth".into()])
        );
        assert_ne!(
            a,
            digested_name(b"key2", "system:node:a", &["system:nodes"], &["client auth".into()])
        );
        assert_ne!(
            a,
            digested_name(b"key", "system:node:b", &["system:nodes"], &["client auth".into()])
        );
        assert_ne!(
            a,
            digested_name(b"key", "system:node:a", &["system:nodes"], &["server auth".into()])
        );
        // SHA-512/256 → 32 bytes → 43 base64url characters
        assert_eq!(a.len(), "node-csr-".len() + 43);
        let c1 = build("n", CertKind::Client, &[]).unwrap();
        let c2 = build("n", CertKind::Client, &[]).unwrap();
        assert_ne!(c1.name, c2.name, "a fresh key each time");
    }
}
