#!/usr/bin/env bash
# Usage: sudo hack/demo.sh            (README command 1)
#
# The main job on a fresh Debian machine, as root:
# 1. installs containerd, runc, CNI plugins and image tools, starts a
#    self-contained containerd (hack/containerd/up.sh; state under
#    $ACTLET_CONTAINERD_DIR, default /var/lib/actlet-containerd) and builds
#    the local busybox and pause images (no registry needed);
# 2. builds actlet (release) and runs it in standalone mode on the static pods
#    in examples/static-pods, with the read-only server on 127.0.0.1:10255;
# 3. waits until every pod is Running and prints them from /pods.
# Then actlet keeps running in the foreground; Ctrl-C stops it (pods keep
# running, as with a kubelet) and the containerd it started (pods with it).
# ACTLET_DEMO_EXIT=1: stop right after printing the pods (used by CI-style runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export ACTLET_CONTAINERD_DIR="${ACTLET_CONTAINERD_DIR:-/var/lib/actlet-containerd}"
ROOT_DIR="${ACTLET_ROOT_DIR:-/var/lib/actlet}"
PORT="${ACTLET_READ_ONLY_PORT:-10255}"

hack/containerd/install.sh
command -v cargo >/dev/null || { echo "cargo not found: install Rust first (rustup)" >&2; exit 1; }
EP="$(hack/containerd/up.sh)"
cargo build --release --locked --bin actlet >&2

pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
    hack/containerd/down.sh || true
}
trap cleanup EXIT

./target/release/actlet \
    --container-runtime-endpoint "$EP" \
    --pod-manifest-path examples/static-pods \
    --root-dir "$ROOT_DIR" \
    --read-only-port "$PORT" --address 127.0.0.1 &
pid=$!

want=$(find examples/static-pods -maxdepth 1 -name '*.yaml' | wc -l)
echo "waiting for $want pods to be Running ..." >&2
for _ in $(seq 1 120); do
    if out=$(curl -fsS "http://127.0.0.1:$PORT/pods" 2>/dev/null) &&
        [ "$(printf '%s' "$out" | hack/print-pods.py --count-running)" -ge "$want" ]; then
        printf '%s' "$out" | hack/print-pods.py
        if [ "${ACTLET_DEMO_EXIT:-0}" = 1 ]; then exit 0; fi
        echo "actlet is running (pid $pid); Ctrl-C to stop" >&2
        wait "$pid"
        exit $?
    fi
    kill -0 "$pid" 2>/dev/null || { echo "actlet exited early" >&2; exit 1; }
    sleep 0.5
done
echo "pods did not become Running within 60 s" >&2
exit 1
