#!/usr/bin/env bash
# Usage: sudo [ACTLET_CONTAINERD_DIR=/var/lib/actlet-containerd] hack/containerd/images.sh [--rebuild]
#
# Builds, without any registry, the images actlet's tests need and imports them
# into the "k8s.io" namespace of the containerd started by up.sh (which calls
# this script; it must be running):
#   registry.k8s.io/pause:3.9        static /pause from hack/images/pause.c,
#                                    entrypoint /pause, user 65535:65535
#   docker.io/library/busybox:1.36   Debian's busybox-static + one symlink per
#   docker.io/library/busybox:latest applet, /etc/passwd, /etc/group, /tmp 1777, cmd sh
# Built images are cached as docker-archive tarballs in $DIR/images-cache (keyed
# on the inputs), so a second run is instant; an image already listed by
# `ctr -n k8s.io images ls -q` is not imported again (unless just rebuilt).
# --rebuild ignores the cache. Messages on stderr, nothing on stdout.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root

REBUILD=0
for a in "$@"; do
    case "$a" in
        --rebuild) REBUILD=1 ;;
        -h|--help) sed -n '2,16p' "$0" >&2; exit 0 ;;
        *) die "unknown argument: $a" ;;
    esac
done

for c in umoci skopeo gcc ctr sha256sum; do
    command -v "$c" >/dev/null 2>&1 || die "missing command $c; run hack/containerd/install.sh"
done
[ -x /bin/busybox ] || die "missing /bin/busybox (busybox-static); run hack/containerd/install.sh"
answering || die "containerd is not answering on $SOCK; run hack/containerd/up.sh"

PAUSE_SRC="$HACK_DIR/images/pause.c"
[ -f "$PAUSE_SRC" ] || die "missing $PAUSE_SRC"

CACHE="$DIR/images-cache"
mkdir -p "$CACHE"
exec 8>"$DIR/images.lock"
flock -w 300 8 || die "timed out waiting for the lock $DIR/images.lock"
rm -rf "$CACHE"/.pause.* "$CACHE"/.busybox.* 2>/dev/null || true  # leftovers of a killed run
TMPS=()
cleanup() { [ ${#TMPS[@]} -eq 0 ] || rm -rf "${TMPS[@]}"; }
trap cleanup EXIT

IMAGE_PATH_ENV="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SCRIPT_SUM=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)

imported_names=$(ctr_ -n k8s.io images ls -q)
is_imported() { grep -qxF -- "$1" <<<"$imported_names"; }

# new_layout TMP TAG: an OCI layout TMP/oci with an empty image TAG unpacked to TMP/bundle.
new_layout() {
    local tmp=$1 tag=$2
    umoci init --layout "$tmp/oci"
    umoci new --image "$tmp/oci:$tag"
    umoci unpack --image "$tmp/oci:$tag" "$tmp/bundle" >/dev/null
}

# to_archive TMP TAG OUT NAME [EXTRA_NAME...]: docker-archive tarball OUT holding NAME(s).
to_archive() {
    local tmp=$1 tag=$2 out=$3 name=$4 extra=()
    shift 4
    for n in "$@"; do extra+=(--additional-tag "$n"); done
    TMPDIR="$tmp" skopeo --insecure-policy copy -q "${extra[@]}" \
        "oci:$tmp/oci:$tag" "docker-archive:$tmp/image.tar:$name" >&2
    mv -f "$tmp/image.tar" "$out"
}

build_pause() { # OUT
    local out=$1 tmp
    tmp=$(mktemp -d "$CACHE/.pause.XXXXXX")
    TMPS+=("$tmp")
    gcc -static -O2 -s -Wall -o "$tmp/pause" "$PAUSE_SRC"
    new_layout "$tmp" 3.9
    install -m 0755 "$tmp/pause" "$tmp/bundle/rootfs/pause"
    umoci repack --image "$tmp/oci:3.9" "$tmp/bundle"
    umoci config --image "$tmp/oci:3.9" \
        --config.entrypoint /pause --config.user 65535:65535 \
        --os linux --architecture amd64
    to_archive "$tmp" 3.9 "$out" "$PAUSE_IMAGE"
}

build_busybox() { # OUT
    local out=$1 tmp rootfs applet
    tmp=$(mktemp -d "$CACHE/.busybox.XXXXXX")
    TMPS+=("$tmp")
    new_layout "$tmp" 1.36
    rootfs="$tmp/bundle/rootfs"
    install -d -m 0755 "$rootfs/bin" "$rootfs/sbin" "$rootfs/usr/bin" "$rootfs/usr/sbin" \
        "$rootfs/etc" "$rootfs/home" "$rootfs/var" "$rootfs/dev" "$rootfs/proc" "$rootfs/sys"
    install -d -m 0700 "$rootfs/root"
    install -d -m 1777 "$rootfs/tmp" "$rootfs/var/tmp"
    install -m 0755 /bin/busybox "$rootfs/bin/busybox"
    while read -r applet; do
        [ -n "$applet" ] || continue
        [ "$applet" != "bin/busybox" ] || continue
        mkdir -p "$rootfs/$(dirname "$applet")"
        ln -sfn /bin/busybox "$rootfs/$applet"
    done < <(/bin/busybox --list-full)
    cat >"$rootfs/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
PW
    cat >"$rootfs/etc/group" <<'GR'
root:x:0:
nobody:x:65534:
GR
    chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group"
    umoci repack --image "$tmp/oci:1.36" "$tmp/bundle"
    umoci config --image "$tmp/oci:1.36" \
        --config.cmd sh --config.env "$IMAGE_PATH_ENV" \
        --os linux --architecture amd64
    to_archive "$tmp" 1.36 "$out" "$BUSYBOX_IMAGE" "$BUSYBOX_IMAGE_LATEST"
}

# ensure KEY BUILD_FN NAME...: build (unless cached) and import (unless present).
ensure() {
    local key=$1 fn=$2 base=$3 tar stamp rebuilt=0 n missing=0
    shift 3
    tar="$CACHE/$base.tar"
    stamp="$CACHE/$base.key"
    if [ "$REBUILD" -eq 1 ] || [ ! -s "$tar" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$key" ]; then
        log "building $* ..."
        rm -f "$stamp"
        "$fn" "$tar"
        echo "$key" >"$stamp"
        rebuilt=1
    else
        log "cached: $tar"
    fi
    for n in "$@"; do is_imported "$n" || missing=1; done
    if [ "$rebuilt" -eq 1 ] || [ "$missing" -eq 1 ]; then
        log "importing $* into namespace k8s.io"
        ctr_ -n k8s.io images import --snapshotter overlayfs "$tar" >&2
        imported_names=$(ctr_ -n k8s.io images ls -q)
        for n in "$@"; do is_imported "$n" || die "import of $tar did not create $n"; done
    else
        log "already imported: $*"
    fi
}

pause_key=$( { cat "$PAUSE_SRC"; gcc -dumpfullversion; echo "$SCRIPT_SUM"; } | sha256sum | cut -d' ' -f1)
busybox_key=$( (sha256sum /bin/busybox | cut -d' ' -f1; echo "$SCRIPT_SUM") | sha256sum | cut -d' ' -f1)

ensure "$pause_key" build_pause pause "$PAUSE_IMAGE"
ensure "$busybox_key" build_busybox busybox "$BUSYBOX_IMAGE" "$BUSYBOX_IMAGE_LATEST"
log "images ready: $PAUSE_IMAGE $BUSYBOX_IMAGE $BUSYBOX_IMAGE_LATEST"
