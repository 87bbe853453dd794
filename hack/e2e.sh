#!/usr/bin/env bash
# End-to-end suite (`make e2e`): installs and builds what a real single-node
# Kubernetes needs, then runs the Go e2e tests (build tag e2e) against it;
# test/e2e/multinode starts the multi-node cluster of hack/cluster/up.sh.
# See docs/e2e.md.
#
#   hack/e2e.sh                 # everything
#   E2E_RUN=TestNode hack/e2e.sh  # only tests matching a -run pattern
#   E2E_KUBERNETES=1.37 hack/e2e.sh  # test/e2e/multinode on 1.37 only
#   E2E_PARALLEL=1 hack/e2e.sh  # single-node packages and multi-node side
#                               # by side (not yet safe: see run_tests)
#
# test/e2e/multinode runs once per Kubernetes release of the version matrix
# (E2E_KUBERNETES, default "1.35 1.37": RAILYARD_E2E_KUBERNETES of each
# run; docs/e2e.md, "Version matrix"); the other packages run on 1.35.
#
# Not root: the tests are still compiled and run, and they skip with a clear
# message (nothing is installed or built then).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

releases="${E2E_KUBERNETES:-1.35 1.37}"

# Background builds: bg_start NAME CMD... runs CMD into
# _output/e2e/NAME.log; bg_wait NAME waits for it in the shell that started
# it, prints its log once and keeps its result for later calls (and for
# subshells). A name never started is done.
declare -A bg_pid=() bg_rc=()
bg_start() {
  local name=$1
  shift
  (set +e; "$@") >"$repo/_output/e2e/$name.log" 2>&1 &
  bg_pid[$name]=$!
}
bg_wait() {
  local name=$1 t0 rc=0
  if [ -n "${bg_rc[$name]:-}" ]; then return "${bg_rc[$name]}"; fi
  if [ -z "${bg_pid[$name]:-}" ]; then return 0; fi
  t0=$(date +%s)
  wait "${bg_pid[$name]}" || rc=$?
  bg_rc[$name]=$rc
  cat "$repo/_output/e2e/$name.log"
  echo "e2e: waited $(( $(date +%s) - t0 ))s for the background build '$name' (exit $rc)"
  return $rc
}

run_tests() {
  # -p 1: the single-node packages start clusters, and only one may run at
  # a time.
  local args=(-tags e2e -v -count=1 -p 1 -timeout 40m)
  if [ -n "${E2E_RUN:-}" ]; then args+=(-run "$E2E_RUN"); fi
  local pkgs status=0
  mapfile -t pkgs < <(go list -tags e2e ./test/e2e/... | grep -v '/test/e2e/multinode$')
  single_node() {
    local t0; t0=$(date +%s)
    go test "${args[@]}" "${pkgs[@]}"
    local rc=$?
    echo "e2e: single-node packages took $(( $(date +%s) - t0 ))s"
    return $rc
  }
  # The multi-node package once per release, each its own cluster, when
  # what the release needs has built in the background (bg_wait, below).
  multi_node() {
    local r t0 rc=0
    for r in $releases; do
      if [ "$r" != 1.35 ] && ! bg_wait releases; then
        echo "e2e: no test/e2e/multinode on Kubernetes $r: its binaries did not build"
        rc=1
        continue
      fi
      echo "e2e: test/e2e/multinode on Kubernetes $r (RAILYARD_E2E_KUBERNETES=$r)"
      t0=$(date +%s)
      RAILYARD_E2E_KUBERNETES="$r" go test "${args[@]}" ./test/e2e/multinode/ || rc=1
      echo "e2e: test/e2e/multinode on Kubernetes $r took $(( $(date +%s) - t0 ))s"
    done
    return $rc
  }
  if [ -z "${E2E_PARALLEL:-}" ]; then
    single_node || status=1
    if bg_wait cluster; then multi_node || status=1; else status=1; fi
    bg_wait releases >/dev/null || true # not left building when no multi-node test waited for it
    return $status
  fi
  # Side by side (E2E_PARALLEL=1, not yet the default): the clusters share
  # no bridge (ry-e2e0, ry-mn0), subnet, node directory, cgroup or state
  # directory, but not everything: the single-node install test finds its
  # agent by command line in the host's /proc and also sees the multi-node
  # agents' processes (TestInstallChartRunsAgentAsDaemonSetPod failed so),
  # and the multi-node DRA tests failed beside the single-node ones. Each
  # writes its own log, printed when both are done.
  local out="$repo/_output/e2e"
  mkdir -p "$out"
  echo "e2e: single-node packages and test/e2e/multinode side by side (E2E_PARALLEL=1); logs $out/single-node.log, $out/multinode.log"
  single_node >"$out/single-node.log" 2>&1 &
  local p1=$! p2=
  # Waited for here, in the shell that started them; multi_node's subshell
  # inherits their results.
  bg_wait releases || true
  if bg_wait cluster; then
    multi_node >"$out/multinode.log" 2>&1 &
    p2=$!
  else
    status=1
    echo "e2e: no multi-node tests: what the multi-node cluster needs did not build" >"$out/multinode.log"
  fi
  wait $p1 || status=1
  if [ -n "$p2" ]; then wait "$p2" || status=1; fi
  local f
  for f in single-node multinode; do
    echo "===== e2e $f ($out/$f.log)"
    cat "$out/$f.log"
  done
  return $status
}

if [ "$(id -u)" != 0 ]; then
  echo "e2e: not running as root: the end-to-end tests will SKIP (they start a kubelet, containerd and a bridge)"
  run_tests
  exit $?
fi

step() {
  local name="$1"; shift
  local t0 rc=0; t0=$(date +%s)
  "$@" || rc=$?
  echo "e2e: step '$name' took $(( $(date +%s) - t0 ))s"
  return $rc
}

# The e2e files only build with the e2e tag: check they compile before the
# long steps (`make lint` vets and lints them too, with the tag set, so
# hack/test.sh, whose lint stage runs beside this, sets E2E_VET=0).
if [ "${E2E_VET:-1}" != 0 ]; then
  step "vet (e2e tag)" go vet -tags e2e ./test/e2e/...
fi
step "debian packages" hack/cluster/install-packages.sh
step "kubernetes binaries" hack/cluster/build.sh k8s "$repo/_output/k8s/bin"
step "containerd v2 (CDI, for test/e2e/latebinding)" hack/cluster/build.sh containerd "$repo/_output/containerd/bin"
step "cni plugins" hack/cluster/install-cni.sh "$repo/_output/k8s/cni"
step "railyard binaries" go build -o "$repo/bin/" ./cmd/...

# What only test/e2e/multinode needs builds in the background while the
# single-node packages run (they use none of it): on a machine that has
# built it before each step takes seconds, on a new one many minutes.
#   cluster   Railyard's image (up.sh imports it into every node), the
#             cluster's DNS and rail IPAM (up.sh would build them inside
#             the tests' time) and helm (the packaged chart's install)
#   releases  the Kubernetes binaries of the matrix's other releases
multinode_cluster() {
  step "coredns (multinode)" hack/cluster/build.sh coredns "$repo/_output/coredns/bin" &&
    step "whereabouts (multinode)" hack/cluster/build.sh whereabouts "$repo/_output/whereabouts/bin" &&
    step "helm (multinode: helm install of the packaged chart)" hack/cluster/build.sh helm "$repo/_output/helm/bin" &&
    step "railyard image (multinode)" make -s images VERSION="$version"
}
multinode_releases() {
  local r rc=0
  for r in $releases; do
    if [ "$r" != 1.35 ]; then
      step "kubernetes $r binaries (multinode)" hack/cluster/build.sh "k8s-$r" "$repo/_output/k8s-$r/bin" || rc=1
    fi
  done
  return $rc
}
version="$(sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' deploy/helm/railyard/Chart.yaml)"
export RAILYARD_CLUSTER_IMAGE="$repo/_output/images/railyard-$version-$(go env GOARCH).tar"
mkdir -p "$repo/_output/e2e"
bg_start cluster multinode_cluster
bg_start releases multinode_releases # builds nothing when the matrix is 1.35 alone

# One e2e at a time on a machine: the suites start kubelets, a bridge and the
# multi-node cluster, and the clean-up below reaps what a dead run left. A
# second checkout's `make test` waits here (its lint and unit tests have
# already run beside the first one's e2e).
lock="${RAILYARD_E2E_LOCK:-/run/lock/railyard-e2e.lock}"
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
if ! flock -n 9; then
  echo "e2e: another checkout's e2e holds $lock: waiting for it to end"
  t0=$(date +%s)
  flock 9
  echo "e2e: waited $(( $(date +%s) - t0 ))s for $lock"
fi

# reap_dead_runs cleans up after runs that died (go test timeout panic,
# SIGKILL, a killed make) and so skipped their teardown, by the state each
# saved: the single-node suites' kubelets and mounts (test/e2e/reap) and the
# multi-node suite's clusters, whose server outlives a killed test binary.
# Run under the lock only: every run below ${TMPDIR:-/tmp}/ry-mn-* is then
# a dead one (a live e2e would hold the lock).
reap_dead_runs() {
  local rc=0 d
  go run -tags e2e ./test/e2e/reap || rc=1
  for d in "${TMPDIR:-/tmp}"/ry-mn-*; do
    if [ -f "$d/state.json" ]; then
      echo "e2e: stopping the multi-node cluster a dead test left in $d"
      hack/cluster/down.sh "$d" || rc=1
      rm -rf "$d"
    fi
  done
  return $rc
}

# Before the tests too: a killed run's cluster still holds the bridge
# ry-mn0 and its subnet, and up.sh would refuse to start beside it.
reap_dead_runs

export RAILYARD_E2E_K8S_BIN="$repo/_output/k8s/bin"
export RAILYARD_E2E_CONTAINERD_BIN="$repo/_output/containerd/bin"
export RAILYARD_E2E_CNI_BIN="$repo/_output/k8s/cni"
export RAILYARD_E2E_BIN="$repo/bin"
export RAILYARD_E2E_HELM="$repo/_output/helm/bin/helm"
export RAILYARD_E2E_LOGS="$repo/_output/e2e/logs"
t0=$(date +%s)
status=0
run_tests || status=$?
echo "e2e: tests took $(( $(date +%s) - t0 ))s (component logs: $RAILYARD_E2E_LOGS)"
if [ $status != 0 ] && [ -d "$RAILYARD_E2E_LOGS" ]; then
  # CI keeps only the output: show the end of every component's log.
  for f in "$RAILYARD_E2E_LOGS"/*.log; do
    echo "----- last 40 lines of $f"
    tail -n 40 "$f"
  done
fi
reap_dead_runs || status=1
exit $status
