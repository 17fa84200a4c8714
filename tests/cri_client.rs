//! The tonic CRI client against `actlet mock-cri` (the real binary, over a
//! unix socket): the served mock answers like a runtime, and the client
//! reconnects when the runtime's socket goes away and comes back; its image
//! filesystem mountpoint exists on the host.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use actlet::cri::v1;
use actlet::cri::{CriClient, Runtime};

struct MockCri(Child);

impl MockCri {
    fn start(socket: &std::path::Path) -> Self {
        Self::start_with(socket, &[], None)
    }

    /// With more arguments and, if given, `TMPDIR`.
    fn start_with(socket: &std::path::Path, args: &[&str], tmpdir: Option<&std::path::Path>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_actlet"));
        command
            .args(["mock-cri", "--listen", &format!("unix://{}", socket.display())])
            .args(args);
        if let Some(tmpdir) = tmpdir {
            command.env("TMPDIR", tmpdir);
        }
        let child = command
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

async fn image_fs_mountpoint(client: &CriClient) -> String {
    let info = client.image_fs_info(v1::ImageFsInfoRequest {}).await.unwrap();
    let fs = info.image_filesystems.first().expect("one image filesystem");
    fs.fs_id.as_ref().expect("fs_id").mountpoint.clone()
}

/// Kubelets look the image filesystem up on the host (the upstream kubelet
/// logs a mountpoint that does not exist): the served mock names a directory
/// it created, by default in `$TMPDIR`, or `--image-fs-dir`.
#[tokio::test]
async fn the_mock_cri_binary_reports_an_image_filesystem_that_exists() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();

    let socket = dir.path().join("default.sock");
    let client = CriClient::new(&format!("unix://{}", socket.display()), Duration::from_secs(5)).unwrap();
    let _default = MockCri::start_with(&socket, &[], Some(&tmp));
    version_within(&client, Duration::from_secs(20))
        .await
        .expect("mock-cri answers");
    let mountpoint = image_fs_mountpoint(&client).await;
    assert_eq!(
        std::path::Path::new(&mountpoint),
        tmp.join("actlet-mock-cri").join("image-fs")
    );
    assert!(std::path::Path::new(&mountpoint).is_dir(), "{mountpoint} exists");

    let chosen = dir.path().join("images").join("fs");
    let socket = dir.path().join("chosen.sock");
    let client = CriClient::new(&format!("unix://{}", socket.display()), Duration::from_secs(5)).unwrap();
    let _chosen = MockCri::start_with(&socket, &["--image-fs-dir", chosen.to_str().unwrap()], Some(&tmp));
    version_within(&client, Duration::from_secs(20))
        .await
        .expect("mock-cri answers");
    let mountpoint = image_fs_mountpoint(&client).await;
    assert_eq!(std::path::Path::new(&mountpoint), chosen);
    assert!(chosen.is_dir(), "--image-fs-dir is created");

    // In process, the mock keeps containerd's path.
    let mock = actlet::cri::mock::MockRuntime::new();
    let info = mock.image_fs_info(v1::ImageFsInfoRequest {}).await.unwrap();
    assert_eq!(
        info.image_filesystems[0].fs_id.as_ref().unwrap().mountpoint,
        actlet::cri::mock::SNAPSHOTTER_MOUNTPOINT
    );
}
