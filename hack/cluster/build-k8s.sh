#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler, kubelet and kubectl v1.35.8 from the Go
# module proxy (helper module hack/cluster/k8sbin) into a cache directory.
#
# Usage: hack/cluster/build-k8s.sh [OUT_DIR]    (default: _output/k8s/bin)
#
# The build is skipped when every binary exists and its stamp file records the
# same k8sbin go.mod/go.sum and the same Go version, so warm runs cost well
# under a second. A cold build downloads ~90 MB of modules and took 8m54s on
# two cores (28 min while other builds kept the machine busy); see docs/e2e.md.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$repo/_output/k8s/bin}"
mod="$repo/hack/cluster/k8sbin"
version="v1.35.8"
cmds=(kube-apiserver kube-scheduler kubelet kubectl)

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
  echo "build-k8s: $version binaries in $out are up to date"
  exit 0
fi

echo "build-k8s: building ${cmds[*]} $version into $out (cold: ~9 min on 2 idle cores, more on a busy machine)"
start=$(date +%s)
rm -f "$stamp"
pkgs=()
for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
(
  cd "$mod"
  # -mod=readonly: go.mod/go.sum are committed; never rewrite them in CI.
  go build -mod=readonly -trimpath -o "$out/" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version" \
    "${pkgs[@]}"
)
for c in "${cmds[@]}"; do
  [ -x "$out/$c" ] || { echo "build-k8s: $out/$c missing after build" >&2; exit 1; }
done
echo "$want" > "$stamp"
echo "build-k8s: done in $(( $(date +%s) - start ))s"
