//! [`HttpServer`]: an actor owning one actix-web server.
//!
//! It binds on start; a bind failure stops it as failed (naming the
//! address and the cause), so its supervisor restarts it and, if the port
//! stays taken, escalates with that message. On stop the server is stopped
//! gracefully.
//!
//! A restarted instance binds only once its predecessor's server has let go
//! of the address ([`PreviousStop`], shared by the instances of one child):
//! a graceful stop completes after the instance is gone, and binding a fixed
//! port (10248) before that failed with "Address already in use", leaving
//! the endpoint down until the next retry 5 s later.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use actix_web::{App, web};
use tokio::sync::oneshot;

use super::routes::{ReadOnlyStats, ServerState};
use crate::actors::supervisor::fail;

/// The addresses a server bound (useful with port 0).
#[derive(Clone, Debug, Default)]
pub struct ServerAddrs(Arc<Mutex<Vec<SocketAddr>>>);

impl ServerAddrs {
    /// The bound addresses (empty until bound).
    pub fn get(&self) -> Vec<SocketAddr> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set(&self, addrs: Vec<SocketAddr>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = addrs;
    }
}

/// How long a new server instance waits for its predecessor's server to
/// release the address before it binds anyway.
pub const PREVIOUS_STOP_LIMIT: Duration = Duration::from_secs(5);

/// The stop of the last instance's server, still in progress: owned state
/// of one server child (created once by the tree assembly and handed to
/// every instance, the rule in [`crate::actors`]), so that a restarted
/// instance binds after the address is free.
///
/// ```
/// use std::time::Duration;
/// use actlet::server::actor::PreviousStop;
/// # actlet::testing::run_paused(async {
/// let previous = PreviousStop::default();
/// previous.wait(Duration::from_secs(5)).await; // nothing stopping: at once
/// let (released, rx) = tokio::sync::oneshot::channel();
/// previous.set(rx);
/// let wait = previous.wait(Duration::from_secs(5));
/// released.send(()).unwrap(); // the old server closed its listener
/// wait.await;
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct PreviousStop(Arc<Mutex<Option<oneshot::Receiver<()>>>>);

impl PreviousStop {
    /// Records a stop in progress: `released` fires (or its sender is
    /// dropped) once the stopping server no longer holds its address.
    pub fn set(&self, released: oneshot::Receiver<()>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(released);
    }

    fn take(&self) -> Option<oneshot::Receiver<()>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Waits for the recorded stop (at most `limit`), and forgets it; ready
    /// at once when none is recorded.
    pub fn wait(&self, limit: Duration) -> impl Future<Output = ()> + 'static {
        let released = self.take();
        async move {
            if let Some(released) = released
                && tokio::time::timeout(limit, released).await.is_err()
            {
                tracing::warn!(?limit, "the previous server did not stop in time; binding anyway");
            }
        }
    }

    /// Whether a stop is recorded.
    pub fn is_pending(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

/// Which routes a server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routes {
    /// `/pods`, `/healthz`, and the stats and metrics when given (read-only port).
    ReadOnly,
    /// `/healthz` only (healthz port).
    Healthz,
}

/// The server actor.
pub struct HttpServer {
    name: &'static str,
    addr: SocketAddr,
    routes: Routes,
    state: ServerState,
    stats: Option<ReadOnlyStats>,
    bound: ServerAddrs,
    handle: Option<actix_web::dev::ServerHandle>,
    /// Owned: the stop of the previous instance's server.
    previous: PreviousStop,
}

impl HttpServer {
    /// A server named `name` (for logs) on `addr`.
    pub fn new(name: &'static str, addr: SocketAddr, routes: Routes, state: ServerState, bound: ServerAddrs) -> Self {
        Self {
            name,
            addr,
            routes,
            state,
            stats: None,
            bound,
            handle: None,
            previous: PreviousStop::default(),
        }
    }

    /// Shares the stop of each instance's server with the next instance
    /// (which binds once it completed); give every instance of one child the
    /// same `previous`.
    pub fn with_previous_stop(mut self, previous: PreviousStop) -> Self {
        self.previous = previous;
        self
    }

    /// Serves `/stats/summary`, `/metrics`, `/metrics/resource` and
    /// `/metrics/cadvisor` too (the read-only port, as upstream's).
    pub fn with_stats(mut self, stats: ReadOnlyStats) -> Self {
        self.stats = Some(stats);
        self
    }
}

impl Actor for HttpServer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.previous.is_pending() {
            let wait = self.previous.wait(PREVIOUS_STOP_LIMIT);
            ctx.wait(wait.into_actor(self).map(|(), act, ctx| act.serve(ctx)));
        } else {
            self.serve(ctx);
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if let Some(h) = self.handle.take() {
            let (released, rx) = oneshot::channel();
            self.previous.set(rx);
            actix_rt::spawn(async move {
                h.stop(true).await;
                let _ = released.send(());
            });
        }
    }
}

impl HttpServer {
    /// Binds and runs the server, or fails the actor naming the address.
    fn serve(&mut self, ctx: &mut Context<Self>) {
        let state = web::Data::new(self.state.clone());
        let stats = self.stats.clone().map(web::Data::new);
        let routes = self.routes;
        let server = actix_web::HttpServer::new(move || {
            let mut app = App::new().app_data(state.clone());
            if let Some(stats) = &stats {
                app = app.app_data(stats.clone());
            }
            match routes {
                Routes::ReadOnly => app.configure(super::routes::read_only_routes),
                Routes::Healthz => app.configure(super::routes::healthz_routes),
            }
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .bind(self.addr);
        match server {
            Ok(server) => {
                self.bound.set(server.addrs());
                tracing::info!(server = self.name, addrs = ?server.addrs(), "serving");
                let running = server.run();
                self.handle = Some(running.handle());
                actix_rt::spawn(running);
            }
            Err(e) => {
                let reason = format!("{} server cannot listen on {}: {e}", self.name, self.addr);
                tracing::error!("{reason}");
                fail(ctx, reason);
            }
        }
    }
}
