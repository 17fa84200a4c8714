# shellcheck shell=bash
# Usage: source hack/containerd/env.sh
#
# Exports ACTLET_CONTAINERD_DIR (default /var/lib/actlet-containerd, or keeps
# the value already set) and CONTAINER_RUNTIME_ENDPOINT=unix://$DIR/containerd.sock,
# the endpoint hack/containerd/up.sh prints. Does not start anything.
ACTLET_CONTAINERD_DIR=${ACTLET_CONTAINERD_DIR:-/var/lib/actlet-containerd}
case "$ACTLET_CONTAINERD_DIR" in
    /*) ;;
    *) ACTLET_CONTAINERD_DIR="$PWD/$ACTLET_CONTAINERD_DIR" ;;
esac
ACTLET_CONTAINERD_DIR=$(realpath -m -- "$ACTLET_CONTAINERD_DIR")
export ACTLET_CONTAINERD_DIR
export CONTAINER_RUNTIME_ENDPOINT="unix://$ACTLET_CONTAINERD_DIR/containerd.sock"
export IMAGE_SERVICE_ENDPOINT="$CONTAINER_RUNTIME_ENDPOINT"
