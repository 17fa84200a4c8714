//! CRI log lines (`<RFC3339Nano> <stream> <F|P> <content>`): no panic, and a
//! line that parses survives being written the way containerd writes it
//! (Go's RFC3339Nano in UTC) and parsed again.
#![no_main]

use std::time::SystemTime;

use actlet::cri::mock::{parse_cri_log_line, rfc3339_nano};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let Some(parsed) = parse_cri_log_line(line) else {
        return;
    };
    assert!(line.ends_with(parsed.content.as_str()));
    if parsed.time.timestamp_subsec_nanos() >= 1_000_000_000 {
        // A leap second (`…:60Z`): chrono accepts it, SystemTime (like Go's
        // time, hence containerd) has none, so it cannot be written back.
        return;
    }
    let tag = if parsed.partial { "P" } else { "F" };
    let time = rfc3339_nano(SystemTime::from(parsed.time));
    let written = format!("{time} {} {tag} {}", parsed.stream.as_str(), parsed.content);
    let again = parse_cri_log_line(&written).unwrap_or_else(|| panic!("{written:?} does not parse"));
    assert_eq!(again, parsed, "{written:?}");
});
