//! Arbitrary bytes through the KubeletConfiguration parser (decode,
//! defaults, validation, Go durations): no input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    actlet::kubelet_config_file::fuzz_one(data);
});
