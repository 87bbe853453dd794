#!/usr/bin/env bash
# Installs the system packages the test suite needs (Debian). Idempotent and
# quick when everything is already there.
set -euo pipefail
need=()
command -v ip >/dev/null || need+=(iproute2)
# lldpd plays the leaf switches for the LLDP tests (internal/lldp).
command -v lldpd >/dev/null || need+=(lldpd)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
