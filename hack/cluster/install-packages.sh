#!/usr/bin/env bash
# Installs the Debian packages the end-to-end cluster needs, if missing:
# etcd-server, containerd (with ctr), runc, busybox-static, iproute2,
# nftables (nft: the multi-node cluster's kube-proxy runs in nftables mode)
# and iperf3 (copied with its libraries into the e2e bench-tools image).
# Idempotent and quick when everything is there. Needs root.
set -euo pipefail

need=()
for pkg in etcd-server containerd runc busybox-static iproute2 nftables iperf3; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
# mount/umount come with util-linux/mount on every Debian system.

if [ ${#need[@]} -eq 0 ]; then
  echo "install-packages: etcd, containerd, runc, busybox (static), iproute2, nftables, iperf3 present"
  exit 0
fi
echo "install-packages: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends: containerd's recommends would pull in more than we need.
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian's etcd-server and containerd packages may start system services when a
# service manager runs; the suite starts its own instances on its own paths and
# ports, so make sure no packaged instance holds the etcd port.
if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
  systemctl disable --now etcd >/dev/null 2>&1 || true
fi
echo "install-packages: done"
