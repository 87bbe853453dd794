#!/usr/bin/env bash
# make vmtest: the real-kernel tests. Builds Go test binaries on this host
# (go test -c, no -race: the VM emulates its CPUs), boots one VM
# (hack/vm/run.sh) and runs them inside against Debian's kernel with real
# SR-IOV (igb PFs, igbvf VFs) and a real RDMA subsystem (rdma_rxe). Tests
# that need the VM are named RealVF / RealKernel / RealRDMA and skip outside
# it (they look for RAILYARD_VM=1, which the VM's init sets).
#
# Output: one log per package in _output/vm/results/<pkg>.log, a summary
# on stdout. Exit status: non-zero when any package failed or the VM could
# not run; 0 with "SKIP:" when QEMU or a kernel is missing (hack/vm/install.sh).
#
# VMTEST_RUN=<regexp> narrows the tests (go test -run) in every package.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
GO=${GO:-go}
# What the VM needs (QEMU >= 8, Debian's kernel, busybox, rdma-core,
# perftest), installed from Debian's archive when missing; without root
# hack/vm/run.sh skips with a message instead.
if [ "$(id -u)" = 0 ] && [ "${VMTEST_INSTALL:-1}" = 1 ]; then
  "$here/install.sh" || echo "vmtest: hack/vm/install.sh failed; the VM may be skipped" >&2
fi
out=$root/_output/vm
mkdir -p "$out/bin"

# package, test pattern: the VM twins of the netops and CNI tests (and the
# netops contract table, kernel and fake), and everything in test/vm.
pkgs=(
  "./internal/netops|RealKernel|RealVF|RealRDMA|Contract"
  "./internal/cni|RealVF|RealKernel|RealRDMA"
  "./test/vm|."
)
t0=$(date +%s.%N)
"$root/hack/install-cni-tools.sh" >/dev/null # host-device, beside railyard-cni in test/vm
CGO_ENABLED=0 "$GO" build -o "$out/bin/railyard-cni" ./cmd/railyard-cni
: >"$out/job.list"
for entry in "${pkgs[@]}"; do
  pkg=${entry%%|*}
  pat=${VMTEST_RUN:-${entry#*|}}
  name=$(echo "${pkg#./}" | tr / _)
  CGO_ENABLED=0 "$GO" test -c -o "$out/bin/$name.test" "$pkg"
  echo "$name|$root/${pkg#./}|$out/bin/$name.test|$pat" >>"$out/job.list"
done
t1=$(date +%s.%N)
printf 'vmtest: test binaries built in %.1f s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')"

job=$(mktemp)
trap 'rm -f "$job"' EXIT
cat >"$job" <<JOB
# Runs inside the VM (hack/vm/init), chrooted into the host root.
ulimit -l unlimited 2>/dev/null
ip link set lo up
export RAILYARD_CNI_BIN=$out/bin/railyard-cni
fails=0
ran=0
[ -r $out/job.list ] || { echo "vmtest: $out/job.list is not visible in the VM"; exit 2; }
# The job's time (hack/vm/run.sh: the hung-VM guard less boot and power-off):
# each package may use what is left of it as its -test.timeout, so a slow
# package under load is not cut off at a fixed share, and a hung one ends
# with Go's stack trace before QEMU is killed.
budget=\$(cat /run/vm/budget_s)
start=\$(date +%s)
while IFS='|' read -r name dir bin pat; do
  ran=\$((ran + 1))
  echo "=== vmtest \$name"
  s=\$(date +%s)
  left=\$((budget - (s - start)))
  if [ \$left -lt 30 ]; then
    echo "vmtest: \$name not run: \${left} s of the job's \${budget} s left" | tee /run/vm/\$name.log
    fails=\$((fails + 1))
    continue
  fi
  (cd "\$dir" && "\$bin" -test.v -test.count=1 -test.timeout=\${left}s -test.run "\$pat") >/run/vm/\$name.log 2>&1
  rc=\$?
  grep -E '^(--- |=== RUN|ok|FAIL|PASS|panic)' /run/vm/\$name.log | grep -v '^=== RUN' | grep -E '^(--- FAIL|--- SKIP|FAIL|ok|PASS|panic)' | head -100
  # A package's namespaces must not outlive it: the kernel refuses an RDMA
  # netns mode switch while any other namespace exists (test/vm's RealRDMA
  # tests), so one left by a package its timeout killed would fail them
  # too. They are deleted; one left by a package that passed fails it.
  ns=\$(ip netns list | cut -d' ' -f1 | tr '\\n' ' ')
  if [ -n "\$ns" ]; then
    echo "vmtest: \$name left network namespaces: \$ns(deleted)" | tee -a /run/vm/\$name.log
    ip -all netns delete
    [ \$rc -ne 0 ] || rc=1
  fi
  echo "=== vmtest \$name exit \$rc in \$((\$(date +%s) - s)) s"
  [ \$rc -eq 0 ] || fails=\$((fails + 1))
done <$out/job.list
[ \$ran -eq $(wc -l <"$out/job.list") ] || { echo "vmtest: ran \$ran of $(wc -l <"$out/job.list") packages"; exit 2; }
exit \$fails
JOB
rm -rf "$out/results" # no stale results when the VM is skipped
set +e
"$here/run.sh" "$job" "$out/results"
rc=$?
set -e
t2=$(date +%s.%N)
if [ $rc -eq 0 ] && [ ! -f "$out/results/rc" ]; then
  echo "vmtest: SKIPPED: no test ran (the VM could not start; see SKIP above)"
fi
if [ -f "$out/results/rc" ]; then
  # Every package must have run and said PASS, and (unless VMTEST_RUN
  # narrowed the run, which may match nothing in a package) passed tests: a
  # job that ran nothing, or skipped everything, is a failure, never a
  # silent pass.
  while IFS='|' read -r name _; do
    if ! grep -q '^PASS$' "$out/results/$name.log" 2>/dev/null ||
      { [ -z "${VMTEST_RUN:-}" ] && ! grep -q -- '--- PASS' "$out/results/$name.log"; }; then
      echo "vmtest: $name: no passing test in $out/results/$name.log" >&2
      [ $rc -ne 0 ] || rc=1
    fi
  done <"$out/job.list"
  for f in "$out"/results/*.log; do
    case "$f" in */out.log|*/console.log) continue ;; esac
    n=$(basename "$f" .log)
    pass=$(grep -c -- '--- PASS' "$f" || true)
    skip=$(grep -c -- '--- SKIP' "$f" || true)
    fail=$(grep -c -- '--- FAIL' "$f" || true)
    echo "vmtest: $n: $pass passed, $skip skipped, $fail failed (log $f)"
  done
fi
printf 'vmtest: total %.1f s (exit %d)\n' "$(awk -v a="$t0" -v b="$t2" 'BEGIN{print b-a}')" "$rc"
exit $rc
