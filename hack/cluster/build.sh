#!/usr/bin/env bash
# Builds the cluster's pinned binaries from the Go module proxy into a cache
# directory:
#
#   k8s         kube-apiserver, kube-scheduler, kube-controller-manager and
#   (k8s-1.35)  kube-proxy (the multi-node cluster's), kubelet, kubectl
#               v1.35.8 (helper module hack/cluster/k8sbin; default out
#               _output/k8s/bin). Cold: downloads ~90 MB of modules, ~9 min
#               on two idle cores.
#   k8s-1.37    the same commands at v1.37.2, the version matrix's second
#               release (helper module hack/cluster/k8sbin-1.37; default out
#               _output/k8s-1.37/bin). Cold time in docs/e2e.md.
#   containerd  containerd, containerd-shim-runc-v2, ctr v2.4.2 with CRI, CDI
#               and NRI (helper module hack/cluster/containerdbin; default out
#               _output/containerd/bin). Debian's containerd 1.6 has no CDI,
#               which late binding (binding: sandbox) needs. Cold: 84 s with
#               the modules downloaded.
#   coredns     coredns v1.15.0, the multi-node cluster's DNS (helper module
#               hack/cluster/corednsbin; default out _output/coredns/bin),
#               static (CGO off): its pods run it from a hostPath volume.
#   whereabouts whereabouts v0.9.2, the IPAM of the rail networks across
#               nodes (helper module hack/cluster/whereaboutsbin; default
#               out _output/whereabouts/bin); its CRDs are the same module
#               version's doc/crds.
#   helm        helm v3.21.1, the CLI of the Helm SDK version the module
#               links (helper module hack/cluster/helmbin; default out
#               _output/helm/bin): the multi-node e2e installs the packaged
#               release chart with the real `helm install`.
#
# Usage: hack/cluster/build.sh k8s|k8s-1.35|k8s-1.37|containerd|coredns|whereabouts|helm [OUT_DIR]
#
# The build is skipped when every binary exists and the stamp file records
# the same helper go.mod/go.sum, Go version and version, so warm runs take
# well under a second. Builds are kept once per machine in
# ~/.cache/railyard/build (RAILYARD_BUILD_CACHE), so a fresh clone links
# them instead of building again. Times are in docs/e2e.md.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
what="${1:-}"

# kubernetes VERSION MODULE OUTNAME: one Kubernetes release's target (the
# same commands from the helper module hack/cluster/MODULE into
# _output/OUTNAME/bin by default).
kubernetes() {
  version="$1"
  mod="$repo/hack/cluster/$2"
  out="${out_arg:-$repo/_output/$3/bin}"
  cmds=(kube-apiserver kube-scheduler kube-controller-manager kube-proxy kubelet kubectl)
  pkg="k8s.io/kubernetes/cmd"
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version"
  tags=""
  cgo=1
  cname="$3"
}

out_arg="${2:-}"
case "$what" in
  k8s|k8s-1.35) kubernetes v1.35.8 k8sbin k8s ;;
  k8s-1.37) kubernetes v1.37.2 k8sbin-1.37 k8s-1.37 ;;
  containerd)
    out="${2:-$repo/_output/containerd/bin}"
    mod="$repo/hack/cluster/containerdbin"
    version="v2.4.2"
    cmds=(containerd containerd-shim-runc-v2 ctr)
    pkg="github.com/containerd/containerd/v2/cmd"
    ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$version"
    # Leave out snapshotters that need cgo or kernel features absent here.
    tags="no_btrfs no_devmapper no_zfs"
    cgo=0
    ;;
  coredns)
    out="${2:-$repo/_output/coredns/bin}"
    mod="$repo/hack/cluster/corednsbin"
    version="v1.15.0"
    cmds=(coredns)
    pkg="github.com/coredns"
    ldflags="-s -w"
    tags=""
    cgo=0
    ;;
  whereabouts)
    out="${2:-$repo/_output/whereabouts/bin}"
    mod="$repo/hack/cluster/whereaboutsbin"
    version="v0.9.2"
    cmds=(whereabouts)
    # Its main package is cmd/ (whereabouts.go), not cmd/whereabouts.
    pkg="github.com/k8snetworkplumbingwg/whereabouts/cmd"
    single=1
    ldflags="-s -w"
    tags=""
    cgo=0
    ;;
  helm)
    out="${2:-$repo/_output/helm/bin}"
    mod="$repo/hack/cluster/helmbin"
    version="v3.21.1"
    cmds=(helm)
    pkg="helm.sh/helm/v3/cmd"
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
    tags=""
    cgo=0
    ;;
  *)
    echo "usage: $0 k8s|k8s-1.35|k8s-1.37|containerd|coredns|whereabouts|helm [OUT_DIR]" >&2
    exit 2
    ;;
esac

mkdir -p "$out"
out="$(cd "$out" && pwd)"
stamp="$out/.stamp"
want="$( (cat "$mod/go.mod" "$mod/go.sum"; go version; echo "$version") | sha256sum | cut -d' ' -f1)"

up_to_date() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] || return 1
  for c in "${cmds[@]}"; do
    [ -x "$out/$c" ] || return 1
  done
}

if up_to_date; then
  echo "build $what: ${cmds[*]} $version in $out are up to date"
  exit 0
fi

# The machine-wide cache: one build per (target, helper go.mod/go.sum, Go
# version, version) on a machine, shared by every checkout and fresh clone
# (`make test` in CI clones anew each time). RAILYARD_BUILD_CACHE moves it;
# a lock per entry lets two checkouts ask at once (the second waits, then
# links). Entries are complete or absent: built beside, then renamed.
cache="${RAILYARD_BUILD_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/railyard/build}"
entry="$cache/${cname:-$what}-$version-${want:0:16}"
mkdir -p "$cache"
exec 8>"$entry.lock"
if ! flock -n 8; then
  echo "build $what: another checkout is building $entry: waiting"
  flock 8
fi

cached() {
  for c in "${cmds[@]}"; do
    [ -x "$entry/$c" ] || return 1
  done
}

if ! cached; then
  echo "build $what: building ${cmds[*]} $version into $entry (cold: minutes)"
  start=$(date +%s)
  tmp="$entry.tmp.$$"
  rm -rf "$tmp" "$entry"
  mkdir -p "$tmp"
  pkgs=()
  o="$tmp/"
  if [ -n "${single:-}" ]; then
    pkgs=("$pkg"); o="$tmp/${cmds[0]}"
  else
    for c in "${cmds[@]}"; do pkgs+=("$pkg/$c"); done
  fi
  (
    cd "$mod"
    # -mod=readonly: go.mod/go.sum are committed; never rewrite them in CI.
    CGO_ENABLED=$cgo go build -mod=readonly -trimpath -tags "$tags" -o "$o" -ldflags "$ldflags" "${pkgs[@]}"
  ) || { rm -rf "$tmp"; exit 1; }
  for c in "${cmds[@]}"; do
    [ -x "$tmp/$c" ] || { echo "build $what: $tmp/$c missing after build" >&2; rm -rf "$tmp"; exit 1; }
  done
  mv "$tmp" "$entry"
  echo "build $what: built in $(( $(date +%s) - start ))s"
fi

# Into OUT_DIR: hard links where the cache shares its filesystem (instant,
# no space), copies otherwise.
rm -f "$stamp"
for c in "${cmds[@]}"; do
  ln -f "$entry/$c" "$out/$c" 2>/dev/null || cp -f "$entry/$c" "$out/$c"
done
echo "$want" > "$stamp"
echo "build $what: ${cmds[*]} $version in $out (from $entry)"
