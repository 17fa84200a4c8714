//! gRPC probes against local servers (real time, loopback).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic_health::ServingStatus as Status;

use super::*;

/// A grpc.health.v1 server: "" serving, "down" not serving.
async fn health_server() -> u16 {
    let (reporter, service) = tonic_health::server::health_reporter();
    reporter.set_service_status("", Status::Serving).await;
    reporter.set_service_status("down", Status::NotServing).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _keep = reporter;
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener))
            .await
    });
    port
}

/// A TCP server that answers every connection with `reply` (or nothing).
async fn raw_server(reply: Option<&'static [u8]>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = sock.read(&mut buf).await;
                match reply {
                    Some(r) => {
                        let _ = sock.write_all(r).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(10)).await,
                }
            });
        }
    });
    port
}

const T: Duration = Duration::from_secs(1);

#[tokio::test]
async fn serving_passes_not_serving_and_unknown_services_fail() {
    let port = health_server().await;
    assert_eq!(
        probe("127.0.0.1", port, "", T).await,
        Answer::new(Raw::Success, "service healthy")
    );
    assert_eq!(
        probe("127.0.0.1", port, "down", T).await,
        Answer::new(Raw::Failure, r#"service unhealthy (responded with "NOT_SERVING")"#)
    );
    let unknown = probe("127.0.0.1", port, "nope", T).await;
    assert_eq!(unknown.result, Raw::Failure);
    assert!(
        unknown.output.starts_with("error: health rpc probe failed:"),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn refused_malformed_and_hung_servers_fail_within_the_timeout() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = probe("127.0.0.1", closed, "", T).await;
    assert_eq!(refused.result, Raw::Failure);
    assert!(
        refused.output.starts_with("error: failed to connect service at"),
        "{refused:?}"
    );

    let garbage = raw_server(Some(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")).await;
    let start = std::time::Instant::now();
    let malformed = probe("127.0.0.1", garbage, "", T).await;
    assert_eq!(malformed.result, Raw::Failure, "{malformed:?}");
    assert!(start.elapsed() < Duration::from_secs(3));

    let silent = raw_server(None).await;
    let start = std::time::Instant::now();
    let hung = probe("127.0.0.1", silent, "", T).await;
    assert_eq!(hung.result, Raw::Failure);
    assert!(hung.output.starts_with("timeout:"), "{hung:?}");
    assert!(start.elapsed() < Duration::from_secs(3));
}
