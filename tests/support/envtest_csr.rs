//! The CSR signer part of `support/envtest.rs`: what kube-controller-manager's
//! approver and signer would do for a `CertificateSigningRequest`, done on demand.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Api;
use kube::api::{Patch, PatchParams};

impl super::EnvTest {
    /// Approves the CSR `name` (condition `Approved`) and issues its certificate from the
    /// cluster CA with the CSR's `spec.usages`, as admin; returns the certificate (PEM).
    pub async fn approve_and_sign_csr(&self, name: &str) -> Result<String, String> {
        self.approve_and_sign_csr_for(name, None).await
    }

    /// [`EnvTest::approve_and_sign_csr`] issuing a certificate valid for `valid_for`.
    pub async fn approve_and_sign_csr_for(
        &self,
        name: &str,
        valid_for: Option<std::time::Duration>,
    ) -> Result<String, String> {
        let csrs: Api<CertificateSigningRequest> = Api::all(self.admin_client().await);
        let csr = csrs.get(name).await.map_err(|e| format!("get CSR {name}: {e}"))?;
        let request = String::from_utf8(csr.spec.request.0.clone()).map_err(|e| format!("CSR {name}: {e}"))?;
        let usages = csr.spec.usages.clone().unwrap_or_default();
        let approval = serde_json::json!({"status": {"conditions": [{
            "type": "Approved", "status": "True", "reason": "EnvtestApprove",
            "message": "approved by the test harness"
        }]}});
        let pp = PatchParams::default();
        csrs.patch_subresource("approval", name, &pp, &Patch::Merge(&approval))
            .await
            .map_err(|e| format!("approve CSR {name}: {e}"))?;
        let cert = self
            .pki()
            .sign_csr_for(&request, &usages, valid_for)
            .map_err(|e| format!("sign CSR {name}: {e}"))?;
        let status = serde_json::json!({"status": {"certificate": STANDARD.encode(&cert)}});
        csrs.patch_status(name, &pp, &Patch::Merge(&status))
            .await
            .map_err(|e| format!("issue CSR {name}: {e}"))?;
        Ok(cert)
    }
}
