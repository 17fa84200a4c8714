//! Asking the API server for a certificate: create the
//! `CertificateSigningRequest` (retried with backoff while the API server is
//! unreachable), then watch it until it is Approved and carries
//! `status.certificate`, Denied or Failed, or the deadline passes.

use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

use super::CertError;
use super::csr::NodeCsr;

/// First retry delay after a failed create; doubled up to [`MAX_BACKOFF`].
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(2);
/// Longest retry delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(32);
/// Deadline of one API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a CSR stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsrOutcome {
    /// Approved and issued: the certificate (PEM).
    Issued(String),
    /// Denied or Failed: the condition type and its reason/message.
    Refused {
        /// `Denied` or `Failed`.
        condition: String,
        /// The condition's reason and message.
        reason: String,
    },
    /// Not decided yet.
    Pending,
}

/// Reads the outcome from a CSR's status (upstream: Denied and Failed win
/// over a certificate).
pub fn outcome(csr: &CertificateSigningRequest) -> CsrOutcome {
    let status = csr.status.as_ref();
    for c in status.and_then(|s| s.conditions.as_ref()).into_iter().flatten() {
        if (c.type_ == "Denied" || c.type_ == "Failed") && c.status != "False" {
            let reason = [c.reason.clone(), c.message.clone()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": ");
            return CsrOutcome::Refused {
                condition: c.type_.clone(),
                reason,
            };
        }
    }
    match status.and_then(|s| s.certificate.as_ref()) {
        Some(cert) if !cert.0.is_empty() => CsrOutcome::Issued(String::from_utf8_lossy(&cert.0).into_owned()),
        _ => CsrOutcome::Pending,
    }
}

/// The CSR object for `csr`.
pub fn csr_object(csr: &NodeCsr) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(csr.name.clone()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr.csr_pem.clone().into_bytes()),
            signer_name: csr.signer.to_string(),
            usages: Some(csr.usages.clone()),
            ..Default::default()
        },
        status: None,
    }
}

/// Creates the CSR for `csr` and waits up to `timeout` for its certificate.
pub async fn request_certificate(client: Client, csr: &NodeCsr, timeout: Duration) -> Result<String, CertError> {
    let deadline = Instant::now() + timeout;
    let api: Api<CertificateSigningRequest> = Api::all(client);
    let name = csr.name.clone();
    let obj = csr_object(csr);
    let mut backoff = INITIAL_BACKOFF;
    loop {
        let res = tokio::time::timeout(CALL_TIMEOUT, api.create(&PostParams::default(), &obj)).await;
        let err = match res {
            Ok(Ok(_)) => break,
            // a retry after a lost response: ours if it carries our request
            Ok(Err(kube::Error::Api(s))) if s.code == 409 => match api.get(&name).await {
                Ok(existing) if existing.spec.request == obj.spec.request => break,
                Ok(_) => return Err(CertError::Conflict { name }),
                Err(e) => e.to_string(),
            },
            Ok(Err(kube::Error::Api(s))) if s.code != 429 && s.code < 500 => {
                return Err(CertError::Create {
                    name,
                    reason: s.message.clone(),
                });
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {CALL_TIMEOUT:?}"),
        };
        if Instant::now() + backoff > deadline {
            return Err(CertError::Timeout {
                name,
                timeout,
                last: err,
            });
        }
        tracing::warn!(csr = %name, error = %err, retry_in = ?backoff, "cannot create the certificate signing request; retrying");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    tracing::info!(csr = %name, signer = csr.signer, "certificate signing request created; waiting for approval and issuance");
    let cond = |o: Option<&CertificateSigningRequest>| o.is_some_and(|c| outcome(c) != CsrOutcome::Pending);
    let wait = kube::runtime::wait::await_condition(api.clone(), &name, cond);
    let obj = match tokio::time::timeout_at(deadline, wait).await {
        Ok(Ok(Some(o))) => o,
        Ok(Ok(None)) => {
            return Err(CertError::Refused {
                name,
                condition: "Deleted".into(),
                reason: "the CSR was deleted".into(),
            });
        }
        Ok(Err(e)) => {
            return Err(CertError::Timeout {
                name,
                timeout,
                last: e.to_string(),
            });
        }
        Err(_) => {
            return Err(CertError::Timeout {
                name,
                timeout,
                last: "not approved and issued yet".into(),
            });
        }
    };
    match outcome(&obj) {
        CsrOutcome::Issued(cert) => Ok(cert),
        CsrOutcome::Refused { condition, reason } => Err(CertError::Refused {
            name,
            condition,
            reason,
        }),
        CsrOutcome::Pending => Err(CertError::Timeout {
            name,
            timeout,
            last: "pending".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::certificates::v1::{CertificateSigningRequestCondition, CertificateSigningRequestStatus};

    fn with(conds: &[(&str, &str)], cert: Option<&str>) -> CertificateSigningRequest {
        CertificateSigningRequest {
            status: Some(CertificateSigningRequestStatus {
                conditions: Some(
                    conds
                        .iter()
                        .map(|(t, r)| CertificateSigningRequestCondition {
                            type_: t.to_string(),
                            status: "True".into(),
                            reason: Some(r.to_string()),
                            message: Some("by policy".into()),
                            ..Default::default()
                        })
                        .collect(),
                ),
                certificate: cert.map(|c| ByteString(c.as_bytes().to_vec())),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn outcome_reads_conditions_and_certificate() {
        assert_eq!(outcome(&CertificateSigningRequest::default()), CsrOutcome::Pending);
        assert_eq!(outcome(&with(&[("Approved", "A")], None)), CsrOutcome::Pending);
        assert_eq!(
            outcome(&with(&[("Approved", "A")], Some("PEM"))),
            CsrOutcome::Issued("PEM".into())
        );
        assert_eq!(
            outcome(&with(&[("Denied", "NotMyNode")], None)),
            CsrOutcome::Refused {
                condition: "Denied".into(),
                reason: "NotMyNode: by policy".into()
            }
        );
        assert!(matches!(
            outcome(&with(&[("Approved", "A"), ("Failed", "SignerError")], Some("PEM"))),
            CsrOutcome::Refused { .. }
        ));
    }

    #[test]
    fn object_carries_signer_usages_and_request() {
        let c = super::super::csr::build("n1", super::super::csr::CertKind::Client, &[]).unwrap();
        let o = csr_object(&c);
        assert_eq!(o.metadata.name.as_deref(), Some(c.name.as_str()));
        assert_eq!(o.spec.signer_name, "kubernetes.io/kube-apiserver-client-kubelet");
        assert_eq!(o.spec.usages.unwrap(), ["digital signature", "client auth"]);
        assert_eq!(o.spec.request.0, c.csr_pem.as_bytes());
    }
}
