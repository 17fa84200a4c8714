//! `/exec`, `/attach` and `/portForward`: ask the runtime for a streaming URL
//! (CRI `Exec`/`Attach`/`PortForward`), then proxy the client's upgraded
//! connection to it byte for byte (as upstream's UpgradeAwareHandler: the
//! request is replayed to the streaming server, its `101 Switching
//! Protocols` answer is passed back, and the two connections are spliced).
//! The protocol inside (SPDY/3.1 or WebSocket `v4/v5.channel.k8s.io`) is
//! the client's and the runtime's business; redirects are not used.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::api::{ApiState, find_pod, running_container};
use super::routes::ServerState;
use super::secure::{Resp, bytes_response, form_pairs, text};
use crate::cri::CriError;
use crate::cri::v1::{AttachRequest, ExecRequest, PortForwardRequest};

/// Which container stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `/exec`: a new process.
    Exec,
    /// `/attach`: the container's main process.
    Attach,
}

/// Upstream's remotecommand options: `input`, `output`, `error`, `tty` = "1".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// Attach stdin.
    pub stdin: bool,
    /// Attach stdout.
    pub stdout: bool,
    /// Attach stderr (never with a TTY).
    pub stderr: bool,
    /// Allocate a TTY.
    pub tty: bool,
    /// `command` values, in order.
    pub command: Vec<String>,
}

impl StreamOptions {
    /// Parses the query; at least one stream must be asked for.
    pub fn parse(query: Option<&str>) -> Result<Self, String> {
        let pairs = form_pairs(query);
        let on = |k: &str| pairs.iter().any(|(key, v)| key == k && v == "1");
        let mut o = Self {
            stdin: on("input"),
            stdout: on("output"),
            stderr: on("error"),
            tty: on("tty"),
            command: pairs
                .iter()
                .filter(|(k, _)| k == "command")
                .map(|(_, v)| v.clone())
                .collect(),
        };
        if !(o.stdin || o.stdout || o.stderr) {
            return Err("you must specify at least 1 of stdin, stdout, stderr".into());
        }
        if o.tty && o.stderr {
            o.stderr = false;
        }
        Ok(o)
    }
}

/// The HTTP status for a runtime error (upstream `streaming.WriteError`).
pub fn cri_error_response(e: &CriError) -> Resp {
    let status = match e.code {
        tonic::Code::NotFound => StatusCode::NOT_FOUND,
        tonic::Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        tonic::Code::InvalidArgument => StatusCode::BAD_REQUEST,
        tonic::Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        tonic::Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    text(status, e.to_string())
}

/// `/exec/{ns}/{pod}[/{uid}]/{container}` and `/attach/…`.
pub async fn container_stream(
    kind: Kind,
    req: Request<Incoming>,
    (namespace, name, container): (&str, &str, &str),
    state: &ServerState,
    api: &ApiState,
) -> Resp {
    let opts = match StreamOptions::parse(req.uri().query()) {
        Ok(o) => o,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let Some(pod) = find_pod(state, namespace, name) else {
        return text(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let container_id = match running_container(api, &pod, container) {
        Ok(id) => id,
        Err(e) => return e.response(),
    };
    let url = match kind {
        Kind::Exec => api
            .runtime
            .exec(ExecRequest {
                container_id,
                cmd: opts.command,
                tty: opts.tty,
                stdin: opts.stdin,
                stdout: opts.stdout,
                stderr: opts.stderr,
            })
            .await
            .map(|r| r.url),
        Kind::Attach => api
            .runtime
            .attach(AttachRequest {
                container_id,
                stdin: opts.stdin,
                tty: opts.tty,
                stdout: opts.stdout,
                stderr: opts.stderr,
            })
            .await
            .map(|r| r.url),
    };
    match url {
        Ok(url) => proxy(req, &url).await,
        Err(e) => cri_error_response(&e),
    }
}

/// `/portForward/{ns}/{pod}[/{uid}]` (ports: `port` query values for
/// WebSocket clients; SPDY clients name them per stream).
pub async fn port_forward(
    req: Request<Incoming>,
    (namespace, name): (&str, &str),
    state: &ServerState,
    api: &ApiState,
) -> Resp {
    let Some(pod) = find_pod(state, namespace, name) else {
        return text(StatusCode::NOT_FOUND, "pod does not exist");
    };
    let sandbox = super::api::runtime_status(api, &pod).and_then(|s| {
        s.sandboxes
            .iter()
            .find(|b| b.state == crate::kuberuntime::pod_status::SandboxState::Ready)
            .map(|b| b.id.clone())
    });
    let Some(pod_sandbox_id) = sandbox else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("pod {name:?} has no ready sandbox"),
        );
    };
    let mut port = vec![];
    for (k, v) in form_pairs(req.uri().query()) {
        if k == "port" {
            match v.parse::<u16>() {
                Ok(p) if p > 0 => port.push(i32::from(p)),
                _ => return text(StatusCode::BAD_REQUEST, format!("invalid port {v:?}")),
            }
        }
    }
    match api
        .runtime
        .port_forward(PortForwardRequest { pod_sandbox_id, port })
        .await
    {
        Ok(r) => proxy(req, &r.url).await,
        Err(e) => cri_error_response(&e),
    }
}

/// Headers never passed to the streaming server.
const DROPPED: &[&str] = &[
    "host",
    "authorization",
    "proxy-authorization",
    "content-length",
    "transfer-encoding",
];

/// Connecting to and reading the streaming server's answer must finish within this.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(30);

/// The upgraded stream's response head, at most this big.
const MAX_HEAD: usize = 64 * 1024;

/// Proxies the upgrade request `req` to `url` and splices the connections.
pub async fn proxy(mut req: Request<Incoming>, url: &str) -> Resp {
    let is_upgrade = req
        .headers()
        .get(hyper::header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")));
    if !is_upgrade {
        return text(StatusCode::BAD_REQUEST, "Upgrade request required");
    }
    let Ok(target) = url.parse::<hyper::Uri>() else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, format!("bad streaming URL {url:?}"));
    };
    if target.scheme_str() != Some("http") {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("unsupported streaming URL {url:?}"),
        );
    }
    let Some(authority) = target.authority().map(|a| a.to_string()) else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, format!("bad streaming URL {url:?}"));
    };
    let authority = if authority.contains(':') {
        authority
    } else {
        format!("{authority}:80")
    };
    let path = target.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut head = format!("{} {} HTTP/1.1\r\nHost: {}\r\n", req.method(), path, authority);
    for (name, value) in req.headers() {
        if DROPPED.contains(&name.as_str()) {
            continue;
        }
        if let Ok(v) = value.to_str() {
            head.push_str(&format!("{}: {}\r\n", name.as_str(), v));
        }
    }
    head.push_str("\r\n");
    let connect = async {
        let mut upstream = TcpStream::connect(&authority).await?;
        upstream.write_all(head.as_bytes()).await?;
        let mut buf = Vec::with_capacity(4096);
        loop {
            let mut chunk = [0u8; 4096];
            let n = upstream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "closed before answering",
                ));
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return Ok((upstream, buf, end + 4));
            }
            if buf.len() > MAX_HEAD {
                return Err(std::io::Error::other("response head too large"));
            }
        }
    };
    let (upstream, buf, head_len) = match tokio::time::timeout(UPSTREAM_TIMEOUT, connect).await {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("error dialing backend: {e}")),
        Err(_) => return text(StatusCode::INTERNAL_SERVER_ERROR, "error dialing backend: timed out"),
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut headers);
    if !matches!(parsed.parse(&buf[..head_len]), Ok(httparse::Status::Complete(_))) {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "malformed response from the streaming server",
        );
    }
    let code = parsed.code.unwrap_or(500);
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut builder = hyper::Response::builder().status(status);
    for h in parsed.headers.iter() {
        builder = builder.header(h.name, h.value);
    }
    let rest = Bytes::copy_from_slice(&buf[head_len..]);
    if status != StatusCode::SWITCHING_PROTOCOLS {
        // pass the refusal on (its body as far as it arrived)
        let mut resp = bytes_response(status, "text/plain", rest);
        for h in parsed.headers.iter() {
            if let (Ok(n), Ok(v)) = (
                hyper::header::HeaderName::from_bytes(h.name.as_bytes()),
                hyper::header::HeaderValue::from_bytes(h.value),
            ) && n != hyper::header::CONTENT_LENGTH
                && n != hyper::header::TRANSFER_ENCODING
            {
                resp.headers_mut().insert(n, v);
            }
        }
        return resp;
    }
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let client = match upgrade.await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "client upgrade failed");
                return;
            }
        };
        let mut client = TokioIo::new(client);
        let mut upstream = upstream;
        if !rest.is_empty() && client.write_all(&rest).await.is_err() {
            return;
        }
        match tokio::io::copy_bidirectional(&mut client, &mut upstream).await {
            Ok((up, down)) => tracing::debug!(up, down, "stream closed"),
            Err(e) => tracing::debug!(error = %e, "stream ended"),
        }
    });
    match builder.body(
        http_body_util::Empty::<Bytes>::new()
            .map_err(|never| match never {})
            .boxed(),
    ) {
        Ok(r) => r,
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_options_follow_upstream() {
        let o = StreamOptions::parse(Some("command=echo&command=hi%20there&output=1&error=1")).unwrap();
        assert_eq!(o.command, ["echo", "hi there"]);
        assert!(o.stdout && o.stderr && !o.stdin && !o.tty);
        let o = StreamOptions::parse(Some("input=1&tty=1&error=1")).unwrap();
        assert!(o.stdin && o.tty && !o.stderr, "no stderr with a tty");
        let e = StreamOptions::parse(Some("command=ls&output=true")).unwrap_err();
        assert_eq!(e, "you must specify at least 1 of stdin, stdout, stderr");
    }
}
