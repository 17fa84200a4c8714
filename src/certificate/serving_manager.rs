//! [`ServingCertManager`]: keeps the [`ServingCert`] of the 10250 server
//! issued and renewed (upstream's certificate manager for
//! `serverTLSBootstrap`).
//!
//! On start it serves the pair in `<cert-dir>/kubelet-server-current.pem`
//! while still valid; it renews at the rotation deadline (70–90 % of the
//! lifetime, jittered), and asks for a certificate at once when there is
//! none or it expired. Asking is a CSR for `system:node:<node>` with signer
//! `kubernetes.io/kubelet-serving` and the node's host name and addresses as
//! SANs, waited on (each wait bounded) and retried with backoff. The actor
//! keeps no state a restart would lose: the files and the shared
//! [`ServingCert`] are the state.

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

use super::csr::{self, CertKind};
use super::request::request_certificate;
use super::rotation::{RetryBackoff, random_jitter, rotation_deadline, wait_until};
use super::serving::ServingCert;
use super::store::{CertPair, CertStore};

/// How long one CSR is waited on before asking again.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// What the manager asks for and where it keeps it.
#[derive(Clone, Debug)]
pub struct ServingCertSettings {
    /// The node name (subject `system:node:<node>`).
    pub node_name: String,
    /// Host names and IP addresses of the node (the certificate's SANs).
    pub sans: Vec<String>,
    /// `--cert-dir`.
    pub cert_dir: PathBuf,
}

/// The actor. See the [module docs](self).
pub struct ServingCertManager {
    settings: ServingCertSettings,
    client: kube::Client,
    cert: ServingCert,
    retry: RetryBackoff,
    timer: Option<SpawnHandle>,
}

impl ServingCertManager {
    /// A manager publishing into `cert`, asking the API server through `client`.
    pub fn new(settings: ServingCertSettings, client: kube::Client, cert: ServingCert) -> Self {
        Self {
            settings,
            client,
            cert,
            retry: RetryBackoff::default(),
            timer: None,
        }
    }

    fn store(&self) -> CertStore {
        CertStore::new(&self.settings.cert_dir, CertKind::Serving.pair_name())
    }

    fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    fn later(&mut self, wait: Duration, ctx: &mut Context<Self>) {
        if let Some(t) = self.timer.take() {
            ctx.cancel_future(t);
        }
        self.timer = Some(ctx.run_later(wait, |act, ctx| {
            act.timer = None;
            act.cycle(ctx);
        }));
    }

    /// Serves the stored pair if none is served; sleeps until the renewal
    /// deadline, or asks for a new certificate when it has passed.
    fn cycle(&mut self, ctx: &mut Context<Self>) {
        let now = Self::now();
        if self.cert.validity().is_none() {
            match self.store().load() {
                Ok(Some(pair)) => match self.cert.set(&pair) {
                    Ok(v) if now < v.not_after => {
                        tracing::info!(cert = %self.store().current_path().display(), "serving the stored kubelet serving certificate");
                    }
                    Ok(_) => tracing::info!("the stored kubelet serving certificate expired"),
                    Err(e) => tracing::warn!(error = %e, "the stored kubelet serving certificate is unusable"),
                },
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read the stored kubelet serving certificate"),
            }
        }
        if let Some(v) = self.cert.validity().filter(|v| now < v.not_after) {
            let deadline = rotation_deadline(v, random_jitter());
            if deadline > now {
                tracing::info!(
                    expires = v.not_after,
                    rotation_deadline = deadline,
                    "kubelet serving certificate rotation scheduled"
                );
                self.later(wait_until(deadline, now), ctx);
                return;
            }
        }
        self.request(ctx);
    }

    fn request(&mut self, ctx: &mut Context<Self>) {
        let (settings, client) = (self.settings.clone(), self.client.clone());
        let fut = async move {
            let req = csr::build(&settings.node_name, CertKind::Serving, &settings.sans)?;
            tracing::info!(csr = %req.name, "requesting a kubelet serving certificate");
            let cert_pem = request_certificate(client, &req, REQUEST_TIMEOUT).await?;
            Ok::<_, super::CertError>(CertPair {
                cert_pem,
                key_pem: req.key_pem,
            })
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            let stored = res.and_then(|pair| {
                act.store().update(&pair)?;
                act.cert.set(&pair)
            });
            match stored {
                Ok(v) => {
                    tracing::info!(expires = v.not_after, "kubelet serving certificate issued and served");
                    act.retry.succeeded();
                    act.cycle(ctx);
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?act.retry.current(), "could not obtain a kubelet serving certificate");
                    let wait = act.retry.failed();
                    act.later(wait, ctx);
                }
            }
        }));
    }
}

impl Actor for ServingCertManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.cycle(ctx);
    }
}
