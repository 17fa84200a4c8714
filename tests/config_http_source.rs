//! HttpSource actor tests against a tiny scripted HTTP server on
//! 127.0.0.1:0. Real time (the client's socket IO would race paused time's
//! auto-advance) with a 50 ms period; waits are bounded (5 s) and no test
//! asserts how fast anything happens.

#[path = "support/config.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Actor;
use actlet::config::annotations::CONFIG_SOURCE;
use actlet::config::{HttpSource, HttpSourceConfig};
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use support::{WAIT, image, names, next, next_matching, pod_yaml, recorder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc::UnboundedReceiver;

/// Answers request `i` with `script[i]` (the last entry repeats) and records
/// every request head.
#[derive(Clone)]
struct Server {
    url: String,
    script: Arc<Mutex<Vec<(u16, String)>>>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(script: Vec<(u16, String)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/pods", listener.local_addr().unwrap());
        let server = Self {
            url,
            script: Arc::new(Mutex::new(script)),
            requests: Arc::default(),
        };
        let this = server.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let (status, body) = {
                    let mut requests = this.requests.lock().unwrap();
                    requests.push(String::from_utf8_lossy(&head).into_owned());
                    let script = this.script.lock().unwrap();
                    script[(requests.len() - 1).min(script.len() - 1)].clone()
                };
                let response = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        server
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until the server has answered `n` more requests.
    async fn served_more(&self, n: usize) {
        let target = self.requests().len() + n;
        let wait = async {
            while self.requests().len() < target {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .expect("timed out waiting for requests");
    }

    fn set_script(&self, script: Vec<(u16, String)>) {
        *self.script.lock().unwrap() = script;
    }
}

fn start(server: &Server, headers: &[&str]) -> UnboundedReceiver<SourceSnapshot> {
    let (out, rx) = recorder::<SourceSnapshot>();
    let mut config = HttpSourceConfig::new(&server.url, "Node1");
    config.headers = headers.iter().map(|h| h.to_string()).collect();
    config.check_frequency = Duration::from_millis(50);
    HttpSource::new(config, out).unwrap().start();
    rx
}

/// Lets in-flight responses reach the recorder (not a timing assertion).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[actix_rt::test]
async fn fetches_a_pod_sending_the_configured_headers() {
    let server = Server::start(vec![(200, pod_yaml("web", "nginx"))]).await;
    let mut rx = start(&server, &["Authorization: Bearer t0k3n", "X-Node:a", "X-Node:b"]);
    let snapshot = next(&mut rx, WAIT).await;
    assert_eq!(snapshot.source, PodSource::Http);
    assert_eq!(names(&snapshot.pods), ["web-node1"]);
    assert_eq!(
        snapshot.pods[0].metadata.annotations.as_ref().unwrap()[CONFIG_SOURCE],
        "http"
    );
    assert!(snapshot.errors.is_empty());
    let request = server.requests()[0].to_lowercase();
    assert!(request.starts_with("get /pods http/1.1\r\n"), "{request}");
    assert!(request.contains("\r\nauthorization: bearer t0k3n\r\n"), "{request}");
    assert!(
        request.contains("\r\nx-node: a\r\n") && request.contains("\r\nx-node: b\r\n"),
        "{request}"
    );
}

#[actix_rt::test]
async fn fetches_a_json_pod_list() {
    let list = r#"{"apiVersion":"v1","kind":"PodList","items":[
        {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}},
        {"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"y"}]}}]}"#;
    let server = Server::start(vec![(200, list.to_owned())]).await;
    let mut rx = start(&server, &[]);
    assert_eq!(names(&next(&mut rx, WAIT).await.pods), ["a-node1", "b-node1"]);
}

#[actix_rt::test]
async fn errors_before_and_after_success_keep_the_last_good_snapshot() {
    let server = Server::start(vec![
        (500, String::new()),
        (503, String::new()),
        (200, pod_yaml("web", "nginx")),
    ])
    .await;
    let mut rx = start(&server, &[]);
    // nothing before the first success (the source is not seen yet): the
    // first snapshot is the 200's, not an empty one for the 500 or 503
    let first = next(&mut rx, WAIT).await;
    assert_eq!(names(&first.pods), ["web-node1"]);

    server.set_script(vec![(500, "oops".into())]);
    server.served_more(3).await;
    settle().await;
    // a 200 answered just before the switch may have sent one more
    while let Ok(snapshot) = rx.try_recv() {
        assert_eq!(names(&snapshot.pods), ["web-node1"]);
    }
    server.served_more(3).await;
    settle().await;
    assert!(rx.try_recv().is_err(), "no snapshot, empty or not, after failures");

    server.set_script(vec![(200, pod_yaml("web", "nginx:2"))]);
    let recovered = next(&mut rx, WAIT).await;
    assert_eq!(image(&recovered.pods[0]), "nginx:2");
}

#[actix_rt::test]
async fn an_invalid_body_keeps_the_last_good_pods_and_reports_the_url() {
    let server = Server::start(vec![(200, pod_yaml("web", "nginx"))]).await;
    let mut rx = start(&server, &[]);
    let good = next(&mut rx, WAIT).await;

    server.set_script(vec![(
        200,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: []}\n".into(),
    )]);
    let broken = next_matching(&mut rx, WAIT, |s| !s.errors.is_empty()).await;
    assert!(
        Arc::ptr_eq(&broken.pods[0], &good.pods[0]),
        "the last good version, unchanged"
    );
    assert_eq!(broken.errors[0].origin, server.url);
    assert_eq!(broken.errors[0].reason, "invalid pod: spec.containers: Required value");

    server.set_script(vec![(200, String::new())]);
    let emptied = next_matching(&mut rx, WAIT, |s| s.errors.is_empty()).await;
    assert!(emptied.pods.is_empty(), "upstream: an empty body means no pods");
}
