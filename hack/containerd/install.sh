#!/usr/bin/env bash
# Usage: sudo hack/containerd/install.sh
#
# Installs (as root, on Debian 12) everything actlet needs to run real pods with
# a self-contained containerd + runc and locally built images:
#   containerd runc containernetworking-plugins iptables iproute2 busybox-static
#   umoci skopeo gcc libc6-dev make   (+ cri-tools when Debian has it; Debian 12 does not)
# Idempotent: packages already installed are skipped; a second run is a fast no-op
# (no apt-get update when nothing is missing).
set -euo pipefail

log() { echo "install.sh: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    log "error: must run as root"
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# dbus-daemon: a private bus for the systemd-logind test (tests/nodeshutdown_logind.rs).
# make: the build of jemalloc, the daemon's allocator (tikv-jemalloc-sys).
REQUIRED=(containerd runc containernetworking-plugins iptables iproute2 busybox-static
          umoci skopeo gcc libc6-dev make dbus-daemon)
OPTIONAL=(cri-tools)

is_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = "installed" ]
}

# Does the apt cache know an installable candidate for package $1?
has_candidate() {
    local cand
    cand=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}')
    [ -n "$cand" ] && [ "$cand" != "(none)" ]
}

missing=()
for p in "${REQUIRED[@]}"; do
    is_installed "$p" || missing+=("$p")
done
missing_opt=()
for p in "${OPTIONAL[@]}"; do
    is_installed "$p" || missing_opt+=("$p")
done

if [ ${#missing[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ]; then
    log "all packages already installed"
    exit 0
fi

# Another apt (unattended-upgrades on a fresh machine) may hold the dpkg
# lock: wait for it (up to 10 min) instead of failing at once.
APT_WAIT=(-o DPkg::Lock::Timeout=600)

updated=0
apt_update() {
    if [ "$updated" -eq 0 ]; then
        log "apt-get update"
        apt-get "${APT_WAIT[@]}" update -qq >&2
        updated=1
    fi
}

# Optional packages: only look them up if we have to install required ones
# anyway, or if the apt lists look absent (fresh machine).
opt_to_install=()
if [ ${#missing_opt[@]} -gt 0 ]; then
    if [ ${#missing[@]} -gt 0 ] || ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
        apt_update
    fi
    for p in "${missing_opt[@]}"; do
        if has_candidate "$p"; then
            opt_to_install+=("$p")
        else
            log "optional package $p is not available from apt; skipping"
        fi
    done
fi

to_install=("${missing[@]}" "${opt_to_install[@]}")
if [ ${#to_install[@]} -eq 0 ]; then
    log "all required packages already installed"
    exit 0
fi

apt_update
log "installing: ${to_install[*]}"
apt-get "${APT_WAIT[@]}" install -y -qq --no-install-recommends "${to_install[@]}" >&2

# Debian's containerd package may start a service on systems with systemd; we
# run our own instance, so it does not matter, but tell the user.
for p in "${to_install[@]}"; do
    is_installed "$p" || { log "error: $p failed to install"; exit 1; }
done
log "done"
