#!/usr/bin/env bash
# Boots Debian's kernel in QEMU (TCG: no KVM needed) with real SR-IOV
# hardware and runs a job script inside, chrooted into this machine's own
# root (read-only over 9p), then powers off. The job's output is printed
# and kept in <results>/out.log; the script exits with the job's status.
#
# The machine (q35, NUMA nodes 0 and 1):
#   pcie.0 - pcie-root-port rp1 - igb (PF, 0000:01:00.0, 7 VFs possible)
#   pcie.0 - pxb-pcie (NUMA node 1) - pcie-root-port rp2 - x3130-upstream
#            - xio3130-downstream - igb (a second PF behind a PCIe switch)
#   virtio-9p: "host" (/, read-only) and "results" (<results>, read-write)
#
# Usage: hack/vm/run.sh JOB.sh [RESULTS-DIR]
# Exit status: the job's, 125 when the VM could not run the job, and 0 with
# "SKIP:" on stderr when QEMU or a kernel is missing (VMTEST_REQUIRE=1
# turns that into a failure). VM_QEMU names another QEMU binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
job=${1:?usage: hack/vm/run.sh JOB.sh [RESULTS-DIR]}
results=${2:-$root/_output/vm/results}
# A guard against a hung VM, not a speed goal. Under TCG beside a `go build
# -a` loop on both cores and another checkout's e2e, internal/cni's VM tests
# alone ran past 600 s (docs/e2e.md, "Stability under load"); the whole job
# then needs about 1300 s.
timeout_s=${VM_TIMEOUT:-2400}
# The job's share of it, in <results>/budget_s (/run/vm/budget_s inside):
# the guard less what boot and power-off need (about 20 s under that load).
# hack/vm/test.sh gives each test binary what is left of it as its
# -test.timeout, so a hung test ends with its stack before the guard fires.
reserve_s=120
[ "$timeout_s" -gt $((reserve_s + 60)) ] || { echo "vm: VM_TIMEOUT=$timeout_s: need more than $((reserve_s + 60)) s" >&2; exit 2; }

skip() {
  echo "SKIP: vmtest: $* (hack/vm/install.sh installs it as root)" >&2
  if [ "${VMTEST_REQUIRE:-0}" = 1 ]; then exit 1; fi
  exit 0
}
qemu=${VM_QEMU:-$(command -v qemu-system-x86_64 || true)}
[ -n "$qemu" ] && [ -x "$qemu" ] || skip "no qemu-system-x86_64${VM_QEMU:+ at $VM_QEMU}"
qv=$("$qemu" --version | sed -n 's/^QEMU emulator version \([0-9]*\)\..*/\1/p')
[ "${qv:-0}" -ge 8 ] || skip "QEMU $qv has no igb device (need 8.0 or later)"
kver=$(ls /boot/vmlinuz-* 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V | tail -1 || true)
[ -n "$kver" ] || skip "no kernel in /boot"
[ -r "/boot/vmlinuz-$kver" ] || skip "/boot/vmlinuz-$kver is not readable"
[ "$(id -u)" = 0 ] || skip "needs root (9p export of / with security_model=none)"

initrd=$("$here/initramfs.sh" "$kver")
rm -rf "$results"
mkdir -p "$results"
cp "$job" "$results/job.sh"
echo $((timeout_s - reserve_s)) >"$results/budget_s"

# boot runs the VM once; its exit status is QEMU's (timeout's: 124 when the
# guard fired).
boot() {
  timeout --foreground -k 10 "$timeout_s" "$qemu" \
    -accel tcg -cpu max -machine q35 -m 1024 -smp 2 \
    -object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M \
    -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1 \
    -nographic -no-reboot -nodefaults -serial stdio \
    -kernel "/boot/vmlinuz-$kver" -initrd "$initrd" \
    -append "console=ttyS0 rdinit=/init quiet loglevel=3 pci=realloc panic=-1" \
    -device pcie-root-port,id=rp1,chassis=1,bus=pcie.0,addr=0x2 \
    -netdev user,id=n1,restrict=on -device igb,bus=rp1,netdev=n1,mac=52:54:00:00:01:00 \
    -device pxb-pcie,id=pxb1,bus_nr=0x20,numa_node=1,bus=pcie.0,addr=0x3 \
    -device pcie-root-port,id=rp2,chassis=2,bus=pxb1 \
    -device x3130-upstream,id=up1,bus=rp2 \
    -device xio3130-downstream,id=dp1,bus=up1,chassis=3,slot=0 \
    -netdev user,id=n2,restrict=on -device igb,bus=dp1,netdev=n2,mac=52:54:00:00:02:00 \
    -fsdev local,id=fs0,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=fs0,mount_tag=host,bus=pcie.0,addr=0x4 \
    -fsdev local,id=fs1,path="$results",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=fs1,mount_tag=results,bus=pcie.0,addr=0x5 \
    >"$results/console.log" 2>&1
}

start=$(date +%s.%N)
set +e
boot
qrc=$?
# QEMU 10's multi-threaded TCG can abort on its own assertion while the
# firmware hands over to the kernel (seen once in the 2026-12-07 runs:
# "iotlb_to_section: Assertion `section_index < d->map.sections_nb'
# failed", exit 134). When QEMU aborted before the job started (no
# out.log), no test ran: boot again, once, and say so. A job that started
# is never rerun.
if [ "$qrc" = 134 ] && [ ! -e "$results/out.log" ]; then
  mv "$results/console.log" "$results/console-qemu-abort.log"
  echo "vm: QEMU aborted before the job started (exit 134; $results/console-qemu-abort.log):" >&2
  grep -a 'qemu-system' "$results/console-qemu-abort.log" >&2 || true
  echo "vm: booting again, once" >&2
  boot
  qrc=$?
fi
set -e
end=$(date +%s.%N)
printf 'vm: boot+job+poweroff %.1f s (QEMU exit %d)\n' "$(awk -v a="$start" -v b="$end" 'BEGIN{print b-a}')" "$qrc" >&2
if [ ! -f "$results/rc" ]; then
  echo "vm: the job did not finish (QEMU exit $qrc); console:" >&2
  tail -50 "$results/console.log" >&2
  exit 125
fi
exit "$(cat "$results/rc")"
