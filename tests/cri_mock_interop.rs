//! `actlet mock-cri` serves gRPC clients that are not tonic and send the
//! socket path as `:authority`, which h2 alone resets with PROTOCOL_ERROR:
//! - Python grpcio (percent-encoded path), the real client, when installed
//!   (`pip install grpcio`; `.ci/run` installs it and sets
//!   `ACTLET_REQUIRE_GRPCIO=1` so that a missing grpcio fails instead of
//!   skipping);
//! - a hand-written HTTP/2 client sending the raw path like grpc-go in the
//!   Kubernetes 1.24 kubelet (`/var/run/….sock`), always.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct MockCri(Child);

impl MockCri {
    /// Starts `actlet mock-cri` with debug logs to `log` and waits for its socket.
    fn start(socket: &Path, log: &Path) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_actlet"))
            .args(["mock-cri", "--listen", &format!("unix://{}", socket.display())])
            .env("RUST_LOG", "warn,actlet=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log file"))
            .spawn()
            .expect("spawn actlet mock-cri");
        let mock = Self(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(socket).is_err() {
            assert!(
                Instant::now() < deadline,
                "mock-cri did not listen on {}",
                socket.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        mock
    }
}

impl Drop for MockCri {
    fn drop(&mut self) {
        // Only the process this test started, by PID.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const GRPCIO_CLIENT: &str = r#"
import json, sys, grpc

def fields(msg):
    """Top-level length-delimited fields of a protobuf message, by number."""
    out, i = {}, 0
    def varint():
        nonlocal i
        shift = value = 0
        while True:
            b = msg[i]; i += 1
            value |= (b & 0x7f) << shift; shift += 7
            if b < 0x80:
                return value
    while i < len(msg):
        key = varint()
        if key & 7 == 2:
            n = varint(); out[key >> 3] = msg[i:i + n].decode(); i += n
        elif key & 7 == 0:
            varint()
        else:
            raise ValueError(f"wire type {key & 7}")
    return out

with grpc.insecure_channel(sys.argv[1]) as channel:
    version = channel.unary_unary("/runtime.v1.RuntimeService/Version")
    images = channel.unary_unary("/runtime.v1.ImageService/ListImages")
    # Several calls on one connection: later header blocks refer to the
    # client's HPACK table.
    answers = [fields(version(b"\x0a\x02v1", timeout=10)) for _ in range(3)]
    listed = images(b"", timeout=10)
    print(json.dumps({"version": answers, "images_bytes": len(listed)}))
"#;

fn grpcio_available() -> bool {
    Command::new("python3")
        .args(["-c", "import grpc"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn grpcio_calls_the_mock_with_the_socket_path_as_authority() {
    if !grpcio_available() {
        let msg = "python3 with grpcio not found (pip install grpcio)";
        assert!(
            std::env::var_os("ACTLET_REQUIRE_GRPCIO").is_none(),
            "{msg}, but ACTLET_REQUIRE_GRPCIO is set"
        );
        eprintln!("SKIPPED grpcio_calls_the_mock_with_the_socket_path_as_authority: {msg}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (socket, log) = (dir.path().join("x.sock"), dir.path().join("mock.log"));
    let _mock = MockCri::start(&socket, &log);
    let output = Command::new("python3")
        .args(["-c", GRPCIO_CLIENT, &format!("unix://{}", socket.display())])
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "grpcio client failed:\n{stderr}\n{stdout}");
    let answer: serde_json::Value = serde_json::from_str(stdout.trim()).expect("client prints JSON");
    let versions = answer["version"].as_array().expect("versions");
    assert_eq!(versions.len(), 3);
    for v in versions {
        // VersionResponse: 1 version, 2 runtime_name, 3 runtime_version, 4 runtime_api_version.
        assert_eq!(v["4"], "v1", "{answer}");
        assert!(v["2"].as_str().is_some_and(|n| !n.is_empty()), "{answer}");
    }
    assert!(
        answer["images_bytes"].as_u64() > Some(0),
        "the mock preloads images: {answer}"
    );
    // grpcio did send what h2 rejects (else this test would prove nothing).
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("serving it as localhost") && log.contains("x.sock"),
        "the mock saw no socket-path authority:\n{log}"
    );
}

// ---- a raw HTTP/2 client, like grpc-go before Kubernetes 1.26 ----

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len().to_be_bytes();
    let mut f = vec![len[5], len[6], len[7], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn read_frame(conn: &mut UnixStream) -> (u8, u8, u32, Vec<u8>) {
    let mut head = [0u8; 9];
    conn.read_exact(&mut head).expect("read a frame header");
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0; len];
    conn.read_exact(&mut payload).expect("read a frame payload");
    let stream = u32::from_be_bytes([head[5] & 0x7f, head[6], head[7], head[8]]);
    (head[3], head[4], stream, payload)
}

type Headers = Vec<(String, String)>;

/// Calls Version on `stream` and returns (response headers, message, trailers).
fn call_version(
    conn: &mut UnixStream,
    encoder: &mut loona_hpack::Encoder<'_>,
    decoder: &mut loona_hpack::Decoder<'_>,
    stream: u32,
    authority: &str,
) -> (Headers, Vec<u8>, Headers) {
    let headers: [(&[u8], &[u8]); 6] = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", b"/runtime.v1.RuntimeService/Version"),
        (b":authority", authority.as_bytes()),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ];
    let block = encoder.encode(headers);
    let mut request = frame(0x1, 0x4, stream, &block);
    request.extend(frame(0x0, 0x1, stream, b"\0\0\0\0\x04\x0a\x02v1"));
    conn.write_all(&request).unwrap();
    let text = |h: Vec<(Vec<u8>, Vec<u8>)>| -> Headers {
        h.into_iter()
            .map(|(n, v)| (String::from_utf8_lossy(&n).into(), String::from_utf8_lossy(&v).into()))
            .collect()
    };
    let (mut response, mut message) = (None, Vec::new());
    loop {
        let (kind, flags, id, payload) = read_frame(conn);
        match kind {
            0x4 if flags & 1 == 0 => conn.write_all(&frame(0x4, 1, 0, &[])).unwrap(), // SETTINGS ack
            0x3 if id == stream => panic!("RST_STREAM {:?} on stream {stream}", payload),
            0x7 => panic!("GOAWAY {payload:?}"),
            0x1 if id == stream => {
                assert_ne!(flags & 0x4, 0, "no CONTINUATION expected for small headers");
                let headers = text(decoder.decode(&payload).expect("decode response headers"));
                if response.is_none() && flags & 0x1 == 0 {
                    response = Some(headers);
                } else {
                    return (response.unwrap_or_default(), message, headers);
                }
            }
            0x0 if id == stream => message.extend_from_slice(&payload),
            _ => {}
        }
    }
}

#[test]
fn a_raw_http2_client_sending_the_socket_path_as_authority_gets_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, log) = (dir.path().join("mock.sock"), dir.path().join("mock.log"));
    let _mock = MockCri::start(&socket, &log);
    let mut conn = UnixStream::connect(&socket).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    conn.write_all(&frame(0x4, 0, 0, &[])).unwrap();
    let (mut encoder, mut decoder) = (loona_hpack::Encoder::new(), loona_hpack::Decoder::new());
    let path = socket.display().to_string();
    // Two calls: the second header block indexes the first's table entries.
    for (stream, authority) in [(1, path.as_str()), (3, path.as_str()), (5, "localhost")] {
        let (headers, message, trailers) = call_version(&mut conn, &mut encoder, &mut decoder, stream, authority);
        assert!(headers.contains(&(":status".into(), "200".into())), "{headers:?}");
        assert!(trailers.contains(&("grpc-status".into(), "0".into())), "{trailers:?}");
        // gRPC framing (5 bytes), then VersionResponse with runtime_api_version = "v1" (field 4).
        assert!(
            message.len() > 5 && message[5..].windows(4).any(|w| w == b"\x22\x02v1"),
            "{message:?}"
        );
    }
}
