#!/usr/bin/env bash
# Builds the VM's initramfs and prints its path: busybox (static), the
# kernel modules needed to reach the host's root over 9p (resolved through
# the kernel's modules.dep, dependencies first), and an init that mounts
# the host root read-only, a writable results share, and runs a job script
# chrooted into the host root (see hack/vm/init). Every other module is
# loaded inside the VM by the host's own modprobe over the 9p root (init
# points the kernel's module autoloader at it).
#
# Cached in _output/vm/initramfs-<kernel>-<hash of this script and init>.cpio.gz.
# Usage: hack/vm/initramfs.sh [kernel-version]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kver=${1:-$(ls /boot/vmlinuz-* 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V | tail -1)}
[ -n "$kver" ] || { echo "initramfs.sh: no kernel in /boot (hack/vm/install.sh)" >&2; exit 1; }
moddir=/lib/modules/$kver
[ -f "$moddir/modules.dep" ] || { echo "initramfs.sh: no $moddir/modules.dep" >&2; exit 1; }
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || busybox=/bin/busybox
[ -x "$busybox" ] || { echo "initramfs.sh: no static busybox (busybox-static)" >&2; exit 1; }

# The modules init loads before it can mount the host root.
boot_modules=(virtio_pci 9pnet_virtio 9p)

hash=$(cat "$here/initramfs.sh" "$here/init" "$busybox" | sha256sum | cut -c1-12)
out=$root/_output/vm/initramfs-$kver-$hash.cpio.gz
if [ -f "$out" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$root/_output/vm"
stage=$(mktemp -d "$root/_output/vm/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# resolve NAME: print the modules.dep paths of NAME's dependencies, then
# NAME's own, skipping built-in modules.
declare -A seen=()
order=()
resolve() {
  local name=$1 line path deps d
  line=$(awk -v a="$name" -v b="${name//_/-}" -F: '{n=$1; sub(/.*\//,"",n); sub(/\.ko.*/,"",n)} n==a||n==b {print; exit}' "$moddir/modules.dep")
  if [ -z "$line" ]; then
    if grep -qE "/(${name}|${name//_/-})\.ko" "$moddir/modules.builtin"; then return 0; fi
    echo "initramfs.sh: module $name not in $moddir" >&2; exit 1
  fi
  path=${line%%:*}
  [ -n "${seen[$path]:-}" ] && return 0
  seen[$path]=1
  deps=${line#*:}
  for d in $deps; do
    d=${d##*/}; d=${d%%.ko*}
    resolve "$d"
  done
  order+=("$path")
}
for m in "${boot_modules[@]}"; do resolve "$m"; done

mkdir -p "$stage"/{bin,sbin,dev,proc,sys,host,lib/modules}
cp "$busybox" "$stage/bin/busybox"
for a in sh mount umount mkdir insmod sleep cat echo poweroff chroot ln mknod tee sync; do
  ln -s busybox "$stage/bin/$a"
done
: >"$stage/modules.order"
for p in "${order[@]}"; do
  f=$(basename "$p")
  case "$p" in
    *.ko) cp "$moddir/$p" "$stage/lib/modules/$f" ;;
    *.ko.xz) xz -dc "$moddir/$p" >"$stage/lib/modules/${f%.xz}"; f=${f%.xz} ;;
    *.ko.zst) zstd -dcq "$moddir/$p" >"$stage/lib/modules/${f%.zst}"; f=${f%.zst} ;;
    *) echo "initramfs.sh: unknown module format $p" >&2; exit 1 ;;
  esac
  echo "$f" >>"$stage/modules.order"
done
cp "$here/init" "$stage/init"
chmod 755 "$stage/init"
# The kernel's module autoloader runs in this root: hand it to the host's
# modprobe and module tree over the 9p mount.
printf '#!/bin/busybox sh\nexec /bin/busybox chroot /host /sbin/modprobe "$@"\n' >"$stage/sbin/modprobe"
chmod 755 "$stage/sbin/modprobe"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible 2>/dev/null || find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
