//! The tonic CRI client against `actlet mock-cri` (the real binary, over a
//! unix socket): the served mock answers like a runtime, and the client
//! reconnects when the runtime's socket goes away and comes back.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use actlet::cri::v1;
use actlet::cri::{CriClient, Runtime};

struct MockCri(Child);

impl MockCri {
    fn start(socket: &std::path::Path) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
            .args(["mock-cri", "--listen", &format!("unix://{}", socket.display())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn actlet mock-cri");
        Self(child)
    }
}

impl Drop for MockCri {
    fn drop(&mut self) {
        // Only the process this test started, by PID.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn version_within(client: &CriClient, timeout: Duration) -> Result<v1::VersionResponse, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match client.version(v1::VersionRequest { version: "v1".into() }).await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[tokio::test]
async fn client_talks_to_the_mock_cri_binary_and_reconnects_after_it_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("mock.sock");
    let client = CriClient::new(&format!("unix://{}", socket.display()), Duration::from_secs(5)).unwrap();

    // Nothing listens yet: the call fails as UNAVAILABLE.
    let err = client
        .version(v1::VersionRequest { version: "v1".into() })
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err}");

    let server = MockCri::start(&socket);
    let v = version_within(&client, Duration::from_secs(20))
        .await
        .expect("mock-cri answers");
    assert_eq!(v.runtime_api_version, "v1");
    let status = client.status(v1::StatusRequest { verbose: false }).await.unwrap();
    let conds = status.status.unwrap().conditions;
    assert!(
        conds.iter().any(|c| c.r#type == "RuntimeReady" && c.status),
        "{conds:?}"
    );
    let img = client
        .image_status(v1::ImageStatusRequest {
            image: Some(v1::ImageSpec {
                image: "busybox:1.36".into(),
                ..Default::default()
            }),
            verbose: false,
        })
        .await
        .unwrap();
    assert!(img.image.is_some(), "the mock preloads busybox:1.36");

    // The runtime goes away: calls fail as UNAVAILABLE, not hang.
    drop(server);
    let err = client
        .version(v1::VersionRequest { version: "v1".into() })
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err}");

    // It comes back on the same socket: the same client reconnects.
    let _server = MockCri::start(&socket);
    let v = version_within(&client, Duration::from_secs(20))
        .await
        .expect("client reconnects");
    assert_eq!(v.runtime_api_version, "v1");
}
