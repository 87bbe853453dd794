#!/usr/bin/env bash
# Stops the multi-node test cluster in DIR (hack/cluster/up.sh) and removes
# everything it left on the host (processes, mounts, namespaces, links,
# cgroups, the cluster's files but DIR/logs), also after a killed run: it
# works from DIR/state.json, by PID and path, never by process name.
#
#   hack/cluster/down.sh DIR
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir="$(cd "$1" && pwd)"
bin="$dir/bin/railyard-cluster"
if [ -x "$bin" ]; then
  exec "$bin" down "$dir"
fi
cd "$repo" && exec go run -tags e2e ./hack/cluster/railyard-cluster down "$dir"
