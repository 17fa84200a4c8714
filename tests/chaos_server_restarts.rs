//! Chaos for the HTTP servers: `healthz` and `kubelet-api` are killed while
//! they serve (requests in a loop, a `follow` log stream open), on fixed
//! ports as a node has them (10248, 10250), and the node must not notice:
//! the endpoint answers again on the same address, the stream cut by the
//! kill ends (the old server is gone, not leaked), the pod keeps its
//! container, no other actor restarts. Real time: the servers run on
//! threads of their own.

#[path = "support/kill_child.rs"]
mod kill_child;
#[path = "support/kubelet_api.rs"]
mod kubelet_api;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason};
use actlet::cri::mock::MockRuntime;
use actlet::testing::{PodBuilder, TestNode, TestSystem, wait_until};
use kill_child::kill_child;
use kubelet_api::https;

const WAIT: Duration = Duration::from_secs(30);

/// A loopback address with a port nothing listens on now.
fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A node serving healthz on `healthz` and the kubelet API on `api`, with
/// pod `web` running.
async fn node_serving(healthz: SocketAddr, api: SocketAddr) -> TestNode {
    let node = TestNode::builder()
        .mock(MockRuntime::new())
        .customize(move |b| {
            b.configure(move |c| {
                c.healthz_addr = Some(healthz);
                c.server_addr = Some(api);
            })
        })
        .start();
    node.set_pods(vec![
        PodBuilder::new("web")
            .container("c", "busybox:1.36", ["sh", "-c", "echo first; sleep 3600"])
            .build(),
    ]);
    node.wait_for_phase("default", "web", "Running", WAIT).await.unwrap();
    node
}

/// Requests `url` with `client` every 20 ms until dropped, each on a new
/// connection (so answers come from whoever listens now); counts answers.
struct Hammer {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
}

impl Hammer {
    fn start(client: reqwest::Client, url: String) -> Self {
        let (stop, answered) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let (s, a) = (stop.clone(), answered.clone());
        actix_rt::spawn(async move {
            while !s.load(Ordering::SeqCst) {
                let request = client.get(&url).header("connection", "close");
                if let Ok(r) = request.timeout(Duration::from_secs(2)).send().await
                    && r.status().is_success()
                {
                    a.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Self { stop, answered }
    }

    fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

impl Drop for Hammer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// After the kill of `actor`: restarted once (its port was free again at
/// once: no failed bind), the pod untouched, no other actor restarted.
async fn assert_unnoticed(node: &TestNode, actor: &str, web_container: &str) {
    let path = format!("root/{actor}");
    let tree = node.kubelet().tree().clone();
    let info = tree.get(&path).expect("in the tree");
    assert_eq!(
        (info.state, info.restarts, info.exhausted),
        (ChildState::Running, 1, false),
        "{info:?}"
    );
    assert_eq!(info.last_failure.map(|f| f.reason), Some(ExitReason::Killed));
    let others: Vec<_> = tree
        .snapshot()
        .into_iter()
        .filter(|c| c.path != path && c.restarts > 0)
        .collect();
    assert!(others.is_empty(), "only {actor} restarted: {others:?}");
    let mock = node.mock();
    assert_eq!(mock.calls_to("RunPodSandbox").len(), 1, "one sandbox");
    assert_eq!(mock.call_count("StartContainer"), 1, "web not restarted");
    assert_eq!(mock.find_container("web", "c").expect("web").status.id, web_container);
    let status = node.status("default", "web").expect("web status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(node.kubelet().root.exit_reason(), None);
}

/// `healthz` killed while a client polls it: it answers `ok` again on its
/// own port, and the node does not notice.
#[test]
fn healthz_killed_while_serving_answers_again_on_its_port() {
    TestSystem::real_time().block_on(async {
        let (healthz, api) = (free_addr(), free_addr());
        let node = node_serving(healthz, api).await;
        let web_container = node.mock().find_container("web", "c").unwrap().status.id;
        let url = format!("http://{healthz}/healthz");
        let hammer = Hammer::start(reqwest::Client::new(), url.clone());
        wait_until(|| hammer.answered() >= 5, WAIT).await.unwrap();

        kill_child(node.kubelet(), "healthz").await;
        let after_kill = hammer.answered();
        wait_until(|| hammer.answered() >= after_kill + 10, WAIT)
            .await
            .unwrap_or_else(|e| panic!("healthz never answered again: {e}"));
        let body = reqwest::get(&url).await.unwrap().text().await.unwrap();
        assert_eq!(body, "ok");
        assert_eq!(node.kubelet().healthz_addrs.get(), vec![healthz]);
        drop(hammer);
        assert_unnoticed(&node, "healthz", &web_container).await;
    });
}

/// `kubelet-api` killed while a client polls `/healthz/ping` and a `follow`
/// log stream is open: the stream ends (the old server stopped), the API
/// answers again on its own port, and the node does not notice.
#[test]
fn kubelet_api_killed_while_serving_answers_again_on_its_port() {
    TestSystem::real_time().block_on(async {
        let (healthz, api) = (free_addr(), free_addr());
        let node = node_serving(healthz, api).await;
        let web_container = node.mock().find_container("web", "c").unwrap().status.id;
        let hammer = Hammer::start(https(None), format!("https://{api}/healthz/ping"));
        wait_until(|| hammer.answered() >= 5, WAIT).await.unwrap();
        let mut follow = https(None)
            .get(format!("https://{api}/containerLogs/default/web/c?follow=true"))
            .send()
            .await
            .unwrap();
        assert_eq!(follow.status().as_u16(), 200);
        let first = tokio::time::timeout(WAIT, follow.chunk()).await.expect("first line");
        assert_eq!(first.unwrap().as_deref(), Some(&b"first\n"[..]));

        kill_child(node.kubelet(), "kubelet-api").await;
        // The open stream is cut: it ends (or errors), it does not hang on
        // a server nobody owns any more.
        let cut = tokio::time::timeout(WAIT, async { while let Ok(Some(_)) = follow.chunk().await {} }).await;
        assert!(cut.is_ok(), "the follow stream outlived the killed server");
        let after_kill = hammer.answered();
        wait_until(|| hammer.answered() >= after_kill + 10, WAIT)
            .await
            .unwrap_or_else(|e| panic!("the kubelet API never answered again: {e}"));
        let logs = https(None)
            .get(format!("https://{api}/containerLogs/default/web/c"))
            .send()
            .await
            .unwrap();
        assert_eq!(logs.text().await.unwrap(), "first\n");
        assert_eq!(node.kubelet().api_addrs.get(), vec![api]);
        drop(hammer);
        assert_unnoticed(&node, "kubelet-api", &web_container).await;
    });
}
