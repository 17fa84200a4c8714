//! The mock CRI server's `:authority` rewriter reads untrusted HTTP/2 bytes:
//! no panic, and the bytes h2 gets do not depend on how the input was split
//! into reads (the first byte picks the split size).
#![no_main]

use actlet::cri::authority::AuthorityRewriter;
use libfuzzer_sys::fuzz_target;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fuzz_target!(|data: &[u8]| {
    let Some((&split, frames)) = data.split_first() else {
        return;
    };
    // Mostly a valid preface, so that the frame parser gets the bytes.
    let input = if split & 0x80 == 0 { [PREFACE, frames].concat() } else { frames.to_vec() };
    let mut whole = Vec::new();
    let mut rw = AuthorityRewriter::new();
    rw.feed(&input, &mut whole);
    let mut pieces = Vec::new();
    let mut rw = AuthorityRewriter::new();
    for chunk in input.chunks(usize::from(split & 0x7f) + 1) {
        rw.feed(chunk, &mut pieces);
    }
    assert!(whole == pieces, "output depends on read boundaries");
});
