#!/usr/bin/env bash
# Switches the rail fabric's spine of the cluster in DIR (hack/cluster/up.sh):
# on, the fabric routes between the rails' subnets (through each leaf's .254);
# off (the default), the rails are isolated L2 segments.
#
#   hack/cluster/fabric.sh DIR spine on|off
set -euo pipefail
if [ $# -ne 3 ] || [ "$2" != spine ]; then
  echo "usage: $0 DIR spine on|off" >&2
  exit 2
fi
dir="$(cd "$1" && pwd)"
exec "$dir/bin/railyard-cluster" spine "$dir" "$3"
