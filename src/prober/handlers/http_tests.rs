//! HTTP probes against a local server (real time, loopback).

use k8s_openapi::api::core::v1::{ContainerPort, HTTPHeader};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// A tiny HTTP/1.1 server on 127.0.0.1; returns its port.
async fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let req = String::from_utf8_lossy(&buf).to_string();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, extra, body) = match path.as_str() {
                    "/ok" => ("200 OK", String::new(), "healthy".to_string()),
                    "/bad" => ("503 Service Unavailable", String::new(), "secret".into()),
                    "/same" => ("302 Found", "Location: /ok\r\n".into(), String::new()),
                    "/other" => (
                        "301 Moved Permanently",
                        format!("Location: http://localhost:{port}/ok\r\n"),
                        "moved".into(),
                    ),
                    "/loop" => ("302 Found", "Location: /loop\r\n".into(), String::new()),
                    "/big" => ("200 OK", String::new(), "x".repeat(20_000)),
                    "/slow" => {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        ("200 OK", String::new(), String::new())
                    }
                    _ => ("200 OK", String::new(), req.to_ascii_lowercase()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    port
}

fn action(path: &str, port: u16) -> HTTPGetAction {
    HTTPGetAction {
        path: Some(path.into()),
        port: IntOrString::Int(i32::from(port)),
        ..Default::default()
    }
}

async fn run(path: &str, port: u16) -> Answer {
    let req = HttpRequest::new(
        &action(path, port),
        &Container::default(),
        "127.0.0.1",
        "kube-probe/1.36",
    )
    .unwrap();
    probe(probe_client(), &req, Duration::from_secs(1)).await
}

#[tokio::test]
async fn status_codes_decide() {
    let port = server().await;
    assert_eq!(run("/ok", port).await, Answer::new(Raw::Success, "healthy"));
    assert_eq!(
        run("/bad", port).await,
        Answer::new(Raw::Failure, "HTTP probe failed with statuscode: 503"),
        "the body is not shown"
    );
}

#[tokio::test]
async fn redirects_follow_the_same_host_and_warn_for_another() {
    let port = server().await;
    assert_eq!(run("/same", port).await, Answer::new(Raw::Success, "healthy"));
    assert_eq!(
        run("/other", port).await,
        Answer::new(Raw::Warning, "Probe terminated redirects, Response body: moved")
    );
    let looped = run("/loop", port).await;
    assert_eq!(looped.result, Raw::Failure);
    assert!(looped.output.contains("stopped after 10 redirects"), "{looped:?}");
}

#[tokio::test]
async fn body_is_capped_and_timeouts_and_refusals_fail() {
    let port = server().await;
    let big = run("/big", port).await;
    assert_eq!((big.result, big.output.len()), (Raw::Success, MAX_OUTPUT));
    let start = std::time::Instant::now();
    let slow = run("/slow", port).await;
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(slow.result, Raw::Failure);
    assert!(slow.output.contains("Client.Timeout exceeded"), "{slow:?}");
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = run("/ok", closed).await;
    assert_eq!(refused.result, Raw::Failure);
    assert!(
        refused
            .output
            .starts_with(&format!("Get \"http://127.0.0.1:{closed}/ok\"")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn headers_user_agent_and_named_ports() {
    let port = server().await;
    let container = Container {
        ports: Some(vec![ContainerPort {
            name: Some("web".into()),
            container_port: i32::from(port),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut a = action("/echo", 0);
    a.port = IntOrString::String("web".into());
    a.http_headers = Some(vec![HTTPHeader {
        name: "X-Custom".into(),
        value: "v1".into(),
    }]);
    let req = HttpRequest::new(&a, &container, "127.0.0.1", "kube-probe/1.36").unwrap();
    let echo = probe(probe_client(), &req, Duration::from_secs(1)).await;
    assert_eq!(echo.result, Raw::Success);
    for want in ["user-agent: kube-probe/1.36", "x-custom: v1", "accept: */*"] {
        assert!(echo.output.contains(want), "{want} in {}", echo.output);
    }
    a.port = IntOrString::String("nope".into());
    assert!(HttpRequest::new(&a, &container, "127.0.0.1", "x").is_err());
}

#[test]
fn urls_default_scheme_host_and_path() {
    let r = HttpRequest::new(&action("healthz", 80), &Container::default(), "fd00::5", "ua").unwrap();
    assert_eq!(r.url, "http://[fd00::5]:80/healthz");
    let mut a = action("", 80);
    a.host = Some("example.test".into());
    a.http_headers = Some(vec![HTTPHeader {
        name: "Accept".into(),
        value: String::new(),
    }]);
    let r = HttpRequest::new(&a, &Container::default(), "10.0.0.1", "ua").unwrap();
    assert_eq!(r.url, "http://example.test:80");
    assert!(!r.headers.contains_key(ACCEPT), "an empty Accept removes it");
}

#[tokio::test]
async fn hooks_ignore_status_codes_but_fail_on_transport_errors() {
    let port = server().await;
    let c = Container::default();
    assert_eq!(
        hook(&action("/bad", port), &c, "127.0.0.1", Duration::from_secs(1)).await,
        Ok(())
    );
    let echo = HttpRequest::new(&action("/echo", port), &c, "127.0.0.1", "kube-lifecycle/1.36").unwrap();
    let (_, body) = get(hook_client(), &echo, Duration::from_secs(1)).await.unwrap();
    assert!(body.contains("user-agent: kube-lifecycle/1.36"), "{body}");
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = hook(&action("/ok", closed), &c, "127.0.0.1", Duration::from_secs(1)).await;
    assert!(err.is_err_and(|e| e.contains("127.0.0.1")));
}
