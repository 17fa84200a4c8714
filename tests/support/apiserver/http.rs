//! Just enough HTTP/1.1: keep-alive connections, `Content-Length` or chunked request bodies,
//! and responses framed the way Go's net/http frames them (bodies of at most 2048 bytes get
//! `Content-Length`, larger ones and every watch `Transfer-Encoding: chunked`).

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAX_HEAD: usize = 1 << 20;
const MAX_BODY: usize = 64 << 20;

#[derive(Clone, Debug)]
pub struct HttpRequest {
    pub method: String,
    /// Path and query as sent.
    pub target: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The percent-decoded path.
    pub fn path(&self) -> String {
        let raw = self.target.split('?').next().unwrap_or("");
        percent_decode(raw, false)
    }

    pub fn raw_query(&self) -> &str {
        self.target.split_once('?').map(|(_, q)| q).unwrap_or("")
    }

    /// The media type of `Content-Type`, without parameters.
    pub fn content_type(&self) -> Option<String> {
        self.header("content-type")
            .map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
    }
}

#[derive(Clone, Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' if plus_is_space => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more bytes into `buf`; `Ok(false)` at end of stream.
async fn fill<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut tmp = [0u8; 16 * 1024];
    let n = rd.read(&mut tmp).await?;
    buf.extend_from_slice(&tmp[..n]);
    Ok(n > 0)
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// The next request on a connection; `None` when the client closed it between requests.
/// `buf` holds bytes read past the previous request.
pub async fn read_request<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut Vec<u8>) -> io::Result<Option<HttpRequest>> {
    let head_end = loop {
        if let Some(pos) = find(buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        if !fill(rd, buf).await? {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let method = parts.next().ok_or_else(|| bad("no method"))?.to_string();
    let target = parts.next().ok_or_else(|| bad("no target"))?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    buf.drain(..head_end + 4);
    let get = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let chunked = get("transfer-encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(p) = find(buf, b"\r\n") {
                    break p;
                }
                if !fill(rd, buf).await? {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            };
            let size_str = String::from_utf8_lossy(&buf[..line_end]).into_owned();
            let size = usize::from_str_radix(size_str.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| bad("bad chunk size"))?;
            buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let end = loop {
                        if let Some(p) = find(buf, b"\r\n") {
                            break p;
                        }
                        if !fill(rd, buf).await? {
                            return Err(io::ErrorKind::UnexpectedEof.into());
                        }
                    };
                    buf.drain(..end + 2);
                    if end == 0 {
                        break;
                    }
                }
                break;
            }
            if body.len() + size > MAX_BODY {
                return Err(bad("body too large"));
            }
            while buf.len() < size + 2 {
                if !fill(rd, buf).await? {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
            body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
        }
        body
    } else {
        let len: usize = get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
        if len > MAX_BODY {
            return Err(bad("body too large"));
        }
        while buf.len() < len {
            if !fill(rd, buf).await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        buf.drain(..len).collect()
    };
    Ok(Some(HttpRequest {
        method,
        target,
        headers,
        body,
    }))
}

pub fn status_text(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

pub fn head(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", status_text(status));
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// Writes a whole response, framed as Go does: `Content-Length` up to 2048 bytes, else one
/// chunk and the terminating chunk.
pub async fn write_response<W: AsyncWrite + Unpin>(wr: &mut W, resp: &HttpResponse, head_only: bool) -> io::Result<()> {
    let mut headers = resp.headers.clone();
    let mut out;
    if resp.body.len() <= 2048 {
        headers.push(("Content-Length".into(), resp.body.len().to_string()));
        out = head(resp.status, &headers);
        if !head_only {
            out.extend_from_slice(&resp.body);
        }
    } else {
        headers.push(("Transfer-Encoding".into(), "chunked".into()));
        out = head(resp.status, &headers);
        if !head_only {
            out.extend_from_slice(&chunk(&resp.body));
            out.extend_from_slice(b"0\r\n\r\n");
        }
    }
    wr.write_all(&out).await?;
    wr.flush().await
}

/// One HTTP/1.1 chunk.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// Go's `bufio.Writer` (2048 bytes) over the chunked writer of a watch response: each write
/// to the underlying writer is one chunk. Queued events are cut at buffer boundaries, so one
/// event can span chunks and one chunk can hold the tail of one event and the head of the
/// next; an event larger than the free buffer with nothing buffered goes out as one chunk.
#[derive(Default)]
pub struct GoBufWriter {
    buf: Vec<u8>,
    chunks: Vec<Vec<u8>>,
}

impl GoBufWriter {
    const SIZE: usize = 2048;

    pub fn write(&mut self, mut p: &[u8]) {
        while p.len() > Self::SIZE - self.buf.len() {
            if self.buf.is_empty() {
                self.chunks.push(p.to_vec());
                return;
            }
            let n = Self::SIZE - self.buf.len();
            self.buf.extend_from_slice(&p[..n]);
            self.flush();
            p = &p[n..];
        }
        self.buf.extend_from_slice(p);
    }

    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.chunks.push(std::mem::take(&mut self.buf));
        }
    }

    /// The chunks written to the wire so far, HTTP-framed.
    pub fn take_wire(&mut self) -> Vec<u8> {
        self.chunks.drain(..).flat_map(|c| chunk(&c)).collect()
    }
}
