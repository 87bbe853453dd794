#!/usr/bin/env bash
# Installs the standard CNI plugins the e2e pod network uses (bridge,
# host-local, loopback) from containernetworking/plugins v1.9.1 into a cache
# directory of its own, so it never collides with hack/install-cni-tools.sh
# (which owns _output/tools/cni).
#
# Usage: hack/cluster/install-cni.sh [OUT_DIR]    (default: _output/k8s/cni)
#
# portmap is deliberately not installed: it edits the host's iptables, which
# the suite must not touch, and no e2e test publishes host ports.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$repo/_output/k8s/cni}"
version="v1.9.1"
plugins=(main/bridge ipam/host-local main/loopback)

mkdir -p "$out"
out="$(cd "$out" && pwd)"
stamp="$out/.stamp"
want="$(echo "$version ${plugins[*]} $(go version)" | sha256sum | cut -d' ' -f1)"

ok=1
for p in "${plugins[@]}"; do [ -x "$out/$(basename "$p")" ] || ok=0; done
if [ $ok = 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "install-cni: CNI plugins $version in $out are up to date"
  exit 0
fi

pkgs=()
for p in "${plugins[@]}"; do
  pkgs+=("github.com/containernetworking/plugins/plugins/$p@$version")
done
echo "install-cni: installing ${plugins[*]} $version into $out"
# Run outside any module so the project's go.mod plays no part.
(cd / && GOBIN="$out" GOFLAGS=-buildvcs=false go install "${pkgs[@]}")
echo "$want" > "$stamp"
