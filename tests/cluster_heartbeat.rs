//! Heartbeats survive a half-open connection (issue #10): the Lease goes
//! through the heartbeat client, whose calls are bounded by a short timeout,
//! so when the connection it holds stops answering (a NAT or load balancer
//! dropped it silently), the renewal fails after the timeout and the next one
//! dials afresh. A client whose reads are not bounded that tightly stalls on
//! the dead connection and the Lease expires: node NotReady, evictions.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/node.rs"]
mod node;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actix::Actor;
use actlet::cluster::lease::{LeaseActor, LeaseDeps};
use actlet::cluster::{Qps, client_from_kubeconfig, heartbeat_client_from_kubeconfig};
use actlet::kubelet::WallClock;
use apiserver::{Identity, TestApiServer};
use cluster::{NODE, eventually, run};
use node::{harness, renew_time};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP proxy whose existing connections can be frozen: their bytes are
/// swallowed (the peer sees an open connection that never answers) while
/// new connections are forwarded normally.
struct FreezingProxy {
    addr: SocketAddr,
    next_id: Arc<AtomicU64>,
    frozen_below: Arc<AtomicU64>,
}

impl FreezingProxy {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let (next_id, frozen_below) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (ids, frozen) = (next_id.clone(), frozen_below.clone());
        actix_rt::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let id = ids.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                actix_rt::spawn(pipe(cr, sw, id, frozen.clone()));
                actix_rt::spawn(pipe(sr, cw, id, frozen.clone()));
            }
        });
        Self {
            addr,
            next_id,
            frozen_below,
        }
    }

    /// Every connection open now goes silent.
    fn freeze_existing(&self) {
        self.frozen_below
            .store(self.next_id.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

async fn pipe(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    id: u64,
    frozen: Arc<AtomicU64>,
) {
    let mut buf = vec![0; 16 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) if id >= frozen.load(Ordering::SeqCst) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
            Ok(_) => {} // swallowed: a black hole
        }
    }
}

async fn lease_through_proxy(
    server: &TestApiServer,
    heartbeat: bool,
) -> (FreezingProxy, tempfile::TempDir, actix::Addr<LeaseActor>) {
    let proxy = FreezingProxy::start(server.addr()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = server
        .kubeconfig(&Identity::node(NODE))
        .replace(&server.url(), &format!("http://{}", proxy.addr));
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, kubeconfig).expect("write kubeconfig");
    let client = if heartbeat {
        heartbeat_client_from_kubeconfig(&path, Duration::from_secs(1)).await
    } else {
        client_from_kubeconfig(&path, Qps::default()).await
    }
    .expect("client");
    let h = harness(server).await;
    let lease = LeaseActor::new(LeaseDeps {
        client,
        node_name: NODE.into(),
        node: h.deps.handle.clone(),
        duration_seconds: 40,
        renew_interval: Duration::from_millis(200),
        wall_clock: WallClock::system(),
        reachability: Default::default(),
    })
    .start();
    (proxy, dir, lease)
}

#[test]
fn the_heartbeat_client_renews_the_lease_through_a_half_open_connection() {
    run(|| async {
        let server = TestApiServer::start();
        let (proxy, _dir, _lease) = lease_through_proxy(&server, true).await;
        eventually("lease created", Duration::from_secs(10), || renew_time(&server)).await;
        proxy.freeze_existing();
        let frozen_at = renew_time(&server).expect("renewed");
        eventually("renewed again on a fresh connection", Duration::from_secs(10), || {
            (renew_time(&server)? > frozen_at).then_some(())
        })
        .await;
    });
}

#[test]
fn a_client_without_a_short_timeout_stalls_on_a_half_open_connection() {
    run(|| async {
        let server = TestApiServer::start();
        let (proxy, _dir, _lease) = lease_through_proxy(&server, false).await;
        eventually("lease created", Duration::from_secs(10), || renew_time(&server)).await;
        // Let a renewal or two go by on the pooled connection, then freeze it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        proxy.freeze_existing();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let stalled_at = renew_time(&server);
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(renew_time(&server), stalled_at, "no renewal while the connection hangs");
    });
}
