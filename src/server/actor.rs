//! [`HttpServer`]: an actor owning one actix-web server.
//!
//! It binds on start; a bind failure stops it as failed (naming the
//! address and the cause), so its supervisor restarts it and, if the port
//! stays taken, escalates with that message. On stop the server is stopped
//! gracefully.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use actix_web::{App, web};

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
        }
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

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if let Some(h) = self.handle.take() {
            actix_rt::spawn(async move { h.stop(true).await });
        }
    }
}
