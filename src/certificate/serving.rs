//! The 10250 server's certificate issued by the cluster (`serverTLSBootstrap`,
//! upstream `NewKubeletServerCertificateManager`): a CSR with signer
//! `kubernetes.io/kubelet-serving`, renewed at 70–90 % of its lifetime, and
//! picked up by the running server without a restart.
//!
//! [`ServingCert`] holds the current pair and answers every TLS handshake
//! (rustls `ResolvesServerCert`). It is the state that outlives the
//! manager actor; the pair is also in `<cert-dir>/kubelet-server-current.pem`,
//! so a restarted kubelet serves the last certificate at once. Until a
//! certificate is issued, handshakes fail, as upstream's do ("no serving
//! certificate available for the kubelet").

use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::CertError;
use super::store::{CertPair, Validity, leaf_validity};

/// A loaded pair and its validity.
type Served = (Arc<CertifiedKey>, Validity);

/// The current serving pair, shared by the TLS server and the manager.
#[derive(Clone)]
pub struct ServingCert {
    provider: Arc<CryptoProvider>,
    current: Arc<RwLock<Option<Served>>>,
}

impl std::fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCert")
            .field("validity", &self.validity())
            .finish()
    }
}

impl Default for ServingCert {
    fn default() -> Self {
        Self::new(Arc::new(rustls::crypto::ring::default_provider()))
    }
}

impl ServingCert {
    /// No certificate yet; keys are loaded with `provider`.
    pub fn new(provider: Arc<CryptoProvider>) -> Self {
        Self {
            provider,
            current: Arc::default(),
        }
    }

    /// Serves `pair` from the next handshake on; returns its validity.
    pub fn set(&self, pair: &CertPair) -> Result<Validity, CertError> {
        let bad = |reason: String| CertError::Parse {
            path: "kubelet-server-current.pem".into(),
            reason,
        };
        let validity = leaf_validity(&pair.cert_pem).map_err(bad)?;
        let certs = CertificateDer::pem_slice_iter(pair.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(pair.key_pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let key = CertifiedKey::from_der(certs, key, &self.provider).map_err(|e| bad(e.to_string()))?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some((Arc::new(key), validity));
        Ok(validity)
    }

    /// The validity of the pair served now, if any.
    pub fn validity(&self) -> Option<Validity> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|(_, v)| *v)
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        if current.is_none() {
            tracing::warn!("no serving certificate available for the kubelet");
        }
        current.as_ref().map(|(k, _)| k.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(cn: &str) -> CertPair {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec![cn.to_string()]).expect("params");
        let cert = params.self_signed(&key).expect("cert");
        CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    #[test]
    fn the_served_pair_is_swapped_in_place() {
        let served = ServingCert::default();
        assert_eq!(served.validity(), None, "nothing before the first issue");
        let a = self_signed("a");
        let v = served.set(&a).expect("usable pair");
        assert_eq!(served.validity(), Some(v));
        let clone = served.clone();
        let first = clone.current.read().unwrap().as_ref().unwrap().0.cert[0].clone();
        served.set(&self_signed("b")).expect("usable pair");
        let second = clone.current.read().unwrap().as_ref().unwrap().0.cert[0].clone();
        assert_ne!(first, second, "a clone (the TLS server's) sees the new pair");
    }

    #[test]
    fn an_unusable_pair_is_refused_and_the_old_one_kept() {
        let served = ServingCert::default();
        let good = self_signed("a");
        let v = served.set(&good).expect("usable");
        let mismatched = CertPair {
            cert_pem: good.cert_pem.clone(),
            key_pem: self_signed("other").key_pem,
        };
        assert!(served.set(&mismatched).is_err(), "key does not match the certificate");
        let garbage = CertPair {
            cert_pem: "not a pem".into(),
            key_pem: String::new(),
        };
        assert!(served.set(&garbage).is_err());
        assert_eq!(served.validity(), Some(v));
    }
}
