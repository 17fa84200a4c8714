//! The mock's CRI streaming server: `Exec` and `Attach` answer with a URL
//! on a loopback WebSocket server of the mock's own, which speaks the
//! `v5.channel.k8s.io` / `v4.channel.k8s.io` protocols (one byte of channel
//! per binary message: 0 stdin, 1 stdout, 2 stderr, 3 status; v5 adds 255 to
//! close a stream). An exec runs the container's `ExecSync` behaviour and
//! sends its output and exit status; `cat` with stdin echoes stdin until the
//! client closes it. An attach streams what the client sends on stdin back
//! on stdout (the mock's containers have no terminal of their own). A port
//! forward (WebSocket protocol: data channel 2i and error channel 2i+1 per
//! port, each opened with the port number) echoes what is sent to a port.
//! Sessions are single-use and keyed by a random token, as runtimes do.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

use super::MockRuntime;
use crate::cri::Runtime;
use crate::cri::v1::ExecSyncRequest;

/// What a token stands for.
#[derive(Clone, Debug)]
pub(crate) enum Session {
    /// Run `cmd` in the container.
    Exec {
        /// Container.
        container_id: String,
        /// Command.
        cmd: Vec<String>,
        /// Stdin attached.
        stdin: bool,
    },
    /// Attach to the container.
    Attach,
    /// Forward `ports` of a sandbox: every port is an echo server here.
    PortForward {
        /// The ports asked for.
        ports: Vec<u16>,
    },
}

/// The listener and the sessions waiting for their client.
pub(crate) struct StreamServer {
    addr: SocketAddr,
    sessions: Mutex<HashMap<String, (Session, MockRuntime)>>,
}

/// Channel numbers of the remotecommand protocols.
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const STATUS: u8 = 3;
const CLOSE: u8 = 255;

impl StreamServer {
    /// Binds 127.0.0.1:0 and serves in the background.
    pub(crate) async fn start() -> std::io::Result<Arc<Self>> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let server = Arc::new(Self {
            addr: listener.local_addr()?,
            sessions: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&server);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let Some(server) = weak.upgrade() else { return };
                tokio::spawn(async move { server.serve(stream).await });
            }
        });
        Ok(server)
    }

    /// Registers a session; returns its URL.
    pub(crate) fn register(&self, kind: &str, session: Session, runtime: MockRuntime) -> String {
        let token: String = (0..8).map(|_| format!("{:02x}", rand::random::<u8>())).collect();
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.clone(), (session, runtime));
        format!("http://{}/{kind}/{token}", self.addr)
    }

    async fn serve(&self, stream: TcpStream) {
        let mut found = None;
        let mut protocol = String::new();
        // the signature tungstenite's handshake callback requires
        #[allow(clippy::result_large_err)]
        let callback = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
            let token = req.uri().path().rsplit('/').next().unwrap_or_default().to_string();
            found = self.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
            if found.is_none() {
                let mut e = ErrorResponse::new(Some("unknown or used token".into()));
                *e.status_mut() = http::StatusCode::NOT_FOUND;
                return Err(e);
            }
            let offered: Vec<String> = req
                .headers()
                .get_all("sec-websocket-protocol")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(',').map(|p| p.trim().to_string()))
                .collect();
            if let Some(p) = ["v5.channel.k8s.io", "v4.channel.k8s.io"]
                .into_iter()
                .find(|p| offered.iter().any(|o| o == p))
                && let Ok(v) = p.parse()
            {
                protocol = p.to_string();
                resp.headers_mut().insert("sec-websocket-protocol", v);
            }
            Ok(resp)
        };
        let ws = match tokio_tungstenite::accept_hdr_async(stream, callback).await {
            Ok(ws) => ws,
            Err(e) => {
                tracing::debug!(error = %e, "mock streaming: handshake failed");
                return;
            }
        };
        let Some((session, runtime)) = found else { return };
        let v5 = protocol == "v5.channel.k8s.io";
        let (mut tx, mut rx) = ws.split();
        let frame = |ch: u8, data: &[u8]| {
            let mut m = vec![ch];
            m.extend_from_slice(data);
            Message::Binary(m.into())
        };
        if let Session::PortForward { ports } = &session {
            // each port: data channel 2i and error channel 2i+1, both first
            // carrying the port (little endian); data comes back as sent
            for (i, port) in ports.iter().enumerate() {
                for ch in [2 * i as u8, 2 * i as u8 + 1] {
                    if tx.send(frame(ch, &port.to_le_bytes())).await.is_err() {
                        return;
                    }
                }
            }
            while let Some(Ok(msg)) = rx.next().await {
                match msg {
                    Message::Binary(data) if data.first().is_some_and(|ch| ch % 2 == 0) => {
                        let sent = tx.send(Message::Binary(data)).await;
                        if sent.is_err() {
                            return;
                        }
                    }
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            let _ = tx.send(Message::Close(None)).await;
            return;
        }
        let echo = match &session {
            Session::Exec { cmd, stdin, .. } => *stdin && cmd.len() == 1 && cmd[0] == "cat",
            Session::Attach | Session::PortForward { .. } => true,
        };
        let status = if echo {
            // stdin back as stdout, until stdin is closed (v5) or the client goes
            while let Some(Ok(msg)) = rx.next().await {
                let Message::Binary(data) = msg else {
                    if matches!(msg, Message::Close(_)) {
                        break;
                    }
                    continue;
                };
                match data.first() {
                    Some(&STDIN) if tx.send(frame(STDOUT, &data[1..])).await.is_err() => return,
                    Some(&CLOSE) if v5 && data.get(1) == Some(&STDIN) => break,
                    _ => {}
                }
            }
            0
        } else if let Session::Exec { container_id, cmd, .. } = session {
            match runtime
                .exec_sync(ExecSyncRequest {
                    container_id,
                    cmd,
                    timeout: 0,
                })
                .await
            {
                Ok(r) => {
                    if !r.stdout.is_empty() && tx.send(frame(STDOUT, &r.stdout)).await.is_err() {
                        return;
                    }
                    if !r.stderr.is_empty() && tx.send(frame(STDERR, &r.stderr)).await.is_err() {
                        return;
                    }
                    r.exit_code
                }
                Err(e) => {
                    let _ = tx.send(frame(STDERR, e.to_string().as_bytes())).await;
                    126
                }
            }
        } else {
            0
        };
        let _ = tx.send(frame(STATUS, status_json(status).as_bytes())).await;
        let _ = tx.send(Message::Close(None)).await;
    }
}

/// The metav1.Status the error channel carries at the end.
pub(crate) fn status_json(exit_code: i32) -> String {
    if exit_code == 0 {
        return serde_json::json!({"metadata": {}, "status": "Success"}).to_string();
    }
    serde_json::json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: error executing command, exit status {exit_code}"),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]},
    })
    .to_string()
}
