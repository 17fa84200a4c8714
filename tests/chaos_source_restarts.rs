//! Chaos for the static pod sources: `file-source` and `http-source` are
//! killed mid-flight (their instance dropped, as a panic would) while their
//! manifests change, on the whole kubelet and the mock CRI, and the node
//! must not notice:
//! - a manifest added and one removed around the kill are both acted on:
//!   the new pod is started once, the removed one is killed;
//! - nothing duplicated or restarted: one sandbox and one container start
//!   per new pod, the pod that stays keeps its container;
//! - a manifest that broke before the kill keeps its last good pod running
//!   after it (the source's "last good" state survives the restart; before
//!   this test a restarted source forgot it and the pod was killed).
//!
//! The file source runs on paused time (its reads go to the blocking pool,
//! which holds the clock); the HTTP source on real time, against a local
//! server that answers slowly so that a fetch is in flight at the kill.

#[path = "support/kill_child.rs"]
mod kill_child;
#[path = "support/system.rs"]
mod support;

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::{ChildState, ExitReason};
use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::PodSandboxState;
use actlet::messages::PodUid;
use kill_child::kill_child;
use support::{Node, run_paused, run_real};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::sleep;

const WAIT: Duration = Duration::from_secs(60);

fn manifest(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {{name: app, image: \"busybox:1.36\", command: [sleep, \"3600\"]}}\n"
    )
}

fn write(dir: &Path, file: &str, body: &str) {
    fs::write(dir.join(file), body).unwrap_or_else(|e| panic!("write {file}: {e}"));
}

/// The UID of the desired pod named `name` (static pods are `<name>-node-a`).
fn uid_by_name(node: &Node, name: &str) -> Option<PodUid> {
    node.kubelet
        .pods
        .pods()
        .into_iter()
        .find(|d| d.pod.metadata.name.as_deref() == Some(name))
        .map(|d| PodUid::new(d.pod.metadata.uid.clone().unwrap_or_default()))
}

fn running(node: &Node, name: &str) -> bool {
    uid_by_name(node, name).is_some_and(|uid| node.phase(&uid) == "Running" && node.is_running(&uid, "app"))
}

/// `name` is no longer desired and no sandbox of it is ready (container GC
/// may have removed them since).
fn killed(node: &Node, name: &str) -> bool {
    uid_by_name(node, name).is_none()
        && node
            .sandboxes(name)
            .iter()
            .all(|s| s.state() == PodSandboxState::SandboxNotready)
}

/// Waits until `actor` was restarted `n` times (each after a kill) and runs.
async fn restarted(node: &Node, actor: &str, n: u64) {
    let path = format!("root/{actor}");
    node.wait_for(&format!("{actor} restarted {n} times"), WAIT, |node| {
        node.kubelet
            .tree()
            .get(&path)
            .is_some_and(|i| i.state == ChildState::Running && i.restarts == n)
    })
    .await;
    let info = node.kubelet.tree().get(&path).expect("in the tree");
    assert_eq!(info.last_failure.map(|f| f.reason), Some(ExitReason::Killed));
    assert_eq!(node.kubelet.root.exit_reason(), None);
}

/// What must hold after the chaos: `keep` runs with its first container,
/// `new` pods got exactly one sandbox and one container start each, and no
/// other actor restarted.
fn assert_nothing_duplicated(node: &Node, actor: &str, keep_id: &str, sandboxes: usize, starts: usize, new: usize) {
    let keep = node.containers("keep-node-a", "app");
    assert_eq!(keep.len(), 1, "keep not restarted: {}", node.describe());
    assert_eq!(keep[0].status.id, keep_id);
    assert!(running(node, "keep-node-a"), "{}", node.describe());
    assert_eq!(
        node.calls("RunPodSandbox").len(),
        sandboxes + new,
        "one sandbox per new pod: {}",
        node.describe()
    );
    assert_eq!(
        node.calls("StartContainer").len(),
        starts + new,
        "one start per new pod: {}",
        node.describe()
    );
    let others: Vec<_> = node
        .kubelet
        .tree()
        .snapshot()
        .into_iter()
        .filter(|c| c.path != format!("root/{actor}") && c.restarts > 0)
        .collect();
    assert!(others.is_empty(), "only {actor} restarted: {others:?}");
}

/// Three rounds: a manifest is added and the previous one deleted, and the
/// file source is killed at once (a read for the change may be queued, in
/// flight on the blocking pool, or not yet asked for). Each time the new
/// pod starts, the removed one is killed, nothing else moves.
#[test]
fn file_source_restart_while_manifests_change_loses_nothing() {
    run_paused(|| async {
        let pods = tempfile::tempdir().unwrap();
        let dir = pods.path();
        write(dir, "keep.yaml", &manifest("keep"));
        write(dir, "gone.yaml", &manifest("gone"));
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = Node::builder(mock)
            .static_pods(dir.to_path_buf(), Duration::from_secs(20))
            .start();
        node.wait_for("keep and gone running", WAIT, |n| {
            running(n, "keep-node-a") && running(n, "gone-node-a")
        })
        .await;
        sleep(Duration::from_secs(3)).await;
        let keep_id = node.containers("keep-node-a", "app")[0].status.id.clone();
        let (sandboxes, starts) = (node.calls("RunPodSandbox").len(), node.calls("StartContainer").len());

        let mut previous = "gone".to_string();
        for round in 0..3u64 {
            let new = format!("new{round}");
            write(dir, &format!("{new}.yaml"), &manifest(&new));
            fs::remove_file(dir.join(format!("{previous}.yaml"))).unwrap();
            for _ in 0..round * 5 {
                tokio::task::yield_now().await;
            }
            kill_child(&node.kubelet, "file-source").await;
            // Well before the next periodic read (20 s): the new instance
            // reads the directory when it starts.
            node.wait_for(
                &format!("{new} running, {previous} killed"),
                Duration::from_secs(10),
                |n| running(n, &format!("{new}-node-a")) && killed(n, &format!("{previous}-node-a")),
            )
            .await;
            restarted(&node, "file-source", round + 1).await;
            previous = new;
        }
        // Periodic reads after the chaos change nothing.
        sleep(Duration::from_secs(45)).await;
        assert!(running(&node, "new2-node-a"));
        assert_nothing_duplicated(&node, "file-source", &keep_id, sandboxes, starts, 3);
    });
}

/// A manifest that breaks keeps its last good pod running (the source's
/// guarantee). A restart of the source must not forget that pod: after the
/// kill, reads of the broken file go on, the error is still reported, and
/// the pod keeps its container. Deleting the file then removes the pod.
#[test]
fn file_source_restart_keeps_the_last_good_pod_of_a_broken_manifest() {
    run_paused(|| async {
        let pods = tempfile::tempdir().unwrap();
        let dir = pods.path();
        write(dir, "keep.yaml", &manifest("keep"));
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = Node::builder(mock)
            .static_pods(dir.to_path_buf(), Duration::from_secs(20))
            .start();
        node.wait_for("keep running", WAIT, |n| running(n, "keep-node-a")).await;
        sleep(Duration::from_secs(3)).await;
        let keep_id = node.containers("keep-node-a", "app")[0].status.id.clone();
        let (sandboxes, starts) = (node.calls("RunPodSandbox").len(), node.calls("StartContainer").len());

        write(dir, "keep.yaml", "apiVersion: v1\nkind: Pod\nspec: {containers: 7\n");
        let broken = |n: &Node| {
            n.kubelet
                .manifest_errors
                .get()
                .iter()
                .any(|e| e.origin.ends_with("keep.yaml"))
        };
        node.wait_for("keep.yaml reported broken", WAIT, broken).await;
        kill_child(&node.kubelet, "file-source").await;
        restarted(&node, "file-source", 1).await;
        // Three periodic reads of the broken file by the new instance.
        node.holds_for("keep desired and running", Duration::from_secs(65), |n| {
            running(n, "keep-node-a")
        })
        .await;
        assert!(
            broken(&node),
            "still reported: {:?}",
            node.kubelet.manifest_errors.get()
        );
        assert_nothing_duplicated(&node, "file-source", &keep_id, sandboxes, starts, 0);

        // The kept pod is not sticky: the manifest's removal removes it.
        fs::remove_file(dir.join("keep.yaml")).unwrap();
        node.wait_for("keep killed", WAIT, |n| killed(n, "keep-node-a")).await;
    });
}

/// A local HTTP server answering every GET with the current body, after
/// `delay` (so a fetch is in flight most of the time).
#[derive(Clone)]
struct SlowServer {
    url: String,
    body: Arc<Mutex<String>>,
    served: Arc<AtomicUsize>,
}

impl SlowServer {
    async fn start(body: String, delay: Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = Self {
            url: format!("http://{}/pods", listener.local_addr().unwrap()),
            body: Arc::new(Mutex::new(body)),
            served: Arc::default(),
        };
        let this = server.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let this = this.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let body = this.body.lock().unwrap().clone();
                    sleep(delay).await;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                    this.served.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        server
    }

    fn set(&self, body: String) {
        *self.body.lock().unwrap() = body;
    }

    /// Waits until `n` more requests were answered (the source polls on).
    async fn served_more(&self, n: usize) {
        let target = self.served.load(Ordering::SeqCst) + n;
        let polled = async {
            while self.served.load(Ordering::SeqCst) < target {
                sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(WAIT, polled)
            .await
            .unwrap_or_else(|_| panic!("the source stopped polling {}", self.url));
    }
}

/// A PodList of static pods named `names`.
fn pod_list(names: &[&str]) -> String {
    let items: Vec<String> = names
        .iter()
        .map(|n| {
            format!(
                "- {{apiVersion: v1, kind: Pod, metadata: {{name: {n}, namespace: default}}, spec: {{terminationGracePeriodSeconds: 1, containers: [{{name: app, image: \"busybox:1.36\", command: [sleep, \"3600\"]}}]}}}}"
            )
        })
        .collect();
    format!("apiVersion: v1\nkind: PodList\nitems:\n{}\n", items.join("\n"))
}

async fn http_node(server: &SlowServer) -> Node {
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    Node::builder(mock)
        .static_pod_url(server.url.clone(), Duration::from_millis(100))
        .start()
}

/// Two rounds: the URL's PodList swaps a pod for a new one and the HTTP
/// source is killed at once, with a fetch in flight. Each time the new pod
/// starts, the removed one is killed, nothing else moves.
#[test]
fn http_source_restart_while_the_pod_list_changes_loses_nothing() {
    run_real(|| async {
        let server = SlowServer::start(pod_list(&["keep", "gone"]), Duration::from_millis(300)).await;
        let node = http_node(&server).await;
        node.wait_for("keep and gone running", WAIT, |n| {
            running(n, "keep-node-a") && running(n, "gone-node-a")
        })
        .await;
        let keep_id = node.containers("keep-node-a", "app")[0].status.id.clone();
        let (sandboxes, starts) = (node.calls("RunPodSandbox").len(), node.calls("StartContainer").len());

        let mut previous = "gone".to_string();
        for round in 0..2u64 {
            let new = format!("new{round}");
            server.set(pod_list(&["keep", &new]));
            sleep(Duration::from_millis(50 * round)).await;
            kill_child(&node.kubelet, "http-source").await;
            node.wait_for(&format!("{new} running, {previous} killed"), WAIT, |n| {
                running(n, &format!("{new}-node-a")) && killed(n, &format!("{previous}-node-a"))
            })
            .await;
            restarted(&node, "http-source", round + 1).await;
            previous = new;
        }
        server.served_more(5).await;
        assert!(running(&node, "new1-node-a"));
        assert_nothing_duplicated(&node, "http-source", &keep_id, sandboxes, starts, 2);
    });
}

/// A body that stops parsing keeps the last good pods (the source's
/// guarantee); a restart of the source in the meantime must not forget
/// them. An empty body then removes them.
#[test]
fn http_source_restart_keeps_the_last_good_pods_of_a_broken_body() {
    run_real(|| async {
        let server = SlowServer::start(pod_list(&["keep"]), Duration::from_millis(100)).await;
        let node = http_node(&server).await;
        node.wait_for("keep running", WAIT, |n| running(n, "keep-node-a")).await;
        let keep_id = node.containers("keep-node-a", "app")[0].status.id.clone();
        let (sandboxes, starts) = (node.calls("RunPodSandbox").len(), node.calls("StartContainer").len());

        server.set("apiVersion: v1\nkind: PodList\nitems: [\n".into());
        let broken = |n: &Node| n.kubelet.manifest_errors.get().iter().any(|e| e.origin == server.url);
        node.wait_for("the body reported broken", WAIT, broken).await;
        kill_child(&node.kubelet, "http-source").await;
        restarted(&node, "http-source", 1).await;
        server.served_more(5).await;
        node.holds_for("keep desired and running", Duration::from_secs(3), |n| {
            running(n, "keep-node-a")
        })
        .await;
        assert!(
            broken(&node),
            "still reported: {:?}",
            node.kubelet.manifest_errors.get()
        );
        assert_nothing_duplicated(&node, "http-source", &keep_id, sandboxes, starts, 0);

        server.set(String::new());
        node.wait_for("keep killed", WAIT, |n| killed(n, "keep-node-a")).await;
    });
}
