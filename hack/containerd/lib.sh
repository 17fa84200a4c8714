# shellcheck shell=bash disable=SC2034
# hack/containerd/lib.sh - helpers shared by up.sh, down.sh, images.sh.
# Not meant to be run; it is sourced. Sets:
#   DIR   absolute state directory ($ACTLET_CONTAINERD_DIR, default /var/lib/actlet-containerd)
#   SOCK  $DIR/containerd.sock (containerd gRPC socket; CRI endpoint unix://$SOCK)
#   CONFIG $DIR/config.toml, PIDFILE $DIR/containerd.pid, LOGFILE $DIR/containerd.log
#   BRIDGE, SUBNET (after load_network / allocate_network): the CNI bridge and
#           pod subnet of this instance, see allocate_network.

_ACTLET_SCRIPT=$(basename "${0:-actlet}")
log() { echo "${_ACTLET_SCRIPT}: $*" >&2; }
die() { echo "${_ACTLET_SCRIPT}: error: $*" >&2; exit 1; }

HACK_CONTAINERD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HACK_DIR=$(dirname "$HACK_CONTAINERD_DIR")

DIR=${ACTLET_CONTAINERD_DIR:-/var/lib/actlet-containerd}
case "$DIR" in
    /*) ;;
    *) DIR="$PWD/$DIR" ;;
esac
DIR=$(realpath -m -- "$DIR")
[ "$DIR" != "/" ] || die "ACTLET_CONTAINERD_DIR must not be /"
SOCK="$DIR/containerd.sock"
TTRPC_SOCK="$DIR/containerd.sock.ttrpc"
CONFIG="$DIR/config.toml"
PIDFILE="$DIR/containerd.pid"
LOGFILE="$DIR/containerd.log"
NETWORK_ENV="$DIR/network.env"
NETS_REGISTRY=/run/actlet-containerd/nets
BRIDGE=""
SUBNET=""
PAUSE_IMAGE="registry.k8s.io/pause:3.9"
BUSYBOX_IMAGE="docker.io/library/busybox:1.36"
BUSYBOX_IMAGE_LATEST="docker.io/library/busybox:latest"

# unix socket paths are limited to 107 bytes (sun_path).
[ "${#TTRPC_SOCK}" -lt 104 ] || die "state dir path too long for a unix socket: $DIR"

require_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root"
}

# ctr against our socket (any extra args passed through).
ctr_() { ctr -a "$SOCK" "$@"; }
# tctr SECONDS ARGS...: ctr against our socket, killed after SECONDS.
tctr() { local t=$1; shift; timeout "$t" ctr -a "$SOCK" "$@"; }

# True when our containerd answers on $SOCK.
answering() {
    [ -S "$SOCK" ] && timeout 5 ctr -a "$SOCK" version >/dev/null 2>&1
}

# Read /proc/$1/cmdline into the array ARGV (no forks). False if unreadable.
read_argv() {
    ARGV=()
    [ -r "/proc/$1/cmdline" ] || return 1
    mapfile -d '' -t ARGV <"/proc/$1/cmdline" 2>/dev/null || return 1
    [ "${#ARGV[@]}" -gt 0 ]
}

# True when PID $1 is a containerd started with --config $CONFIG.
is_our_containerd() {
    local pid=$1 i
    [ -n "$pid" ] || return 1
    read_argv "$pid" || return 1
    [ "${ARGV[0]##*/}" = "containerd" ] || return 1
    for ((i = 1; i < ${#ARGV[@]}; i++)); do
        case "${ARGV[i]}" in
            --config|-config|-c)
                [ "${ARGV[i+1]:-}" = "$CONFIG" ] && return 0 ;;
            --config="$CONFIG"|-config="$CONFIG"|-c="$CONFIG")
                return 0 ;;
        esac
    done
    return 1
}

# Print the PID of our running containerd (pid file first, then a /proc scan
# for a containerd whose command line names our config), or nothing.
our_containerd_pid() {
    local pid d
    if [ -f "$PIDFILE" ]; then
        pid=$(tr -dc '0-9' <"$PIDFILE")
        if is_our_containerd "$pid"; then
            echo "$pid"
            return 0
        fi
    fi
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        if is_our_containerd "$pid"; then
            echo "$pid"
            return 0
        fi
    done
    return 0
}

# PIDs of containerd shims started by our containerd (their command line has
# "-address $SOCK").
our_shim_pids() {
    local d pid i
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        read_argv "$pid" || continue
        case "${ARGV[0]##*/}" in
            containerd-shim*) ;;
            *) continue ;;
        esac
        for ((i = 1; i < ${#ARGV[@]}; i++)); do
            case "${ARGV[i]}" in
                -address|--address)
                    if [ "${ARGV[i+1]:-}" = "$SOCK" ]; then echo "$pid"; break; fi ;;
                -address="$SOCK"|--address="$SOCK")
                    echo "$pid"; break ;;
            esac
        done
    done
}

# --- per-instance network ---------------------------------------------------------
# Each state dir gets its own bridge + subnet so that several instances (tests
# with different ACTLET_CONTAINERD_DIRs) can run at once. Chosen once by up.sh
# and kept in $DIR/network.env; ACTLET_CONTAINERD_BRIDGE / ACTLET_CONTAINERD_SUBNET
# override. Otherwise the first free pair of actlet<N> / 10.<88+N>.0.0/16
# (N = 0..99), free meaning: not used by another live instance (registered in
# /run/actlet-containerd/nets, or found in the conflist of any running
# "containerd --config <dir>/config.toml"), no such link and no route to it.

# load_network: BRIDGE/SUBNET from env, else network.env, else actlet0/10.88.0.0/16.
load_network() {
    local b="" s=""
    if [ -f "$NETWORK_ENV" ]; then
        b=$(sed -n 's/^BRIDGE=//p' "$NETWORK_ENV" | head -n1)
        s=$(sed -n 's/^SUBNET=//p' "$NETWORK_ENV" | head -n1)
    fi
    BRIDGE=${ACTLET_CONTAINERD_BRIDGE:-${b:-actlet0}}
    SUBNET=${ACTLET_CONTAINERD_SUBNET:-${s:-10.88.0.0/16}}
}

_registry_entry() { echo "$NETS_REGISTRY/$(printf '%s' "$DIR" | sha256sum | cut -c1-16)"; }

# Lines "BRIDGE SUBNET" of the other live instances in the registry.
_other_networks() {
    local f d b s
    for f in "$NETS_REGISTRY"/*; do
        [ -f "$f" ] || continue
        read -r d b s <"$f" || true
        [ -n "${d:-}" ] && [ "$d" != "$DIR" ] || continue
        # live = its state dir still has the same network.env
        if [ -f "$d/network.env" ] && grep -qxF "BRIDGE=$b" "$d/network.env" \
           && grep -qxF "SUBNET=$s" "$d/network.env"; then
            echo "$b $s"
        else
            rm -f "$f"
        fi
    done
    # Running instances that are not registered (older scripts, hand-started):
    # read the bridge/subnet from <config dir>/cni/net.d/*.conflist.
    local pid i cfg cd
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        read_argv "$pid" || continue
        [ "${ARGV[0]##*/}" = "containerd" ] || continue
        cfg=""
        for ((i = 1; i < ${#ARGV[@]}; i++)); do
            case "${ARGV[i]}" in
                --config|-config|-c) cfg=${ARGV[i+1]:-} ;;
                --config=*) cfg=${ARGV[i]#--config=} ;;
            esac
        done
        [ -n "$cfg" ] || continue
        cd=$(dirname -- "$cfg")
        [ "$cd" != "$DIR" ] || continue
        for f in "$cd"/cni/net.d/*.conflist; do
            [ -f "$f" ] || continue
            b=$(sed -n 's/.*"bridge"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | head -n1)
            s=$(sed -n 's/.*"subnet"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | head -n1)
            [ -z "$b$s" ] || echo "${b:--} ${s:--}"
        done
    done
}

# allocate_network: set BRIDGE/SUBNET (see above), write network.env, register.
allocate_network() {
    local b="" s="" n others
    mkdir -p "$NETS_REGISTRY"
    exec 7>"$NETS_REGISTRY/.lock"
    flock -w 30 7 || die "timed out waiting for $NETS_REGISTRY/.lock"
    others=$(_other_networks)
    if [ -f "$NETWORK_ENV" ]; then
        b=$(sed -n 's/^BRIDGE=//p' "$NETWORK_ENV" | head -n1)
        s=$(sed -n 's/^SUBNET=//p' "$NETWORK_ENV" | head -n1)
    fi
    b=${ACTLET_CONTAINERD_BRIDGE:-$b}
    s=${ACTLET_CONTAINERD_SUBNET:-$s}
    if [ -z "$b" ] || [ -z "$s" ]; then
        for ((n = 0; n < 100; n++)); do
            local cb="actlet$n" cs="10.$((88 + n)).0.0/16"
            [ -z "$b" ] || cb=$b
            [ -z "$s" ] || cs=$s
            if awk -v b="$cb" -v s="$cs" '$1 == b || $2 == s { f = 1 } END { exit !f }' <<<"$others"; then
                continue
            fi
            if [ -z "$b" ] && ip link show "$cb" >/dev/null 2>&1; then continue; fi
            if [ -z "$s" ] && [ -n "$(ip -4 route show "$cs" 2>/dev/null)" ]; then continue; fi
            b=$cb s=$cs
            break
        done
        [ -n "$b" ] && [ -n "$s" ] || die "no free bridge/subnet (actlet0..99, 10.88-187.0.0/16)"
    elif awk -v b="$b" -v s="$s" '$1 == b || $2 == s { f = 1 } END { exit !f }' <<<"$others"; then
        log "warning: bridge $b or subnet $s is also used by another running instance:"
        log "  $(tr '\n' ';' <<<"$others")"
    fi
    [ ${#b} -le 15 ] || die "bridge name too long (max 15): $b"
    BRIDGE=$b SUBNET=$s
    local content
    content=$(printf 'BRIDGE=%s\nSUBNET=%s\n' "$BRIDGE" "$SUBNET")
    if [ "$(cat "$NETWORK_ENV" 2>/dev/null)" != "$content" ]; then
        printf '%s\n' "$content" >"$NETWORK_ENV"
    fi
    echo "$DIR $BRIDGE $SUBNET" >"$(_registry_entry)"
    exec 7>&-
}

# unregister_network: drop this instance from the registry (down.sh --purge).
unregister_network() { rm -f "$(_registry_entry)"; }
