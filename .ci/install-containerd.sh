#!/usr/bin/env bash
# Install what the real-CRI node-GC tests need (Debian): containerd (brings
# runc) and busybox-static (the one binary inside the locally built test
# images, so no registry is ever contacted). Idempotent: does nothing when
# both are already present. Needs root.
set -euo pipefail

missing=()
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v ctr >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(containerd)
# The images need the *static* busybox; the plain busybox package is dynamic.
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' \
    || missing+=(busybox-static)

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-containerd: containerd, ctr, runc and busybox already present"
    exit 0
fi

# De-duplicate the package list.
mapfile -t pkgs < <(printf '%s\n' "${missing[@]}" | sort -u)

if [ "$(id -u)" -ne 0 ]; then
    echo "install-containerd: need root to install: ${pkgs[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
echo "install-containerd: installed ${pkgs[*]}"
