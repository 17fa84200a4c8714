#!/usr/bin/env bash
# Usage: sudo hack/bench.sh [--quick] [--only p1,p2,p3,cluster,churn]
#
# actlet's benchmarks (issue 6), one command. See docs/performance.md.
#   1. builds the release actlet binary and the bench example;
#   2. as root: starts a private containerd (hack/containerd/up.sh, state under
#      $ACTLET_BENCH_CONTAINERD_DIR, default /var/lib/actlet-bench) and stops it
#      on exit whatever happens (down.sh --purge); not root: only P2 (mock) runs;
#   3. runs `bench all`: P1 (overhead over raw CRI on containerd), P2 (1k/10k
#      pods on the in-process mock CRI), P3 (footprint), cluster (actlet against a
#      real kube-apiserver: start -> Node Ready, API pod -> Running + Ready beside
#      the raw CRI floor, footprint; needs KUBEBUILDER_ASSETS, default
#      ../shared/envtest/bin when that exists, else SKIPPED); the churn soak
#      (30 min) only with --only churn;
#   4. writes bench-results.json (one object per figure: name, unit, value,
#      conditions) and prints a table with the targets beside the figures.
#
# --quick: small N and 5 s idle windows (a smoke run, ~2 min after the build).
# Figures are printed, never asserted: this command fails only if a benchmark
# cannot run (e.g. containerd does not start or a pod never becomes Running).
#
# Environment:
#   ACTLET_BENCH_CONTAINERD_DIR  containerd state dir (default /var/lib/actlet-bench)
#   ACTLET_BENCH_WORK            scratch dir: manifests, actlet logs (default target/bench)
#   ACTLET_BENCH_OUT             the JSON summary (default bench-results.json)
#   KUBEBUILDER_ASSETS           kube-apiserver + etcd for the cluster part
#   CARGO_TARGET_DIR             as usual (default target)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ARGS=()
for a in "$@"; do
    case "$a" in
        -h|--help) sed -n '2,28p' "$0" >&2; exit 0 ;;
        *) ARGS+=("$a") ;;
    esac
done

export CARGO_TERM_COLOR=never
step() { printf '\n==> %s\n' "$*" >&2; }

TARGET=${CARGO_TARGET_DIR:-target}
WORK=${ACTLET_BENCH_WORK:-$TARGET/bench}
OUT=${ACTLET_BENCH_OUT:-bench-results.json}
mkdir -p "$WORK"

step "cargo build --release (actlet, examples/bench)"
cargo build --release --locked --bin actlet --example bench

ENDPOINT_ARGS=()
if [ "$(id -u)" -eq 0 ]; then
    export ACTLET_CONTAINERD_DIR="${ACTLET_BENCH_CONTAINERD_DIR:-/var/lib/actlet-bench}"
    step "starting containerd under $ACTLET_CONTAINERD_DIR"
    cleanup() {
        step "stopping containerd"
        hack/containerd/down.sh --purge || true
        rm -rf /dev/shm/actlet-bench
    }
    trap cleanup EXIT
    EP="$(hack/containerd/up.sh)"
    ENDPOINT_ARGS=(--endpoint "$EP")
else
    echo "WARNING: not root: P1 and P3 (real containerd) are SKIPPED; P2 (mock) runs" >&2
    trap 'rm -rf /dev/shm/actlet-bench' EXIT
fi

if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -d ../shared/envtest/bin ]; then
    KUBEBUILDER_ASSETS="$(cd ../shared/envtest/bin && pwd)"
    export KUBEBUILDER_ASSETS
fi

step "bench all ${ARGS[*]:-}"
"$TARGET/release/examples/bench" all \
    "${ENDPOINT_ARGS[@]}" \
    --actlet "$TARGET/release/actlet" \
    --work-dir "$WORK" \
    --out "$OUT" \
    "${ARGS[@]}"
