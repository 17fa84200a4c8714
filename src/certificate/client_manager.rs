//! [`ClientCertManager`]: renews the kubelet's client certificate before it
//! expires (`rotateCertificates`, upstream's client certificate manager) and
//! moves the API clients onto it.
//!
//! It reads the pair in `<cert-dir>/kubelet-client-current.pem` (where TLS
//! bootstrap put it, and where the kubeconfig points), sleeps until the
//! rotation deadline (70–90 % of its lifetime, jittered) and then asks for a
//! new one with a `kubernetes.io/kube-apiserver-client-kubelet` CSR for
//! `system:node:<node>`, sent with the current certificate (the
//! controller-manager auto-approves these "selfnodeclient" CSRs). The
//! issued pair is stored, the bulk and heartbeat clients are rebuilt from
//! the kubeconfig and put in their [`ClientSlot`]s: every holder of those
//! clients now connects with the new certificate, and the old connections
//! close when their last request ends. Failures are retried with backoff
//! (2 s doubling to 5 min); each CSR is waited on at most 15 min.
//!
//! State: the files and the slots, both outside the actor; a restarted
//! manager reads the pair again and reschedules (a CSR in flight is asked
//! again).

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

use super::csr::{self, CertKind};
use super::request::request_certificate;
use super::rotation::{RetryBackoff, random_jitter, rotation_deadline, wait_until};
use super::store::{CertPair, CertStore, leaf_validity};
use crate::cluster::rotating_client::{ClientSlot, rotating};
use crate::cluster::{Qps, client_from_kubeconfig, heartbeat_client_from_kubeconfig};

/// How long one CSR is waited on before asking again.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// What the manager renews, and how the clients are rebuilt.
#[derive(Clone, Debug)]
pub struct RotationTarget {
    /// The node name (subject `system:node:<node>`).
    pub node_name: String,
    /// `--cert-dir`.
    pub cert_dir: PathBuf,
    /// `--kubeconfig` (its user's certificate is the store's current pair).
    pub kubeconfig: PathBuf,
    /// The bulk client's rate limit.
    pub qps: Qps,
    /// The heartbeat client's per-call timeout.
    pub heartbeat_timeout: Duration,
}

impl RotationTarget {
    /// `<cert-dir>/kubelet-client-current.pem`.
    pub fn current_path(&self) -> PathBuf {
        CertStore::new(&self.cert_dir, CertKind::Client.pair_name()).current_path()
    }

    /// The clients made rotatable, and the rotation to hand to the kubelet;
    /// `None` (logged) when the kubeconfig does not read its client pair from
    /// [`current_path`](Self::current_path) (no TLS bootstrap): a renewed
    /// pair would not be used, so none is asked for.
    pub fn wrap(
        self,
        bulk: kube::Client,
        heartbeat: kube::Client,
    ) -> (kube::Client, kube::Client, Option<ClientRotation>) {
        let current = self.current_path();
        if !super::bootstrap::kubeconfig_uses_cert_file(&self.kubeconfig, &current) {
            tracing::warn!(kubeconfig = %self.kubeconfig.display(), cert = %current.display(),
                "rotateCertificates: the kubeconfig does not read its client certificate from the cert dir (use --bootstrap-kubeconfig); it will not be rotated");
            return (bulk, heartbeat, None);
        }
        let (bulk, bulk_slot) = rotating(bulk);
        let (heartbeat, heartbeat_slot) = rotating(heartbeat);
        let rotation = ClientRotation {
            target: self,
            bulk: bulk_slot,
            heartbeat: heartbeat_slot,
        };
        (bulk, heartbeat, Some(rotation))
    }
}

/// What the manager renews and which clients follow.
#[derive(Clone, Debug)]
pub struct ClientRotation {
    /// The certificate and how to rebuild the clients.
    pub target: RotationTarget,
    /// Where the bulk client is swapped.
    pub bulk: ClientSlot,
    /// Where the heartbeat client is swapped.
    pub heartbeat: ClientSlot,
}

/// The actor. See the [module docs](self).
pub struct ClientCertManager {
    rotation: ClientRotation,
    client: kube::Client,
    retry: RetryBackoff,
    timer: Option<SpawnHandle>,
}

impl ClientCertManager {
    /// A manager asking through `client` (the rotating bulk client).
    pub fn new(rotation: ClientRotation, client: kube::Client) -> Self {
        Self {
            rotation,
            client,
            retry: RetryBackoff::default(),
            timer: None,
        }
    }

    fn store(&self) -> CertStore {
        CertStore::new(&self.rotation.target.cert_dir, CertKind::Client.pair_name())
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

    /// Sleeps until the stored pair's rotation deadline, or renews now.
    fn cycle(&mut self, ctx: &mut Context<Self>) {
        let now = chrono::Utc::now().timestamp();
        let validity = match self.store().load() {
            Ok(Some(pair)) => leaf_validity(&pair.cert_pem).ok(),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the client certificate");
                None
            }
        };
        if let Some(v) = validity.filter(|v| now < v.not_after) {
            let deadline = rotation_deadline(v, random_jitter());
            if deadline > now {
                tracing::info!(
                    expires = v.not_after,
                    rotation_deadline = deadline,
                    "kubelet client certificate rotation scheduled"
                );
                self.later(wait_until(deadline, now), ctx);
                return;
            }
        }
        self.renew(ctx);
    }

    fn renew(&mut self, ctx: &mut Context<Self>) {
        let (r, client, store) = (self.rotation.target.clone(), self.client.clone(), self.store());
        let fut = async move {
            let req = csr::build(&r.node_name, CertKind::Client, &[])?;
            tracing::info!(csr = %req.name, "requesting a new kubelet client certificate");
            let cert_pem = request_certificate(client, &req, REQUEST_TIMEOUT).await?;
            store.update(&CertPair {
                cert_pem,
                key_pem: req.key_pem,
            })?;
            let rebuild = |e: crate::cluster::ClientError| super::CertError::Kubeconfig {
                path: r.kubeconfig.clone(),
                reason: e.to_string(),
            };
            let bulk = client_from_kubeconfig(&r.kubeconfig, r.qps).await.map_err(rebuild)?;
            let heartbeat = heartbeat_client_from_kubeconfig(&r.kubeconfig, r.heartbeat_timeout)
                .await
                .map_err(rebuild)?;
            Ok::<_, super::CertError>((req.name, bulk, heartbeat))
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok((csr, bulk, heartbeat)) => {
                act.rotation.bulk.swap(bulk);
                act.rotation.heartbeat.swap(heartbeat);
                tracing::info!(%csr, cert = %act.store().current_path().display(),
                    "kubelet client certificate rotated; new connections use it");
                act.retry.succeeded();
                act.cycle(ctx);
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?act.retry.current(), "could not rotate the kubelet client certificate");
                let wait = act.retry.failed();
                act.later(wait, ctx);
            }
        }));
    }
}

impl Actor for ClientCertManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.cycle(ctx);
    }
}
