//! A stable-toolchain fuzz smoke test of the KubeletConfiguration parser:
//! thousands of random mutations of the reference files (byte flips,
//! truncations, spliced lines, odd scalars) through the same entry point as
//! the cargo-fuzz target (`fuzz/`). No input may panic.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SEEDS: &[&str] = &[
    include_str!("fixtures/kubelet-config/kubeadm-v1.36.yaml"),
    include_str!("fixtures/kubelet-config/go-kubelet-reference.yaml"),
];

const ODD: &[&str] = &[
    "-1",
    "0",
    "1e400",
    "9223372036854775807",
    "-9223372036854775808",
    "\"\"",
    "null",
    "~",
    "[]",
    "{}",
    "1.5",
    "1h2m3.5s",
    "-0s",
    "9999999999h",
    ".5s",
    "1ns",
    "\"2562047h47m16.854775807s\"",
    "true",
    "\"\\u0000\"",
    "&a [*a]",
];

fn mutate(rng: &mut StdRng, seed: &str) -> Vec<u8> {
    let mut lines: Vec<String> = seed.lines().map(String::from).collect();
    for _ in 0..rng.random_range(1..6) {
        let i = rng.random_range(0..lines.len());
        match rng.random_range(0..5) {
            0 => {
                // replace a value with an odd scalar
                if let Some((k, _)) = lines[i].split_once(':') {
                    lines[i] = format!("{k}: {}", ODD[rng.random_range(0..ODD.len())]);
                }
            }
            1 => {
                let j = rng.random_range(0..lines.len());
                let l = lines[j].clone();
                lines.insert(i, l);
            }
            2 => {
                lines.remove(i);
                if lines.is_empty() {
                    lines.push(String::new());
                }
            }
            3 => lines[i] = format!("  {}", lines[i]),
            _ => {
                let mut cut = rng.random_range(0..=lines[i].len());
                while !lines[i].is_char_boundary(cut) {
                    cut -= 1;
                }
                lines[i].truncate(cut);
            }
        }
    }
    let mut bytes = lines.join("\n").into_bytes();
    if rng.random_bool(0.2) && !bytes.is_empty() {
        let i = rng.random_range(0..bytes.len());
        bytes[i] ^= 1 << rng.random_range(0..8);
    }
    bytes
}

#[test]
fn random_mutations_of_the_reference_files_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x006b_7562_656c_6574);
    for n in 0..4000 {
        let seed = SEEDS[n % SEEDS.len()];
        let input = mutate(&mut rng, seed);
        let caught = std::panic::catch_unwind(|| actlet::kubelet_config_file::fuzz_one(&input));
        assert!(
            caught.is_ok(),
            "panicked on input:\n{}",
            String::from_utf8_lossy(&input)
        );
    }
    for odd in ODD {
        actlet::kubelet_config_file::fuzz_one(odd.as_bytes());
        actlet::kubelet_config_file::fuzz_one(odd.trim_matches('"').as_bytes());
    }
}
