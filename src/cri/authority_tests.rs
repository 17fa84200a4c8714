use super::*;

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, PartialEq)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len().to_be_bytes();
    let mut f = vec![len[5], len[6], len[7], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Splits what the rewriter produced (after the preface) into frames.
fn frames(out: &[u8]) -> Vec<Frame> {
    assert!(out.starts_with(PREFACE), "no preface");
    let mut rest = &out[PREFACE.len()..];
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let len = usize::from(rest[0]) << 16 | usize::from(rest[1]) << 8 | usize::from(rest[2]);
        frames.push(Frame {
            kind: rest[3],
            flags: rest[4],
            stream: u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]),
            payload: rest[9..9 + len].to_vec(),
        });
        rest = &rest[9 + len..];
    }
    frames
}

/// Decodes the header blocks of `frames` as h2 would (one decoder per connection).
fn blocks(frames: &[Frame]) -> Vec<(u32, Headers)> {
    let mut decoder = loona_hpack::Decoder::new();
    let mut out = Vec::new();
    let mut fragment = Vec::new();
    for f in frames.iter().filter(|f| f.kind == HEADERS || f.kind == CONTINUATION) {
        assert!(f.payload.len() <= MAX_OUT_FRAME, "frame of {} bytes", f.payload.len());
        assert_eq!(f.flags & PADDED, 0);
        let skip = if f.kind == HEADERS && f.flags & PRIORITY != 0 {
            5
        } else {
            0
        };
        fragment.extend_from_slice(&f.payload[skip..]);
        if f.flags & END_HEADERS != 0 {
            out.push((f.stream, decoder.decode(&fragment).expect("h2 decodes the block")));
            fragment.clear();
        }
    }
    assert!(fragment.is_empty(), "unfinished block");
    out
}

fn request(authority: &str, path: &str) -> Headers {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect()
}

fn encode(encoder: &mut loona_hpack::Encoder<'_>, headers: &Headers) -> Vec<u8> {
    encoder.encode(headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice())))
}

fn with_authority(mut headers: Headers, authority: &str) -> Headers {
    for (n, v) in &mut headers {
        if n == b":authority" {
            *v = authority.as_bytes().to_vec();
        }
    }
    headers
}

fn rewrite_all(input: &[u8]) -> (Vec<u8>, AuthorityRewriter) {
    let mut rw = AuthorityRewriter::new();
    let mut out = Vec::new();
    rw.feed(input, &mut out);
    (out, rw)
}

#[test]
fn rewrites_path_authorities_across_requests_sharing_the_clients_table() {
    // grpc-go < 1.5x sends the path, grpcio the percent-encoded path; the
    // second request's block refers to dynamic-table entries of the first.
    let first = request("/var/run/containerd.sock", "/runtime.v1.RuntimeService/Version");
    let second = request("var%2Frun%2Fcontainerd.sock", "/runtime.v1.RuntimeService/Status");
    assert!(!authority_is_valid(b"/var/run/containerd.sock"));
    assert!(!authority_is_valid(b"var%2Frun%2Fcontainerd.sock"));
    let mut client = loona_hpack::Encoder::new();
    let mut input = PREFACE.to_vec();
    input.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    input.extend(frame(HEADERS, END_HEADERS, 1, &encode(&mut client, &first)));
    input.extend(frame(0x0, END_STREAM, 1, b"\0\0\0\0\x04\x0a\x02v1"));
    let second_block = encode(&mut client, &second);
    input.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &second_block));
    let alone = encode(&mut loona_hpack::Encoder::new(), &second);
    assert!(second_block.len() < alone.len(), "the client reuses its table");

    let (out, rw) = rewrite_all(&input);
    assert_eq!(rw.rewritten(), 2);
    let frames = frames(&out);
    assert_eq!(
        frames.iter().map(|f| f.kind).collect::<Vec<_>>(),
        [0x4, HEADERS, 0x0, HEADERS]
    );
    assert_eq!(frames[2].payload, b"\0\0\0\0\x04\x0a\x02v1", "DATA unchanged");
    assert_eq!(frames[3].flags, END_HEADERS | END_STREAM);
    assert_eq!(
        blocks(&frames),
        [
            (1, with_authority(first, "localhost")),
            (3, with_authority(second, "localhost"))
        ]
    );
}

#[test]
fn leaves_valid_authorities_and_other_headers_alone() {
    let headers = request("localhost:1234", "/x");
    let mut input = PREFACE.to_vec();
    input.extend(frame(
        HEADERS,
        END_HEADERS,
        1,
        &encode(&mut loona_hpack::Encoder::new(), &headers),
    ));
    let (out, rw) = rewrite_all(&input);
    assert_eq!(rw.rewritten(), 0);
    assert_eq!(blocks(&frames(&out)), [(1, headers)]);
}

#[test]
fn joins_continuations_drops_padding_and_keeps_priority() {
    let headers = request("/run/x.sock", "/y");
    let block = encode(&mut loona_hpack::Encoder::new(), &headers);
    let (a, rest) = block.split_at(10);
    let (b, c) = rest.split_at(7);
    let mut first = vec![3]; // pad length
    first.extend_from_slice(&[0x80, 0, 0, 1, 42]); // exclusive dependency on stream 1, weight 42
    first.extend_from_slice(a);
    first.extend_from_slice(&[0, 0, 0]);
    let mut input = PREFACE.to_vec();
    input.extend(frame(HEADERS, PADDED | PRIORITY | END_STREAM, 5, &first));
    input.extend(frame(CONTINUATION, 0, 5, b));
    input.extend(frame(CONTINUATION, END_HEADERS, 5, c));
    let (out, rw) = rewrite_all(&input);
    assert_eq!(rw.rewritten(), 1);
    let frames = frames(&out);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].flags, PRIORITY | END_STREAM | END_HEADERS);
    assert_eq!(frames[0].payload[..5], [0x80, 0, 0, 1, 42]);
    assert_eq!(blocks(&frames), [(5, with_authority(headers, "localhost"))]);
}

#[test]
fn splits_blocks_larger_than_the_minimum_frame_size() {
    let mut headers = request("/run/x.sock", "/z");
    headers.push((b"x-big".to_vec(), vec![b'v'; 40_000]));
    let block = encode(&mut loona_hpack::Encoder::new(), &headers);
    let mut input = PREFACE.to_vec();
    let (a, b) = block.split_at(MAX_OUT_FRAME);
    input.extend(frame(HEADERS, PRIORITY, 1, &[&[0, 0, 0, 0, 15], a].concat()));
    input.extend(frame(CONTINUATION, END_HEADERS, 1, b));
    let (out, _) = rewrite_all(&input);
    let frames = frames(&out);
    let kinds: Vec<_> = frames.iter().map(|f| (f.kind, f.flags & END_HEADERS)).collect();
    assert_eq!(
        kinds,
        [(HEADERS, 0), (CONTINUATION, 0), (CONTINUATION, END_HEADERS)],
        "40 kB in frames of at most 16 kB"
    );
    assert_eq!(frames[0].payload.len(), MAX_OUT_FRAME);
    assert_eq!(blocks(&frames), [(1, with_authority(headers, "localhost"))]);
}

/// A connection with a bit of everything (settings, window update, data
/// larger than a read, padded/continued headers, ping).
fn busy_connection() -> Vec<u8> {
    let mut client = loona_hpack::Encoder::new();
    let mut input = PREFACE.to_vec();
    input.extend(frame(0x4, 0, 0, &[0, 4, 0, 0x10, 0, 0]));
    input.extend(frame(0x8, 0, 0, &[0, 1, 0, 0]));
    for stream in [1u32, 3, 5] {
        let block = encode(&mut client, &request("/p.sock", &format!("/s{stream}")));
        let (a, b) = block.split_at(block.len() / 2);
        input.extend(frame(HEADERS, PADDED, stream, &[&[2], a, &[0, 0]].concat()));
        input.extend(frame(CONTINUATION, END_HEADERS, stream, b));
        input.extend(frame(0x0, END_STREAM, stream, &vec![7; 20_000]));
    }
    input.extend(frame(0x6, 0, 0, b"pingpong"));
    input
}

#[test]
fn output_does_not_depend_on_how_the_input_arrives() {
    let input = busy_connection();
    let (whole, rw) = rewrite_all(&input);
    assert_eq!(rw.rewritten(), 3);
    for chunk in [1, 2, 9, 10, 1000] {
        let mut rw = AuthorityRewriter::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            rw.feed(piece, &mut out);
        }
        assert!(out == whole, "fed in chunks of {chunk}");
    }
    let frames = frames(&whole);
    let data: Vec<_> = frames
        .iter()
        .filter(|f| f.kind == 0x0)
        .map(|f| f.payload.len())
        .collect();
    assert_eq!(data, [20_000; 3]);
    assert_eq!(frames.last().unwrap().payload, b"pingpong");
    assert_eq!(blocks(&frames).len(), 3);
}

#[test]
fn hands_broken_streams_to_h2_as_received() {
    let block = encode(&mut loona_hpack::Encoder::new(), &request("/p.sock", "/a"));
    let later = frame(HEADERS, END_HEADERS, 3, &block);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // A DATA frame inside a header block (RFC 9113 §6.10).
        (
            "interleaved",
            [
                frame(HEADERS, 0, 1, &block[..4]),
                frame(0x0, 0, 1, b"x"),
                frame(CONTINUATION, END_HEADERS, 1, &block[4..]),
            ]
            .concat(),
        ),
        (
            "continuation without headers",
            frame(CONTINUATION, END_HEADERS, 1, &block),
        ),
        (
            "continuation of another stream",
            [
                frame(HEADERS, 0, 1, &block[..4]),
                frame(CONTINUATION, END_HEADERS, 3, &block[4..]),
            ]
            .concat(),
        ),
        ("index out of the table", frame(HEADERS, END_HEADERS, 1, &[0x80 | 100])),
        (
            "table above the advertised 4096",
            frame(HEADERS, END_HEADERS, 1, &[0x3f, 0xe2, 0x1f, 0x82]),
        ),
        (
            "padding longer than the frame",
            frame(HEADERS, END_HEADERS | PADDED, 1, &[9, 0x82]),
        ),
        ("truncated priority", frame(HEADERS, END_HEADERS | PRIORITY, 1, &[0, 0])),
    ];
    for (name, broken) in cases {
        let mut input = PREFACE.to_vec();
        input.extend(&broken);
        input.extend(&later);
        let (out, rw) = rewrite_all(&input);
        assert!(out == input, "{name}: passed through unchanged");
        assert_eq!(rw.rewritten(), 0, "{name}");
    }
}

#[test]
fn passes_through_what_is_not_http2() {
    let mut rw = AuthorityRewriter::new();
    let mut out = Vec::new();
    rw.feed(b"PRI * HTTP/2", &mut out);
    assert!(out.is_empty(), "a preface prefix is held");
    rw.feed(b".1\r\n\r\n", &mut out);
    assert_eq!(out, b"PRI * HTTP/2.1\r\n\r\n");
    rw.feed(&frame(HEADERS, END_HEADERS, 1, &[0x82]), &mut out);
    assert_eq!(out[18..], frame(HEADERS, END_HEADERS, 1, &[0x82]));
}

#[test]
fn bounds_what_it_decodes() {
    // 2,000 references to one 4 kB table entry decode to 8 MB: left to h2.
    let mut client = loona_hpack::Encoder::new();
    let entry = (b"x-a".to_vec(), vec![b'a'; 4000]);
    let mut block = encode(&mut client, &vec![entry.clone()]);
    let again = encode(&mut client, &vec![entry]);
    assert_eq!(again.len(), 1, "indexed");
    block.extend(std::iter::repeat_n(again[0], 2000));
    let mut input = PREFACE.to_vec();
    input.extend(frame(HEADERS, END_HEADERS, 1, &block));
    let (out, _) = rewrite_all(&input);
    assert!(out == input);
    // A header frame announcing more than the limit is not buffered.
    let mut rw = AuthorityRewriter::new();
    let mut out = Vec::new();
    rw.feed(PREFACE, &mut out);
    rw.feed(&[0xff, 0xff, 0xff, HEADERS, 0, 0, 0, 0, 1, 0x82], &mut out);
    assert_eq!(out.len(), PREFACE.len() + 10);
    assert!(rw.pending.is_empty());
}

#[tokio::test]
async fn the_stream_wrapper_rewrites_reads_and_passes_writes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let input = busy_connection();
    let (expected, _) = rewrite_all(&input);
    let (mut client, server) = tokio::io::duplex(1024);
    let mut server = AuthorityFixingStream::new(server);
    let writer = tokio::spawn(async move {
        for piece in input.chunks(777) {
            client.write_all(piece).await.unwrap();
        }
        let mut reply = [0u8; 5];
        client.read_exact(&mut reply).await.unwrap();
        assert_eq!(&reply, b"hello");
    });
    let mut got = vec![0u8; expected.len()];
    server.read_exact(&mut got).await.unwrap();
    assert!(got == expected);
    server.write_all(b"hello").await.unwrap();
    writer.await.unwrap();
}
