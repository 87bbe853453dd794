#!/usr/bin/env bash
# Installs what `make vmtest` needs, from Debian's own archive: QEMU with the
# emulated igb NIC (>= 8.0, from bookworm-backports, which this script adds
# to apt's sources once), Debian's kernel (its modules: igb, igbvf, rdma_rxe,
# 9p, ...), busybox for the initramfs, and rdma-core/perftest for the RDMA
# tests. Idempotent and quick when everything is there. Needs root.
set -euo pipefail

qemu_ok() {
  command -v qemu-system-x86_64 >/dev/null 2>&1 || return 1
  local v
  v=$(qemu-system-x86_64 --version | sed -n 's/^QEMU emulator version \([0-9]*\)\..*/\1/p')
  [ -n "$v" ] && [ "$v" -ge 8 ]
}
kernel_ok() { ls /boot/vmlinuz-* >/dev/null 2>&1; }

missing=()
qemu_ok || missing+=(qemu)
kernel_ok || missing+=(kernel)
for c in busybox rdma ibv_devices ib_write_bw cpio; do
  command -v "$c" >/dev/null 2>&1 || missing+=("$c")
done
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
dpkg -s ibverbs-providers >/dev/null 2>&1 || missing+=(ibverbs-providers)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "hack/vm/install.sh: missing ${missing[*]} and not root: cannot install" >&2
  exit 1
fi

# bookworm-backports carries QEMU >= 8 (bookworm's 7.2 has no igb device).
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ -z "$codename" ]; then
  echo "hack/vm/install.sh: not Debian (no VERSION_CODENAME); install QEMU >= 8 and a kernel yourself" >&2
  exit 1
fi
src=/etc/apt/sources.list.d/railyard-backports.sources
if ! grep -rqs "${codename}-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  cat >"$src" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${codename}-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends -t "${codename}-backports" qemu-system-x86
apt-get install -y -qq --no-install-recommends linux-image-amd64 busybox-static \
  rdma-core ibverbs-providers ibverbs-utils perftest iproute2 kmod cpio
qemu_ok || { echo "hack/vm/install.sh: QEMU >= 8 still missing" >&2; exit 1; }
kernel_ok || { echo "hack/vm/install.sh: no /boot/vmlinuz-* after install" >&2; exit 1; }
