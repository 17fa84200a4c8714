#!/usr/bin/env bash
# Usage: sudo hack/test.sh
#
# The project's test command (the README's second command; .ci/run calls it).
# 1. cargo fmt --check and cargo clippy -D warnings;
# 2. unit tests, actor tests on the mock CRI, the mock served over gRPC,
#    doctests, the embedding examples, cargo doc without warnings;
# 3. as root: starts its own containerd (hack/containerd/up.sh, state under
#    $ACTLET_CONTAINERD_DIR, default /var/lib/actlet-ci), runs the tests that
#    need a real runtime with ACTLET_REQUIRE_CONTAINERD=1 (so they fail
#    instead of skipping) and those that mount a tmpfs with
#    ACTLET_REQUIRE_ROOT=1, and stops that containerd on exit, whatever happens.
#    Not root: those tests say loudly that they were skipped.
# 4. with KUBEBUILDER_ASSETS (a directory with kube-apiserver and etcd; default
#    ../shared/envtest/bin when that exists, as .ci/run sets it) the
#    *_on_envtest tests run against a real API server; without it they say SKIPPED.
# 5. with cargo-fuzz installed, every fuzz target runs a few seconds (hack/fuzz.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CARGO_TERM_COLOR=never
step() { printf '\n==> %s\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --locked -- -D warnings

if [ "$(id -u)" -eq 0 ]; then
    export ACTLET_CONTAINERD_DIR="${ACTLET_CONTAINERD_DIR:-/var/lib/actlet-ci}"
    step "starting containerd under $ACTLET_CONTAINERD_DIR"
    cleanup() { step "stopping containerd"; hack/containerd/down.sh --purge || true; }
    trap cleanup EXIT
    ACTLET_CRI_ENDPOINT="$(hack/containerd/up.sh)"
    export ACTLET_CRI_ENDPOINT ACTLET_REQUIRE_CONTAINERD=1
    # tests that mount (tests/eviction_disk_pressure.rs) fail instead of skipping
    export ACTLET_REQUIRE_ROOT=1
else
    echo "WARNING: not root: tests that need containerd will be SKIPPED" >&2
fi

if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -d ../shared/envtest/bin ]; then
    KUBEBUILDER_ASSETS="$(cd ../shared/envtest/bin && pwd)"
    export KUBEBUILDER_ASSETS
fi
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
    echo "envtest: real kube-apiserver + etcd from KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS: the *_on_envtest tests WILL run" >&2
else
    echo "WARNING: KUBEBUILDER_ASSETS unset: the *_on_envtest tests (real kube-apiserver) will be SKIPPED" >&2
fi

step "cargo test (unit, mock CRI, containerd, envtest)"
cargo test --locked --all-targets -- --test-threads="${ACTLET_TEST_THREADS:-2}"

step "cargo test --doc"
cargo test --locked --doc

step "examples: embedding (custom_agent, own_runtime)"
cargo run --locked --quiet --example custom_agent
cargo run --locked --quiet --example own_runtime

step "cargo doc (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --features testing

# A short run of every fuzz target (fuzz/, hack/fuzz.sh) when cargo-fuzz is
# installed (.ci/run installs it and sets ACTLET_REQUIRE_FUZZ, so CI cannot
# skip it); ACTLET_FUZZ_SECONDS per target (default 5).
if cargo fuzz --version >/dev/null 2>&1; then
    step "fuzz: every target for ${ACTLET_FUZZ_SECONDS:-5} s (hack/fuzz.sh)"
    hack/fuzz.sh "${ACTLET_FUZZ_SECONDS:-5}"
elif [ -n "${ACTLET_REQUIRE_FUZZ:-}" ]; then
    echo "ERROR: ACTLET_REQUIRE_FUZZ is set but cargo-fuzz is not installed (cargo install cargo-fuzz --locked)" >&2
    exit 1
else
    echo "NOTE: cargo-fuzz not installed: fuzz targets not run (cargo install cargo-fuzz --locked; hack/fuzz.sh)" >&2
fi
