#!/usr/bin/env bash
# Installs the system packages the test suite needs (Debian). Idempotent and
# quick when everything is already there.
set -euo pipefail
need=()
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
