//! [`LeaseActor`]: keeps `kube-node-lease/<node>` renewed (upstream
//! `controller.sync`), one sync at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::PostParams;

use super::LeaseError;
use super::renew::{Backoff, LEASE_NAMESPACE, MAX_UPDATE_RETRIES, new_lease, node_owner, renewed};
use crate::clock::WallClock;
use crate::cluster::node::NodeHandle;
use crate::cluster::watch_backoff::ApiReachability;

/// What the [`LeaseActor`] needs.
#[derive(Clone)]
pub struct LeaseDeps {
    /// The API client (identity `system:node:<node_name>`).
    pub client: kube::Client,
    /// The node name (also the lease name and holder).
    pub node_name: String,
    /// The node actor's view (the Node's UID for the owner reference).
    pub node: NodeHandle,
    /// `leaseDurationSeconds` (40).
    pub duration_seconds: i32,
    /// Renewal period (10 s).
    pub renew_interval: Duration,
    /// The clock of `renewTime`.
    pub wall_clock: WallClock,
    /// Raised when a renewal gets through after a failure (or first after
    /// start): failing watches restart instead of sleeping out their backoff.
    pub reachability: ApiReachability,
}

impl LeaseDeps {
    /// Upstream's settings: 40 s duration, renewed every 10 s, system clock.
    pub fn new(client: kube::Client, node_name: impl Into<String>, node: NodeHandle) -> Self {
        Self {
            client,
            node_name: node_name.into(),
            node,
            duration_seconds: super::renew::LEASE_DURATION_SECONDS,
            renew_interval: super::renew::RENEW_INTERVAL,
            wall_clock: WallClock::system(),
            reachability: ApiReachability::default(),
        }
    }
}

impl std::fmt::Debug for LeaseDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseDeps")
            .field("node_name", &self.node_name)
            .field("duration_seconds", &self.duration_seconds)
            .field("renew_interval", &self.renew_interval)
            .finish_non_exhaustive()
    }
}

/// The lease actor. See the [module docs](super).
pub struct LeaseActor {
    deps: LeaseDeps,
    latest: Option<Lease>,
    syncing: bool,
    /// The last sync failed somewhere (or none has succeeded yet).
    unreached: bool,
}

impl LeaseActor {
    /// A lease actor working from `deps`.
    pub fn new(deps: LeaseDeps) -> Self {
        Self {
            deps,
            latest: None,
            syncing: false,
            unreached: true,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.syncing {
            return;
        }
        self.syncing = true;
        let renewer = Renewer {
            api: Api::namespaced(self.deps.client.clone(), LEASE_NAMESPACE),
            deps: self.deps.clone(),
            stumbled: AtomicBool::new(false),
        };
        let latest = self.latest.take();
        ctx.spawn(
            async move {
                let latest = renewer.sync(latest).await;
                (latest, renewer.stumbled.load(Ordering::Relaxed))
            }
            .into_actor(self)
            .map(|(latest, stumbled), act, _ctx| {
                act.syncing = false;
                // Renewed after failing: the API server answers again.
                if latest.is_some() && (act.unreached || stumbled) {
                    act.deps.reachability.reached();
                }
                act.unreached = latest.is_none();
                act.latest = latest;
            }),
        );
    }
}

impl Actor for LeaseActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(node = %self.deps.node_name, "node lease renewal starting");
        self.tick(ctx);
        ctx.run_interval(self.deps.renew_interval, |act, ctx| act.tick(ctx));
    }
}

/// The API calls of one sync.
struct Renewer {
    api: Api<Lease>,
    deps: LeaseDeps,
    /// Some API call of this sync failed.
    stumbled: AtomicBool,
}

impl Renewer {
    fn name(&self) -> &str {
        &self.deps.node_name
    }

    fn owner(&self) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
        self.deps.node.uid().map(|uid| node_owner(self.name(), &uid))
    }

    fn err(&self, call: &'static str) -> impl FnOnce(kube::Error) -> LeaseError + '_ {
        move |source| {
            self.stumbled.store(true, Ordering::Relaxed);
            LeaseError::Api {
                call,
                node: self.name().to_string(),
                source,
            }
        }
    }

    /// Upstream `sync`: renew the latest Lease; failing that, make sure one
    /// exists and renew it. Returns the Lease to renew next time.
    async fn sync(&self, latest: Option<Lease>) -> Option<Lease> {
        if let Some(lease) = latest {
            match self.retry_update(lease).await {
                Ok(l) => return Some(l),
                Err(e) => {
                    tracing::info!(node = %self.name(), error = %e, "failed to update lease using latest lease, fallback to ensure lease")
                }
            }
        }
        let (lease, created) = self.backoff_ensure().await;
        if created {
            return Some(lease);
        }
        match self.retry_update(lease).await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!(node = %self.name(), error = %e, retry_in = ?self.deps.renew_interval, "lease not renewed");
                None
            }
        }
    }

    /// GET the Lease, or create it when missing.
    async fn ensure(&self) -> Result<(Lease, bool), LeaseError> {
        match self.api.get_opt(self.name()).await.map_err(self.err("GET leases"))? {
            Some(l) => Ok((l, false)),
            None => {
                let lease = new_lease(
                    self.name(),
                    self.deps.duration_seconds,
                    self.deps.wall_clock.now(),
                    self.owner(),
                );
                let created = self
                    .api
                    .create(&PostParams::default(), &lease)
                    .await
                    .map_err(self.err("POST leases"))?;
                tracing::info!(node = %self.name(), "node lease created");
                Ok((created, true))
            }
        }
    }

    /// [`Self::ensure`] until it works, waiting 200 ms … 7 s between tries.
    async fn backoff_ensure(&self) -> (Lease, bool) {
        let mut backoff = Backoff::default();
        loop {
            match self.ensure().await {
                Ok(r) => return r,
                Err(e) => {
                    let wait = backoff.next_wait();
                    tracing::warn!(node = %self.name(), error = %e, retry_in = ?wait, "failed to ensure lease exists");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// PUT `base` renewed; on Conflict re-read and try again, up to 5 times.
    async fn retry_update(&self, mut base: Lease) -> Result<Lease, LeaseError> {
        for _ in 0..MAX_UPDATE_RETRIES {
            let lease = renewed(&base, self.deps.wall_clock.now(), self.owner());
            match self.api.replace(self.name(), &PostParams::default(), &lease).await {
                Ok(l) => return Ok(l),
                Err(e) => {
                    self.stumbled.store(true, Ordering::Relaxed);
                    let conflict = matches!(&e, kube::Error::Api(s) if s.is_conflict());
                    tracing::info!(node = %self.name(), error = %e, "failed to update lease");
                    if conflict {
                        base = self.backoff_ensure().await.0;
                    }
                }
            }
        }
        Err(LeaseError::RetriesExhausted(
            MAX_UPDATE_RETRIES,
            self.name().to_string(),
        ))
    }
}
