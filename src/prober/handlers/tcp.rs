//! tcpSocket probes (upstream `pkg/probe/tcp`): a connection that opens
//! within the timeout passes; it is closed at once.

use std::time::Duration;

use tokio::net::TcpStream;

use super::{Answer, Raw, join_host_port};

/// Go's text for a failed dial.
fn dial_error(addr: &str, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {addr}: {why}")
}

/// Upstream `DoTCPProbe`.
pub async fn probe(host: &str, port: u16, timeout: Duration) -> Answer {
    let addr = join_host_port(host, port);
    match tokio::time::timeout(timeout, TcpStream::connect(addr.as_str())).await {
        Ok(Ok(conn)) => {
            drop(conn);
            Answer::new(Raw::Success, "")
        }
        Ok(Err(e)) => Answer::new(Raw::Failure, dial_error(&addr, &e)),
        Err(_) => Answer::new(Raw::Failure, format!("dial tcp {addr}: i/o timeout")),
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;

    #[tokio::test]
    async fn open_ports_pass_closed_ports_fail() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(
            probe("127.0.0.1", port, Duration::from_secs(1)).await.result,
            Raw::Success
        );
        drop(listener);
        assert_eq!(
            probe("127.0.0.1", port, Duration::from_secs(1)).await,
            Answer::new(
                Raw::Failure,
                format!("dial tcp 127.0.0.1:{port}: connect: connection refused")
            )
        );
    }

    #[tokio::test]
    async fn an_unroutable_address_times_out() {
        // TEST-NET-1 is never routed; the dial hangs until the timeout
        // (or fails at once where there is no route at all).
        let start = std::time::Instant::now();
        let a = probe("192.0.2.1", 80, Duration::from_millis(300)).await;
        assert_eq!(a.result, Raw::Failure);
        assert!(start.elapsed() < Duration::from_secs(2), "bounded by the timeout");
    }
}
