//! The envtest cluster's PKI (part of `support/envtest.rs`): one CA that signs the API
//! server's serving certificate and every client certificate, plus the service-account
//! signing key. Later tests use it to sign kubelet serving certificates, to play the CSR
//! signer, or to give the API server `--kubelet-client-certificate`.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, CertifiedIssuer, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// A certificate and its private key, both PEM.
#[derive(Clone, Debug)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The CA of one envtest cluster, and the directory its files are written to.
pub struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    dir: PathBuf,
}

fn params(cn: &str, orgs: &[&str], sans: &[&str]) -> CertificateParams {
    let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(sans).unwrap_or_else(|e| panic!("certificate SANs: {e}"));
    p.distinguished_name = rcgen::DistinguishedName::new();
    for o in orgs {
        p.distinguished_name.push(DnType::OrganizationName, *o);
    }
    p.distinguished_name.push(DnType::CommonName, cn);
    p.use_authority_key_identifier_extension = true;
    p
}

fn key() -> KeyPair {
    KeyPair::generate().unwrap_or_else(|e| panic!("generate key: {e}"))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

impl Pki {
    /// A fresh CA (`CN=envtest-ca`) writing `ca.crt`/`ca.key` and the service-account key
    /// pair `sa.key`/`sa.pub` into `dir`.
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let mut p = params("envtest-ca", &[], &[]);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(p, key()).unwrap_or_else(|e| panic!("CA: {e}"));
        let pki = Pki {
            ca,
            dir: dir.to_path_buf(),
        };
        write(&pki.ca_cert_path(), &pki.ca_cert_pem());
        write(&pki.ca_key_path(), &pki.ca_key_pem());
        let sa = key();
        write(&dir.join("sa.key"), &sa.serialize_pem());
        write(&dir.join("sa.pub"), &sa.public_key_pem());
        pki
    }

    /// The directory the PKI files live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The CA certificate, PEM.
    pub fn ca_cert_pem(&self) -> String {
        self.ca.pem()
    }

    /// The CA private key, PEM (PKCS#8).
    pub fn ca_key_pem(&self) -> String {
        self.ca.key().serialize_pem()
    }

    /// `ca.crt`.
    pub fn ca_cert_path(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// `ca.key`.
    pub fn ca_key_path(&self) -> PathBuf {
        self.dir.join("ca.key")
    }

    /// The service-account signing key (`sa.key`) and its public half (`sa.pub`).
    pub fn service_account_keys(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("sa.key"), self.dir.join("sa.pub"))
    }

    /// A client certificate for the user `cn` in the groups `orgs`.
    pub fn client_cert(&self, cn: &str, orgs: &[&str]) -> CertPair {
        let mut p = params(cn, orgs, &[]);
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(p)
    }

    /// A serving certificate for `cn` valid for `sans` (DNS names or IP addresses).
    pub fn serving_cert(&self, cn: &str, sans: &[&str]) -> CertPair {
        let mut p = params(cn, &[], sans);
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(p)
    }

    /// Signs a PEM certificate signing request as is (subject, SANs, usages of the request),
    /// as a CSR signer would; returns the certificate, PEM.
    pub fn sign_csr(&self, csr_pem: &str) -> Result<String, rcgen::Error> {
        self.sign_csr_with_usages(csr_pem, &[])
    }

    /// [`Pki::sign_csr`] with the key usages of a `CertificateSigningRequest`'s
    /// `spec.usages` ("digital signature", "key encipherment", "server auth",
    /// "client auth"; others are ignored); none keeps the request's own.
    pub fn sign_csr_with_usages(&self, csr_pem: &str, usages: &[String]) -> Result<String, rcgen::Error> {
        self.sign_csr_for(csr_pem, usages, None)
    }

    /// [`Pki::sign_csr_with_usages`] with a certificate valid from a second
    /// ago for `valid_for` (`None`: rcgen's long default).
    pub fn sign_csr_for(
        &self,
        csr_pem: &str,
        usages: &[String],
        valid_for: Option<std::time::Duration>,
    ) -> Result<String, rcgen::Error> {
        let mut csr = CertificateSigningRequestParams::from_pem(csr_pem)?;
        if let Some(d) = valid_for {
            let now = time::OffsetDateTime::now_utc();
            csr.params.not_before = now - time::Duration::seconds(1);
            csr.params.not_after = now + d;
        }
        if !usages.is_empty() {
            let p = &mut csr.params;
            p.key_usages.clear();
            p.extended_key_usages.clear();
            for u in usages {
                match u.as_str() {
                    "digital signature" => p.key_usages.push(KeyUsagePurpose::DigitalSignature),
                    "key encipherment" => p.key_usages.push(KeyUsagePurpose::KeyEncipherment),
                    "server auth" => p.extended_key_usages.push(ExtendedKeyUsagePurpose::ServerAuth),
                    "client auth" => p.extended_key_usages.push(ExtendedKeyUsagePurpose::ClientAuth),
                    _ => {}
                }
            }
        }
        csr.params.use_authority_key_identifier_extension = true;
        let issuer: &Issuer<'_, KeyPair> = &self.ca;
        Ok(csr.signed_by(issuer)?.pem())
    }

    fn sign(&self, p: CertificateParams) -> CertPair {
        let key = key();
        let issuer: &Issuer<'_, KeyPair> = &self.ca;
        let cert = p
            .signed_by(&key, issuer)
            .unwrap_or_else(|e| panic!("sign certificate: {e}"));
        CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// Writes `pair` as `<name>.crt` and `<name>.key` in [`Pki::dir`]; returns both paths.
    pub fn write(&self, name: &str, pair: &CertPair) -> (PathBuf, PathBuf) {
        let (crt, key) = (
            self.dir.join(format!("{name}.crt")),
            self.dir.join(format!("{name}.key")),
        );
        write(&crt, &pair.cert_pem);
        write(&key, &pair.key_pem);
        (crt, key)
    }
}
