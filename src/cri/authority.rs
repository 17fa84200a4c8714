//! Lets gRPC clients that send a unix socket path as `:authority` talk to the
//! CRI server.
//!
//! h2 (under tonic) resets every stream whose `:authority` is not a valid URI
//! authority with `PROTOCOL_ERROR` (hyperium/h2 PR #487 is unmerged). Clients
//! that dial a unix socket commonly send the socket path there: grpc-go
//! before Kubernetes 1.26 (`/var/run/x.sock`), grpcio ≥ 1.57 (the
//! percent-encoded path), grpc-java (the path). A mock runtime meant for other
//! kubelets' and tools' tests must accept them, so the server reads each
//! connection through an [`AuthorityRewriter`]: it decodes every request
//! header block (HEADERS + CONTINUATION frames) with the client's HPACK state,
//! replaces an `:authority` that h2 would reject by `localhost` (what h2's own
//! client and Kubernetes ≥ 1.26 send over unix sockets), and hands h2 the block
//! re-encoded as literals without indexing.
//!
//! Why that keeps both HPACK contexts right:
//! - client → us: one [`loona_hpack::Decoder`] per connection follows the
//!   client's dynamic table. The client's table is bounded by the
//!   `SETTINGS_HEADER_TABLE_SIZE` the server advertises; tonic never sets it,
//!   so h2 advertises the default 4096, which bounds the decoder too (a larger
//!   size update is the client's error: the block is handed to h2 untouched).
//! - us → h2: literals without indexing never touch h2's dynamic table, so it
//!   stays empty whatever the client's tables did; the client's own
//!   `SETTINGS_HEADER_TABLE_SIZE` governs h2's encoder, the other direction,
//!   which this module leaves alone.
//! - Re-encoded blocks are split into frames of at most 16,384 bytes, the
//!   smallest `SETTINGS_MAX_FRAME_SIZE` a peer may announce.
//!
//! Anything that is not a well-formed HTTP/2 client stream (no connection
//! preface, a frame sequence HTTP/2 forbids, a block that does not decode or
//! decodes beyond 1 MiB) is handed to h2 as received and the connection is
//! passed through from then on, so h2 reports the error as it always did.
//! Frames other than HEADERS/CONTINUATION are forwarded as they arrive,
//! without buffering.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER_LEN: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The smallest SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2): every peer accepts it.
const MAX_OUT_FRAME: usize = 16_384;
/// h2's default SETTINGS_HEADER_TABLE_SIZE, which the server advertises.
const HEADER_TABLE_SIZE: usize = 4_096;
/// A header block larger than this, encoded or decoded, is left to h2.
const MAX_BLOCK: usize = 1 << 20;
/// What a rejected authority becomes.
const REPLACEMENT: &[u8] = b"localhost";

/// Whether h2 accepts `value` as `:authority` (it parses it as a URI authority).
///
/// ```
/// use actlet::cri::authority::authority_is_valid;
/// assert!(authority_is_valid(b"localhost"));
/// assert!(!authority_is_valid(b"/run/containerd/containerd.sock"));
/// ```
pub fn authority_is_valid(value: &[u8]) -> bool {
    http::uri::Authority::try_from(value).is_ok()
}

#[derive(Debug)]
enum Mode {
    /// Matching the connection preface; holds how many bytes matched.
    Preface(usize),
    /// Reading frame headers; `forward` payload bytes of a frame that is not
    /// part of a header block are still to be copied through.
    Frames { forward: usize },
    /// Not (or no longer) a stream this rewriter understands: copy everything.
    Passthrough,
}

/// What became of a HEADERS or CONTINUATION frame.
enum Taken {
    /// Added to the held block, or the block it ended was rewritten.
    Yes,
    /// Not taken: it breaks HTTP/2's rules (h2 will say so).
    No,
    /// It ended a block that does not decode or is too large.
    IntoUnrewritableBlock,
}

/// A header block being collected (HEADERS, then CONTINUATION until END_HEADERS).
#[derive(Debug)]
struct Block {
    stream_id: [u8; 4],
    end_stream: bool,
    priority: Option<[u8; 5]>,
    fragment: Vec<u8>,
    /// The frames as received, handed to h2 if the block cannot be rewritten.
    original: Vec<u8>,
}

/// Rewrites the client → server byte stream of one HTTP/2 connection so that
/// no request carries an `:authority` h2 rejects (see the module docs).
///
/// ```
/// use actlet::cri::authority::AuthorityRewriter;
/// let mut rw = AuthorityRewriter::new();
/// let mut out = Vec::new();
/// rw.feed(b"GET / HTTP/1.1\r\n\r\n", &mut out); // not HTTP/2: copied as is
/// assert_eq!(out, b"GET / HTTP/1.1\r\n\r\n");
/// ```
pub struct AuthorityRewriter {
    mode: Mode,
    /// Received bytes not yet turned into output (a partial frame).
    pending: Vec<u8>,
    block: Option<Block>,
    decoder: loona_hpack::Decoder<'static>,
    rewritten: u64,
}

impl Default for AuthorityRewriter {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for AuthorityRewriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorityRewriter")
            .field("mode", &self.mode)
            .field("pending", &self.pending.len())
            .field("rewritten", &self.rewritten)
            .finish_non_exhaustive()
    }
}

impl AuthorityRewriter {
    /// A rewriter for a new connection.
    ///
    /// ```
    /// assert_eq!(actlet::cri::authority::AuthorityRewriter::new().rewritten(), 0);
    /// ```
    pub fn new() -> Self {
        let mut decoder = loona_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(HEADER_TABLE_SIZE);
        decoder.set_max_table_size(HEADER_TABLE_SIZE);
        Self {
            mode: Mode::Preface(0),
            pending: Vec::new(),
            block: None,
            decoder,
            rewritten: 0,
        }
    }

    /// How many `:authority` values were replaced so far.
    ///
    /// ```
    /// assert_eq!(actlet::cri::authority::AuthorityRewriter::new().rewritten(), 0);
    /// ```
    pub fn rewritten(&self) -> u64 {
        self.rewritten
    }

    /// Takes bytes received from the client and appends what h2 should read
    /// to `out`. Bytes of an incomplete frame are held until the rest arrives.
    ///
    /// ```
    /// use actlet::cri::authority::AuthorityRewriter;
    /// let mut rw = AuthorityRewriter::new();
    /// let mut out = Vec::new();
    /// rw.feed(b"PRI * HTTP/2.0\r\n", &mut out);
    /// rw.feed(b"\r\nSM\r\n\r\n", &mut out);
    /// assert_eq!(out, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    /// ```
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        if let Mode::Preface(matched) = self.mode {
            let want = &PREFACE[matched..];
            let n = want.len().min(input.len());
            if input[..n] != want[..n] {
                out.extend_from_slice(&PREFACE[..matched]);
                self.mode = Mode::Passthrough;
            } else if n == want.len() {
                out.extend_from_slice(PREFACE);
                input = &input[n..];
                self.mode = Mode::Frames { forward: 0 };
            } else {
                self.mode = Mode::Preface(matched + n);
                return;
            }
        }
        if let Mode::Passthrough = self.mode {
            out.extend_from_slice(input);
            return;
        }
        self.pending.extend_from_slice(input);
        let mut at = 0;
        while let Mode::Frames { forward } = self.mode {
            let available = self.pending.len() - at;
            if forward > 0 {
                let n = forward.min(available);
                out.extend_from_slice(&self.pending[at..at + n]);
                at += n;
                self.mode = Mode::Frames { forward: forward - n };
                if n == available {
                    break;
                }
                continue;
            }
            if available < FRAME_HEADER_LEN {
                break;
            }
            let head = &self.pending[at..at + FRAME_HEADER_LEN];
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let kind = head[3];
            if kind != HEADERS && kind != CONTINUATION {
                if self.block.is_some() {
                    // Only CONTINUATION may follow an unfinished block: h2's error.
                    self.fall_back(at, out);
                    return;
                }
                out.extend_from_slice(head);
                at += FRAME_HEADER_LEN;
                self.mode = Mode::Frames { forward: len };
                continue;
            }
            if available < FRAME_HEADER_LEN + len {
                if len > MAX_BLOCK {
                    self.fall_back(at, out);
                    return;
                }
                break;
            }
            let frame_end = at + FRAME_HEADER_LEN + len;
            match self.header_frame(at, frame_end, out) {
                Taken::Yes => at = frame_end,
                // The frame is not part of the held block: hand it over too.
                Taken::No => {
                    self.fall_back(at, out);
                    return;
                }
                // The block (this frame included) does not rewrite.
                Taken::IntoUnrewritableBlock => {
                    self.fall_back(frame_end, out);
                    return;
                }
            }
        }
        self.pending.drain(..at);
    }

    /// Hands h2 whatever is held (an unfinished block, then the rest) as
    /// received, and passes the connection through from now on.
    fn fall_back(&mut self, at: usize, out: &mut Vec<u8>) {
        if let Some(block) = self.block.take() {
            out.extend_from_slice(&block.original);
        }
        out.extend_from_slice(&self.pending[at..]);
        self.pending = Vec::new();
        self.mode = Mode::Passthrough;
    }

    /// Takes the HEADERS or CONTINUATION frame `pending[start..end]`.
    fn header_frame(&mut self, start: usize, end: usize, out: &mut Vec<u8>) -> Taken {
        let frame = &self.pending[start..end];
        let (flags, stream_id) = (frame[4], [frame[5] & 0x7f, frame[6], frame[7], frame[8]]);
        let mut payload = &frame[FRAME_HEADER_LEN..];
        if frame[3] == HEADERS {
            if self.block.is_some() {
                return Taken::No;
            }
            if flags & PADDED != 0 {
                let Some((&pad, rest)) = payload.split_first() else {
                    return Taken::No;
                };
                if usize::from(pad) > rest.len() {
                    return Taken::No;
                }
                payload = &rest[..rest.len() - usize::from(pad)];
            }
            let mut priority = None;
            if flags & PRIORITY != 0 {
                let Some((p, rest)) = payload.split_first_chunk::<5>() else {
                    return Taken::No;
                };
                priority = Some(*p);
                payload = rest;
            }
            self.block = Some(Block {
                stream_id,
                end_stream: flags & END_STREAM != 0,
                priority,
                fragment: payload.to_vec(),
                original: frame.to_vec(),
            });
        } else {
            let Some(block) = self.block.as_mut() else {
                return Taken::No;
            };
            if block.stream_id != stream_id || block.original.len() + frame.len() > MAX_BLOCK {
                return Taken::No;
            }
            block.fragment.extend_from_slice(payload);
            block.original.extend_from_slice(frame);
        }
        if flags & END_HEADERS == 0 {
            return Taken::Yes;
        }
        let Some(block) = self.block.take() else {
            return Taken::No;
        };
        match self.rewrite(&block.fragment) {
            Some(encoded) => {
                write_block(&block, &encoded, out);
                Taken::Yes
            }
            None => {
                self.block = Some(block);
                Taken::IntoUnrewritableBlock
            }
        }
    }

    /// Decodes one header block and re-encodes it with a valid `:authority`;
    /// None if it does not decode or is too large.
    fn rewrite(&mut self, fragment: &[u8]) -> Option<Vec<u8>> {
        let mut encoded = Vec::with_capacity(fragment.len() + 64);
        let mut decoded_size = 0usize;
        let mut rewritten = None;
        let result = self.decoder.decode_with_cb(fragment, |name, value| {
            // RFC 7541 §4.1 entry size: what h2 counts against its limits too.
            decoded_size = decoded_size.saturating_add(name.len() + value.len() + 32);
            if decoded_size > MAX_BLOCK {
                return;
            }
            let value: &[u8] = if name.as_ref() == b":authority" && !authority_is_valid(&value) {
                rewritten = Some(String::from_utf8_lossy(&value).into_owned());
                REPLACEMENT
            } else {
                &value
            };
            encode_literal(&name, value, &mut encoded);
        });
        if result.is_err() || decoded_size > MAX_BLOCK {
            return None;
        }
        if let Some(original) = rewritten {
            if self.rewritten == 0 {
                tracing::debug!(
                    authority = %original,
                    "a client sent an :authority h2 rejects (a socket path?): serving it as localhost"
                );
            }
            self.rewritten += 1;
        }
        Some(encoded)
    }
}

/// A literal header field without indexing, new name, no Huffman (RFC 7541 §6.2.2).
fn encode_literal(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    out.push(0);
    for s in [name, value] {
        // Writing into a Vec cannot fail.
        let _ = loona_hpack::encoder::encode_integer_into(s.len(), 7, 0, out);
        out.extend_from_slice(s);
    }
}

/// Writes `encoded` as a HEADERS frame with `block`'s stream, END_STREAM and
/// priority, plus CONTINUATION frames so that no frame exceeds [`MAX_OUT_FRAME`].
fn write_block(block: &Block, encoded: &[u8], out: &mut Vec<u8>) {
    let priority: &[u8] = block.priority.as_ref().map_or(&[], |p| p.as_slice());
    let (first, mut rest) = encoded.split_at(encoded.len().min(MAX_OUT_FRAME - priority.len()));
    let mut flags = if priority.is_empty() { 0 } else { PRIORITY };
    if block.end_stream {
        flags |= END_STREAM;
    }
    write_frame(
        HEADERS,
        flags,
        &block.stream_id,
        &[priority, first],
        rest.is_empty(),
        out,
    );
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rest.len().min(MAX_OUT_FRAME));
        rest = tail;
        write_frame(CONTINUATION, 0, &block.stream_id, &[chunk], rest.is_empty(), out);
    }
}

fn write_frame(kind: u8, mut flags: u8, stream_id: &[u8; 4], parts: &[&[u8]], last: bool, out: &mut Vec<u8>) {
    if last {
        flags |= END_HEADERS;
    }
    // At most MAX_OUT_FRAME: fits the 24-bit length.
    let len = parts.iter().map(|p| p.len()).sum::<usize>().to_be_bytes();
    let n = len.len();
    out.extend_from_slice(&[len[n - 3], len[n - 2], len[n - 1], kind, flags]);
    out.extend_from_slice(stream_id);
    for part in parts {
        out.extend_from_slice(part);
    }
}

/// A server-side connection whose incoming bytes go through an
/// [`AuthorityRewriter`]; writes go to the client unchanged.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// let (mut client, server) = tokio::io::duplex(64);
/// let mut server = actlet::cri::authority::AuthorityFixingStream::new(server);
/// client.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.unwrap();
/// let mut preface = [0u8; 24];
/// server.read_exact(&mut preface).await.unwrap();
/// assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
/// # });
/// ```
#[derive(Debug)]
pub struct AuthorityFixingStream<S> {
    inner: S,
    rewriter: AuthorityRewriter,
    /// Rewritten bytes not yet read by h2, from `out_pos`.
    out: Vec<u8>,
    out_pos: usize,
    scratch: Box<[u8]>,
}

impl<S> AuthorityFixingStream<S> {
    /// Wraps an accepted connection.
    ///
    /// ```
    /// let (_client, server) = tokio::io::duplex(64);
    /// let _conn = actlet::cri::authority::AuthorityFixingStream::new(server);
    /// ```
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            rewriter: AuthorityRewriter::new(),
            out: Vec::new(),
            out_pos: 0,
            scratch: vec![0; 16 * 1024].into_boxed_slice(),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthorityFixingStream<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_pos);
                buf.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                // End of stream: a partial frame held back is of no use to h2.
                return Poll::Ready(Ok(()));
            }
            this.rewriter.feed(read.filled(), &mut this.out);
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthorityFixingStream<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<S: tonic::transport::server::Connected> tonic::transport::server::Connected for AuthorityFixingStream<S> {
    type ConnectInfo = S::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
#[path = "authority_tests.rs"]
mod tests;
