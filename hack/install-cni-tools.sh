#!/usr/bin/env bash
# Installs the real CNI tools the railyard-cni tests drive, static (CGO_ENABLED=0):
#   cnitool            from github.com/containernetworking/cni      v1.3.1
#   host-local, host-device from github.com/containernetworking/plugins v1.9.1
# into <repo>/_output/tools/cni (GOBIN). Idempotent: a tool already present
# at the pinned version is skipped. Override the directory with CNI_TOOLS_DIR.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${CNI_TOOLS_DIR:-$repo/_output/tools/cni}
mkdir -p "$dir"
cni_version=v1.3.1
plugins_version=v1.9.1

install() { # install <binary> <package@version>
  local bin=$1 pkg=$2 stamp="$dir/.$1.version"
  if [ -x "$dir/$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg static" ]; then
    echo "install-cni-tools: $bin present ($pkg)"
    return
  fi
  echo "install-cni-tools: go install $pkg"
  # Outside the module so its go.mod does not constrain the tool's deps.
  # Static (CGO_ENABLED=0), as the upstream release tarballs are built
  # (containernetworking/plugins scripts/release.sh): the benchmark
  # against host-device compares the binaries that ship.
  (cd "$dir" && CGO_ENABLED=0 GOBIN="$dir" GOFLAGS=-mod=mod go install "$pkg")
  echo "$pkg static" >"$stamp"
}

install cnitool github.com/containernetworking/cni/cnitool@$cni_version
install host-local github.com/containernetworking/plugins/plugins/ipam/host-local@$plugins_version
install host-device github.com/containernetworking/plugins/plugins/main/host-device@$plugins_version
echo "install-cni-tools: tools in $dir"
