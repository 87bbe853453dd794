#!/usr/bin/env bash
# make test: the whole suite, independent stages side by side.
#
#   1. set-up, one step at a time (quick where this machine has run it
#      before): the Debian packages of every stage (apt holds one lock, so
#      never two at once), the CNI tools, the pinned Go tools.
#   2. three lanes at once:
#        check  lint, then unit (compiling, vetting, -race tests: CPU);
#               lint at nice 10: static analysis has no deadline, and on
#               a new machine the e2e lane's Kubernetes build, the longest
#               path, then gets the CPU first
#        e2e    hack/e2e.sh (builds once per machine, then clusters: mostly
#               waiting on kubelets and controllers)
#        vm     hack/vm/test.sh (the real-kernel tests in QEMU)
#      Each stage writes _output/test/<stage>.log, printed whole when the
#      stage ends; every 5 minutes a line says what still runs.
#   3. a table of every stage's time and result; the exit status is
#      non-zero when any stage failed.
#
#   hack/test.sh                         # everything
#   TEST_STAGES="lint unit" hack/test.sh # some stages (lint unit e2e vmtest)
#   TEST_SERIAL=1 hack/test.sh           # one stage after another
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
logs=$repo/_output/test
mkdir -p "$logs"
stages=${TEST_STAGES:-lint unit e2e vmtest}
want() { [[ " $stages " == *" $1 "* ]]; }
t_start=$(date +%s)

# stage NAME CMD...: runs one stage into its log, records its time and
# exit status in _output/test/NAME.{s,rc}, then prints the log.
stage() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s)
  echo "test: $name started"
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  echo $(($(date +%s) - t0)) >"$logs/$name.s"
  echo $rc >"$logs/$name.rc"
  {
    echo "===== $name (exit $rc, $(cat "$logs/$name.s") s): $logs/$name.log"
    cat "$logs/$name.log"
    echo "===== end of $name"
  } | flock "$logs/.print" cat
  return $rc
}

rm -f "$logs"/*.s "$logs"/*.rc

# 1. Set-up. The VM's packages only where the VM stage runs; the cluster's
# where e2e does.
setup() {
  hack/install-deps.sh &&
    hack/install-cni-tools.sh &&
    hack/tools.sh &&
    if want e2e && [ "$(id -u)" = 0 ]; then hack/cluster/install-packages.sh; fi &&
    if want vmtest && [ "$(id -u)" = 0 ]; then hack/vm/install.sh || echo "test: hack/vm/install.sh failed; the VM stage will say why"; fi
}
if ! stage setup setup; then
  echo "test: set-up failed"
  exit 1
fi

# 2. The lanes.
lane_check() {
  local rc=0
  if want lint; then stage lint nice -n 10 make -s lint || rc=1; fi
  if want unit; then stage unit make -s unit || rc=1; fi
  return $rc
}
# The e2e stage skips its own vet of the e2e files when the lint stage,
# which vets and lints them, runs too.
lane_e2e() {
  local vet=1
  if want lint; then vet=0; fi
  if want e2e; then stage e2e env E2E_VET=$vet hack/e2e.sh; fi
}
lane_vm() { if want vmtest; then stage vmtest env VMTEST_INSTALL=0 hack/vm/test.sh; fi; }

if [ -n "${TEST_SERIAL:-}" ]; then
  lane_check
  lane_e2e
  lane_vm
else
  lane_check &
  p_check=$!
  lane_e2e &
  p_e2e=$!
  lane_vm &
  p_vm=$!
  # Progress on the long wait.
  (
    while sleep 300; do
      running=""
      for s in $stages; do
        [ -f "$logs/$s.rc" ] || running="$running $s"
      done
      echo "test: $((($(date +%s) - t_start) / 60)) min; still running:${running:- nothing}"
    done
  ) &
  p_progress=$!
  trap 'kill $p_check $p_e2e $p_vm $p_progress 2>/dev/null' INT TERM
  wait $p_check $p_e2e $p_vm
  kill $p_progress 2>/dev/null
  wait $p_progress 2>/dev/null
fi

# 3. Every stage's time.
status=0
echo
echo "test: stage times (wall clock; lanes run side by side: check = lint, unit; e2e; vm = vmtest)"
printf '  %-8s %-6s %6s\n' stage result seconds
for s in setup $stages; do
  if [ ! -f "$logs/$s.rc" ]; then
    printf '  %-8s %-6s %6s\n' "$s" "-" "-"
    status=1
    continue
  fi
  rc=$(cat "$logs/$s.rc")
  result=pass
  if [ "$rc" != 0 ]; then
    result=FAIL
    status=1
  fi
  printf '  %-8s %-6s %6s\n' "$s" "$result" "$(cat "$logs/$s.s")"
done
printf '  %-8s %-6s %6s\n' total "$([ $status = 0 ] && echo pass || echo FAIL)" $(($(date +%s) - t_start))
exit $status
