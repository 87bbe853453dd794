#!/usr/bin/env bash
# Builds containerd, containerd-shim-runc-v2 and ctr v2.4.2 (CRI with CDI
# and NRI) from the Go module proxy
# (helper module hack/cluster/containerdbin) into a cache directory. Debian's
# containerd 1.6 has no CDI, which late binding (binding: sandbox) needs.
#
# Usage: hack/cluster/build-containerd.sh [OUT_DIR]   (default: _output/containerd/bin)
#
# The build is skipped when the binary exists and its stamp file records the
# same containerdbin go.mod/go.sum and Go version, so warm runs take well
# under a second. Cold times are in docs/e2e.md.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$repo/_output/containerd/bin}"
mod="$repo/hack/cluster/containerdbin"
version="v2.4.2"
cmds=(containerd containerd-shim-runc-v2 ctr)

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
  echo "build-containerd: ${cmds[*]} $version in $out are up to date"
  exit 0
fi

echo "build-containerd: building ${cmds[*]} $version into $out (cold: minutes)"
start=$(date +%s)
rm -f "$stamp"
(
  cd "$mod"
  # -mod=readonly: go.mod/go.sum are committed; never rewrite them in CI.
  # The tags leave out snapshotters that need cgo or kernel features absent here.
  pkgs=()
  for c in "${cmds[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/$c"); done
  CGO_ENABLED=0 go build -mod=readonly -trimpath -tags "no_btrfs no_devmapper no_zfs" -o "$out/" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$version" \
    "${pkgs[@]}"
)
for c in "${cmds[@]}"; do
  [ -x "$out/$c" ] || { echo "build-containerd: $out/$c missing after build" >&2; exit 1; }
done
echo "$want" > "$stamp"
echo "build-containerd: done in $(( $(date +%s) - start ))s"
