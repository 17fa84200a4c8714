//! The node actor at startup: a container runtime that turns ready while the
//! first sync (registration) is still in flight makes the Node Ready right
//! after it, not a whole status period later (upstream reports Ready as soon as
//! the runtime is, `fastStatusUpdateOnce`). Found on a real API server, where the
//! registration is slow enough to lose this race every time.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/node.rs"]
mod node;

use std::time::Duration;

use actix::Actor;
use actlet::cluster::node::NodeActor;
use actlet::cluster::{Qps, client_from_kubeconfig};
use actlet::messages::runtime_health::RuntimeHealthChanged;
use actlet::runtime_health::RuntimeHealth;
use apiserver::{Identity, TestApiServer};
use cluster::{eventually, run};
use node::{harness, ready_is};
use tokio::net::{TcpListener, TcpStream};

/// A loopback proxy to `target` that holds every new connection for `delay`
/// before relaying it: a slow API server. Returns its URL.
async fn slow_proxy(target: std::net::SocketAddr, delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
    actix_rt::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            actix_rt::spawn(async move {
                tokio::time::sleep(delay).await;
                if let Ok(mut outbound) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    url
}

#[test]
fn a_runtime_ready_during_registration_makes_the_node_ready_at_once() {
    run(|| async {
        let server = TestApiServer::start();
        let mut h = harness(&server).await;
        let proxy = slow_proxy(server.addr(), Duration::from_millis(800)).await;
        let dir = tempfile::TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let kubeconfig = dir.path().join("node.kubeconfig");
        let text = server
            .kubeconfig(&Identity::node(cluster::NODE))
            .replace(&server.url(), &proxy);
        std::fs::write(&kubeconfig, text).unwrap_or_else(|e| panic!("{e}"));
        h.deps.client = client_from_kubeconfig(&kubeconfig, Qps::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (tx, rx) = RuntimeHealth::channel();
        h.deps.runtime_health = rx;
        h.deps.update_frequency = Duration::from_secs(60);

        NodeActor::new(h.deps.clone()).start();
        // The first sync is waiting on the slow API server; the runtime turns ready.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(server.store().node(cluster::NODE).is_none(), "still registering");
        tx.send_replace(RuntimeHealthChanged {
            features: None,
            runtime_ready: true,
            network_ready: true,
            message: String::new(),
        });
        eventually(
            "Ready well before the next status period (60 s)",
            Duration::from_secs(15),
            || ready_is(&server, "True"),
        )
        .await;
    });
}
