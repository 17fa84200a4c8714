#!/usr/bin/env bash
# Usage: hack/fuzz.sh [SECONDS] [TARGET...]
#
# Builds the cargo-fuzz targets of fuzz/ and runs each (default: all) for
# SECONDS (default 5) from the committed seeds in fuzz/corpus/<target>. New
# inputs go to a scratch directory, so the committed corpus stays as it is;
# a crash, a leak, a timeout (25 s for one input) or an OOM fails the run and
# leaves the input in fuzz/artifacts/<target>/.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and a nightly
# toolchain; without nightly it uses the stable one with RUSTC_BOOTSTRAP=1.
# The build is unoptimised and without a sanitizer by default (the crate is
# safe Rust: what the fuzzers look for are panics, hangs and OOMs; an ASan
# release build of the whole crate took over 30 min on two cores, this one
# ~10): ACTLET_FUZZ_BUILD_FLAGS="--release --sanitizer address" for the
# longer runs.
# Longer runs: hack/fuzz.sh 600 static_manifest (then `cargo fuzz cmin` and
# commit only a few new seeds).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

secs="${1:-5}"
shift || true
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
fi
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    mapfile -t targets < <("${fuzz[@]}" list)
fi

read -ra build_flags <<<"${ACTLET_FUZZ_BUILD_FLAGS:---dev --sanitizer none}"
"${fuzz[@]}" build "${build_flags[@]}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for target in "${targets[@]}"; do
    mkdir -p "$scratch/$target"
    log="$scratch/$target.log"
    if ! "${fuzz[@]}" run "${build_flags[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz: $target FAILED (the input is in fuzz/artifacts/$target/)" >&2
        exit 1
    fi
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
    echo "fuzz: $target: $runs inputs in ${secs}s, no failure" >&2
done
