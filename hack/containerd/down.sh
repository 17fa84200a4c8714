#!/usr/bin/env bash
# Usage: sudo [ACTLET_CONTAINERD_DIR=/var/lib/actlet-containerd] hack/containerd/down.sh [--purge]
#
# Tears down what hack/containerd/up.sh started, and only that:
#   1. stops and removes every pod/container of that containerd (crictl stopp/rmp
#      if crictl exists, else ctr: kill -s KILL + rm of every task and container
#      in every namespace, their hostPort NAT rules, and the CNI host-local
#      reservations under $DIR);
#   2. SIGTERMs the containerd whose PID is in $DIR/containerd.pid (only after
#      checking /proc/PID/cmdline is "containerd --config $DIR/config.toml"),
#      SIGKILL after 10 s;
#   3. runc-deletes containers still in runc's state under $DIR/runc (only if
#      containerd was dead/hung), then SIGKILLs leftover shims whose command
#      line has "-address $DIR/containerd.sock";
#   4. unmounts everything mounted under $DIR (deepest first, umount -l);
#   5. deletes this instance's CNI bridge link (from $DIR/network.env, e.g. actlet0).
# --purge also deletes $DIR itself (images cache included). Safe to run when
# nothing is running. Messages on stderr.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PURGE=0
for a in "$@"; do
    case "$a" in
        --purge) PURGE=1 ;;
        -h|--help) sed -n '2,19p' "$0" >&2; exit 0 ;;
        *) die "unknown argument: $a" ;;
    esac
done

require_root

if [ ! -d "$DIR" ]; then
    log "$DIR does not exist; nothing to do"
    exit 0
fi
load_network

# Pods removed behind the CRI plugin's back got no CNI DEL: drop the portmap
# (hostPort) NAT rules tagged with their sandbox ids (in our_ids).
cleanup_hostport_nat() {
    [ ${#our_ids[@]} -gt 0 ] && command -v iptables >/dev/null 2>&1 || return 0
    local top hits num chain
    for top in CNI-HOSTPORT-DNAT CNI-HOSTPORT-SNAT; do
        iptables -w 5 -t nat -L "$top" -n >/dev/null 2>&1 || continue
        # "num target ... /* dnat name: "actlet" id: "<id>" */": highest num first.
        hits=$(iptables -w 5 -t nat -L "$top" -n --line-numbers 2>/dev/null | \
            awk 'NR == FNR { ids["id: \"" $0 "\""] = 1; next }
                 $1 ~ /^[0-9]+$/ { for (k in ids) if (index($0, k)) { print $1, $2; break } }' \
                <(printf '%s\n' "${our_ids[@]}") - | sort -rn)
        [ -n "$hits" ] || continue
        while read -r num chain; do
            iptables -w 5 -t nat -D "$top" "$num" || true
            case "$chain" in
                CNI-DN-*|CNI-SN-*)
                    iptables -w 5 -t nat -F "$chain" 2>/dev/null || true
                    iptables -w 5 -t nat -X "$chain" 2>/dev/null || true ;;
            esac
        done <<<"$hits"
        log "removed $(wc -l <<<"$hits") stale hostPort NAT rule(s) from $top"
    done
}

our_ids=()

# --- 1. pods and containers -------------------------------------------------
pid=$(our_containerd_pid)
if [ -n "$pid" ] && answering; then
    if command -v crictl >/dev/null 2>&1; then
        log "removing all CRI pods via crictl"
        crictl_() { timeout 60 crictl --runtime-endpoint "unix://$SOCK" --image-endpoint "unix://$SOCK" --timeout 30s "$@"; }
        crictl_ stopp -a >&2 2>&1 || log "warning: crictl stopp -a failed"
        crictl_ rmp -a -f >&2 2>&1 || crictl_ rmp -a >&2 2>&1 || log "warning: crictl rmp -a failed"
    fi
    # ctr pass: covers the no-crictl case and anything crictl left behind.
    removed=0
    for ns in $(tctr 10 namespaces ls -q 2>/dev/null || true); do
        tasks=$(tctr 10 -n "$ns" tasks ls -q 2>/dev/null || true)
        for t in $tasks; do
            tctr 10 -n "$ns" tasks kill -a -s KILL "$t" >/dev/null 2>&1 || \
                tctr 10 -n "$ns" tasks kill -s KILL "$t" >/dev/null 2>&1 || true
        done
        # (the CRI plugin deletes a sandbox's/container's task itself once it
        # exits, so "not found" here is normal)
        for t in $tasks; do
            if ! out=$(tctr 20 -n "$ns" tasks rm -f "$t" 2>&1) && ! grep -q 'not found' <<<"$out"; then
                log "warning: could not remove task $ns/$t: $(tail -n1 <<<"$out")"
            fi
        done
        for c in $(tctr 10 -n "$ns" containers ls -q 2>/dev/null || true); do
            our_ids+=("$c")
            if tctr 20 -n "$ns" containers rm "$c" >/dev/null 2>&1; then
                removed=$((removed + 1))
            else
                log "warning: could not remove container $ns/$c"
            fi
        done
    done
    [ "$removed" -eq 0 ] || log "removed $removed containers (tasks killed) via ctr"
elif [ -n "$pid" ]; then
    log "containerd (pid $pid) is not answering; skipping pod removal"
fi

# --- 2. containerd ------------------------------------------------------------
if [ -f "$PIDFILE" ] && [ -z "$pid" ]; then
    log "pid file $PIDFILE is stale (no containerd with --config $CONFIG there); ignoring"
fi
if [ -n "$pid" ]; then
    log "stopping containerd (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        is_our_containerd "$pid" || break
        sleep 0.2
    done
    if is_our_containerd "$pid"; then
        log "containerd (pid $pid) still running after 10s; SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 25; i++)); do
            is_our_containerd "$pid" || break
            sleep 0.2
        done
    fi
    is_our_containerd "$pid" && log "warning: containerd (pid $pid) did not exit"
fi
rm -f "$PIDFILE"

# --- 3. containers left behind, then shims ----------------------------------------
# Normally nothing is left here. If containerd was dead or hung, its shims'
# containers still run: runc's state for them is under $DIR/runc/<namespace>
# (the runc "Root" option), so delete them there (kills them, frees cgroups).
if command -v runc >/dev/null 2>&1 && [ -d "$DIR/runc" ]; then
    for root in "$DIR"/runc/*/; do
        [ -d "$root" ] || continue
        for c in $(timeout 10 runc --root "$root" list -q 2>/dev/null || true); do
            our_ids+=("$c")
            log "deleting leftover runc container ${root}$c"
            timeout 10 runc --root "$root" delete -f "$c" >/dev/null 2>&1 || \
                log "warning: runc delete -f $c failed"
        done
    done
fi

# A shim listens on /run/containerd/s/<sha256 of "$SOCK/<ns>/<id>">: remove
# the socket file of each shim we kill (a graceful shim removes it itself).
shim_socket() { # pid -> socket path
    local ns="" id="" i
    read_argv "$1" || return 0
    for ((i = 1; i < ${#ARGV[@]}; i++)); do
        case "${ARGV[i]}" in
            -namespace|--namespace) ns=${ARGV[i+1]:-} ;;
            -id|--id) id=${ARGV[i+1]:-} ;;
        esac
    done
    [ -n "$ns" ] && [ -n "$id" ] || return 0
    echo "/run/containerd/s/$(printf '%s' "$SOCK/$ns/$id" | sha256sum | cut -d' ' -f1)"
}
shims=$(our_shim_pids)
if [ -n "$shims" ]; then
    sockets=()
    for s in $shims; do
        so=$(shim_socket "$s")
        [ -z "$so" ] || sockets+=("$so")
    done
    log "killing leftover shims: $(tr '\n' ' ' <<<"$shims")"
    # shellcheck disable=SC2086
    kill -KILL $shims 2>/dev/null || true
    for ((i = 0; i < 25; i++)); do
        [ -n "$(our_shim_pids)" ] || break
        sleep 0.2
    done
    [ -z "$(our_shim_pids)" ] || log "warning: some shims survived: $(our_shim_pids | tr '\n' ' ')"
    [ ${#sockets[@]} -eq 0 ] || rm -f "${sockets[@]}"
fi

cleanup_hostport_nat
# No pod of ours is left, so no pod IP is in use: drop host-local's reservations.
if [ -d "$DIR/cni/ipam" ]; then
    find "$DIR/cni/ipam" -mindepth 1 -delete 2>/dev/null || true
fi

# --- 4. mounts under $DIR -------------------------------------------------------
# Deepest first; findmnt escapes blanks as \x20, which we keep (no such paths here).
for pass in 1 2 3; do
    mounts=$(findmnt -rn -o TARGET | awk -v d="$DIR" 'index($0, d "/") == 1 || $0 == d' \
        | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-)
    [ -n "$mounts" ] || break
    while IFS= read -r m; do
        [ -n "$m" ] || continue
        umount -l "$m" 2>/dev/null || log "warning: could not unmount $m"
    done <<<"$mounts"
    [ "$pass" -gt 1 ] || log "unmounted $(wc -l <<<"$mounts") mount(s) under $DIR"
done

# --- 5. bridge ------------------------------------------------------------------
if ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "deleting bridge $BRIDGE"
    ip link delete "$BRIDGE" || log "warning: could not delete bridge $BRIDGE"
fi

# --- purge ----------------------------------------------------------------------
if [ "$PURGE" -eq 1 ]; then
    if findmnt -rn -o TARGET | awk -v d="$DIR" 'index($0, d "/") == 1 || $0 == d' | grep -q .; then
        die "mounts remain under $DIR; not purging"
    fi
    log "purging $DIR"
    rm -rf --one-file-system -- "$DIR"
    unregister_network
fi
log "down"
